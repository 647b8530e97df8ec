//! The HTTP routes: which handler answers which path, the whole-request
//! timeout on agent calls, and the JSON shape of the answers the router
//! itself gives (a timeout, an unknown route).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use http::StatusCode;
use tower_http::timeout::TimeoutLayer;

use crate::error::ApiError;
use crate::http::{agent_health, call_agent, cluster, healthz, list_agents, metrics, topics};
use crate::ingress::AppState;

/// The routes, with the whole-request timeout (tower-http) on agent calls.
pub fn router(state: Arc<AppState>, request_timeout: Duration) -> Router {
    let agents = Router::new()
        .route("/agents/{name}", any(call_agent))
        .route("/agents/{name}/", any(call_agent))
        .route("/agents/{name}/{*rest}", any(call_agent))
        .route("/a2a/{name}", any(crate::a2a::call))
        .route("/a2a/{name}/", any(crate::a2a::call))
        .route("/a2a/{name}/{*rest}", any(crate::a2a::call))
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
        .route("/agents/{name}/health", get(agent_health))
        .route("/.well-known/agent-card.json", get(crate::a2a::host_card))
        .merge(agents)
        .fallback(not_found)
        .with_state(state)
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
