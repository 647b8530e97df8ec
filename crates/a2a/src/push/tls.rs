//! TLS for `https://` webhooks: one client configuration per host, made
//! when the first such webhook is called (a host without one never reads
//! the system's certificates), trusting the system's roots and the `push`
//! block's `ca` certificates, TLS 1.2 and 1.3, HTTP/1.1 by ALPN.

use std::sync::{Arc, OnceLock};

use rustls::RootCertStore;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio_rustls::TlsConnector;

/// The client side of webhook TLS.
pub(super) struct Tls {
    ca: Vec<Vec<u8>>,
    connector: OnceLock<Result<TlsConnector, String>>,
}

impl Tls {
    /// Trusting the system's roots and `ca` (DER certificates).
    pub fn new(ca: Vec<Vec<u8>>) -> Tls {
        Tls {
            ca,
            connector: OnceLock::new(),
        }
    }

    /// Opens TLS to `host` over `tcp`, verifying the certificate names
    /// `host` (a DNS name or an IP address) and chains to a trusted root.
    pub async fn connect(
        &self,
        host: &str,
        tcp: tokio::net::TcpStream,
    ) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
        let connector = self
            .connector
            .get_or_init(|| self.make())
            .as_ref()
            .map_err(Clone::clone)?;
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| format!("`{host}` is not a name TLS can verify: {e}"))?;
        connector
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS with the webhook failed: {e}"))
    }

    fn make(&self) -> Result<TlsConnector, String> {
        let mut roots = RootCertStore::empty();
        let system = rustls_native_certs::load_native_certs();
        for err in &system.errors {
            tracing::warn!(error = %err, "a system root certificate could not be read");
        }
        let (added, _) = roots.add_parsable_certificates(system.certs);
        for der in &self.ca {
            roots
                .add(CertificateDer::from(der.clone()))
                .map_err(|e| format!("a `push` `ca` certificate is not usable: {e}"))?;
        }
        if roots.is_empty() {
            return Err(
                "no root certificate to verify webhooks with: the system has none \
                        and the `push` block names no `ca`"
                    .into(),
            );
        }
        tracing::debug!(
            system = added,
            extra = self.ca.len(),
            "webhook TLS trusts these roots"
        );
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsConnector::from(Arc::new(config)))
    }
}
