//! The HTTP routes: which handler answers which path, the whole-request
//! timeout on agent calls, and the answers the router itself gives (a
//! timeout, an unknown route, a method not allowed): JSON like every
//! error, named by `x-request-id`, and counted as the transport's
//! ([`finish`], applied to every answer as it leaves).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use http::StatusCode;
use tower_http::timeout::TimeoutLayer;

use wharf_core::metrics::{Answers, Stage};
use wharf_core::request::next_request_id;

use crate::error::ApiError;
use crate::http::{agent_health, call_agent, cluster, healthz, list_agents, metrics, topics};
use crate::ingress::{AppState, mark};

/// The routes, with the whole-request timeout (tower-http) on agent calls.
pub fn router(state: Arc<AppState>, request_timeout: Duration) -> Router {
    let agents = Router::new()
        // GET of an agent's health is the host's; other methods are the agent's.
        .route(
            "/agents/{name}/health",
            get(agent_health).fallback(call_agent),
        )
        .route("/agents/{name}", any(call_agent))
        .route("/agents/{name}/", any(call_agent))
        .route("/agents/{name}/{*rest}", any(call_agent))
        .route("/a2a/{name}", any(crate::a2a::call))
        .route("/a2a/{name}/", any(crate::a2a::call))
        .route("/a2a/{name}/{*rest}", any(crate::a2a::call))
        .route(
            "/lf.a2a.v1.A2AService/{method}",
            axum::routing::post(crate::a2a::grpc::call),
        )
        .route("/topics/{*topic}", axum::routing::post(topics).get(topics))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            request_timeout,
        ))
        .layer(axum::middleware::map_response(timeout_as_json));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/agents", get(list_agents))
        .route("/cluster", get(cluster))
        .route("/.well-known/agent-card.json", get(crate::a2a::host_card))
        .merge(agents)
        .fallback(not_found)
        .with_state(state)
}

/// Every answer as it leaves the router. One the pipeline gave is named by
/// its `x-request-id` already (and counted); any other is the
/// transport's own: counted so, a bare 405 made JSON, and named.
pub(crate) fn finish(response: Response, unnamed: &Answers) -> Response {
    if response.headers().contains_key("x-request-id") {
        return response;
    }
    let mut response = if response.status() == StatusCode::METHOD_NOT_ALLOWED
        && !response.headers().contains_key(http::header::CONTENT_TYPE)
    {
        method_not_allowed(response)
    } else {
        response
    };
    unnamed.count(Stage::Transport, response.status().as_u16());
    mark(response.headers_mut(), &next_request_id());
    response
}

/// `405 method_not_allowed` in JSON, keeping the router's `Allow`.
fn method_not_allowed(bare: Response) -> Response {
    let allow = bare.headers().get(http::header::ALLOW).cloned();
    let listed = allow
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut response = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("this route answers only {listed}"),
    )
    .into_response();
    if let Some(allow) = allow {
        response.headers_mut().insert(http::header::ALLOW, allow);
    }
    response
}

/// Gives the timeout layer's bare 408 the same JSON shape as every error.
async fn timeout_as_json(response: Response) -> Response {
    if response.status() == StatusCode::REQUEST_TIMEOUT
        && !response.headers().contains_key(http::header::CONTENT_TYPE)
    {
        return ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            "the request did not complete in time",
        )
        .into_response();
    }
    response
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route")
}
