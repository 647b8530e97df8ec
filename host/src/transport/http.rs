//! HTTP routes: `/healthz`, `/metrics`, `GET /agents`,
//! `GET /agents/{name}/health`, and any method on `/agents/{name}` or
//! `/agents/{name}/{*rest}`, decoded into the neutral request and handed to
//! the pipeline.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Request as HttpRequest, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use http::{HeaderValue, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{Value, json};
use tower_http::timeout::TimeoutLayer;
use tracing::Instrument;

use super::error::ApiError;
use crate::config::Mode;
use crate::pipeline::Pipeline;
use crate::request::{self, Request};
use crate::router::AgentRoute;

/// What every HTTP handler shares.
pub struct AppState {
    pub pipeline: Arc<Pipeline>,
    /// A2A tasks, for the agents that serve A2A.
    pub a2a: Arc<crate::a2a::A2a>,
    /// The agent whose card is the host's own, at `/.well-known/agent-card.json`.
    pub a2a_default: Option<String>,
}

/// The routes, with the whole-request timeout (tower-http) on agent calls.
pub fn router(state: Arc<AppState>, request_timeout: Duration) -> Router {
    let agents = Router::new()
        .route("/agents/{name}", any(call_agent))
        .route("/agents/{name}/", any(call_agent))
        .route("/agents/{name}/{*rest}", any(call_agent))
        .route("/a2a/{name}", any(super::a2a::call))
        .route("/a2a/{name}/", any(super::a2a::call))
        .route("/a2a/{name}/{*rest}", any(super::a2a::call))
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
        .route("/.well-known/agent-card.json", get(super::a2a::host_card))
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

async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route")
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let text = state.pipeline.metrics().render();
    (
        [(
            http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

async fn list_agents(State(state): State<Arc<AppState>>) -> Json<Value> {
    let snapshot = state.pipeline.registry().snapshot();
    let routes = state.pipeline.routes();
    let agents = routes.iter().map(|route| {
        let entry = &route.core.entry;
        json!({
            "name": entry.origin.name,
            "world": entry.origin.world,
            "digest": entry.origin.digest,
            "size": entry.origin.size,
            "loaded": entry.origin.loaded,
            "signed_by": entry.origin.signed_by,
            "card": entry.card,
            "health": health_summary(route),
            "filters": state.pipeline.chain_names(&entry.origin.name),
        })
    });
    let filters = snapshot.filters.values().map(|f| {
        json!({
            "name": f.origin.name,
            "world": f.origin.world,
            "digest": f.origin.digest,
            "size": f.origin.size,
            "loaded": f.origin.loaded,
            "signed_by": f.origin.signed_by,
            "card": Value::Null,
            "phases": f.phases.names(),
            "mode": match f.policy.mode {
                crate::config::FilterMode::Enforce => "enforce",
                crate::config::FilterMode::Detect => "detect",
            },
            "failure": match f.policy.failure {
                crate::config::Failure::Closed => "closed",
                crate::config::Failure::Open => "open",
            },
        })
    });
    let mut listed: Vec<Value> = agents.chain(filters).collect();
    if let Some(cluster) = state.pipeline.cluster() {
        with_nodes(&mut listed, &cluster.members());
    }
    Json(Value::Array(listed))
}

/// Each agent's entry says which nodes serve it; agents served only by
/// other nodes are listed too, as not local.
fn with_nodes(listed: &mut Vec<Value>, members: &[crate::cluster::members::Member]) {
    let mut by_agent: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for m in members.iter().filter(|m| m.state == "serving") {
        for agent in &m.agents {
            by_agent.entry(agent).or_default().push(&m.node);
        }
    }
    for entry in listed.iter_mut().filter(|e| e.get("phases").is_none()) {
        let name = entry["name"].as_str().unwrap_or_default().to_string();
        entry["local"] = json!(true);
        entry["nodes"] = json!(by_agent.remove(name.as_str()).unwrap_or_default());
    }
    for (agent, nodes) in by_agent {
        listed.push(json!({ "name": agent, "local": false, "nodes": nodes }));
    }
}

/// This node, whether it is connected and draining, and every node heard
/// from lately with its state and agents.
async fn cluster(State(state): State<Arc<AppState>>) -> Result<Json<Value>, ApiError> {
    let Some(cluster) = state.pipeline.cluster() else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_clustered",
            "this node is not in a cluster (no `cluster` block)",
        ));
    };
    Ok(Json(json!({
        "node": cluster.node(),
        "nats": cluster.settings.nats,
        "connected": cluster.connected(),
        "draining": cluster.draining(),
        "nodes": cluster.members(),
    })))
}

async fn agent_health(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let route = state
        .pipeline
        .lookup(&name)
        .ok_or_else(|| ApiError::agent_not_found(&name))?;
    let mut body = health_summary(&route);
    if let Some(pool) = &route.core.pool {
        let instances: Vec<Value> = pool
            .slots()
            .iter()
            .map(|slot| {
                json!({
                    "id": slot.id,
                    "healthy": slot.health.is_healthy(),
                    "consecutive_failures": slot.health.consecutive_failures(),
                    "uses": slot.uses.load(std::sync::atomic::Ordering::Relaxed),
                })
            })
            .collect();
        body["instances"] = Value::Array(instances);
    }
    body["name"] = json!(name);
    Ok(Json(body))
}

/// Health, breaker and instance counts: lock-free reads of the route.
fn health_summary(route: &AgentRoute) -> Value {
    let core = &route.core;
    let mode = match core.policy.instances.mode {
        Mode::Fresh => "fresh",
        Mode::Warm => "warm",
    };
    let mut summary = json!({
        "mode": mode,
        "healthy": core.health.is_healthy(),
        "consecutive_failures": core.health.consecutive_failures(),
        "breaker": route.breaker.state().as_str(),
    });
    if let Some(pool) = &core.pool {
        let live = pool.slots().len();
        summary["live_instances"] = json!(live);
        summary["busy_instances"] = json!(pool.busy().min(live));
    }
    if let Some(stock) = &core.ahead {
        summary["ready_instances"] = json!(stock.len());
    }
    summary
}

fn client_of(req: &HttpRequest) -> Option<SocketAddr> {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0)
}

async fn call_agent(
    State(state): State<Arc<AppState>>,
    Path(params): Path<Vec<(String, String)>>,
    req: HttpRequest,
) -> Response {
    let client = client_of(&req);
    let name = params.first().map(|(_, v)| v.as_str()).unwrap_or("");
    let id = request::next_request_id();
    let span = tracing::info_span!(
        "wharf.request",
        id = %id,
        agent = name,
        method = %req.method(),
        instance = tracing::field::Empty,
        affinity = tracing::field::Empty,
    );
    let started = Instant::now();
    let mut response = async {
        let result = handle(&state, name, id.clone(), client, req).await;
        let response = result.unwrap_or_else(IntoResponse::into_response);
        tracing::debug!(status = response.status().as_u16(), elapsed = ?started.elapsed(), "done");
        response
    }
    .instrument(span)
    .await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// `POST /topics/{topic}` publishes the body; `GET /topics/{pattern}`
/// answers the events of matching topics as server-sent events. Both pass
/// the top-level filters.
async fn topics(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    req: HttpRequest,
) -> Response {
    let client = client_of(&req);
    let method = req.method().clone();
    let (request, body) = neutral(req, request::next_request_id(), client, |_| "/".into());
    let result = match method {
        http::Method::POST => state.pipeline.publish_topic(&name, request, body).await,
        http::Method::GET => state.pipeline.watch_topic(&name, request).await,
        _ => return StatusCode::METHOD_NOT_ALLOWED.into_response(),
    };
    answer(result).unwrap_or_else(IntoResponse::into_response)
}

async fn handle(
    state: &AppState,
    name: &str,
    id: Arc<str>,
    client: Option<SocketAddr>,
    req: HttpRequest,
) -> Result<Response, ApiError> {
    let (request, body) = neutral(req, id, client, path_below_agent);
    let result = state.pipeline.handle(name, request, body).await;
    answer(result)
}

/// The neutral request for an HTTP request, its body read only when the
/// pipeline asks (after the request-headers filters); `below` gives the
/// path below the mount point.
pub(super) fn neutral(
    req: HttpRequest,
    id: Arc<str>,
    client: Option<SocketAddr>,
    below: fn(&str) -> String,
) -> (Request, request::Body) {
    let (parts, body) = req.into_parts();
    let request = Request {
        path: below(parts.uri.path()),
        query: parts.uri.query().unwrap_or("").to_string(),
        method: parts.method,
        headers: parts.headers,
        body: bytes::Bytes::new(),
        id,
        client,
        affinity: None,
        agent: Arc::from(""),
        metadata: Vec::new(),
        call: request::Call::Handle,
        incoming: None,
        hop: request::Hop::default(),
    };
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

/// The HTTP answer for what the pipeline produced: a whole or a streamed
/// body, or the error's JSON (logged, never leaking internals).
pub(super) fn answer(
    result: Result<request::Response, crate::pipeline::PipelineError>,
) -> Result<Response, ApiError> {
    let resp = super::error::outcome(result)?;
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

/// `/agents/{name}/rest…` → `/rest…`, kept percent-encoded as received.
fn path_below_agent(raw: &str) -> String {
    let after = raw.strip_prefix("/agents/").unwrap_or("");
    match after.find('/') {
        Some(i) => after[i..].to_string(),
        None => "/".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_below_the_agent() {
        assert_eq!(path_below_agent("/agents/echo"), "/");
        assert_eq!(path_below_agent("/agents/echo/"), "/");
        assert_eq!(path_below_agent("/agents/echo/a/b"), "/a/b");
        assert_eq!(path_below_agent("/agents/echo/caf%C3%A9"), "/caf%C3%A9");
    }
}
