//! The binary transport: MessagePack frames over a Unix socket (and
//! optionally TCP) for local callers. Binds the listeners (replacing a
//! stale socket file, refusing any other file), accepts up to the
//! connection limit, and hands each connection to `conn`; every request
//! goes through the same pipeline as HTTP. The wire format is in [`frame`]
//! and `docs/binary.md`.

mod conn;
pub mod frame;

use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use metrics::{Counter, Gauge, Label};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::AppState;
use super::slots::Slots;
use wharf_config::{Binary, UnixSocket};

/// Per-connection settings from the `binary` block.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Largest frame accepted, in bytes.
    pub max_frame: usize,
    /// Requests in flight per connection at most.
    pub in_flight: usize,
    /// How long a frame may take to arrive once started.
    pub frame_timeout: Duration,
}

/// What every binary connection shares.
pub struct Shared {
    /// The pipeline and A2A, as HTTP has them.
    pub state: Arc<AppState>,
    /// The connection settings.
    pub settings: Settings,
    /// How long a request may take.
    pub request_timeout: Duration,
    metrics: BinaryMetrics,
}

impl Shared {
    /// Counts an answer the transport gave itself (a bad frame, a timeout).
    pub(crate) fn transport_answer(&self, status: u16) {
        let answers = self.state.pipeline.metrics().unnamed();
        answers.count(wharf_core::metrics::Stage::Transport, status);
    }
}

/// Connection faults, each counted under its code.
const FAULTS: [&str; 5] = [
    "bad_frame",
    "frame_too_large",
    "frame_timeout",
    "truncated_frame",
    "read_failed",
];

/// The transport's own counters (requests are counted per agent by the
/// routes, as for HTTP).
pub(crate) struct BinaryMetrics {
    answers: Counter,
    faults: [Counter; FAULTS.len()],
    connections: Gauge,
}

impl BinaryMetrics {
    fn new(metrics: &wharf_core::metrics::Metrics) -> Self {
        let r = metrics.recorder();
        BinaryMetrics {
            answers: wharf_core::metrics::counter(r, "wharf_binary_answers_total", vec![]),
            faults: FAULTS.map(|code| {
                let label = vec![Label::new("code", code)];
                wharf_core::metrics::counter(r, "wharf_binary_faults_total", label)
            }),
            connections: wharf_core::metrics::gauge(r, "wharf_binary_connections", vec![]),
        }
    }

    fn fault(&self, code: &str) {
        if let Some(i) = FAULTS.iter().position(|c| *c == code) {
            self.faults[i].increment(1);
        }
    }
}

/// The binary listeners, bound.
pub struct Listeners {
    unix: Option<(UnixListener, PathBuf)>,
    tcp: Option<TcpListener>,
    connections: usize,
    settings: Settings,
}

impl Listeners {
    /// Binds what the `binary` block names.
    pub async fn bind(config: &Binary) -> Result<Listeners, BindError> {
        let unix = match &config.unix {
            Some(socket) => Some((bind_unix(socket)?, socket.path.clone())),
            None => None,
        };
        let tcp = match config.tcp {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .map_err(|e| io("listen on", addr.to_string(), e))?,
            ),
            None => None,
        };
        Ok(Listeners {
            unix,
            tcp,
            connections: config.connections,
            settings: Settings {
                max_frame: config.max_frame,
                in_flight: config.in_flight,
                frame_timeout: config.frame_timeout,
            },
        })
    }

    /// The TCP address bound, if any (the port is chosen when it says 0).
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Connections served at once.
    pub fn connections(&self) -> usize {
        self.connections
    }

    /// The Unix socket's path, if any.
    pub fn unix_path(&self) -> Option<&Path> {
        self.unix.as_ref().map(|(_, path)| path.as_path())
    }

    /// Serves every binary listener until `shutdown` turns true, then
    /// waits up to `grace` for connections to finish their requests.
    /// `slots` holds the `connections` limit.
    pub async fn serve(
        self,
        state: Arc<AppState>,
        slots: Arc<Slots>,
        request_timeout: Duration,
        grace: Duration,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let metrics = BinaryMetrics::new(state.pipeline.metrics());
        let shared = Arc::new(Shared {
            state,
            settings: self.settings,
            request_timeout,
            metrics,
        });
        let mut conns = JoinSet::new();
        loop {
            let accepted = tokio::select! {
                a = accept(self.unix.as_ref().map(|(l, _)| l), self.tcp.as_ref()) => a,
                Some(_) = conns.join_next(), if !conns.is_empty() => continue,
                _ = shutdown.wait_for(|down| *down) => break,
            };
            let (rd, wr, client) = match accepted {
                Ok(parts) => parts,
                Err(err) => {
                    tracing::warn!(error = %err, "binary accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // At the limit the connection idle longest makes room.
            let slot = tokio::select! {
                slot = slots.acquire() => slot,
                _ = shutdown.wait_for(|down| *down) => break,
            };
            let (shared, shutdown) = (shared.clone(), shutdown.clone());
            conns.spawn(async move {
                shared.metrics.connections.increment(1.0);
                conn::serve(rd, wr, client, shared.clone(), slot, shutdown).await;
                shared.metrics.connections.decrement(1.0);
            });
        }
        if let Some((_, path)) = &self.unix {
            let _ = std::fs::remove_file(path);
        }
        let drained = async { while conns.join_next().await.is_some() {} };
        if tokio::time::timeout(grace, drained).await.is_err() {
            tracing::warn!(
                ?grace,
                "binary connections still open after the grace period; closing"
            );
        }
    }
}

type Reader = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
type Writer = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// The next connection on either listener, split into owned halves.
async fn accept(
    unix: Option<&UnixListener>,
    tcp: Option<&TcpListener>,
) -> std::io::Result<(Reader, Writer, Option<SocketAddr>)> {
    let on_unix = async {
        match unix {
            Some(l) => l.accept().await,
            None => std::future::pending().await,
        }
    };
    let on_tcp = async {
        match tcp {
            Some(l) => l.accept().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        accepted = on_unix => {
            let (stream, _) = accepted?;
            let (rd, wr) = stream.into_split();
            Ok((Box::new(rd), Box::new(wr), None))
        }
        accepted = on_tcp => {
            let (stream, addr) = accepted?;
            let _ = stream.set_nodelay(true);
            let (rd, wr) = stream.into_split();
            Ok((Box::new(rd), Box::new(wr), Some(addr)))
        }
    }
}

/// Why the binary transport's listeners could not be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// A file-system or socket call failed.
    #[error("cannot {doing} {place}: {source}")]
    Io {
        /// What was being done.
        doing: &'static str,
        /// The path or address.
        place: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// Another process listens on the socket path.
    #[error("{} is in use: another process is listening on it", .0.display())]
    InUse(PathBuf),
    /// Something other than a socket is at the path.
    #[error("{} exists and is not a socket; Wharf does not replace it", .0.display())]
    NotASocket(PathBuf),
    /// The socket's owner names no user or group here.
    #[error(transparent)]
    Owner(#[from] wharf_config::SettingError),
}

fn io(doing: &'static str, place: String, source: std::io::Error) -> BindError {
    BindError::Io {
        doing,
        place,
        source,
    }
}

/// Binds the Unix socket: a socket file nobody listens on is replaced,
/// any other existing file is an error; then mode and owner are set.
fn bind_unix(socket: &UnixSocket) -> Result<UnixListener, BindError> {
    let path = &socket.path;
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(io("look at", shown.to_string(), err)),
        Ok(meta) if meta.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(BindError::InUse(path.clone()));
            }
            std::fs::remove_file(path)
                .map_err(|e| io("remove the stale socket", shown.to_string(), e))?;
            tracing::info!(path = %shown, "replaced a stale socket file");
        }
        Ok(_) => {
            return Err(BindError::NotASocket(path.clone()));
        }
    }
    // Bound in a directory only this process can enter, given its mode
    // and owner there, then renamed into place: nobody can connect to it
    // before it has the permissions the configuration asks for.
    let parent = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => parent,
        None => std::path::Path::new("."),
    };
    let private = tempfile::Builder::new()
        .prefix(".wharf-socket-")
        .tempdir_in(parent)
        .map_err(|e| io("prepare", shown.to_string(), e))?;
    let staged = private.path().join("socket");
    let listener =
        UnixListener::bind(&staged).map_err(|e| io("listen on", shown.to_string(), e))?;
    if let Some(mode) = socket.mode {
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(mode))
            .map_err(|e| io("set the mode of", shown.to_string(), e))?;
    }
    if let Some(owner) = &socket.owner {
        let (uid, gid) = owner.resolve()?;
        std::os::unix::fs::chown(&staged, uid, gid)
            .map_err(|e| io("give", format!("{shown} to `{owner}`"), e))?;
    }
    std::fs::rename(&staged, path).map_err(|e| io("listen on", shown.to_string(), e))?;
    Ok(listener)
}
