//! The agent card at `/a2a/{name}/.well-known/agent-card.json`: what
//! `describe()` said (name, version, description, skills), what the
//! agent's `card { … }` block adds or overrides (description, media types,
//! provider, documentation), the two bindings at URLs that answer, and what
//! the host offers (streaming; push notifications when they are
//! configured).
//! The URLs are built from the `Host` the client used (and `https` on the
//! TLS listener), so the card is right behind whatever name the client
//! reached Wharf by.
//!
//! Cards are cacheable (A2A section 8.6.1): `Cache-Control: max-age` from
//! the card block, an `ETag` that is a digest of the card's bytes (so it
//! changes exactly when the card does, on every node alike), and
//! `Last-Modified` when the agent's version was loaded; `If-None-Match`
//! (else `If-Modified-Since`) that still holds is answered `304`.

use std::time::SystemTime;

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};
use wharf_tasks::{
    AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill, PROTOCOL_VERSION,
};

use crate::error::ApiError;
use crate::ingress::AppState;

/// Media types an agent is offered and answers in, unless it says more.
const MODES: [&str; 2] = ["text/plain", "application/json"];

/// The card of `name`; the caller has waited for it to be settled.
pub(super) fn serve(state: &AppState, name: &str, req: &axum::extract::Request) -> Response {
    let headers = req.headers();
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
    let scheme = req
        .extensions()
        .get::<http::uri::Scheme>()
        .map_or("http", |s| s.as_str());
    let url = format!("{scheme}://{host}/a2a/{name}");
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
        // gRPC has one service per host: the agent is the call's tenant.
        supported_interfaces: vec![
            interface("JSONRPC"),
            interface("HTTP+JSON"),
            AgentInterface {
                url: format!("{scheme}://{host}"),
                protocol_binding: "GRPC".to_string(),
                tenant: name.to_string(),
                protocol_version: PROTOCOL_VERSION.to_string(),
            },
        ],
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
    let body = serde_json::to_vec(&body).unwrap_or_default();
    let max_age = kdl.max_age.unwrap_or(wharf_config::CARD_MAX_AGE);
    cacheable(body, max_age, entry.origin.loaded_at, headers)
}

/// The card's bytes with its validators, or `304` when the client's copy
/// is still this one.
fn cacheable(
    body: Vec<u8>,
    max_age: std::time::Duration,
    modified: SystemTime,
    asked: &HeaderMap,
) -> Response {
    let digest = Sha256::digest(&body);
    let etag = format!("\"{}\"", hex::encode(&digest[..16]));
    let mut headers = HeaderMap::new();
    let value = |s: String| HeaderValue::try_from(s).expect("ASCII header value");
    headers.insert(
        header::CACHE_CONTROL,
        value(format!("public, max-age={}", max_age.as_secs())),
    );
    headers.insert(
        header::LAST_MODIFIED,
        value(httpdate::fmt_http_date(modified)),
    );
    let fresh = still_fresh(asked, &etag, modified);
    headers.insert(header::ETAG, value(etag));
    if fresh {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    (StatusCode::OK, headers, body).into_response()
}

/// RFC 9110 section 13.2.2: `If-None-Match` decides when present (weak
/// comparison, `*` matches any card); only without it does
/// `If-Modified-Since` count, to the second.
fn still_fresh(asked: &HeaderMap, etag: &str, modified: SystemTime) -> bool {
    let mut lists = asked.get_all(header::IF_NONE_MATCH).iter().peekable();
    if lists.peek().is_some() {
        return lists
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|tag| tag.trim())
            .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag);
    }
    let since = asked
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok());
    let secs = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    };
    since.is_some_and(|since| secs(modified) <= secs(since))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn asked(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn validators_follow_rfc_9110() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let tag = "\"abc\"";
        let date = httpdate::fmt_http_date(at);
        let later = httpdate::fmt_http_date(at + Duration::from_secs(60));
        let earlier = httpdate::fmt_http_date(at - Duration::from_secs(1));
        assert!(!still_fresh(&asked(&[]), tag, at));
        assert!(still_fresh(&asked(&[("if-none-match", tag)]), tag, at));
        assert!(still_fresh(
            &asked(&[("if-none-match", "W/\"abc\"")]),
            tag,
            at
        ));
        assert!(still_fresh(
            &asked(&[("if-none-match", "\"x\", \"abc\"")]),
            tag,
            at
        ));
        assert!(still_fresh(
            &asked(&[("if-none-match", "\"x\""), ("if-none-match", tag)]),
            tag,
            at
        ));
        assert!(still_fresh(&asked(&[("if-none-match", "*")]), tag, at));
        assert!(!still_fresh(
            &asked(&[("if-none-match", "\"abd\"")]),
            tag,
            at
        ));
        // If-None-Match decides; the date is not looked at.
        assert!(!still_fresh(
            &asked(&[("if-none-match", "\"old\""), ("if-modified-since", &later)]),
            tag,
            at
        ));
        assert!(still_fresh(
            &asked(&[("if-modified-since", &date)]),
            tag,
            at
        ));
        assert!(still_fresh(
            &asked(&[("if-modified-since", &later)]),
            tag,
            at
        ));
        assert!(!still_fresh(
            &asked(&[("if-modified-since", &earlier)]),
            tag,
            at
        ));
        assert!(!still_fresh(
            &asked(&[("if-modified-since", "yesterday")]),
            tag,
            at
        ));
    }

    #[test]
    fn a_304_carries_the_validators_and_no_body() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let full = cacheable(
            b"{}".to_vec(),
            Duration::from_secs(60),
            at,
            &HeaderMap::new(),
        );
        assert_eq!(full.status(), StatusCode::OK);
        let etag = full.headers()[header::ETAG].to_str().unwrap().to_string();
        assert_eq!(full.headers()[header::CACHE_CONTROL], "public, max-age=60");
        assert_eq!(
            full.headers()[header::LAST_MODIFIED],
            "Tue, 14 Nov 2023 22:13:20 GMT"
        );
        let again = cacheable(
            b"{}".to_vec(),
            Duration::from_secs(60),
            at,
            &asked(&[("if-none-match", &etag)]),
        );
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(again.headers()[header::ETAG], etag.as_str());
        assert!(again.headers().get(header::CONTENT_TYPE).is_none());
        let other = cacheable(
            b"{\"a\":1}".to_vec(),
            Duration::from_secs(60),
            at,
            &asked(&[("if-none-match", &etag)]),
        );
        assert_eq!(other.status(), StatusCode::OK, "another card, another tag");
    }
}
