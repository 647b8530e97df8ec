//! The accept loop: hyper-util's auto builder (HTTP/1.1 and h2c) with a
//! timer so header-read timeouts fire, a connection limit, and graceful
//! shutdown that lets in-flight requests finish.

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
use tokio::sync::Semaphore;
use tower::Service;

use crate::config::Server;

/// Most HTTP/2 streams one connection may have open at once.
const MAX_H2_STREAMS: u32 = 256;

/// Serves `app` on `listener` until `shutdown` resolves, then waits up to
/// the grace period for open connections to finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    settings: Server,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(settings.header_timeout)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_H2_STREAMS);
    let builder = Arc::new(builder);
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(settings.connections));
    tokio::pin!(shutdown);

    loop {
        // Take a permit before accepting: past the limit, clients wait in
        // the kernel's backlog instead of being accepted and starved.
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
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
        let _ = stream.set_nodelay(true);
        let service = hyper::service::service_fn(with_client(app.clone(), remote));
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(err) = conn.await {
                tracing::debug!(%remote, error = %err, "connection ended with an error");
            }
            drop(permit);
        });
    }

    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(settings.shutdown_grace) => {
            tracing::warn!(grace = ?settings.shutdown_grace, "connections still open after the grace period; closing");
        }
    }
}

/// Tags each request with the client's address, then hands it to the router.
fn with_client(
    app: Router,
    remote: SocketAddr,
) -> impl Fn(hyper::Request<Incoming>) -> axum::routing::future::RouteFuture<std::convert::Infallible>
+ Clone {
    move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(remote));
        app.clone().call(req)
    }
}
