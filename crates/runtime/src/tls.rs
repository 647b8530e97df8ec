//! Client TLS for the host's outbound connections (guests' `https://`
//! requests, A2A push webhooks): one client configuration per trust set,
//! made on first use (a host that never calls out over TLS never reads the
//! system's certificates), trusting the system's roots and the extra CA
//! certificates the configuration names, TLS 1.2 and 1.3, HTTP/1.1 by ALPN.

use std::sync::{Arc, OnceLock};

use rustls::RootCertStore;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// Why a TLS connection could not be made.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TlsError {
    /// Nothing to verify a server with.
    #[error(
        "no root certificate to verify servers with: the system has none and the `{block}` block names no `ca`"
    )]
    NoRoots {
        /// The block whose `ca` would add one.
        block: &'static str,
    },
    /// A configured CA certificate is not one rustls accepts.
    #[error("a `{block}` `ca` certificate is not usable: {reason}")]
    BadCa {
        /// The block that names it.
        block: &'static str,
        /// What rustls said.
        reason: String,
    },
    /// The host is neither a DNS name nor an address TLS can verify.
    #[error("`{host}` is not a name TLS can verify")]
    Name {
        /// The host.
        host: String,
    },
    /// The server's certificate is not trusted or does not name the host.
    #[error("`{host}`'s certificate is not accepted: {reason}")]
    Certificate {
        /// The host.
        host: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The handshake failed otherwise (a server that does not speak TLS,
    /// a reset).
    #[error("TLS with `{host}` failed: {reason}")]
    Handshake {
        /// The host.
        host: String,
        /// What failed.
        reason: String,
    },
}

/// The client side of outbound TLS for one trust set.
pub struct ClientTls {
    block: &'static str,
    ca: Vec<Vec<u8>>,
    connector: OnceLock<Result<TlsConnector, TlsError>>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("block", &self.block)
            .field("ca", &self.ca.len())
            .finish()
    }
}

impl ClientTls {
    /// Trusting the system's roots and `ca` (DER certificates) named in
    /// the configuration block `block` (for error messages).
    pub fn new(block: &'static str, ca: Vec<Vec<u8>>) -> ClientTls {
        ClientTls {
            block,
            ca,
            connector: OnceLock::new(),
        }
    }

    /// Opens TLS to `host` over `tcp`, verifying that the certificate
    /// names `host` (a DNS name or an IP address) and chains to a trusted
    /// root.
    pub async fn connect(
        &self,
        host: &str,
        tcp: TcpStream,
    ) -> Result<TlsStream<TcpStream>, TlsError> {
        let connector = self
            .connector
            .get_or_init(|| self.make())
            .as_ref()
            .map_err(Clone::clone)?;
        let name = ServerName::try_from(host.to_string()).map_err(|_| TlsError::Name {
            host: host.to_string(),
        })?;
        connector.connect(name, tcp).await.map_err(|e| {
            let host = host.to_string();
            let reason = e.to_string();
            match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                Some(rustls::Error::InvalidCertificate(_)) => {
                    TlsError::Certificate { host, reason }
                }
                _ => TlsError::Handshake { host, reason },
            }
        })
    }

    fn make(&self) -> Result<TlsConnector, TlsError> {
        let mut roots = RootCertStore::empty();
        let system = rustls_native_certs::load_native_certs();
        for err in &system.errors {
            tracing::warn!(error = %err, "a system root certificate could not be read");
        }
        let (added, _) = roots.add_parsable_certificates(system.certs);
        for der in &self.ca {
            roots
                .add(CertificateDer::from(der.clone()))
                .map_err(|e| TlsError::BadCa {
                    block: self.block,
                    reason: e.to_string(),
                })?;
        }
        if roots.is_empty() {
            return Err(TlsError::NoRoots { block: self.block });
        }
        tracing::debug!(
            block = self.block,
            system = added,
            extra = self.ca.len(),
            "outbound TLS trusts these roots"
        );
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::BadCa {
                block: self.block,
                reason: e.to_string(),
            })?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsConnector::from(Arc::new(config)))
    }
}
