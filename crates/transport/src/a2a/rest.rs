//! The HTTP+JSON binding: resource URLs below the agent's base URL
//! (`POST /message:send`, `GET /tasks/{id}`, `POST /tasks/{id}:cancel`, …),
//! parameters of GET calls in the query string (camelCase), errors as
//! `{"error":{"code","status","message","details"}}` with the mapped HTTP
//! status, and streams as server-sent events of bare stream responses.

use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::{Map, Value, json};
use wharf_tasks::{A2aError, A2aErrorKind, TaskIdParams, parse_params};

use super::{Answer, Json, check_json, check_version, json_body, json_response, sse_response};
use wharf_a2a::{A2a, Scope};
use wharf_core::request::{Request, Response};
use wharf_routing::AgentRoute;

/// One HTTP+JSON operation, read off the method and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Op {
    Send {
        streaming: bool,
    },
    Get(String),
    List,
    Cancel(String),
    Subscribe(String),
    /// `POST /tasks/{id}/pushNotificationConfigs`.
    PushCreate(String),
    /// `GET /tasks/{id}/pushNotificationConfigs`.
    PushList(String),
    /// `GET /tasks/{id}/pushNotificationConfigs/{configId}`.
    PushGet(String, String),
    /// `DELETE /tasks/{id}/pushNotificationConfigs/{configId}`.
    PushDelete(String, String),
    ExtendedCard,
}

impl Op {
    /// The operation at `path` (below the base URL), or none.
    pub(super) fn parse(method: &Method, path: &str) -> Option<Op> {
        let post = *method == Method::POST;
        let get = *method == Method::GET;
        match path {
            "/message:send" if post => return Some(Op::Send { streaming: false }),
            "/message:stream" if post => return Some(Op::Send { streaming: true }),
            "/tasks" if get => return Some(Op::List),
            "/extendedAgentCard" if get => return Some(Op::ExtendedCard),
            _ => {}
        }
        let task = path.strip_prefix("/tasks/")?;
        let decoded = |id: &str| {
            let id = percent_encoding::percent_decode_str(id)
                .decode_utf8()
                .ok()?;
            (!id.is_empty() && !id.contains('/')).then(|| id.into_owned())
        };
        if let Some((id, configs)) = task.split_once("/pushNotificationConfigs") {
            let id = decoded(id)?;
            return match configs.strip_prefix('/') {
                None if !configs.is_empty() => None,
                None if post => Some(Op::PushCreate(id)),
                None if get => Some(Op::PushList(id)),
                None => None,
                Some(config) => {
                    let config = decoded(config)?;
                    match *method {
                        Method::GET => Some(Op::PushGet(id, config)),
                        Method::DELETE => Some(Op::PushDelete(id, config)),
                        _ => None,
                    }
                }
            };
        }
        if let Some(id) = task.strip_suffix(":cancel") {
            return post.then(|| decoded(id)).flatten().map(Op::Cancel);
        }
        if let Some(id) = task.strip_suffix(":subscribe") {
            return (post || get)
                .then(|| decoded(id))
                .flatten()
                .map(Op::Subscribe);
        }
        get.then(|| decoded(task)).flatten().map(Op::Get)
    }
}

/// The error for a method and path that name no operation.
pub(super) fn unknown_route(method: &Method, path: &str) -> A2aError {
    let shown: String = path.chars().take(128).collect();
    A2aError::new(A2aErrorKind::MethodNotFound)
        .message(format!(
            "Method not found: no operation at {method} {shown}"
        ))
        .with("path", shown)
}

/// An error in this binding's form.
pub(super) fn error(err: &A2aError) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (status, body) = err.to_rest();
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(body)).into_response()
}

pub(super) async fn answer(
    a2a: &Arc<A2a>,
    route: &Arc<AgentRoute>,
    req: Request,
    op: &Op,
) -> Response {
    match run(a2a, route, &req, op).await {
        Ok(Answer::Json(body)) => json_body(StatusCode::OK, body),
        Ok(Answer::Stream(events)) => sse_response(events, Json::write),
        Err((status, err)) => {
            let (mapped, body) = err.to_rest();
            let status = status
                .or_else(|| StatusCode::from_u16(mapped).ok())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            json_response(status, &body)
        }
    }
}

/// The operation's answer, or its error with a status other than the
/// mapped one when the binding has its own (415 for a body not typed JSON).
async fn run(
    a2a: &Arc<A2a>,
    route: &Arc<AgentRoute>,
    req: &Request,
    op: &Op,
) -> Result<Answer, (Option<StatusCode>, A2aError)> {
    check_version(req).map_err(|e| (None, e))?;
    let scope = Scope::of(route, req);
    let agent = &scope;
    let result = match op {
        Op::Send { streaming } => {
            check_json(req).map_err(|e| (Some(StatusCode::UNSUPPORTED_MEDIA_TYPE), e))?;
            let params = body(req).and_then(parse_params);
            match params {
                Ok(params) => a2a
                    .send(route.clone(), req, params, *streaming)
                    .await
                    .map(Answer::sent),
                Err(e) => Err(e),
            }
        }
        Op::Get(id) => query(req, Some(id))
            .and_then(parse_params)
            .and_then(|p| a2a.get(agent, p))
            .map(|t| Answer::of(&t)),
        Op::List => query(req, None)
            .and_then(parse_params)
            .and_then(|p| a2a.list(agent, p))
            .map(|v| Answer::of(&v)),
        Op::Cancel(id) => a2a.cancel(agent, task_id(id)).await.map(|t| Answer::of(&t)),
        Op::Subscribe(id) => a2a.subscribe(agent, task_id(id)).await.map(Answer::bare),
        Op::PushCreate(task) => {
            check_json(req).map_err(|e| (Some(StatusCode::UNSUPPORTED_MEDIA_TYPE), e))?;
            match body(req).and_then(|b| with_task_id(b, task)) {
                Ok(params) => a2a
                    .create_push_config(agent, params)
                    .await
                    .map(|c| Answer::of(&c)),
                Err(e) => Err(e),
            }
        }
        Op::PushList(task) => query(req, None)
            .and_then(|q| with_task_id(q, task))
            .and_then(|p| a2a.list_push_configs(agent, p))
            .map(|v| Answer::of(&v)),
        Op::PushGet(task, id) => a2a
            .get_push_config(agent, json!({"taskId": task, "id": id}))
            .map(|c| Answer::of(&c)),
        Op::PushDelete(task, id) => a2a
            .delete_push_config(agent, json!({"taskId": task, "id": id}))
            .await
            .map(|()| Answer::Json(Json(b"{}".to_vec()))),
        Op::ExtendedCard => Err(A2aError::new(A2aErrorKind::ExtendedAgentCardNotConfigured)
            .message("This agent has no extended agent card")),
    };
    result.map_err(|e| (None, e))
}

/// The parameters of an operation on the task named in the path.
fn task_id(id: &str) -> TaskIdParams {
    TaskIdParams {
        tenant: String::new(),
        id: id.to_string(),
        metadata: None,
    }
}

/// `params` (an object) with the task id of the path.
fn with_task_id(params: Value, task: &str) -> Result<Value, A2aError> {
    let Value::Object(mut map) = params else {
        return Err(A2aError::new(A2aErrorKind::InvalidParams)
            .message("Invalid parameters: the body must be a JSON object"));
    };
    map.remove("task_id");
    map.insert("taskId".into(), Value::String(task.to_string()));
    Ok(Value::Object(map))
}

/// The request body as JSON.
fn body(req: &Request) -> Result<Value, A2aError> {
    super::bounded(&req.body)?;
    serde_json::from_slice(&req.body).map_err(|e| {
        A2aError::new(A2aErrorKind::JsonParse).message(format!("Invalid JSON payload: {e}"))
    })
}

/// Query parameters as the JSON object the method's parameters read:
/// numbers and booleans where the field is one, and the task id from the
/// path.
fn query(req: &Request, id: Option<&str>) -> Result<Value, A2aError> {
    let mut map = Map::new();
    for (key, raw) in form_urlencoded::parse(req.query.as_bytes()) {
        if key.eq_ignore_ascii_case("A2A-Version") {
            continue;
        }
        let value = match key.as_ref() {
            "pageSize" | "historyLength" | "page_size" | "history_length" => {
                let n: i64 = raw.parse().map_err(|_| {
                    A2aError::new(A2aErrorKind::InvalidParams).message(format!(
                        "Invalid parameters: {key} must be a whole number (got `{raw}`)"
                    ))
                })?;
                json!(n)
            }
            "includeArtifacts" | "include_artifacts" => match raw.as_ref() {
                "true" => json!(true),
                "false" => json!(false),
                _ => {
                    return Err(A2aError::new(A2aErrorKind::InvalidParams).message(format!(
                        "Invalid parameters: {key} must be true or false (got `{raw}`)"
                    )));
                }
            },
            _ => Value::String(raw.into_owned()),
        };
        map.insert(key.into_owned(), value);
    }
    if let Some(id) = id {
        map.insert("id".into(), Value::String(id.to_string()));
    }
    Ok(Value::Object(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_read_off_method_and_path() {
        let (get, post, delete) = (Method::GET, Method::POST, Method::DELETE);
        assert_eq!(
            Op::parse(&post, "/message:send"),
            Some(Op::Send { streaming: false })
        );
        assert_eq!(
            Op::parse(&post, "/message:stream"),
            Some(Op::Send { streaming: true })
        );
        assert_eq!(Op::parse(&get, "/tasks"), Some(Op::List));
        assert_eq!(Op::parse(&get, "/tasks/t%201"), Some(Op::Get("t 1".into())));
        assert_eq!(
            Op::parse(&post, "/tasks/t1:cancel"),
            Some(Op::Cancel("t1".into()))
        );
        assert_eq!(
            Op::parse(&post, "/tasks/t1:subscribe"),
            Some(Op::Subscribe("t1".into()))
        );
        assert_eq!(
            Op::parse(&delete, "/tasks/t1/pushNotificationConfigs/c1"),
            Some(Op::PushDelete("t1".into(), "c1".into()))
        );
        assert_eq!(
            Op::parse(&get, "/tasks/t1/pushNotificationConfigs/c%201"),
            Some(Op::PushGet("t1".into(), "c 1".into()))
        );
        assert_eq!(
            Op::parse(&post, "/tasks/t1/pushNotificationConfigs"),
            Some(Op::PushCreate("t1".into()))
        );
        assert_eq!(
            Op::parse(&get, "/tasks/t1/pushNotificationConfigs"),
            Some(Op::PushList("t1".into()))
        );
        assert_eq!(
            Op::parse(&post, "/tasks/t1/pushNotificationConfigs/c1"),
            None
        );
        assert_eq!(Op::parse(&get, "/tasks/t1/pushNotificationConfigsX"), None);
        assert_eq!(
            Op::parse(&get, "/extendedAgentCard"),
            Some(Op::ExtendedCard)
        );
        assert_eq!(Op::parse(&get, "/message:send"), None);
        assert_eq!(Op::parse(&get, "/tasks/"), None);
        assert_eq!(Op::parse(&get, "/nope"), None);
    }

    #[test]
    fn query_parameters_take_their_fields_types() {
        let mut req = Request::new(Method::GET, "/tasks");
        req.query = "pageSize=5&includeArtifacts=true&contextId=c%201&A2A-Version=1.0".into();
        let v = query(&req, None).unwrap();
        assert_eq!(
            v,
            json!({"pageSize": 5, "includeArtifacts": true, "contextId": "c 1"})
        );
        req.query = "pageSize=five".into();
        assert_eq!(
            query(&req, None).unwrap_err().kind,
            A2aErrorKind::InvalidParams
        );
    }
}
