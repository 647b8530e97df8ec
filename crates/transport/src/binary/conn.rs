//! One binary-transport connection: frames are read as they arrive (a
//! partial frame must complete within the frame timeout), each request is
//! handed to the pipeline in its own task, and answers are written as they
//! finish, out of order, matched by id. At most `in-flight` requests run
//! at once per connection; past that the connection is not read, so a fast
//! sender is slowed by TCP/Unix-socket backpressure, never buffered
//! without bound.

use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tracing::Instrument;

use super::frame::{self, FrameRequest, PREFIX, Target};
use super::{BinaryMetrics, Shared};
use crate::ApiError;
use crate::slots::Slot;
use wharf_core::request::{self, Request};

/// How much the read buffer grows by at most per read beyond what a frame
/// has shown: a length prefix alone never makes the host allocate.
const READ_CHUNK: usize = 64 << 10;

/// The least the read buffer grows by.
const MIN_READ: usize = 8 << 10;

/// Frames gathered into one write.
const WRITE_BATCH: usize = 64;

/// Serves one connection until the peer closes it, a fault ends it, or
/// the host shuts down (in-flight requests finish first).
pub async fn serve<R, W>(
    rd: R,
    wr: W,
    client: Option<SocketAddr>,
    shared: Arc<Shared>,
    slot: Slot,
    mut shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let settings = &shared.settings;
    let (tx, rx) = mpsc::channel::<Vec<Bytes>>(settings.in_flight);
    let writer = tokio::spawn(write_loop(wr, rx, settings.frame_timeout));
    let permits = Arc::new(Semaphore::new(settings.in_flight));
    let mut tasks = JoinSet::new();
    let mut frames = Frames {
        rd,
        buf: BytesMut::new(),
        max: settings.max_frame,
        timeout: settings.frame_timeout,
    };
    loop {
        let next = tokio::select! {
            next = frames.next() => next,
            // The writer ended: the peer stopped reading answers.
            () = tx.closed() => {
                tasks.abort_all();
                break;
            }
            _ = shutdown.wait_for(|down| *down) => break,
            // Idle (nothing in flight) and chosen to make room.
            () = slot.evicted() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let frame = match next {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(fault) => {
                shared.metrics.fault(fault.code);
                tracing::debug!(?client, code = fault.code, reason = %fault.message, "binary connection closed");
                let frame = frame::error_frame(None, 400, fault.code, &fault.message, None);
                let _ = tx.send(vec![frame.freeze()]).await;
                break;
            }
        };
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("never closed"),
            () = tx.closed() => {
                tasks.abort_all();
                break;
            }
        };
        let (tx, shared, busy) = (tx.clone(), shared.clone(), slot.busy());
        tasks.spawn(async move {
            let out = answer(&shared, frame, client).await;
            let _ = tx.send(out).await;
            drop((permit, busy));
        });
    }
    while tasks.join_next().await.is_some() {}
    drop(tx);
    let _ = writer.await;
}

/// Why a connection's frames can no longer be read.
struct Fault {
    code: &'static str,
    message: String,
}

/// Reads length-prefixed frames from one connection.
struct Frames<R> {
    rd: R,
    buf: BytesMut,
    max: usize,
    timeout: Duration,
}

impl<R: AsyncRead + Unpin> Frames<R> {
    /// The next frame's payload, sliced from the read buffer (no copy);
    /// `None` when the peer closed between frames. Cancel-safe: all state
    /// is in `self`.
    async fn next(&mut self) -> Result<Option<Bytes>, Fault> {
        loop {
            let missing = match self.buf.get(..PREFIX) {
                Some(prefix) => {
                    let len = u32::from_be_bytes(prefix.try_into().expect("four bytes")) as usize;
                    if len > self.max {
                        return Err(Fault {
                            code: "frame_too_large",
                            message: format!(
                                "a frame of {len} bytes is over this listener's limit of {} bytes",
                                self.max
                            ),
                        });
                    }
                    if self.buf.len() >= PREFIX + len {
                        self.buf.advance(PREFIX);
                        return Ok(Some(self.buf.split_to(len).freeze()));
                    }
                    PREFIX + len - self.buf.len()
                }
                None => PREFIX,
            };
            // Room for what is missing, at most READ_CHUNK at a time; a
            // buffer that still has room is read into as it is, so frames
            // that arrive together share one allocation.
            if self.buf.capacity() - self.buf.len() < missing.min(READ_CHUNK) {
                self.buf.reserve(missing.clamp(MIN_READ, READ_CHUNK));
            }
            let read = if self.buf.is_empty() {
                self.rd.read_buf(&mut self.buf).await
            } else {
                match tokio::time::timeout(self.timeout, self.rd.read_buf(&mut self.buf)).await {
                    Ok(read) => read,
                    Err(_) => {
                        return Err(Fault {
                            code: "frame_timeout",
                            message: format!("a frame stayed incomplete for {:?}", self.timeout),
                        });
                    }
                }
            };
            match read {
                Ok(0) if self.buf.is_empty() => return Ok(None),
                Ok(0) => {
                    return Err(Fault {
                        code: "truncated_frame",
                        message: "the connection closed in the middle of a frame".into(),
                    });
                }
                Ok(_) => {}
                Err(err) => {
                    return Err(Fault {
                        code: "read_failed",
                        message: err.to_string(),
                    });
                }
            }
        }
    }
}

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs one frame's request and encodes its answer (or error) as the
/// pieces of one frame.
async fn answer(shared: &Shared, frame: Bytes, client: Option<SocketAddr>) -> Vec<Bytes> {
    let req = match frame::decode_request(&frame) {
        Ok(req) => req,
        Err(err) => {
            shared.metrics.fault("bad_frame");
            shared.transport_answer(400);
            return vec![frame::error_frame(err.id, 400, "bad_frame", &err.message, None).freeze()];
        }
    };
    let id = req.id;
    let neutral = match neutral(&req, client) {
        Ok(neutral) => neutral,
        Err(message) => {
            shared.metrics.fault("bad_frame");
            shared.transport_answer(400);
            return vec![frame::error_frame(Some(id), 400, "bad_frame", &message, None).freeze()];
        }
    };
    let body = request::Body::Ready(body_of(&req, &frame));
    let request_id = neutral.id.clone();
    let pipeline = &shared.state.pipeline;
    // A `topic` frame publishes (POST, the default) or reads back (GET).
    let (span, run): (_, BoxFuture<'_, _>) = match req.target {
        Target::Agent(agent) => (
            neutral.span(agent),
            Box::pin(pipeline.handle(agent, neutral, body)),
        ),
        Target::Topic(topic) => match neutral.method {
            Method::POST => (
                neutral.span("topics"),
                Box::pin(pipeline.publish_topic(topic, neutral, body)),
            ),
            Method::GET => (
                neutral.span("topics"),
                Box::pin(pipeline.read_topic(topic, neutral)),
            ),
            _ => {
                shared.metrics.fault("bad_frame");
                shared.transport_answer(400);
                let message = "a `topic` request's `method` is POST (publish) or GET (read back)";
                return vec![
                    frame::error_frame(Some(id), 400, "bad_frame", message, None).freeze(),
                ];
            }
        },
    };
    let result = tokio::time::timeout(shared.request_timeout, run)
        .instrument(span)
        .await;
    let resp = match result {
        Ok(result) => crate::error::outcome(result),
        Err(_) => Err({
            shared.transport_answer(408);
            ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                "the request did not complete in time",
            )
        }),
    };
    match resp {
        Ok(resp) => match resp.gathered().await {
            Ok(wharf_core::request::Response {
                status,
                mut headers,
                body,
                ..
            }) => {
                shared.metrics.answered();
                crate::ingress::mark(&mut headers, &request_id);
                let head = frame::answer_head(id, status.as_u16(), &headers, body.len());
                vec![head.freeze(), body]
            }
            Err(message) => {
                shared.metrics.answered();
                let message = message.to_string();
                let frame = frame::error_frame(Some(id), 502, "stream_failed", &message, None);
                vec![frame.freeze()]
            }
        },
        Err(api) => {
            shared.metrics.answered();
            let frame = frame::error_frame(
                Some(id),
                api.status.as_u16(),
                api.code,
                &api.message,
                api.retry_secs(),
            );
            vec![frame.freeze()]
        }
    }
}

/// The request body: a slice of the frame, sharing its buffer.
fn body_of(req: &FrameRequest<'_>, frame: &Bytes) -> Bytes {
    if req.body.is_empty() {
        return Bytes::new();
    }
    frame.slice_ref(req.body)
}

/// The neutral request for a frame's request.
fn neutral(req: &FrameRequest<'_>, client: Option<SocketAddr>) -> Result<Request, String> {
    let method = Method::from_bytes(req.method.as_bytes())
        .map_err(|_| format!("`{}` is not a method", req.method))?;
    let mut headers = HeaderMap::with_capacity(req.headers.len());
    for (name, value) in &req.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a header name"))?;
        let value = HeaderValue::from_bytes(value)
            .map_err(|_| format!("the value of `{name}` is not a header value"))?;
        headers.append(name, value);
    }
    let mut neutral = Request::new(method, req.path);
    neutral.query = req.query.to_string();
    neutral.headers = headers;
    neutral.client = client;
    neutral.affinity = req.affinity.map(str::to_string);
    Ok(neutral)
}

/// Writes answers as they come, several frames per system call, each body
/// from its own buffer (vectored writes, no copy). A peer that takes no
/// bytes for `stall` is given up on: the connection closes.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::Receiver<Vec<Bytes>>,
    stall: Duration,
) {
    while let Some(mut pieces) = rx.recv().await {
        let mut frames = 1;
        while frames < WRITE_BATCH {
            match rx.try_recv() {
                Ok(more) => {
                    pieces.extend(more);
                    frames += 1;
                }
                Err(_) => break,
            }
        }
        if write_all(&mut wr, pieces, stall).await.is_err() {
            return;
        }
    }
    let _ = wr.shutdown().await;
}

async fn write_all<W: AsyncWrite + Unpin>(
    wr: &mut W,
    mut pieces: Vec<Bytes>,
    stall: Duration,
) -> std::io::Result<()> {
    pieces.retain(|p| !p.is_empty());
    let mut first = 0;
    while first < pieces.len() {
        let slices: Vec<IoSlice<'_>> = pieces[first..]
            .iter()
            .take(64)
            .map(|p| IoSlice::new(p))
            .collect();
        let mut written = tokio::time::timeout(stall, wr.write_vectored(&slices))
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while written > 0 {
            let piece = &mut pieces[first];
            let step = written.min(piece.len());
            piece.advance(step);
            written -= step;
            if piece.is_empty() {
                first += 1;
            }
        }
    }
    wr.flush().await
}

impl BinaryMetrics {
    fn answered(&self) {
        self.answers.increment(1);
    }
}
