//! One request to a `wasi:http/proxy` component: the neutral request made
//! an `incoming-request` (its body shared, not copied, or read by the guest
//! as it arrives), `handle` called on
//! a fiber, and the response taken from the `response-outparam` as soon as
//! the guest sets it. With a sink the body leaves as the guest writes it;
//! without one it is gathered, within the response-body limit. Every way it
//! can go wrong is classified: never answering, answering with an error,
//! trapping before or after the head, writing past the limit or the
//! deadline.

use bytes::{Bytes, BytesMut};
use futures_util::FutureExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use http_body_util::BodyExt;
use tokio::sync::oneshot;
use wasmtime_wasi_http::p2::bindings::http::types::{ErrorCode, Scheme};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::{Error, WasiHttpView};

use super::call::{CallError, Exports, Live, classify};
use super::convert::host_owned;
use super::outbound::full_body;
use wharf_core::request::{BodyError, Request, Response, Sink};

type Head = Result<hyper::Response<HyperOutgoingBody>, ErrorCode>;

impl Live<Exports> {
    /// Calls `wasi:http/incoming-handler.handle` with `req`. With `sink`
    /// the head is sent as soon as the guest sets it and the body as it is
    /// written; the response returned then has an empty body.
    pub(super) async fn http_async(
        &mut self,
        req: &Request,
        sink: Option<&Sink>,
    ) -> Result<Response, CallError> {
        let Exports::Http(proxy) = &self.exports else {
            return Err(CallError::Internal("not a wasi:http component".into()));
        };
        let handle = proxy.wasi_http_incoming_handler().func_handle();
        self.begin(req, true);
        let deadline = self.store.data().deadline_at;
        let (tx, rx) = oneshot::channel();
        let over = OverLimit::default();
        let resources = {
            let mut view = self.store.data_mut().http();
            view.new_incoming_request(Scheme::Http, incoming(req, &over))
                .and_then(|request| Ok((request, view.new_response_outparam(tx)?)))
        };
        let (request, out) = resources.map_err(|e| CallError::Internal(format!("{e:#}")))?;
        let limit = self.limits.response_body;
        let call = handle.call_async(&mut self.store, (request, out));
        let exchanged = super::call::by_deadline(deadline, exchange(call, rx, sink, limit));
        let (ended, answer) = match exchanged.await {
            Some(done) => done,
            // Blocked in a host call past the deadline (waiting to write to
            // a client that does not read, say): the instance is abandoned.
            None => return Err(CallError::Deadline),
        };
        let result = match ended {
            // Left running half-way: `in_call` stays set, the instance is
            // not used again.
            None => answer,
            Some(ended) => {
                self.in_call = false;
                ended.map_err(|err| classify(&self.store, err)).and(answer)
            }
        };
        // A guest that failed after its upload passed the limit is
        // answered as the upload deserves (one that answered is not).
        match (result, over.get()) {
            (Err(_), Some(limit)) => Err(CallError::BodyTooLarge(*limit)),
            (result, _) => result,
        }
    }
}

/// The neutral request as the guest's `incoming-request`: the host from
/// `Host` (or `localhost`), the path below the agent's mount point, the
/// request id and the metadata filters attached as headers.
pub(super) fn incoming(
    req: &Request,
    over: &OverLimit,
) -> http::Request<wasmtime_wasi_http::WasiBody> {
    let authority = req
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| h.parse::<http::uri::Authority>().is_ok())
        .unwrap_or("localhost");
    let mut uri = format!("http://{authority}{}", req.path);
    if !req.query.is_empty() {
        uri.push('?');
        uri.push_str(&req.query);
    }
    let uri = uri
        .parse::<http::Uri>()
        .unwrap_or_else(|_| http::Uri::from_static("http://localhost/"));
    let body = match req.incoming.as_ref().and_then(|i| i.take()) {
        Some(chunks) => streamed_body(chunks, over.clone()),
        None => full_body(req.body.clone()),
    };
    let mut request = http::Request::new(body);
    *request.method_mut() = req.method.clone();
    *request.uri_mut() = uri;
    let headers = request.headers_mut();
    *headers = req.headers.clone();
    if let Ok(id) = HeaderValue::from_str(&req.id) {
        headers.insert(HeaderName::from_static("x-request-id"), id);
    }
    for (key, value) in &req.metadata {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(format!("x-wharf-meta-{key}").as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    request
}

/// Set when a request body read as it arrived passed its limit.
pub(super) type OverLimit = std::sync::Arc<std::sync::OnceLock<usize>>;

/// A request body the guest reads as it arrives; past the limit, or when
/// the client goes away, its next read fails.
fn streamed_body(
    chunks: wharf_core::request::Chunks,
    over: OverLimit,
) -> wasmtime_wasi_http::WasiBody {
    use futures_util::StreamExt;
    let frames = chunks.map(move |chunk| match chunk {
        Ok(bytes) => Ok(hyper::body::Frame::data(bytes)),
        Err(BodyError::TooLarge(limit)) => {
            let _ = over.set(limit);
            Err(Error::HttpRequestBodySize(Some(limit as u64)))
        }
        Err(err) => Err(Error::InternalError(Some(err.to_string()))),
    });
    http_body_util::StreamBody::new(frames).boxed_unsync()
}

/// Drives the guest's `handle` and its response together: the head when it
/// is set, then every chunk of the body until it ends. Returns how the
/// call ended (`None`: it was left half-way) and the answer.
async fn exchange(
    call: impl Future<Output = wasmtime::Result<()>>,
    mut rx: oneshot::Receiver<Head>,
    sink: Option<&Sink>,
    limit: usize,
) -> (Option<wasmtime::Result<()>>, Result<Response, CallError>) {
    let mut call = std::pin::pin!(call);

    let mut ended = None;
    let head = tokio::select! {
        biased;
        head = &mut rx => head.ok(),
        result = &mut call => {
            ended = Some(result);
            rx.try_recv().ok()
        }
    };
    let resp = match head {
        Some(Ok(resp)) => resp,
        Some(Err(code)) => {
            let why = format!("the component answered with an error: {code:?}");
            return (finish(call, ended).await, Err(CallError::Internal(why)));
        }
        None => {
            let ended = finish(call, ended).await;
            let why = "the component returned without setting a response";
            return (ended, Err(CallError::InvalidResponse(why.into())));
        }
    };
    let (parts, mut body) = resp.into_parts();
    let (headers, mut declared) = without_host_owned(parts.headers);
    // The body is gathered while it comes without waiting; once the guest
    // would make the answer wait, a sink gets the head and what came so
    // far, and the rest streams. A streamed body keeps the length the guest
    // declared (the transport frames by it, and cuts the answer off if the
    // guest breaks it); a gathered one gets the length it has.
    let mut gathered = BytesMut::new();
    let mut streaming = None;
    loop {
        let frame = match &ended {
            // What it wrote before trapping is not a whole answer.
            Some(Err(_)) => break,
            // Once `handle` has returned, everything it wrote is queued:
            // a body still open was never finished. (Unconstrained: tokio's
            // task budget must not make queued data look pending.)
            Some(Ok(())) => match tokio::task::coop::unconstrained(body.frame()).now_or_never() {
                Some(frame) => frame,
                None => {
                    let why = "the component returned with its response body unfinished";
                    return (ended, Err(CallError::InvalidResponse(why.into())));
                }
            },
            None => tokio::select! {
                biased;
                result = &mut call => {
                    ended = Some(result);
                    continue;
                }
                frame = body.frame() => frame,
                _ = std::future::ready(()), if streaming.is_none() && sink.is_some() => {
                    let sink = sink.expect("checked by the branch");
                    let mut head = headers.clone();
                    if let Some(length) = declared.take() {
                        head.insert(http::header::CONTENT_LENGTH, length);
                    }
                    let started = sink
                        .start(parts.status, head)
                        .and_then(|()| sink.write(gathered.split().freeze()))
                        .map_err(|e| e.to_string());
                    if let Err(why) = started {
                        return (None, Err(CallError::InvalidResponse(why)));
                    }
                    streaming = Some(sink);
                    continue;
                }
            },
        };
        let chunk = match frame {
            None => break,
            Some(Ok(frame)) => match frame.into_data() {
                Ok(chunk) => chunk,
                // Trailers are not passed on.
                Err(_) => continue,
            },
            Some(Err(err)) => {
                let ended = finish(call, ended).await;
                let why = format!("the response body failed: {err}");
                return (ended, Err(CallError::InvalidResponse(why)));
            }
        };
        let written = match streaming {
            Some(sink) => sink.write(chunk).map_err(|e| e.to_string()),
            None => gather(&mut gathered, chunk, limit),
        };
        if let Err(why) = written {
            // The guest is not waited for: the instance is abandoned.
            return (None, Err(CallError::InvalidResponse(why)));
        }
    }
    let ended = finish(call, ended).await;
    let body = Bytes::from(gathered);
    (ended, Ok(Response::new(parts.status, headers, body)))
}

/// The component's headers without those the host owns (hop-by-hop,
/// framing), and the `content-length` it declared, which a streamed body
/// keeps (the transport frames by it, and cuts the answer off if the
/// component breaks it).
pub(super) fn without_host_owned(mut headers: HeaderMap) -> (HeaderMap, Option<HeaderValue>) {
    let owned: Vec<HeaderName> = headers.keys().filter(|n| host_owned(n)).cloned().collect();
    let mut declared = None;
    for name in owned {
        let value = headers.remove(&name);
        if name == http::header::CONTENT_LENGTH {
            declared = value;
        }
    }
    (headers, declared)
}

/// How the call ended: as it already did, or once it returns.
async fn finish(
    call: std::pin::Pin<&mut impl Future<Output = wasmtime::Result<()>>>,
    ended: Option<wasmtime::Result<()>>,
) -> Option<wasmtime::Result<()>> {
    Some(match ended {
        Some(result) => result,
        None => call.await,
    })
}

pub(super) fn gather(into: &mut BytesMut, chunk: Bytes, limit: usize) -> Result<(), String> {
    if into.len() + chunk.len() > limit {
        return Err(format!(
            "the response body passed the limit of {limit} bytes"
        ));
    }
    into.extend_from_slice(&chunk);
    Ok(())
}
