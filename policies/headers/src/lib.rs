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

use wharf_guest::filter::{Phases, Verdict};
use wharf_guest::{Head, config, header_pairs, json_string};

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
fn allowed_origin(origin: Option<&str>) -> Option<String> {
    let origin = origin?;
    let allowed = config("cors-origins")?;
    let any = allowed.split_whitespace().any(|o| o == "*");
    (any || allowed
        .split_whitespace()
        .any(|o| o.eq_ignore_ascii_case(origin)))
    .then(|| {
        if any && config("cors-credentials").as_deref() != Some("true") {
            "*".to_string()
        } else {
            origin.to_string()
        }
    })
}

fn text(v: &[u8]) -> &str {
    std::str::from_utf8(v).unwrap_or("")
}

struct Headers;

impl wharf_guest::filter::Guest for Headers {
    fn phases() -> Phases {
        Phases::REQUEST_HEADERS | Phases::RESPONSE_HEADERS
    }

    fn on_request_headers(head: Vec<u8>, headers: Vec<u8>) -> Verdict {
        let Ok(pairs) = header_pairs(&headers) else {
            return refuse(
                400,
                "headers-malformed",
                "the request headers are malformed",
            );
        };
        let bytes: usize = pairs.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
        if pairs.len() > number("max-headers", 100) {
            return refuse(431, "headers-too-many", "too many request headers");
        }
        if bytes > number("max-header-bytes", 32 * 1024) {
            return refuse(
                431,
                "headers-too-large",
                "the request headers are too large",
            );
        }
        let deny = words("deny-headers");
        if let Some((name, _)) = pairs.iter().find(|(n, _)| deny.iter().any(|d| d == n)) {
            return refuse(
                400,
                "headers-denied",
                &format!("header `{name}` is not accepted"),
            );
        }
        let find = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| text(v));
        let method = Head::decode(&head).map(|h| h.method).unwrap_or_default();
        if method == "OPTIONS"
            && let (Some(origin), Some(_)) = (find("origin"), find("access-control-request-method"))
            && config("cors-origins").is_some()
        {
            let Some(allow) = allowed_origin(Some(origin)) else {
                return refuse(403, "cors-origin", "this origin may not call this endpoint");
            };
            let methods = config("cors-methods").unwrap_or_else(|| "GET, POST, PUT, DELETE".into());
            let requested = find("access-control-request-headers").unwrap_or("");
            let allowed_headers = config("cors-headers").unwrap_or_else(|| requested.to_string());
            let max_age = config("cors-max-age").unwrap_or_else(|| "600".into());
            let mut out = vec![
                ("access-control-allow-origin", allow.as_str()),
                ("access-control-allow-methods", methods.as_str()),
                ("access-control-max-age", max_age.as_str()),
                ("vary", "origin"),
            ];
            if !allowed_headers.is_empty() {
                out.push(("access-control-allow-headers", allowed_headers.as_str()));
            }
            if config("cors-credentials").as_deref() == Some("true") {
                out.push(("access-control-allow-credentials", "true"));
            }
            return Verdict::block(204, &out, Vec::new()).tag("cors-preflight");
        }
        let mut v = Verdict::allow();
        for name in words("strip-headers") {
            if find(&name).is_some() {
                v = v.remove_request_header(&name);
            }
        }
        let allow = words("allow-headers");
        if !allow.is_empty() {
            let always = ["host", "content-type", "content-length"];
            for (name, _) in &pairs {
                let kept = allow.iter().any(|a| a == name) || always.contains(name);
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
        _head: Vec<u8>,
        headers: Vec<u8>,
        _status: u16,
        resp: Vec<u8>,
    ) -> Verdict {
        let request = header_pairs(&headers).unwrap_or_default();
        let response = header_pairs(&resp).unwrap_or_default();
        let has = |name: &str| response.iter().any(|(n, _)| *n == name);
        let mut v = Verdict::allow();
        if config("security").as_deref() != Some("off") {
            let csp = config("csp")
                .unwrap_or_else(|| "default-src 'none'; frame-ancestors 'none'".into());
            let mut wanted = vec![
                ("x-content-type-options", "nosniff".to_string()),
                ("x-frame-options", "DENY".to_string()),
                ("referrer-policy", "no-referrer".to_string()),
                ("cross-origin-resource-policy", "same-origin".to_string()),
                ("content-security-policy", csp),
            ];
            if let Some(hsts) = config("hsts") {
                wanted.push(("strict-transport-security", hsts));
            }
            for (name, value) in wanted {
                if !has(name) {
                    v = v.set_response_header(name, value.as_bytes());
                }
            }
        }
        let origin = request
            .iter()
            .find(|(n, _)| *n == "origin")
            .map(|(_, v)| text(v));
        if let Some(allow) = allowed_origin(origin) {
            v = v
                .set_response_header("access-control-allow-origin", allow.as_bytes())
                .add_response_header("vary", b"origin");
            if config("cors-credentials").as_deref() == Some("true") {
                v = v.set_response_header("access-control-allow-credentials", b"true");
            }
        }
        v
    }

    fn on_response_body(_: Vec<u8>, _: Vec<u8>, _: u16, _: Vec<u8>, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }
}

wharf_guest::export_filter!(Headers);
