//! Streamed answers of `handle`. A call to an agent that imports
//! `streaming` runs with a sink: when the agent starts its response, the
//! pipeline answers at once with that head, and the body is what the agent
//! writes, then the body `handle` returns. The body itself drives the rest
//! of the call, so a client that goes away drops the call as it would a
//! whole answer. A call that fails after its head left cuts the body off.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;
use sync_wrapper::SyncWrapper;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::{AgentRoute, RouteError};
use wharf_core::request::{Call, Piece, Request, Response, Sink};

type CallFuture = Pin<Box<dyn Future<Output = Result<Response, RouteError>> + Send>>;

/// Calls `handle` through `route` with a sink for what it streams. The
/// call is boxed before the future is made, so the future holds the
/// request only inside it.
pub fn dispatch(
    route: &Arc<AgentRoute>,
    mut req: Request,
) -> impl Future<Output = Result<Response, RouteError>> + Send + 'static {
    let limit = route.core.entry.image.limits().response_body;
    let (sink, mut pieces) = Sink::new(limit);
    req.call = Call::Streamed(sink.clone());
    let mut call: CallFuture = Box::pin(route.dispatch(req));
    async move {
        let (status, headers, ended) = tokio::select! {
            biased;
            Some(Piece::Head(status, headers)) = pieces.recv() => (status, headers, None),
            result = &mut call => match pieces.try_recv() {
                // Started and finished before this task looked.
                Ok(Piece::Head(status, headers)) => (status, headers, Some(result)),
                _ => return result,
            },
        };
        let mut resp = Response::new(status, headers, Bytes::new());
        let tail = ended.map(|result| ending(result, &sink));
        let body = Streamed {
            call: SyncWrapper::new(tail.is_none().then_some(call)),
            pieces: SyncWrapper::new(pieces),
            sink,
            tail,
            flushed: false,
        };
        resp.stream = Some(Box::pin(body));
        Ok(resp)
    }
}

/// The body of a streamed answer: chunks as they are written, then the
/// body `handle` returned; an error when the call failed or the body
/// passed its limit.
struct Streamed {
    /// The rest of the call; `None` once it has ended.
    call: SyncWrapper<Option<CallFuture>>,
    pieces: SyncWrapper<UnboundedReceiver<Piece>>,
    sink: Sink,
    /// How the call ended, sent once every chunk before it has been.
    tail: Option<Result<Bytes, std::io::Error>>,
    /// Whether the transport was given a chance to flush what it holds
    /// before an error cuts the answer off (it drops unsent bytes then).
    flushed: bool,
}

impl Stream for Streamed {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(call) = this.call.get_mut()
            && let Poll::Ready(result) = call.as_mut().poll(cx)
        {
            *this.call.get_mut() = None;
            this.tail = Some(ending(result, &this.sink));
        }
        // Chunks written before the call ended go first.
        let pieces = this.pieces.get_mut();
        let pending = if this.call.get_mut().is_some() {
            pieces.poll_recv(cx)
        } else {
            Poll::Ready(pieces.try_recv().ok())
        };
        match pending {
            Poll::Ready(Some(Piece::Chunk(chunk))) => Poll::Ready(Some(Ok(chunk))),
            Poll::Ready(Some(Piece::Head(..))) => {
                // `start` refuses a second head; nothing else sends one.
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Poll::Ready(None) | Poll::Pending if this.call.get_mut().is_none() => {
                if matches!(this.tail, Some(Err(_))) && !this.flushed {
                    // Everything written before the failure reaches the
                    // client first: a pending body lets the transport flush.
                    this.flushed = true;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Ready(
                    this.tail
                        .take()
                        .filter(|t| !matches!(t, Ok(b) if b.is_empty())),
                )
            }
            _ => Poll::Pending,
        }
    }
}

/// The last piece of a streamed body: what `handle` returned, or the error
/// that cuts the body off.
fn ending(result: Result<Response, RouteError>, sink: &Sink) -> Result<Bytes, std::io::Error> {
    let cut = |why: String| {
        tracing::warn!("a streamed answer was cut off: {why}");
        Err(std::io::Error::other(why))
    };
    let (written, limit) = sink.written();
    match result {
        Ok(resp) if sink.overflowed() || written + resp.body.len() > limit => {
            cut(format!("its body passed the limit of {limit} bytes"))
        }
        Ok(resp) => Ok(resp.body),
        Err(err) => cut(err.to_string()),
    }
}
