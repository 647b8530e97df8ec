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
pub struct AgentCard {
    pub name: String,
    pub description: String,
    #[serde(alias = "supported_interfaces")]
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    pub version: String,
    #[serde(
        default,
        alias = "documentation_url",
        skip_serializing_if = "Option::is_none"
    )]
    pub documentation_url: Option<String>,
    pub capabilities: AgentCapabilities,
    #[serde(
        default,
        alias = "security_schemes",
        skip_serializing_if = "Map::is_empty"
    )]
    pub security_schemes: Map<String, Value>,
    #[serde(
        default,
        alias = "security_requirements",
        alias = "security",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<Value>,
    #[serde(alias = "default_input_modes")]
    pub default_input_modes: Vec<String>,
    #[serde(alias = "default_output_modes")]
    pub default_output_modes: Vec<String>,
    pub skills: Vec<AgentSkill>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<Value>,
    #[serde(default, alias = "icon_url", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

/// Where and how the agent answers: a URL, a binding (`JSONRPC`,
/// `HTTP+JSON`, `GRPC`) and the protocol version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    pub url: String,
    #[serde(alias = "protocol_binding")]
    pub protocol_binding: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(alias = "protocol_version")]
    pub protocol_version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    pub url: String,
    pub organization: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(
        default,
        alias = "push_notifications",
        skip_serializing_if = "Option::is_none"
    )]
    pub push_notifications: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Value>,
    #[serde(
        default,
        alias = "extended_agent_card",
        skip_serializing_if = "Option::is_none"
    )]
    pub extended_agent_card: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, alias = "input_modes", skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    #[serde(default, alias = "output_modes", skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    #[serde(
        default,
        alias = "security_requirements",
        skip_serializing_if = "Vec::is_empty"
    )]
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
