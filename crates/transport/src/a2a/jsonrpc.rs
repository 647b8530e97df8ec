//! The JSON-RPC 2.0 binding: one POST to the agent's base URL carries
//! `{"jsonrpc":"2.0","id":…,"method":…,"params":{…}}`. Answers are JSON-RPC
//! responses (errors with HTTP 200, as JSON-RPC over HTTP has them, except
//! a body that is not JSON-typed: 415); streaming methods answer with
//! server-sent events, one JSON-RPC response per event.

use std::sync::Arc;

use http::StatusCode;
use serde_json::Value;
use wharf_tasks::{A2aError, A2aErrorKind, parse_params};

use super::{Answer, Json, check_json, check_version, json_body, json_response, sse_response};
use wharf_a2a::{A2a, Scope};
use wharf_core::request::{Request, Response};
use wharf_routing::AgentRoute;

pub(super) async fn answer(a2a: &Arc<A2a>, route: &Arc<AgentRoute>, req: Request) -> Response {
    if req.method != http::Method::POST {
        let err = A2aError::new(A2aErrorKind::InvalidRequest).message(format!(
            "Request payload validation error: JSON-RPC calls are POSTed (got {})",
            req.method
        ));
        return json_response(StatusCode::METHOD_NOT_ALLOWED, &err.to_jsonrpc(Value::Null));
    }
    if let Err(err) = check_json(&req) {
        return json_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &err.to_jsonrpc(Value::Null),
        );
    }
    let (id, method, params) = match envelope(&req.body) {
        Ok(parts) => parts,
        Err((id, err)) => return json_response(StatusCode::OK, &err.to_jsonrpc(id)),
    };
    match call(a2a, route, &req, &method, params).await {
        Ok(Answer::Json(result)) => json_body(StatusCode::OK, whole(&id, &result)),
        Ok(Answer::Stream(events)) => {
            let opening = opening(&id);
            sse_response(events, move |out, event| {
                out.extend_from_slice(&opening);
                Json::write(out, event);
                out.push(b'}');
            })
        }
        Err(err) => json_response(StatusCode::OK, &err.to_jsonrpc(id)),
    }
}

/// A whole response around a result written out.
fn whole(id: &Value, result: &Json) -> Json {
    let mut body = opening(id);
    body.extend_from_slice(&result.0);
    body.push(b'}');
    Json(body)
}

/// A response's JSON up to its result: `{"jsonrpc":"2.0","id":ID,"result":`.
fn opening(id: &Value) -> Vec<u8> {
    let mut out = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
    Json::write(&mut out, id);
    out.extend_from_slice(b",\"result\":");
    out
}

async fn call(
    a2a: &Arc<A2a>,
    route: &Arc<AgentRoute>,
    req: &Request,
    method: &str,
    params: Value,
) -> Result<Answer, A2aError> {
    check_version(req)?;
    let scope = Scope::of(route, req);
    let agent = &scope;
    Ok(match method {
        "SendMessage" | "SendStreamingMessage" => {
            let streaming = method == "SendStreamingMessage";
            let params = parse_params(params)?;
            Answer::sent(a2a.send(route.clone(), req, params, streaming).await?)
        }
        "GetTask" => Answer::of(&a2a.get(agent, parse_params(params)?)?),
        "ListTasks" => Answer::of(&a2a.list(agent, parse_params(params)?)?),
        "CancelTask" => Answer::of(&a2a.cancel(agent, parse_params(params)?).await?),
        "SubscribeToTask" => Answer::bare(a2a.subscribe(agent, parse_params(params)?).await?),
        "CreateTaskPushNotificationConfig" => {
            Answer::of(&a2a.create_push_config(agent, params).await?)
        }
        "GetTaskPushNotificationConfig" => Answer::of(&a2a.get_push_config(agent, params)?),
        "ListTaskPushNotificationConfigs" => Answer::of(&a2a.list_push_configs(agent, params)?),
        "DeleteTaskPushNotificationConfig" => {
            a2a.delete_push_config(agent, params).await?;
            Answer::Json(Json(b"{}".to_vec()))
        }
        "GetExtendedAgentCard" => {
            return Err(A2aError::new(A2aErrorKind::ExtendedAgentCardNotConfigured)
                .message("This agent has no extended agent card"));
        }
        other => {
            let shown: String = other.chars().take(64).collect();
            return Err(A2aError::new(A2aErrorKind::MethodNotFound)
                .message(format!("Method not found: `{shown}`"))
                .with("method", shown));
        }
    })
}

/// The id of a request refused before it was decoded, read without
/// building the rest (`IgnoredAny` skips every other field unbuilt).
fn id_of(body: &[u8]) -> Value {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        #[serde(default)]
        id: Value,
    }
    match serde_json::from_slice::<IdOnly>(body) {
        Ok(IdOnly {
            id: id @ (Value::String(_) | Value::Number(_)),
        }) => id,
        _ => Value::Null,
    }
}

/// The request's id, method and params; or the error (with the id when it
/// could be read) for a body that is not one JSON-RPC 2.0 request.
fn envelope(body: &[u8]) -> Result<(Value, String, Value), (Value, A2aError)> {
    super::bounded(body).map_err(|err| (id_of(body), err))?;
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        let err =
            A2aError::new(A2aErrorKind::JsonParse).message(format!("Invalid JSON payload: {e}"));
        (Value::Null, err)
    })?;
    let invalid = |id: Value, why: &str| {
        let err = A2aError::new(A2aErrorKind::InvalidRequest)
            .message(format!("Request payload validation error: {why}"));
        (id, err)
    };
    let Value::Object(mut map) = value else {
        return Err(invalid(
            Value::Null,
            "the body is not a JSON-RPC request object",
        ));
    };
    let id = match map.remove("id") {
        None => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id,
        Some(_) => {
            return Err(invalid(
                Value::Null,
                "`id` must be a string, a number or null",
            ));
        }
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "`jsonrpc` must be \"2.0\""));
    }
    let Some(Value::String(method)) = map.remove("method") else {
        return Err(invalid(id, "`method` must be a string"));
    };
    let params = match map.remove("params") {
        None | Some(Value::Null) => Value::Null,
        Some(p @ Value::Object(_)) => p,
        Some(_) => {
            let err = A2aError::new(A2aErrorKind::InvalidParams)
                .message("Invalid parameters: `params` must be an object");
            return Err((id, err));
        }
    };
    Ok((id, method, params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelopes_are_read_or_refused_with_the_right_code() {
        let (id, method, params) =
            envelope(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"t"}}"#)
                .unwrap();
        assert_eq!((id, method.as_str()), (json!(7), "GetTask"));
        assert_eq!(params["id"], "t");
        let code = |body: &[u8]| envelope(body).unwrap_err().1.kind.jsonrpc_code();
        assert_eq!(code(b"{not json"), -32700);
        assert_eq!(code(b"[1,2]"), -32600);
        assert_eq!(
            code(br#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#),
            -32600
        );
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1}"#), -32600);
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":{},"method":"GetTask"}"#),
            -32600
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#),
            -32602
        );
        let (id, _) = envelope(br#"{"jsonrpc":"1.0","id":"x","method":"GetTask"}"#).unwrap_err();
        assert_eq!(id, json!("x"), "the id is echoed when it could be read");
    }

    #[test]
    fn a_response_written_around_its_result_is_the_jsonrpc_object() {
        let result = json!({"task": {"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}}});
        for id in [json!(7), json!("a \"quoted\" id"), Value::Null, json!(-1.5)] {
            let body = whole(&id, &Json::of(&result));
            let read: Value = serde_json::from_slice(&body.0).unwrap();
            assert_eq!(read, json!({"jsonrpc": "2.0", "id": id, "result": result}));
        }
    }
}
