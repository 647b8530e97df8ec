//! HTTP routes: `/healthz`, `/metrics`, `GET /agents`,
//! `GET /agents/{name}/health`, and any method on `/agents/{name}` or
//! `/agents/{name}/{*rest}`, decoded into the neutral request and handed to
//! the pipeline.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Request as HttpRequest, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::ingress::{AppState, answer, neutral, traced};
use wharf_config::Mode;
use wharf_routing::AgentRoute;

pub(crate) async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

pub(crate) async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let metrics = state.pipeline.metrics();
    let open = state.pipeline.streams().open();
    wharf_core::metrics::gauge(metrics.recorder(), "wharf_streams_open", vec![]).set(open as f64);
    let text = metrics.render();
    (
        [(
            http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

pub(crate) async fn list_agents(State(state): State<Arc<AppState>>) -> Json<Value> {
    let snapshot = state.pipeline.registry().snapshot();
    let routes = state.pipeline.routes();
    let agents = routes.iter().map(|route| {
        let entry = &route.core.entry;
        json!({
            "kind": "agent",
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
            "kind": "filter",
            "name": f.origin.name,
            "world": f.origin.world,
            "digest": f.origin.digest,
            "size": f.origin.size,
            "loaded": f.origin.loaded,
            "signed_by": f.origin.signed_by,
            "card": Value::Null,
            "phases": f.phases.names(),
            // With declared effects: the phases still called, where the
            // route does not override the filter's config.
            "called_in": f.effects.as_ref().map_or(f.phases, |fx| fx.phases).names(),
            "mode": match f.policy.mode {
                wharf_config::FilterMode::Enforce => "enforce",
                wharf_config::FilterMode::Detect => "detect",
            },
            "failure": match f.policy.failure {
                wharf_config::Failure::Closed => "closed",
                wharf_config::Failure::Open => "open",
            },
        })
    });
    let pipelines = snapshot.compositions.values().map(|c| {
        let steps: Vec<&str> = c.flow.steps().iter().map(|s| s.name.as_str()).collect();
        // Healthy when every step it names that is an agent here is.
        let healthy = steps
            .iter()
            .filter_map(|step| routes.get(step))
            .all(|route| route.core.health.is_healthy());
        json!({
            "kind": "pipeline",
            "name": c.name,
            "at": c.at,
            "steps": steps,
            "health": { "healthy": healthy },
            "filters": state.pipeline.chain_names(&c.name),
        })
    });
    let mut listed: Vec<Value> = agents.chain(pipelines).chain(filters).collect();
    if let Some(cluster) = state.pipeline.cluster() {
        with_nodes(&mut listed, &cluster.members());
    }
    Json(Value::Array(listed))
}

/// Each agent's entry says which nodes serve it; agents served only by
/// other nodes are listed too, as not local.
fn with_nodes(listed: &mut Vec<Value>, members: &[wharf_cluster::members::Member]) {
    let mut by_agent: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for m in members.iter().filter(|m| m.state == "serving") {
        for agent in &m.agents {
            by_agent.entry(agent).or_default().push(&m.node);
        }
    }
    for entry in listed.iter_mut().filter(|e| e["kind"] == "agent") {
        let name = entry["name"].as_str().unwrap_or_default().to_string();
        entry["local"] = json!(true);
        entry["nodes"] = json!(by_agent.remove(name.as_str()).unwrap_or_default());
    }
    for (agent, nodes) in by_agent {
        listed.push(json!({ "kind": "agent", "name": agent, "local": false, "nodes": nodes }));
    }
}

/// This node, whether it is connected and draining, and every node heard
/// from lately with its state and agents.
pub(crate) async fn cluster(State(state): State<Arc<AppState>>) -> Result<Json<Value>, ApiError> {
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

pub(crate) async fn agent_health(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let route = state
        .pipeline
        .lookup_settled(&name)
        .await
        .ok_or_else(|| ApiError::from(&state.pipeline.not_served(&name)))?;
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
        // False once an idle agent's code is unloaded (`unload-after`).
        "code_loaded": core.entry.image.is_loaded(),
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

pub(crate) async fn call_agent(
    State(state): State<Arc<AppState>>,
    Path(params): Path<Vec<(String, String)>>,
    req: HttpRequest,
) -> Response {
    let name = params.first().map(|(_, v)| v.as_str()).unwrap_or("");
    let (request, body) = neutral(req, path_below_agent);
    let span = request.span(name);
    let id = request.id.clone();
    traced(&id, span, async {
        let result = state.pipeline.handle(name, request, body).await;
        answer(result)
    })
    .await
}

/// `POST /topics/{topic}` publishes the body; `GET /topics/{pattern}`
/// answers the events of matching topics as server-sent events;
/// `GET /topics/{pattern}/messages` reads back what kept topics received.
/// All pass the top-level filters.
pub(crate) async fn topics(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    req: HttpRequest,
) -> Response {
    let method = req.method().clone();
    let (request, body) = neutral(req, |_| "/".into());
    let span = request.span("topics");
    let id = request.id.clone();
    traced(&id, span, async {
        let result = match method {
            http::Method::POST => state.pipeline.publish_topic(&name, request, body).await,
            http::Method::GET => match name.strip_suffix("/messages") {
                Some(pattern) => state.pipeline.read_topic(pattern, request).await,
                None => state.pipeline.watch_topic(&name, request).await,
            },
            _ => return StatusCode::METHOD_NOT_ALLOWED.into_response(),
        };
        answer(result)
    })
    .await
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
