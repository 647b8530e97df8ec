//! `headers`: header hygiene at the edge. Security response headers,
//! CORS (preflights answered by the filter, the agent never sees them),
//! request header deny, strip and allow lists, and limits on the request
//! head's size.
//!
//! Config (per filter, overridable per route):
//! - `security` (`on` by default): `x-content-type-options`,
//!   `x-frame-options`, `referrer-policy`, `cross-origin-resource-policy`,
//!   `content-security-policy` (`csp`), and `strict-transport-security`
//!   when `hsts` is set; a header the agent set itself is left alone.
//! - `cors-origins` (`*` or space-separated origins; no CORS without it),
//!   `cors-methods`, `cors-headers`, `cors-max-age`, `cors-credentials`.
//! - `deny-headers` (present: 400), `strip-headers` (removed),
//!   `allow-headers` (only these, with `host`, `content-type` and
//!   `content-length`, reach the agent).
//! - `max-headers` (default 100) and `max-header-bytes` (default 32768):
//!   past either, 431.
//! - `declare` (`on` by default): the filter declares at load time what
//!   it does the same way on every request (security headers, CORS, the
//!   limits) and the host applies it without calling the filter; with
//!   deny, strip or allow lists the request phase stays the filter's.
//!   `off`: every phase is a call, answering the same bytes.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use wharf_guest::filter::{Cors, Effects, HeaderLimits, Phases, Verdict};
use wharf_guest::{Head, config, header_pairs, json_string};

/// One route's settings, read through `config()` on its first request.
struct Settings {
    security: bool,
    /// Security headers to add when the response lacks them.
    security_headers: Vec<(&'static str, String)>,
    cors_origins: Option<Vec<String>>,
    cors_methods: String,
    cors_headers: Option<String>,
    cors_max_age: String,
    cors_credentials: bool,
    deny: Vec<String>,
    strip: Vec<String>,
    allow: Vec<String>,
    max_headers: usize,
    max_header_bytes: usize,
}

thread_local! {
    static SETTINGS: RefCell<HashMap<String, Rc<Settings>>> = RefCell::new(HashMap::new());
}

fn words(key: &str) -> Vec<String> {
    config(key)
        .unwrap_or_default()
        .split_whitespace()
        .map(|w| w.to_ascii_lowercase())
        .collect()
}

fn number(key: &str, default: usize) -> usize {
    config(key).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn read_settings() -> Settings {
    let csp = config("csp").unwrap_or_else(|| "default-src 'none'; frame-ancestors 'none'".into());
    let mut security_headers = vec![
        ("x-content-type-options", "nosniff".to_string()),
        ("x-frame-options", "DENY".to_string()),
        ("referrer-policy", "no-referrer".to_string()),
        ("cross-origin-resource-policy", "same-origin".to_string()),
        ("content-security-policy", csp),
    ];
    if let Some(hsts) = config("hsts") {
        security_headers.push(("strict-transport-security", hsts));
    }
    Settings {
        security: config("security").as_deref() != Some("off"),
        security_headers,
        cors_origins: config("cors-origins")
            .map(|o| o.split_whitespace().map(str::to_string).collect()),
        cors_methods: config("cors-methods").unwrap_or_else(|| "GET, POST, PUT, DELETE".into()),
        cors_headers: config("cors-headers"),
        cors_max_age: config("cors-max-age").unwrap_or_else(|| "600".into()),
        cors_credentials: config("cors-credentials").as_deref() == Some("true"),
        deny: words("deny-headers"),
        strip: words("strip-headers"),
        allow: words("allow-headers"),
        max_headers: number("max-headers", 100),
        max_header_bytes: number("max-header-bytes", 32 * 1024),
    }
}

/// The settings of the route the request goes to (per agent: a route may
/// override them with `filter-config`), read once per route and instance.
fn settings(head: &[u8]) -> (Rc<Settings>, Head) {
    let head = Head::decode(head).unwrap_or_default();
    if let Some(s) = SETTINGS.with(|s| s.borrow().get(&head.agent).cloned()) {
        return (s, head);
    }
    let s = Rc::new(read_settings());
    SETTINGS.with(|m| m.borrow_mut().insert(head.agent.clone(), s.clone()));
    (s, head)
}

fn refuse(status: u16, rule: &str, message: &str) -> Verdict {
    let body = format!(
        "{{\"error\":{{\"code\":\"{rule}\",\"message\":{}}}}}",
        json_string(message)
    );
    Verdict::block(status, &[("content-type", "application/json")], body)
        .rule(rule, message)
        .tag("headers")
}

/// The origin CORS allows for this request, if it has one and it is allowed.
fn allowed_origin(s: &Settings, origin: Option<&str>) -> Option<String> {
    let origin = origin?;
    let allowed = s.cors_origins.as_ref()?;
    let any = allowed.iter().any(|o| o == "*");
    (any || allowed.iter().any(|o| o.eq_ignore_ascii_case(origin))).then(|| {
        if any && !s.cors_credentials {
            "*".to_string()
        } else {
            origin.to_string()
        }
    })
}

fn text(v: &[u8]) -> &str {
    std::str::from_utf8(v).unwrap_or("")
}

/// Most CORS origins the host takes in a declaration.
const MAX_DECLARED_ORIGINS: usize = 1024;

/// What the host may apply without calling the filter, for the filter's
/// own config (a route that overrides it is served by calls). The request
/// phase is declared only when all of it can be (no deny, strip or allow
/// list, at most 1,024 origins): the host checks the declaration before it
/// calls the guest, and the deny list comes before the preflight here.
fn declared() -> Effects {
    let all = Phases::REQUEST_HEADERS | Phases::RESPONSE_HEADERS;
    let mut fx = Effects {
        phases: all,
        header_limits: None,
        cors: None,
        response_defaults: Vec::new(),
    };
    if config("declare").as_deref() == Some("off") {
        return fx;
    }
    let s = read_settings();
    let lists = !(s.deny.is_empty() && s.strip.is_empty() && s.allow.is_empty());
    // The host takes at most 1,024 origins (it compares each request's).
    let origins = s.cors_origins.as_ref().map_or(0, Vec::len);
    if !lists && origins <= MAX_DECLARED_ORIGINS {
        fx.phases = Phases::empty();
        fx.header_limits = Some(HeaderLimits {
            max_count: s.max_headers.min(u32::MAX as usize) as u32,
            too_many: refuse(431, "headers-too-many", "too many request headers"),
            max_bytes: s.max_header_bytes.min(u32::MAX as usize) as u32,
            too_large: refuse(
                431,
                "headers-too-large",
                "the request headers are too large",
            ),
        });
        fx.cors = s.cors_origins.clone().map(|origins| Cors {
            origins,
            methods: s.cors_methods.clone(),
            headers: s.cors_headers.clone(),
            max_age: s.cors_max_age.clone(),
            credentials: s.cors_credentials,
            refused: refuse(403, "cors-origin", "this origin may not call this endpoint"),
        });
    } else if s.cors_origins.is_some() {
        // CORS on responses stays with the request phase's preflights.
        return fx;
    } else {
        fx.phases = Phases::REQUEST_HEADERS;
    }
    if s.security {
        fx.response_defaults = s
            .security_headers
            .iter()
            .map(|(name, value)| (name.to_string(), value.clone().into_bytes()))
            .collect();
    }
    fx
}

struct Headers;

impl wharf_guest::filter::EffectsGuest for Headers {
    fn effects() -> Effects {
        declared()
    }

    fn phases() -> Phases {
        Phases::REQUEST_HEADERS | Phases::RESPONSE_HEADERS
    }

    fn on_request_headers(head: Vec<u8>, headers: Vec<u8>) -> Verdict {
        let (s, head) = settings(&head);
        let Ok(pairs) = header_pairs(&headers) else {
            return refuse(
                400,
                "headers-malformed",
                "the request headers are malformed",
            );
        };
        let bytes: usize = pairs.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
        if pairs.len() > s.max_headers {
            return refuse(431, "headers-too-many", "too many request headers");
        }
        if bytes > s.max_header_bytes {
            return refuse(
                431,
                "headers-too-large",
                "the request headers are too large",
            );
        }
        if let Some((name, _)) = pairs.iter().find(|(n, _)| s.deny.iter().any(|d| d == n)) {
            return refuse(
                400,
                "headers-denied",
                &format!("header `{name}` is not accepted"),
            );
        }
        let find = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| text(v));
        if head.method == "OPTIONS"
            && s.cors_origins.is_some()
            && let (Some(origin), Some(_)) = (find("origin"), find("access-control-request-method"))
        {
            let Some(allow) = allowed_origin(&s, Some(origin)) else {
                return refuse(403, "cors-origin", "this origin may not call this endpoint");
            };
            let requested = find("access-control-request-headers").unwrap_or("");
            let allowed_headers = s.cors_headers.as_deref().unwrap_or(requested);
            let mut out = vec![
                ("access-control-allow-origin", allow.as_str()),
                ("access-control-allow-methods", s.cors_methods.as_str()),
                ("access-control-max-age", s.cors_max_age.as_str()),
                ("vary", "origin"),
            ];
            if !allowed_headers.is_empty() {
                out.push(("access-control-allow-headers", allowed_headers));
            }
            if s.cors_credentials {
                out.push(("access-control-allow-credentials", "true"));
            }
            return Verdict::block(204, &out, Vec::new()).tag("cors-preflight");
        }
        let mut v = Verdict::allow();
        for name in &s.strip {
            if find(name).is_some() {
                v = v.remove_request_header(name);
            }
        }
        if !s.allow.is_empty() {
            let always = ["host", "content-type", "content-length"];
            for (name, _) in &pairs {
                let kept = s.allow.iter().any(|a| a == name) || always.contains(name);
                if !kept {
                    v = v.remove_request_header(name);
                }
            }
        }
        v
    }

    fn on_request_body(_: Vec<u8>, _: Vec<u8>, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }

    fn on_response_headers(
        head: Vec<u8>,
        headers: Vec<u8>,
        _status: u16,
        resp: Vec<u8>,
    ) -> Verdict {
        let (s, _) = settings(&head);
        let response = header_pairs(&resp).unwrap_or_default();
        let mut v = Verdict::allow();
        if s.security {
            for (name, value) in &s.security_headers {
                if !response.iter().any(|(n, _)| n == name) {
                    v = v.set_response_header(name, value.as_bytes());
                }
            }
        }
        if s.cors_origins.is_some() {
            let request = header_pairs(&headers).unwrap_or_default();
            let origin = request
                .iter()
                .find(|(n, _)| *n == "origin")
                .map(|(_, v)| text(v));
            if let Some(allow) = allowed_origin(&s, origin) {
                v = v
                    .set_response_header("access-control-allow-origin", allow.as_bytes())
                    .add_response_header("vary", b"origin");
                if s.cors_credentials {
                    v = v.set_response_header("access-control-allow-credentials", b"true");
                }
            }
        }
        v
    }

    fn on_response_body(_: Vec<u8>, _: Vec<u8>, _: u16, _: Vec<u8>, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }
}

wharf_guest::export_filter_effects!(Headers);
