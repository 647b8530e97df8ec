//! A2A over HTTP: each agent that serves A2A answers at its own base URL,
//! `/a2a/{name}`, with its agent card at
//! `/a2a/{name}/.well-known/agent-card.json`, the JSON-RPC binding at the
//! base URL itself and the HTTP+JSON binding below it. A call is decoded
//! into the neutral request and goes through the pipeline (filters, route,
//! limits, metrics) like any HTTP call; the binding's decoding and
//! encoding is the terminal the pipeline hands the request to.

mod card;
pub(crate) mod grpc;
mod jsonrpc;
mod rest;

use std::sync::Arc;

use axum::extract::{Path, Request as HttpRequest, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};
use wharf_tasks::{A2aError, A2aErrorKind, StreamResponse};

use super::error::ApiError;
use crate::ingress::{AppState, answer, neutral, traced};
use wharf_a2a::A2a;
use wharf_core::request::{self, Request};
use wharf_pipeline::{PipelineError, Terminal};
use wharf_routing::AgentRoute;

/// The protocol versions served (`Major.Minor`; any 1.x client is served
/// with 1.0 semantics, as the specification's minor versions are
/// compatible).
const SUPPORTED_MAJOR: &str = "1";

/// `GET /.well-known/agent-card.json`: the card of the agent the
/// configuration names as the host's default (`a2a { default "NAME" }`).
pub(super) async fn host_card(State(state): State<Arc<AppState>>, req: HttpRequest) -> Response {
    match &state.a2a_default {
        Some(name) => {
            state.pipeline.settled(name).await;
            card::serve(&state, name, &req)
        }
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            "no_default_agent",
            "this host names no default A2A agent: each agent's card is at /a2a/NAME/.well-known/agent-card.json",
        )
        .into_response(),
    }
}

/// Any method on `/a2a/{name}` and below.
pub(super) async fn call(
    State(state): State<Arc<AppState>>,
    Path(params): Path<Vec<(String, String)>>,
    req: HttpRequest,
) -> Response {
    let name = params.first().map(|(_, v)| v.clone()).unwrap_or_default();
    let rest = path_below_base(req.uri().path());
    if rest == "/.well-known/agent-card.json" {
        state.pipeline.settled(&name).await;
        return card::serve(&state, &name, &req).into_response();
    }
    let Some(route) = state.pipeline.lookup_settled(&name).await else {
        return ApiError::from(&state.pipeline.not_served(&name)).into_response();
    };
    if !route.core.entry.image.serves_a2a() {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "not_a2a",
            format!("agent `{name}` does not serve A2A"),
        )
        .into_response();
    }
    let op = match rest.as_str() {
        "/" => Op::JsonRpc,
        _ => match rest::Op::parse(req.method(), &rest) {
            Some(op) => Op::Rest(op),
            None => return rest::error(&rest::unknown_route(req.method(), &rest)),
        },
    };
    let (request, body) = neutral(req, path_below_base);
    let span = request.span(&name);
    span.record("binding", op.binding());
    let terminal = A2aCall {
        a2a: state.a2a.clone(),
        op,
    };
    let id = request.id.clone();
    traced(&id, span, async {
        let result = state
            .pipeline
            .handle_with(&name, request, body, &terminal)
            .await;
        answer(result)
    })
    .await
}

/// Which binding a call came in on.
enum Op {
    JsonRpc,
    Rest(rest::Op),
}

impl Op {
    fn binding(&self) -> &'static str {
        match self {
            Op::JsonRpc => "jsonrpc",
            Op::Rest(_) => "rest",
        }
    }
}

/// The binding's decoding, the operation and the encoding of its answer,
/// run once the request filters have passed.
struct A2aCall {
    a2a: Arc<A2a>,
    op: Op,
}

impl Terminal for A2aCall {
    fn answer<'a>(
        &'a self,
        route: &'a Arc<AgentRoute>,
        req: Request,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<request::Response, PipelineError>> + Send + 'a>>
    {
        Box::pin(async move {
            Ok(match &self.op {
                Op::JsonRpc => jsonrpc::answer(&self.a2a, route, req).await,
                Op::Rest(op) => rest::answer(&self.a2a, route, req, op).await,
            })
        })
    }
}

/// `/a2a/{name}/rest…` → `/rest…`; the base itself is `/`.
fn path_below_base(raw: &str) -> String {
    let after = raw.strip_prefix("/a2a/").unwrap_or("");
    match after.find('/') {
        Some(i) => after[i..].to_string(),
        None => "/".to_string(),
    }
}

/// The `A2A-Version` the client asked for (header, else query parameter);
/// none means 0.3, which this server does not speak.
fn check_version(req: &Request) -> Result<(), A2aError> {
    let from_query = || {
        form_urlencoded::parse(req.query.as_bytes())
            .find(|(k, _)| k.eq_ignore_ascii_case("A2A-Version"))
            .map(|(_, v)| v.into_owned())
    };
    let asked = req
        .headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .or_else(from_query)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "0.3".to_string());
    if asked.split('.').next() == Some(SUPPORTED_MAJOR) {
        return Ok(());
    }
    Err(A2aError::new(A2aErrorKind::VersionNotSupported)
        .message(format!(
            "A2A version `{asked}` is not supported; send `A2A-Version: 1.0`"
        ))
        .with("requested", asked)
        .with("supported", "1.0"))
}

/// A JSON body checked against the decoding bounds (`wharf_tasks::bounds`)
/// on its bytes, before any value is built from it.
fn bounded(body: &[u8]) -> Result<(), A2aError> {
    use wharf_tasks::bounds::{BoundError, MAX_PARTS, check_json};
    match check_json(body) {
        Ok(()) => Ok(()),
        // The JSON parser that follows says where it is broken.
        Err(BoundError::Malformed) => Ok(()),
        Err(BoundError::TooManyParts) => Err(A2aError::new(A2aErrorKind::InvalidParams).message(
            format!("Invalid parameters: message.parts holds more than {MAX_PARTS} parts; at most {MAX_PARTS} are accepted"),
        )),
        Err(e) => Err(A2aError::new(A2aErrorKind::InvalidRequest)
            .message(format!("Request payload validation error: the body is {e}"))),
    }
}

/// A JSON body must say so: `application/json` or `application/a2a+json`.
/// Anything else is `ContentTypeNotSupported` (-32005, HTTP 415), with the
/// type received and the types served in its `ErrorInfo`.
fn check_json(req: &Request) -> Result<(), A2aError> {
    let media = req
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    if media == "application/json" || media == "application/a2a+json" {
        return Ok(());
    }
    let shown = if media.is_empty() { "none" } else { &media };
    Err(A2aError::new(A2aErrorKind::ContentTypeNotSupported)
        .message(format!(
            "Incompatible content types: `{shown}` is not application/json or application/a2a+json"
        ))
        .with("contentType", shown.to_string())
        .with("supported", "application/json, application/a2a+json"))
}

/// A JSON answer.
fn json_response(status: StatusCode, value: &impl serde::Serialize) -> request::Response {
    json_body(status, Json::of(value))
}

/// A response of JSON already written out.
fn json_body(status: StatusCode, body: Json) -> request::Response {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    request::Response::new(status, headers, Bytes::from(body.0))
}

/// A JSON value written out from its type: an answer is serialized once,
/// with no `serde_json::Value` tree built between the task and the bytes.
struct Json(Vec<u8>);

impl Json {
    fn of(value: &(impl serde::Serialize + ?Sized)) -> Json {
        let mut out = Vec::new();
        Json::write(&mut out, value);
        Json(out)
    }

    /// Appends `value` as JSON to `out`; `null` for one that cannot be
    /// (none of the protocol's types fails).
    fn write(out: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
        let start = out.len();
        if serde_json::to_writer(&mut *out, value).is_err() {
            out.truncate(start);
            out.extend_from_slice(b"null");
        }
    }
}

/// What a binding's call answers: JSON written out, or a stream of events.
enum Answer {
    Json(Json),
    Stream(tokio::sync::mpsc::Receiver<StreamResponse>),
}

impl Answer {
    fn of(value: &(impl serde::Serialize + ?Sized)) -> Answer {
        Answer::Json(Json::of(value))
    }

    /// A send's answer: `{"task": …}`, or `{"message": …}` when the agent
    /// answered directly, or its events.
    fn sent(reply: wharf_a2a::Reply) -> Answer {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "lowercase")]
        enum Sent<'a> {
            Task(&'a wharf_tasks::Task),
            Message(&'a wharf_tasks::Message),
        }
        match reply {
            wharf_a2a::Reply::Task(task) => Answer::of(&Sent::Task(&task)),
            wharf_a2a::Reply::Message(message) => Answer::of(&Sent::Message(&message)),
            wharf_a2a::Reply::Stream(events) => Answer::Stream(events),
        }
    }

    /// What a subscription or a lookup answers: the task or message bare,
    /// or its events.
    fn bare(reply: wharf_a2a::Reply) -> Answer {
        match reply {
            wharf_a2a::Reply::Task(task) => Answer::of(&task),
            wharf_a2a::Reply::Message(message) => Answer::of(&message),
            wharf_a2a::Reply::Stream(events) => Answer::Stream(events),
        }
    }
}

/// Most events written together.
const SSE_BATCH: usize = 64;

/// Server-sent events, one `data:` line of JSON per item, written by
/// `frame`.
fn sse_response(
    events: tokio::sync::mpsc::Receiver<StreamResponse>,
    frame: impl Fn(&mut Vec<u8>, &StreamResponse) + Send + Sync + 'static,
) -> request::Response {
    // Events already waiting leave together, as one write: a fast agent's
    // burst costs one system call, not one per event; none waits for more.
    let batches = futures_util::StreamExt::ready_chunks(
        tokio_stream::wrappers::ReceiverStream::new(events),
        SSE_BATCH,
    );
    let stream = futures_util::StreamExt::map(batches, move |batch| {
        let mut out = Vec::with_capacity(batch.len() * 256);
        for event in batch {
            out.extend_from_slice(b"data: ");
            frame(&mut out, &event);
            out.extend_from_slice(b"\n\n");
        }
        Ok(Bytes::from(out))
    });
    request::Response::event_stream(Box::pin(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_below_the_base() {
        assert_eq!(path_below_base("/a2a/echo"), "/");
        assert_eq!(path_below_base("/a2a/echo/"), "/");
        assert_eq!(
            path_below_base("/a2a/echo/tasks/t1:cancel"),
            "/tasks/t1:cancel"
        );
    }

    #[test]
    fn versions_are_checked_by_major() {
        let mut req = Request::new(http::Method::POST, "/");
        let err = check_version(&req).unwrap_err();
        assert_eq!(err.kind, A2aErrorKind::VersionNotSupported);
        assert_eq!(err.metadata["requested"], "0.3");
        req.headers
            .insert("a2a-version", HeaderValue::from_static("1.0"));
        assert!(check_version(&req).is_ok());
        req.headers
            .insert("a2a-version", HeaderValue::from_static("2.0"));
        assert!(check_version(&req).is_err());
        req.headers.remove("a2a-version");
        req.query = "A2A-Version=1.0".into();
        assert!(check_version(&req).is_ok());
    }

    #[test]
    fn json_bodies_must_say_so() {
        let mut req = Request::new(http::Method::POST, "/");
        assert!(check_json(&req).is_err());
        req.headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/a2a+json; charset=utf-8"),
        );
        assert!(check_json(&req).is_ok());
        req.headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain"),
        );
        assert_eq!(
            check_json(&req).unwrap_err().kind,
            A2aErrorKind::ContentTypeNotSupported
        );
    }
}
