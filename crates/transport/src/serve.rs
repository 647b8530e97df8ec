//! The accept loop: hyper-util's auto builder (HTTP/1.1 and h2c, or over
//! TLS with ALPN, see [`super::tls`]) with a timer so header-read timeouts
//! fire, a bounded request head, the connection limit (idle and stalled
//! connections make room, see [`super::slots`]), a progress deadline on
//! every answer, and graceful shutdown that lets in-flight requests finish.
//!
//! An answer's body is handed to hyper in pieces of at most [`PIECE`]
//! bytes, each piece's wait on the client clocked ([`Progress`]): a
//! connection one of whose answers waits longer than `write-timeout` (an
//! HTTP/2 client that never opens its flow-control window, which no socket
//! write would ever show) is closed, and at the connection limit one whose
//! answers all wait on the client makes room. HTTP/2 connections are also
//! pinged every `write-timeout`, and closed when a ping goes unanswered
//! for as long.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use hyper::body::Frame;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tower::Service;

use super::slots::{Busy, Progress, Slot, Slots};
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
/// The most of an answer handed to hyper at once: what a client must take
/// within `write-timeout` to count as reading (its flow-control window
/// opened for at least this much, or its socket drained of it).
pub const PIECE: usize = 64 << 10;

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
        .max_local_error_reset_streams(MAX_H2_ERROR_RESETS)
        // A peer that stops answering pings is gone: close it.
        .keep_alive_interval(Some(settings.write_timeout))
        .keep_alive_timeout(settings.write_timeout);
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
            tokio::spawn(run(
                graceful.watch(conn),
                slot,
                remote,
                settings.write_timeout,
            ));
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
            run(watcher.watch(conn), slot, remote, settings.write_timeout).await;
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

/// Serves one connection until it ends, is closed to make room, or one of
/// its answers waits on the client for longer than `write_timeout`.
async fn run<C, E>(conn: C, slot: Arc<Slot>, remote: SocketAddr, write_timeout: Duration)
where
    C: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    tokio::select! {
        ended = conn => if let Err(err) = ended {
            tracing::debug!(%remote, error = %err, "connection ended with an error");
        },
        () = slot.evicted() => {
            tracing::debug!(%remote, "idle or stalled connection closed to make room");
        }
        () = slot.stalled(write_timeout) => {
            tracing::debug!(%remote, ?write_timeout, "connection closed: an answer made no progress");
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
        let slot = slot.clone();
        req.extensions_mut().insert(ConnectInfo(client.remote));
        if client.https {
            req.extensions_mut().insert(http::uri::Scheme::HTTPS);
        }
        let answer = app.clone().call(req);
        let unnamed = unnamed.clone();
        Box::pin(async move {
            let resp = super::routes::finish(answer.await?, &unnamed);
            Ok(resp.map(|body| {
                axum::body::Body::new(Guarded {
                    body,
                    rest: Bytes::new(),
                    progress: slot.progress(),
                    _busy: busy,
                })
            }))
        })
    }
}

/// A response body that keeps its connection busy until it is dropped,
/// hands hyper at most [`PIECE`] bytes at a time, and clocks how long each
/// piece waits on the client.
struct Guarded {
    body: axum::body::Body,
    /// What is left of the data frame being handed out in pieces.
    rest: Bytes,
    progress: Progress,
    _busy: Busy,
}

impl Guarded {
    /// The next piece of `data`, the remainder kept for the next poll.
    fn piece(&mut self, mut data: Bytes) -> Frame<Bytes> {
        if data.len() > PIECE {
            self.rest = data.split_off(PIECE);
        }
        self.progress.owes();
        Frame::data(data)
    }
}

impl hyper::body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        use std::task::Poll;
        let me = self.get_mut();
        // Hyper is back for more: what it held has been taken.
        me.progress.settled();
        if !me.rest.is_empty() {
            let rest = std::mem::take(&mut me.rest);
            return Poll::Ready(Some(Ok(me.piece(rest))));
        }
        match std::pin::Pin::new(&mut me.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => Poll::Ready(Some(Ok(me.piece(data)))),
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            },
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        let inner = self.body.size_hint();
        let rest = self.rest.len() as u64;
        let mut hint = hyper::body::SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}
