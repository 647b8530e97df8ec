//! The A2A agent card (what `/.well-known/agent-card.json` serves): name,
//! interfaces, capabilities, modes and skills in the v1.0 JSON form.
//! Security schemes and signatures are carried as given (JSON objects):
//! Wharf passes them on from configuration and does not interpret them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol version Wharf serves.
pub const PROTOCOL_VERSION: &str = "1.0";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
/// An agent's self-description (A2A section 8): who it is, where and how it is reached, what it can do.
pub struct AgentCard {
    /// The agent's name.
    pub name: String,
    /// What the agent does.
    pub description: String,
    #[serde(alias = "supported_interfaces")]
    /// Where and over which binding it is served, preferred first.
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Who provides it.
    pub provider: Option<AgentProvider>,
    /// The agent's own version.
    pub version: String,
    #[serde(
        default,
        alias = "documentation_url",
        skip_serializing_if = "Option::is_none"
    )]
    /// Where its documentation is.
    pub documentation_url: Option<String>,
    /// The optional protocol features it supports.
    pub capabilities: AgentCapabilities,
    #[serde(
        default,
        alias = "security_schemes",
        skip_serializing_if = "Map::is_empty"
    )]
    /// The security schemes its requirements name, by name.
    pub security_schemes: Map<String, Value>,
    #[serde(
        default,
        alias = "security_requirements",
        alias = "security",
        skip_serializing_if = "Vec::is_empty"
    )]
    /// Which schemes a client must satisfy.
    pub security_requirements: Vec<Value>,
    #[serde(alias = "default_input_modes")]
    /// Media types it accepts unless a skill says otherwise.
    pub default_input_modes: Vec<String>,
    #[serde(alias = "default_output_modes")]
    /// Media types it answers with unless a skill says otherwise.
    pub default_output_modes: Vec<String>,
    /// What it can do.
    pub skills: Vec<AgentSkill>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// JWS signatures of the card.
    pub signatures: Vec<Value>,
    #[serde(default, alias = "icon_url", skip_serializing_if = "Option::is_none")]
    /// An icon for people.
    pub icon_url: Option<String>,
}

/// Where and how the agent answers: a URL, a binding (`JSONRPC`,
/// `HTTP+JSON`, `GRPC`) and the protocol version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The interface's URL.
    pub url: String,
    #[serde(alias = "protocol_binding")]
    /// `JSONRPC`, `HTTP+JSON` or `GRPC`.
    pub protocol_binding: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// The tenant to name in requests, when the server hosts several.
    pub tenant: String,
    #[serde(alias = "protocol_version")]
    /// The A2A version spoken there.
    pub protocol_version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
/// The organization that provides an agent.
pub struct AgentProvider {
    /// Its website.
    pub url: String,
    /// Its name.
    pub organization: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
/// The optional protocol features an agent supports.
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Streaming answers (`SendStreamingMessage`, `SubscribeToTask`).
    pub streaming: Option<bool>,
    #[serde(
        default,
        alias = "push_notifications",
        skip_serializing_if = "Option::is_none"
    )]
    /// Push notifications to webhooks.
    pub push_notifications: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// The protocol extensions it supports.
    pub extensions: Vec<Value>,
    #[serde(
        default,
        alias = "extended_agent_card",
        skip_serializing_if = "Option::is_none"
    )]
    /// An extended card for authenticated clients.
    pub extended_agent_card: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
/// One thing an agent can do.
pub struct AgentSkill {
    /// The skill's id, unique within the card.
    pub id: String,
    /// The skill's name.
    pub name: String,
    /// What the skill does, for people and for clients choosing an agent.
    pub description: String,
    #[serde(default)]
    /// Keywords that describe it.
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// Example requests it handles.
    pub examples: Vec<String>,
    #[serde(default, alias = "input_modes", skip_serializing_if = "Vec::is_empty")]
    /// Media types it accepts, when they differ from the card's defaults.
    pub input_modes: Vec<String>,
    #[serde(default, alias = "output_modes", skip_serializing_if = "Vec::is_empty")]
    /// Media types it answers with, when they differ from the card's defaults.
    pub output_modes: Vec<String>,
    #[serde(
        default,
        alias = "security_requirements",
        skip_serializing_if = "Vec::is_empty"
    )]
    /// Security requirements for this skill alone.
    pub security_requirements: Vec<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample card of the specification (section 8.5), less its long
    /// texts: read, then written back with the same fields.
    #[test]
    fn the_specification_sample_card_reads_and_writes_back() {
        let sample = r#"{
          "name": "GeoSpatial Route Planner Agent",
          "description": "Provides advanced route planning.",
          "supportedInterfaces": [
            {"url": "https://georoute-agent.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "https://georoute-agent.example.com/a2a/json", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
          ],
          "provider": {"organization": "Example Geo Services Inc.", "url": "https://www.examplegeoservices.com"},
          "iconUrl": "https://georoute-agent.example.com/icon.png",
          "version": "1.2.0",
          "documentationUrl": "https://docs.examplegeoservices.com/georoute-agent/api",
          "capabilities": {"streaming": true, "pushNotifications": true, "stateTransitionHistory": false, "extendedAgentCard": true},
          "securitySchemes": {"google": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}}},
          "security": [{"google": ["openid", "profile", "email"]}],
          "defaultInputModes": ["application/json", "text/plain"],
          "defaultOutputModes": ["application/json", "image/png"],
          "skills": [{
            "id": "route-optimizer-traffic", "name": "Traffic-Aware Route Optimizer",
            "description": "Calculates the optimal driving route.",
            "tags": ["maps", "routing"], "examples": ["Plan a route."],
            "inputModes": ["application/json", "text/plain"], "outputModes": ["application/json"]
          }],
          "signatures": [{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "QFdkNLNszlGj3z3u0YQGt"}]
        }"#;
        let card: AgentCard = serde_json::from_str(sample).unwrap();
        assert_eq!(card.supported_interfaces[0].protocol_binding, "JSONRPC");
        assert_eq!(card.capabilities.push_notifications, Some(true));
        assert_eq!(card.skills[0].tags, ["maps", "routing"]);
        assert_eq!(card.security_requirements.len(), 1);
        let out = serde_json::to_value(&card).unwrap();
        assert_eq!(out["supportedInterfaces"][1]["protocolVersion"], "1.0");
        assert_eq!(out["capabilities"]["extendedAgentCard"], true);
        assert_eq!(
            out["securitySchemes"]["google"]["openIdConnectSecurityScheme"]["openIdConnectUrl"],
            "https://accounts.google.com/.well-known/openid-configuration"
        );
        assert_eq!(out["securityRequirements"][0]["google"][0], "openid");
        assert_eq!(out["skills"][0]["inputModes"][1], "text/plain");
        assert!(out["supportedInterfaces"][0].get("tenant").is_none());
        let back: AgentCard = serde_json::from_value(out).unwrap();
        assert_eq!(back, card);
    }
}
