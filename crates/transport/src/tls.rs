//! The HTTPS listener's TLS (`rustls`): TLS 1.2 and 1.3, `h2` and
//! `http/1.1` by ALPN, and a certificate read again when its files change.
//! Every handshake takes the certificate current at that moment, so a
//! swap fails no request: connections already open keep the one they
//! began with. A new pair that cannot be used (unreadable, not PEM, a key
//! that does not fit the certificate) is logged and the old one stays.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

use wharf_config::{ListenTls, TlsFileError};

/// How often the certificate and key files are looked at.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Why the listener's certificate cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ServerTlsError {
    /// A file cannot be read or is not PEM of its kind.
    #[error(transparent)]
    File(#[from] TlsFileError),
    /// The key is not usable, or not the certificate's.
    #[error("`{key}` does not fit `{certificate}`: {reason}")]
    Pair {
        /// The certificate file.
        certificate: String,
        /// The key file.
        key: String,
        /// What rustls said.
        reason: String,
    },
}

/// What was seen of a file: its size, time and inode (a renamed-over
/// file differs even when written in the same second).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Seen(Option<(u64, SystemTime, u64)>);

impl Seen {
    fn of(path: &Path) -> Seen {
        Seen(std::fs::metadata(path).ok().map(|m| {
            #[cfg(unix)]
            let ino = std::os::unix::fs::MetadataExt::ino(&m);
            #[cfg(not(unix))]
            let ino = 0;
            (m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH), ino)
        }))
    }
}

/// The listener's TLS: its acceptor, and the certificate it serves now.
pub struct ServerTls {
    files: ListenTls,
    provider: Arc<CryptoProvider>,
    current: Arc<ArcSwap<CertifiedKey>>,
    acceptor: TlsAcceptor,
    /// The files as last loaded, and as seen at the last look.
    seen: Mutex<([Seen; 2], [Seen; 2])>,
}

#[derive(Debug)]
struct Resolver(Arc<ArcSwap<CertifiedKey>>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.load_full())
    }
}

impl ServerTls {
    /// Reads the pair; fails when it cannot be used.
    pub fn new(files: ListenTls) -> Result<Arc<ServerTls>, ServerTlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let seen = [Seen::of(&files.certificate), Seen::of(&files.key)];
        let key = load(&files, &provider)?;
        let current = Arc::new(ArcSwap::from_pointee(key));
        let mut config = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ServerTlsError::Pair {
                certificate: files.certificate.display().to_string(),
                key: files.key.display().to_string(),
                reason: e.to_string(),
            })?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Resolver(current.clone())));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(ServerTls {
            files,
            provider,
            current,
            acceptor: TlsAcceptor::from(Arc::new(config)),
            seen: Mutex::new((seen, seen)),
        }))
    }

    /// What accepts connections.
    pub fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// The certificate served now (leaf first).
    pub fn certificate(&self) -> Vec<Vec<u8>> {
        self.current
            .load()
            .cert
            .iter()
            .map(|c| c.to_vec())
            .collect()
    }

    /// Looks at the files: when they changed and have stayed the same
    /// since the last look (so a pair written one file after the other is
    /// read once, whole), loads them and serves the new certificate.
    /// `Ok(true)` when it did.
    pub fn check(&self) -> Result<bool, ServerTlsError> {
        let now = [Seen::of(&self.files.certificate), Seen::of(&self.files.key)];
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let (loaded, last) = *seen;
        seen.1 = now;
        if now == loaded || now != last {
            return Ok(false);
        }
        // Tried once per change: a bad pair is not read again until the
        // files change once more.
        seen.0 = now;
        drop(seen);
        let key = load(&self.files, &self.provider)?;
        self.current.store(Arc::new(key));
        Ok(true)
    }

    /// Checks the files every [`WATCH_EVERY`] until the task is dropped.
    pub async fn watch(self: Arc<Self>) {
        let mut tick = tokio::time::interval(WATCH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let tls = self.clone();
            match tokio::task::spawn_blocking(move || tls.check()).await {
                Ok(Ok(true)) => tracing::info!(
                    certificate = %self.files.certificate.display(),
                    "TLS certificate reloaded; new connections use it"
                ),
                Ok(Ok(false)) => {}
                Ok(Err(err)) => tracing::error!(
                    error = %err,
                    "the changed TLS certificate cannot be used; still serving the previous one"
                ),
                Err(err) => tracing::error!(error = %err, "checking the TLS files failed"),
            }
        }
    }
}

fn load(files: &ListenTls, provider: &CryptoProvider) -> Result<CertifiedKey, ServerTlsError> {
    let (chain, key) = files.load()?;
    CertifiedKey::from_der(chain, key, provider).map_err(|e| ServerTlsError::Pair {
        certificate: files.certificate.display().to_string(),
        key: files.key.display().to_string(),
        reason: e.to_string(),
    })
}
