//! The gRPC binding (A2A section 10): `lf.a2a.v1.A2AService` on the HTTP
//! listener (h2c, told apart by its `application/grpc` content type),
//! served as a transcoding of the HTTP+JSON binding along the proto's own
//! `google.api.http` mapping. A call's message is decoded, read as
//! ProtoJSON, and becomes the HTTP+JSON call it maps to, for the agent its
//! `tenant` names (the card's GRPC interface gives it; none: the host's
//! default agent). That call goes through the pipeline as any other, so
//! filters, limits, scoping and the tasks are the same whatever the
//! binding (and so are the decoding bounds, checked on the wire bytes
//! before prost decodes them: [`bounds`]); its JSON answer (or its server-sent events) is encoded back
//! into the method's response messages, with the gRPC status in trailers.

use std::sync::Arc;

use axum::extract::{Path, Request as HttpRequest, State};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http::{HeaderMap, HeaderValue, Method};
use http_body_util::{BodyExt, Limited};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use wharf_a2a_proto::v1;

use super::{A2aCall, Op, rest};
use wire::{
    code_of_http, error_status, frame, is_media, status_only, unframe, unreadable, with_trailers,
};

mod bounds;
mod wire;
use crate::ingress::{AppState, client_of, traced};
use wharf_core::request::{self, Request};

/// The content type of every gRPC message (`application/grpc+proto` too).
const GRPC: &str = "application/grpc";

/// One method of the service: how its request becomes an HTTP+JSON call,
/// and which message its answer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rpc {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreatePushConfig,
    GetPushConfig,
    ListPushConfigs,
    DeletePushConfig,
    GetExtendedAgentCard,
}

impl Rpc {
    fn of(name: &str) -> Option<Rpc> {
        Some(match name {
            "SendMessage" => Rpc::SendMessage,
            "SendStreamingMessage" => Rpc::SendStreamingMessage,
            "GetTask" => Rpc::GetTask,
            "ListTasks" => Rpc::ListTasks,
            "CancelTask" => Rpc::CancelTask,
            "SubscribeToTask" => Rpc::SubscribeToTask,
            "CreateTaskPushNotificationConfig" => Rpc::CreatePushConfig,
            "GetTaskPushNotificationConfig" => Rpc::GetPushConfig,
            "ListTaskPushNotificationConfigs" => Rpc::ListPushConfigs,
            "DeleteTaskPushNotificationConfig" => Rpc::DeletePushConfig,
            "GetExtendedAgentCard" => Rpc::GetExtendedAgentCard,
            _ => return None,
        })
    }

    fn streams(self) -> bool {
        matches!(self, Rpc::SendStreamingMessage | Rpc::SubscribeToTask)
    }

    /// The request message as ProtoJSON.
    fn request_json(self, message: &[u8]) -> Result<Value, tonic::Status> {
        match self {
            Rpc::SendMessage | Rpc::SendStreamingMessage => json::<v1::SendMessageRequest>(message),
            Rpc::GetTask => json::<v1::GetTaskRequest>(message),
            Rpc::ListTasks => json::<v1::ListTasksRequest>(message),
            Rpc::CancelTask => json::<v1::CancelTaskRequest>(message),
            Rpc::SubscribeToTask => json::<v1::SubscribeToTaskRequest>(message),
            Rpc::CreatePushConfig => json::<v1::TaskPushNotificationConfig>(message),
            Rpc::GetPushConfig => json::<v1::GetTaskPushNotificationConfigRequest>(message),
            Rpc::ListPushConfigs => json::<v1::ListTaskPushNotificationConfigsRequest>(message),
            Rpc::DeletePushConfig => json::<v1::DeleteTaskPushNotificationConfigRequest>(message),
            Rpc::GetExtendedAgentCard => json::<v1::GetExtendedAgentCardRequest>(message),
        }
    }

    /// The HTTP+JSON call this method maps to (the proto's
    /// `google.api.http` rules): method, path below the agent's base URL,
    /// query and JSON body, from the request's fields less `tenant`.
    fn as_rest(self, mut fields: Map<String, Value>) -> Result<RestCall, tonic::Status> {
        let mut take = |name: &str| -> Result<String, tonic::Status> {
            match fields.remove(name) {
                Some(Value::String(s)) if !s.is_empty() => Ok(path_segment(&s)),
                _ => Err(tonic::Status::invalid_argument(format!(
                    "`{}` is required",
                    snake(name)
                ))),
            }
        };
        let (method, path) = match self {
            Rpc::SendMessage => (Method::POST, "/message:send".to_string()),
            Rpc::SendStreamingMessage => (Method::POST, "/message:stream".to_string()),
            Rpc::GetTask => (Method::GET, format!("/tasks/{}", take("id")?)),
            Rpc::ListTasks => (Method::GET, "/tasks".to_string()),
            Rpc::CancelTask => (Method::POST, format!("/tasks/{}:cancel", take("id")?)),
            Rpc::SubscribeToTask => (Method::POST, format!("/tasks/{}:subscribe", take("id")?)),
            Rpc::CreatePushConfig => {
                let task = take("taskId")?;
                (
                    Method::POST,
                    format!("/tasks/{task}/pushNotificationConfigs"),
                )
            }
            Rpc::GetPushConfig | Rpc::DeletePushConfig => {
                let task = take("taskId")?;
                let id = take("id")?;
                let method = match self {
                    Rpc::GetPushConfig => Method::GET,
                    _ => Method::DELETE,
                };
                (
                    method,
                    format!("/tasks/{task}/pushNotificationConfigs/{id}"),
                )
            }
            Rpc::ListPushConfigs => {
                let task = take("taskId")?;
                (
                    Method::GET,
                    format!("/tasks/{task}/pushNotificationConfigs"),
                )
            }
            Rpc::GetExtendedAgentCard => (Method::GET, "/extendedAgentCard".to_string()),
        };
        let (query, body) = if method == Method::GET || method == Method::DELETE {
            (query_of(&fields), Bytes::new())
        } else {
            let body = serde_json::to_vec(&Value::Object(fields)).unwrap_or_default();
            (String::new(), Bytes::from(body))
        };
        let op = rest::Op::parse(&method, &path)
            .ok_or_else(|| tonic::Status::invalid_argument("an id is not a valid path segment"))?;
        Ok(RestCall {
            method,
            path,
            query,
            body,
            op,
        })
    }

    /// The answer's JSON as this method's response message.
    fn response(self, answer: Value) -> Result<Bytes, serde_json::Error> {
        Ok(match self {
            Rpc::SendMessage => message::<v1::SendMessageResponse>(answer)?,
            Rpc::GetTask | Rpc::CancelTask => message::<v1::Task>(answer)?,
            Rpc::ListTasks => message::<v1::ListTasksResponse>(answer)?,
            Rpc::CreatePushConfig | Rpc::GetPushConfig => {
                message::<v1::TaskPushNotificationConfig>(answer)?
            }
            Rpc::ListPushConfigs => message::<v1::ListTaskPushNotificationConfigsResponse>(answer)?,
            Rpc::DeletePushConfig => message::<pbjson_types::Empty>(Value::Object(Map::new()))?,
            Rpc::GetExtendedAgentCard => message::<v1::AgentCard>(answer)?,
            Rpc::SendStreamingMessage | Rpc::SubscribeToTask => {
                message::<v1::StreamResponse>(answer)?
            }
        })
    }
}

/// The HTTP+JSON call a gRPC call maps to.
#[derive(Debug)]
struct RestCall {
    method: Method,
    path: String,
    query: String,
    body: Bytes,
    op: rest::Op,
}

/// `POST /lf.a2a.v1.A2AService/{method}`.
pub(crate) async fn call(
    State(state): State<Arc<AppState>>,
    Path(method): Path<String>,
    req: HttpRequest,
) -> Response {
    let media = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !media.starts_with(GRPC) {
        // gRPC's protocol: a request not typed gRPC is told so in HTTP.
        return crate::error::ApiError::new(
            http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("gRPC calls are typed {GRPC}"),
        )
        .into_response();
    }
    match prepare(&state, &method, req).await {
        Ok((rpc, name, request, terminal)) => {
            let span = request.span(&name);
            span.record("binding", "grpc");
            let id = request.id.clone();
            // The JSON the call became, read by the pipeline under the
            // agent's own body limit (and shown to body filters).
            let body = request::Body::Ready(request.body.clone());
            traced(&id, span, async {
                let result = state
                    .pipeline
                    .handle_with(&name, request, body, &terminal)
                    .await;
                encode(rpc, result).await
            })
            .await
        }
        Err(status) => status_only(status),
    }
}

/// The gRPC call read into the HTTP+JSON request it maps to, the agent it
/// is for, and the terminal that answers it.
async fn prepare(
    state: &AppState,
    method: &str,
    req: HttpRequest,
) -> Result<(Rpc, String, Request, A2aCall), tonic::Status> {
    let rpc = Rpc::of(method).ok_or_else(|| {
        tonic::Status::unimplemented(format!("lf.a2a.v1.A2AService has no method `{method}`"))
    })?;
    let encoding = req
        .headers()
        .get("grpc-encoding")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity");
    if encoding != "identity" {
        return Err(tonic::Status::unimplemented(format!(
            "message encoding `{encoding}` is not supported: send messages uncompressed"
        )));
    }
    let client = client_of(&req);
    let (parts, body) = req.into_parts();
    // The agent is named inside the message, so it is read before the
    // agent's own limit is known: at most the largest of them (the
    // agent's then applies to the call as to any).
    let limit = state
        .pipeline
        .routes()
        .iter()
        .map(|r| r.core.policy.limits.request_body)
        .max()
        .unwrap_or(wharf_config::Limits::default().request_body);
    let bytes = match Limited::new(body, limit.saturating_add(5)).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return Err(tonic::Status::resource_exhausted(format!(
                "the request message is over the limit of {limit} bytes, or was cut off"
            )));
        }
    };
    let message = unframe(&bytes)?;
    // Bounded before prost builds anything from it (a flood of empty parts
    // is refused here, as the JSON bindings refuse theirs).
    if let Err(e) = bounds::check(rpc, message) {
        use wharf_tasks::bounds::BoundError;
        if e != BoundError::Malformed {
            return Err(tonic::Status::invalid_argument(format!(
                "the request is {e}"
            )));
        }
    }
    let Value::Object(mut fields) = rpc.request_json(message)? else {
        return Err(tonic::Status::internal(
            "a message read as JSON is an object",
        ));
    };
    let tenant = match fields.remove("tenant") {
        Some(Value::String(t)) if !t.is_empty() => Some(t),
        _ => state.a2a_default.clone(),
    };
    let Some(name) = tenant else {
        return Err(tonic::Status::not_found(
            "name the agent in `tenant` (the agent card's GRPC interface gives it): this host has no default A2A agent",
        ));
    };
    let serves = state
        .pipeline
        .lookup_settled(&name)
        .await
        .is_some_and(|r| r.core.entry.image.serves_a2a());
    if !serves {
        return Err(tonic::Status::not_found(format!(
            "no agent `{name}` serves A2A here"
        )));
    }
    let call = rpc.as_rest(fields)?;
    let mut request = Request::new(call.method, call.path);
    request.query = call.query;
    request.headers = metadata_as_headers(parts.headers);
    request.client = client;
    request.body = call.body;
    let terminal = A2aCall {
        a2a: state.a2a.clone(),
        op: Op::Rest(call.op),
    };
    Ok((rpc, name, request, terminal))
}

/// The call's metadata as the HTTP+JSON request's headers: the body is
/// JSON now, and gRPC's own headers say nothing to a filter.
fn metadata_as_headers(mut headers: HeaderMap) -> HeaderMap {
    headers.remove(http::header::CONTENT_LENGTH);
    headers.remove(http::header::TE);
    headers.remove("grpc-encoding");
    headers.remove("grpc-accept-encoding");
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers
}

/// A request message decoded and read as ProtoJSON.
fn json<M: prost::Message + Default + Serialize>(bytes: &[u8]) -> Result<Value, tonic::Status> {
    let message = M::decode(bytes).map_err(|e| {
        tonic::Status::invalid_argument(format!("the request is not a valid message: {e}"))
    })?;
    serde_json::to_value(&message)
        .map_err(|e| tonic::Status::internal(format!("the request could not be read: {e}")))
}

/// A JSON answer as the wire bytes of message `M`, framed.
fn message<M: prost::Message + DeserializeOwned>(
    answer: Value,
) -> Result<Bytes, serde_json::Error> {
    let message: M = serde_json::from_value(answer)?;
    Ok(frame(&message.encode_to_vec()))
}

/// A path segment as the HTTP+JSON binding reads it (percent-encoded).
fn path_segment(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// `taskId` → `task_id`, as the proto names the field.
fn snake(name: &str) -> String {
    name.chars()
        .flat_map(|c| {
            let lower = c.to_ascii_lowercase();
            (c.is_ascii_uppercase().then_some('_').into_iter()).chain([lower])
        })
        .collect()
}

/// The request's remaining fields as the query string the HTTP+JSON binding
/// reads (ProtoJSON names, which are its parameters' names).
fn query_of(fields: &Map<String, Value>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (key, value) in fields {
        match value {
            Value::String(s) => query.append_pair(key, s),
            Value::Number(n) => query.append_pair(key, &n.to_string()),
            Value::Bool(b) => query.append_pair(key, if *b { "true" } else { "false" }),
            _ => &mut query,
        };
    }
    query.finish()
}

/// The pipeline's answer as the gRPC response: the JSON answer (or each
/// event of a stream) as the method's message, then `grpc-status: 0`; an
/// error answer, the binding's or a filter's, as a gRPC status.
async fn encode(
    rpc: Rpc,
    result: Result<request::Response, wharf_pipeline::PipelineError>,
) -> Response {
    let resp = match crate::error::outcome(result) {
        Ok(resp) => resp,
        Err(api) => return status_only(tonic::Status::new(code_of_http(api.status), api.message)),
    };
    let json = is_media(&resp.headers, "application/json");
    let sse = is_media(&resp.headers, "text/event-stream");
    if !resp.status.is_success() || !(json || sse) {
        let resp = match resp.gathered().await {
            Ok(resp) => resp,
            Err(cut) => return status_only(tonic::Status::internal(cut.to_string())),
        };
        return status_only(error_status(resp.status, &resp.headers, &resp.body));
    }
    let metadata = resp.headers.clone();
    match (rpc.streams(), resp.stream) {
        (true, Some(events)) if sse => streamed(rpc, metadata, events),
        (false, None) if json => {
            let answer = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
            match rpc.response(answer) {
                Ok(bytes) => with_trailers(metadata, futures_util::stream::iter([Ok(bytes)])),
                Err(e) => status_only(unreadable(&e)),
            }
        }
        _ => status_only(tonic::Status::internal(
            "the answer was not of the kind this method returns",
        )),
    }
}

/// A stream of server-sent events, each event a `StreamResponse`.
fn streamed(rpc: Rpc, metadata: HeaderMap, events: request::BodyStream) -> Response {
    let mut pending = BytesMut::new();
    let frames = events.map(move |chunk| {
        let chunk =
            chunk.map_err(|e| tonic::Status::internal(format!("the stream was cut off: {e}")))?;
        pending.extend_from_slice(&chunk);
        let mut out = BytesMut::new();
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let event = pending.split_to(end + 2);
            let Some(data) = event.strip_prefix(b"data: ") else {
                continue;
            };
            let answer: Value =
                serde_json::from_slice(&data[..data.len() - 2]).map_err(|e| unreadable(&e))?;
            out.extend_from_slice(&rpc.response(answer).map_err(|e| unreadable(&e))?);
        }
        Ok(out.freeze())
    });
    with_trailers(metadata, frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn methods_map_to_their_http_json_calls() {
        let get = v1::GetTaskRequest {
            tenant: "scribe".into(),
            id: "t 1".into(),
            history_length: Some(2),
        };
        let Value::Object(mut fields) = Rpc::GetTask
            .request_json(&prost::Message::encode_to_vec(&get))
            .unwrap()
        else {
            panic!("an object");
        };
        assert_eq!(
            fields.remove("tenant"),
            Some(Value::String("scribe".into()))
        );
        let call = Rpc::GetTask.as_rest(fields).unwrap();
        assert_eq!(
            (call.method, call.path.as_str()),
            (Method::GET, "/tasks/t%201")
        );
        assert_eq!(call.query, "historyLength=2");
        assert_eq!(call.op, rest::Op::Get("t 1".into()));
        let missing = Rpc::CancelTask.as_rest(Map::new()).unwrap_err();
        assert_eq!(missing.code(), Code::InvalidArgument);
        assert!(missing.message().contains("`id`"), "{}", missing.message());
        let fields = |v: Value| serde_json::from_value(v).unwrap();
        let push = Rpc::DeletePushConfig
            .as_rest(fields(serde_json::json!({"taskId": "t", "id": "c 1"})))
            .unwrap();
        assert_eq!(push.op, rest::Op::PushDelete("t".into(), "c 1".into()));
        // What the HTTP+JSON binding cannot name, gRPC cannot either.
        let slash = Rpc::GetPushConfig
            .as_rest(fields(serde_json::json!({"taskId": "t", "id": "c/1"})))
            .unwrap_err();
        assert_eq!(slash.code(), Code::InvalidArgument);
    }
}
