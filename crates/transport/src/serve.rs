//! The accept loop: hyper-util's auto builder (HTTP/1.1 and h2c, or over
//! TLS with ALPN, see [`super::tls`]) with a timer so header-read timeouts
//! fire, a bounded request head, the connection limit (idle connections
//! make room, see [`super::slots`]), and graceful shutdown that lets
//! in-flight requests finish.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tower::Service;

use super::slots::{Busy, Slot, Slots};
use super::stall::WriteTimeout;
use super::tls::ServerTls;

use wharf_config::Server;
use wharf_core::metrics::Answers;

/// Most HTTP/2 streams one connection may have open at once.
const MAX_H2_STREAMS: u32 = 256;
/// Streams a client may open and reset before the host accepted them
/// (the "rapid reset" flood): past it the connection is closed with
/// `ENHANCE_YOUR_CALM`.
const MAX_H2_PENDING_RESETS: usize = 20;
/// Streams the host may reset for a client's errors before it closes the
/// connection.
const MAX_H2_ERROR_RESETS: usize = 256;

/// Serves `app` on `listener` (over TLS when `tls` is set) until
/// `shutdown` resolves, then waits up to the grace period for open
/// connections to finish. Answers the pipeline did not give are counted in
/// `unnamed` as the transport's.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<ServerTls>>,
    app: Router,
    settings: Server,
    slots: Arc<Slots>,
    unnamed: Arc<Answers>,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(settings.header_timeout)
        .max_buf_size(settings.max_head)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        // Also bounds a header block however many CONTINUATION frames
        // carry it: past it the connection is closed.
        .max_header_list_size(settings.max_head as u32)
        .max_concurrent_streams(MAX_H2_STREAMS)
        .max_pending_accept_reset_streams(MAX_H2_PENDING_RESETS)
        .max_local_error_reset_streams(MAX_H2_ERROR_RESETS);
    let builder = Arc::new(builder);
    let graceful = GracefulShutdown::new();
    let https = tls.is_some();
    // The certificate is read again when its files change, while serving.
    let watching = tls.clone().map(|tls| tokio::spawn(tls.watch()));
    tokio::pin!(shutdown);

    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // Usually out of file descriptors: back off, keep serving.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // A slot for it: at the limit the connection idle longest makes
        // room; when all are busy, this one waits, and the clients after
        // it wait in the kernel's backlog.
        let slot = tokio::select! {
            slot = slots.acquire() => Arc::new(slot),
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = hyper::service::service_fn(with_client(
            app.clone(),
            Client { remote, https },
            slot.clone(),
            unnamed.clone(),
        ));
        let io = WriteTimeout::new(stream, settings.write_timeout);
        let Some(tls) = tls.clone() else {
            let conn = builder
                .serve_connection_with_upgrades(TokioIo::new(io), service)
                .into_owned();
            tokio::spawn(run(graceful.watch(conn), slot, remote));
            continue;
        };
        // The handshake runs on the connection's own task, within the
        // time a client has to send its request head, and its connection
        // is idle meanwhile: one that stalls it holds its slot no longer,
        // and gives it up as soon as a new connection needs the room.
        let (builder, watcher) = (builder.clone(), graceful.watcher());
        tokio::spawn(async move {
            let handshake =
                tokio::time::timeout(settings.header_timeout, tls.acceptor().accept(io));
            let io = tokio::select! {
                accepted = handshake => match accepted {
                    Ok(Ok(io)) => io,
                    Ok(Err(err)) => {
                        tracing::debug!(%remote, error = %err, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%remote, "no TLS handshake within the header timeout");
                        return;
                    }
                },
                () = slot.evicted() => {
                    tracing::debug!(%remote, "connection closed mid-handshake to make room");
                    return;
                }
            };
            let conn = builder
                .serve_connection_with_upgrades(TokioIo::new(io), service)
                .into_owned();
            run(watcher.watch(conn), slot, remote).await;
        });
    }

    drop(listener);
    if let Some(watching) = watching {
        watching.abort();
    }
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(settings.shutdown_grace) => {
            tracing::warn!(grace = ?settings.shutdown_grace, "connections still open after the grace period; closing");
        }
    }
}

/// Serves one connection until it ends or is closed to make room.
async fn run<C, E>(conn: C, slot: Arc<Slot>, remote: SocketAddr)
where
    C: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    tokio::select! {
        ended = conn => if let Err(err) = ended {
            tracing::debug!(%remote, error = %err, "connection ended with an error");
        },
        () = slot.evicted() => {
            tracing::debug!(%remote, "idle connection closed to make room");
        }
    }
}

/// Who a connection's requests come from, and over what.
#[derive(Clone)]
struct Client {
    remote: SocketAddr,
    /// On the TLS listener: its requests carry `Scheme::HTTPS` as an
    /// extension, for URLs the host writes (an agent card's); plain HTTP
    /// requests carry none.
    https: bool,
}

type Answer = std::pin::Pin<
    Box<dyn Future<Output = Result<axum::response::Response, std::convert::Infallible>> + Send>,
>;

/// Tags each request with the client's address and scheme and marks the
/// connection busy until the response body has been sent, then hands it
/// to the router; its answer leaves through [`finish`](super::routes::finish).
fn with_client(
    app: Router,
    client: Client,
    slot: Arc<Slot>,
    unnamed: Arc<Answers>,
) -> impl Fn(hyper::Request<Incoming>) -> Answer + Clone {
    move |mut req: hyper::Request<Incoming>| {
        let busy = slot.busy();
        req.extensions_mut().insert(ConnectInfo(client.remote));
        if client.https {
            req.extensions_mut().insert(http::uri::Scheme::HTTPS);
        }
        let answer = app.clone().call(req);
        let unnamed = unnamed.clone();
        Box::pin(async move {
            let resp = super::routes::finish(answer.await?, &unnamed);
            Ok(resp.map(|body| axum::body::Body::new(Guarded { body, _busy: busy })))
        })
    }
}

/// A response body that keeps its connection busy until it is dropped.
struct Guarded {
    body: axum::body::Body,
    _busy: Busy,
}

impl hyper::body::Body for Guarded {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}
