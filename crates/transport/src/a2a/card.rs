//! The agent card at `/a2a/{name}/.well-known/agent-card.json`: what
//! `describe()` said (name, version, description, skills), what the
//! agent's `card { … }` block adds or overrides (description, media types,
//! provider, documentation), the two bindings at URLs that answer, and what
//! the host offers (streaming; push notifications when they are
//! configured).
//! The URLs are built from the `Host` the client used, so the card is
//! right behind whatever name the client reached Wharf by.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use wharf_tasks::{
    AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill, PROTOCOL_VERSION,
};

use crate::error::ApiError;
use crate::ingress::AppState;

/// Media types an agent is offered and answers in, unless it says more.
const MODES: [&str; 2] = ["text/plain", "application/json"];

pub(super) fn serve(state: &AppState, name: &str, headers: &HeaderMap) -> Response {
    let Some(route) = state.pipeline.lookup(name) else {
        return ApiError::from(&state.pipeline.not_served(name)).into_response();
    };
    let entry = &route.core.entry;
    if !entry.image.serves_a2a() {
        return ApiError::new(
            http::StatusCode::NOT_FOUND,
            "not_a2a",
            format!("agent `{name}` does not serve A2A"),
        )
        .into_response();
    }
    let host = headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()))
        .unwrap_or("localhost");
    let url = format!("http://{host}/a2a/{name}");
    let interface = |binding: &str| AgentInterface {
        url: url.clone(),
        protocol_binding: binding.to_string(),
        tenant: String::new(),
        protocol_version: PROTOCOL_VERSION.to_string(),
    };
    let card = &entry.card;
    let kdl = &route.core.policy.card;
    let modes: Vec<String> = MODES.iter().map(|m| m.to_string()).collect();
    let body = AgentCard {
        name: card.name.clone(),
        description: kdl
            .description
            .clone()
            .unwrap_or_else(|| card.description.clone()),
        supported_interfaces: vec![interface("JSONRPC"), interface("HTTP+JSON")],
        provider: kdl
            .provider
            .as_ref()
            .map(|(organization, url)| AgentProvider {
                organization: organization.clone(),
                url: url.clone(),
            }),
        version: card.version.clone(),
        documentation_url: kdl.documentation_url.clone(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(state.a2a.pushes()),
            extensions: Vec::new(),
            extended_agent_card: Some(false),
        },
        security_schemes: Default::default(),
        security_requirements: Vec::new(),
        default_input_modes: kdl.input_modes.clone().unwrap_or_else(|| modes.clone()),
        default_output_modes: kdl.output_modes.clone().unwrap_or(modes),
        skills: card
            .skills
            .iter()
            .map(|s| AgentSkill {
                id: s.id.clone(),
                name: s.name.clone(),
                description: s.description.clone(),
                tags: s.tags.clone(),
                examples: Vec::new(),
                input_modes: Vec::new(),
                output_modes: Vec::new(),
                security_requirements: Vec::new(),
            })
            .collect(),
        signatures: Vec::new(),
        icon_url: None,
    };
    Json(body).into_response()
}
