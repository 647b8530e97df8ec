//! One way in: what every transport does with a request around the
//! pipeline. The neutral request with its id ([`Request::new`]), the span
//! it runs in ([`Request::span`]) and `x-request-id` on its answer; for
//! HTTP, the body read only when the pipeline asks and the answer written
//! back.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request as HttpRequest};
use axum::response::Response;
use http::{HeaderMap, HeaderValue};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tracing::Instrument;

use crate::error::ApiError;
use wharf_core::request::{self, Request};
use wharf_pipeline::Pipeline;

/// What every HTTP handler shares.
pub struct AppState {
    /// The pipeline every request goes through.
    pub pipeline: Arc<Pipeline>,
    /// A2A tasks, for the agents that serve A2A.
    pub a2a: Arc<wharf_a2a::A2a>,
    /// The agent whose card is the host's own, at `/.well-known/agent-card.json`.
    pub a2a_default: Option<String>,
}

/// Runs `answer` in `span` and names the request on its answer.
pub(crate) async fn traced(
    id: &str,
    span: tracing::Span,
    answer: impl Future<Output = Response>,
) -> Response {
    let started = std::time::Instant::now();
    let mut response = async {
        let response = answer.await;
        tracing::debug!(status = response.status().as_u16(), elapsed = ?started.elapsed(), "done");
        response
    }
    .instrument(span)
    .await;
    mark(response.headers_mut(), id);
    response
}

/// `x-request-id: ID` on an answer's headers.
pub(crate) fn mark(headers: &mut HeaderMap, id: &str) {
    if let Ok(value) = HeaderValue::from_str(id) {
        headers.insert("x-request-id", value);
    }
}

pub(crate) fn client_of(req: &HttpRequest) -> Option<SocketAddr> {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0)
}

/// The neutral request for an HTTP request, its body read only when the
/// pipeline asks (after the request-headers filters); `below` gives the
/// path below the mount point.
pub(crate) fn neutral(req: HttpRequest, below: fn(&str) -> String) -> (Request, request::Body) {
    let client = client_of(&req);
    let (parts, body) = req.into_parts();
    let mut request = Request::new(parts.method, below(parts.uri.path()));
    request.query = parts.uri.query().unwrap_or("").to_string();
    request.headers = parts.headers;
    request.client = client;
    (request, request::Body::Wire(Box::new(Wire(body))))
}

/// An HTTP request body, read by the pipeline when it asks.
struct Wire(Body);

impl request::Wire for Wire {
    fn read(
        self: Box<Self>,
        limit: usize,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<bytes::Bytes, request::BodyError>> + Send>>
    {
        Box::pin(read_body(self.0, limit))
    }

    fn is_end_stream(&self) -> bool {
        hyper::body::Body::is_end_stream(&self.0)
    }

    fn chunks(self: Box<Self>, limit: usize) -> request::Chunks {
        use futures_util::StreamExt;
        // A declared length past the limit is refused before anything is read.
        if hyper::body::Body::size_hint(&self.0).lower() > limit as u64 {
            let refused = Err(request::BodyError::TooLarge(limit));
            return Box::pin(futures_util::stream::once(std::future::ready(refused)));
        }
        let mut seen = 0usize;
        Box::pin(self.0.into_data_stream().map(move |chunk| {
            let chunk = chunk.map_err(|_| request::BodyError::Unreadable)?;
            seen += chunk.len();
            if seen > limit {
                return Err(request::BodyError::TooLarge(limit));
            }
            Ok(chunk)
        }))
    }
}

/// The HTTP answer for what the pipeline produced (and counted): a whole
/// or a streamed body, or the error's JSON (logged, never leaking
/// internals). [`traced`] names it by its request's id, which tells it
/// from the transport's own answers as it leaves.
pub(crate) fn answer(result: Result<request::Response, wharf_pipeline::PipelineError>) -> Response {
    use axum::response::IntoResponse;
    answer_of(result).unwrap_or_else(IntoResponse::into_response)
}

fn answer_of(
    result: Result<request::Response, wharf_pipeline::PipelineError>,
) -> Result<Response, ApiError> {
    let resp = crate::error::outcome(result)?;
    let body = match resp.stream {
        None => Body::from(resp.body),
        Some(stream) if resp.body.is_empty() => Body::from_stream(stream),
        Some(stream) => {
            let head = futures_util::stream::once(std::future::ready(Ok(resp.body)));
            Body::from_stream(futures_util::StreamExt::chain(head, stream))
        }
    };
    let mut out = Response::new(body);
    *out.status_mut() = resp.status;
    *out.headers_mut() = resp.headers;
    Ok(out)
}

/// Collects the body, refusing it past `limit` (declared or actual).
async fn read_body(body: Body, limit: usize) -> Result<bytes::Bytes, request::BodyError> {
    // A declared length past the limit is refused before anything is read.
    if hyper::body::Body::size_hint(&body).lower() > limit as u64 {
        return Err(request::BodyError::TooLarge(limit));
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.downcast_ref::<LengthLimitError>().is_some() => {
            Err(request::BodyError::TooLarge(limit))
        }
        Err(_) => Err(request::BodyError::Unreadable),
    }
}
