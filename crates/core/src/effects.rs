//! What a filter declares, once at load time, that it does the same way on
//! every request (header limits, CORS, default response headers), and
//! applying it for the host without a guest call. The guest's declaration
//! is checked into these types by the runtime; the filter chain applies
//! them at the filter's place in the chain.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};

use crate::request::{Request, Response};
use crate::verdict::{Audit, Decision, HeaderOp, Phases, Verdict};

/// A filter's declared effects.
#[derive(Debug, Clone)]
pub struct Effects {
    /// The phases the guest is still called in.
    pub phases: Phases,
    /// Limits on the request's header list.
    pub header_limits: Option<HeaderLimits>,
    /// CORS, for preflights and responses.
    pub cors: Option<Cors>,
    /// Response headers set when the response lacks them.
    pub response_defaults: Vec<(HeaderName, HeaderValue)>,
}

/// Limits on the request's header list.
#[derive(Debug, Clone)]
pub struct HeaderLimits {
    /// Most headers.
    pub max_count: usize,
    /// The answer past `max_count`.
    pub too_many: Refusal,
    /// Most bytes, counted as name + value + 4 for each header.
    pub max_bytes: usize,
    /// The answer past `max_bytes`.
    pub too_large: Refusal,
}

/// CORS as the host applies it.
#[derive(Debug, Clone)]
pub struct Cors {
    /// Allowed origins; empty with `any`.
    pub origins: Vec<String>,
    /// `*` was among the origins.
    pub any: bool,
    /// `access-control-allow-methods` of a preflight answer.
    pub methods: HeaderValue,
    /// `access-control-allow-headers`; none: the preflight's own request.
    pub headers: Option<HeaderValue>,
    /// `access-control-max-age`.
    pub max_age: HeaderValue,
    /// Whether credentials are allowed.
    pub credentials: bool,
    /// The answer to a preflight from an origin not allowed.
    pub refused: Refusal,
}

/// A blocking answer declared ahead, with what its audit record says.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// The status, 200–299 or 400–599.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Bytes,
    /// Its rule ids, tags and reason.
    pub audit: Audit,
}

impl Refusal {
    /// The verdict that answers with this refusal.
    pub fn verdict(&self) -> Verdict {
        let mut v = Verdict::allow();
        v.decision = Decision::Block(Response::new(
            self.status,
            self.headers.clone(),
            self.body.clone(),
        ));
        v.audit = self.audit.clone();
        v
    }
}

const ALLOW_ORIGIN: HeaderName = header::ACCESS_CONTROL_ALLOW_ORIGIN;
const ALLOW_CREDENTIALS: HeaderName = header::ACCESS_CONTROL_ALLOW_CREDENTIALS;
const ORIGIN_VALUE: HeaderValue = HeaderValue::from_static("origin");
const TRUE: HeaderValue = HeaderValue::from_static("true");

impl Effects {
    /// The request-headers phase's verdict when the declaration decides
    /// the request (a limit passed, a preflight answered); `None`: it goes
    /// on.
    pub fn on_request(&self, req: &Request) -> Option<Verdict> {
        if let Some(limits) = &self.header_limits {
            if req.headers.len() > limits.max_count {
                return Some(limits.too_many.verdict());
            }
            let bytes: usize = req
                .headers
                .iter()
                .map(|(n, v)| n.as_str().len() + v.len() + 4)
                .sum();
            if bytes > limits.max_bytes {
                return Some(limits.too_large.verdict());
            }
        }
        let cors = self.cors.as_ref()?;
        if req.method != Method::OPTIONS {
            return None;
        }
        let origin = req.headers.get(header::ORIGIN)?;
        req.headers.get(header::ACCESS_CONTROL_REQUEST_METHOD)?;
        let Some(allow) = cors.allowed(text(origin)) else {
            return Some(cors.refused.verdict());
        };
        let mut headers = HeaderMap::new();
        headers.append(ALLOW_ORIGIN, allow);
        headers.append(header::ACCESS_CONTROL_ALLOW_METHODS, cors.methods.clone());
        headers.append(header::ACCESS_CONTROL_MAX_AGE, cors.max_age.clone());
        headers.append(header::VARY, ORIGIN_VALUE);
        let requested = req.headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS);
        let allowed_headers = cors.headers.as_ref().or(requested);
        if let Some(value) = allowed_headers.filter(|v| !text(v).is_empty()) {
            headers.append(header::ACCESS_CONTROL_ALLOW_HEADERS, value.clone());
        }
        if cors.credentials {
            headers.append(ALLOW_CREDENTIALS, TRUE);
        }
        let mut v = Verdict::allow();
        v.decision = Decision::Block(Response::new(StatusCode::NO_CONTENT, headers, Bytes::new()));
        v.audit.tags.push("cors-preflight".into());
        Some(v)
    }

    /// Whether the declaration changes responses.
    pub fn touches_response(&self) -> bool {
        self.cors.is_some() || !self.response_defaults.is_empty()
    }

    /// The response-headers phase's changes to `resp`, the response to `req`.
    pub fn on_response(&self, req: &Request, resp: &Response) -> Vec<HeaderOp> {
        let mut ops: Vec<HeaderOp> = self
            .response_defaults
            .iter()
            .filter(|(name, _)| !resp.headers.contains_key(name))
            .map(|(name, value)| HeaderOp::Set(name.clone(), value.clone()))
            .collect();
        if let Some(cors) = &self.cors
            && let Some(origin) = req.headers.get(header::ORIGIN)
            && let Some(allow) = cors.allowed(text(origin))
        {
            ops.push(HeaderOp::Set(ALLOW_ORIGIN, allow));
            ops.push(HeaderOp::Add(header::VARY, ORIGIN_VALUE));
            if cors.credentials {
                ops.push(HeaderOp::Set(ALLOW_CREDENTIALS, TRUE));
            }
        }
        ops
    }
}

impl Cors {
    /// What `access-control-allow-origin` says to `origin`, when allowed.
    fn allowed(&self, origin: &str) -> Option<HeaderValue> {
        let listed = self.origins.iter().any(|o| o.eq_ignore_ascii_case(origin));
        if !self.any && !listed {
            return None;
        }
        if self.any && !self.credentials {
            return Some(HeaderValue::from_static("*"));
        }
        HeaderValue::from_str(origin).ok()
    }
}

/// A header value as text; not UTF-8: empty.
fn text(v: &HeaderValue) -> &str {
    std::str::from_utf8(v.as_bytes()).unwrap_or("")
}
