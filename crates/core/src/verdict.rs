//! What a filter answers, in host terms: phases, decisions, header
//! operations, metadata and audit data, already validated. The runtime
//! builds these from a guest's verdict; the chain applies them. Nothing here
//! knows about wasmtime or any transport.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::request::Response;

/// One of the four points where a filter can inspect a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The request's head and headers, before the body is read.
    RequestHeaders = 0,
    /// The request's body.
    RequestBody = 1,
    /// The response's status and headers.
    ResponseHeaders = 2,
    /// The response's body.
    ResponseBody = 3,
}

impl Phase {
    /// The four phases, in the order a request meets them.
    pub const ALL: [Phase; 4] = [
        Phase::RequestHeaders,
        Phase::RequestBody,
        Phase::ResponseHeaders,
        Phase::ResponseBody,
    ];

    /// The phase's name in audit records and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::RequestHeaders => "request_headers",
            Phase::RequestBody => "request_body",
            Phase::ResponseHeaders => "response_headers",
            Phase::ResponseBody => "response_body",
        }
    }

    /// Whether this phase runs before the agent.
    pub fn is_request(self) -> bool {
        matches!(self, Phase::RequestHeaders | Phase::RequestBody)
    }

    /// Whether this phase inspects a body.
    pub fn is_body(self) -> bool {
        matches!(self, Phase::RequestBody | Phase::ResponseBody)
    }
}

/// The set of phases a filter registered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Phases(u8);

impl Phases {
    /// These phases and `phase`.
    pub fn with(mut self, phase: Phase) -> Self {
        self.0 |= 1 << phase as u8;
        self
    }

    /// Whether `phase` is among these.
    pub fn has(self, phase: Phase) -> bool {
        self.0 & (1 << phase as u8) != 0
    }

    /// Whether there are none.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The phase names, for listings.
    pub fn names(self) -> Vec<&'static str> {
        Phase::ALL
            .into_iter()
            .filter(|p| self.has(*p))
            .map(Phase::as_str)
            .collect()
    }
}

/// What a filter decided.
#[derive(Debug)]
pub enum Decision {
    /// Let the request go on.
    Allow,
    /// Answer with this response instead.
    Block(Response),
    /// Redirect: a 301, 302, 303, 307 or 308 status and its location.
    Redirect {
        /// The redirect status.
        status: http::StatusCode,
        /// Where to.
        location: HeaderValue,
    },
}

impl Decision {
    /// The decision's name in audit records.
    pub fn as_str(&self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Block(_) => "block",
            Decision::Redirect { .. } => "redirect",
        }
    }
}

/// A change to a header list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderOp {
    /// Sets the header, replacing any values.
    Set(HeaderName, HeaderValue),
    /// Adds a value to the header.
    Add(HeaderName, HeaderValue),
    /// Removes the header.
    Remove(HeaderName),
}

impl HeaderOp {
    /// Applies the operation to `headers`.
    pub fn apply(&self, headers: &mut HeaderMap) {
        match self {
            HeaderOp::Set(name, value) => {
                headers.insert(name.clone(), value.clone());
            }
            HeaderOp::Add(name, value) => {
                headers.append(name.clone(), value.clone());
            }
            HeaderOp::Remove(name) => {
                headers.remove(name);
            }
        }
    }
}

/// Why a filter decided what it did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audit {
    /// The ids of the rules that matched.
    pub rule_ids: Vec<String>,
    /// Tags of those rules.
    pub tags: Vec<String>,
    /// Why, in words.
    pub reason: String,
}

impl Audit {
    /// Whether there is anything to record.
    pub fn is_empty(&self) -> bool {
        self.rule_ids.is_empty() && self.tags.is_empty() && self.reason.is_empty()
    }
}

/// A validated verdict for one phase.
#[derive(Debug)]
pub struct Verdict {
    /// What the filter decided.
    pub decision: Decision,
    /// Changes to the request's headers.
    pub request_ops: Vec<HeaderOp>,
    /// Changes to the response's headers.
    pub response_ops: Vec<HeaderOp>,
    /// A replacement for the body the phase inspected.
    pub body: Option<Bytes>,
    /// Key/value pairs for later filters and the agent.
    pub metadata: Vec<(String, String)>,
    /// The filter also wants the body's phase.
    pub want_body: bool,
    /// What the audit record says of it.
    pub audit: Audit,
    /// The filter asked the host to give this verdict again, without a
    /// call, to requests with the same values of some headers.
    pub remember: Option<Remember>,
}

/// A filter's ask to have its request-headers verdict remembered
/// (`filtering.remember-verdict`): the verdict depends on nothing but the
/// values of `headers` (and the filter's config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remember {
    /// The headers whose values key the verdict, in the order asked.
    pub headers: Vec<http::HeaderName>,
    /// Seconds since the Unix epoch until which it may be given again.
    pub until: u64,
}

/// Most headers a remembered verdict may be keyed by.
pub const MAX_REMEMBER_HEADERS: usize = 8;

impl Verdict {
    /// Allow, change nothing, want no body.
    pub fn allow() -> Self {
        Verdict {
            decision: Decision::Allow,
            request_ops: Vec::new(),
            response_ops: Vec::new(),
            body: None,
            metadata: Vec::new(),
            want_body: false,
            audit: Audit::default(),
            remember: None,
        }
    }

    /// Whether the verdict says anything worth an audit record.
    pub fn flagged(&self) -> bool {
        !matches!(self.decision, Decision::Allow) || !self.audit.is_empty()
    }
}

/// Limits on what one verdict may attach.
pub const MAX_METADATA: usize = 32;
/// Longest metadata key.
pub const MAX_METADATA_KEY: usize = 64;
/// Longest metadata value.
pub const MAX_METADATA_VALUE: usize = 1024;
/// Limits on audit data kept per verdict (more is cut, not refused).
pub const MAX_AUDIT_ITEMS: usize = 64;
/// Longest rule id, tag or reason kept.
pub const MAX_AUDIT_TEXT: usize = 256;

/// Metadata keys: 1–64 of `a-z 0-9 - _ .`.
pub fn valid_metadata_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_METADATA_KEY
        && key.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_a_set() {
        let p = Phases::default()
            .with(Phase::RequestHeaders)
            .with(Phase::ResponseBody);
        assert!(p.has(Phase::RequestHeaders) && p.has(Phase::ResponseBody));
        assert!(!p.has(Phase::RequestBody));
        assert_eq!(p.names(), ["request_headers", "response_body"]);
        assert!(Phases::default().is_empty());
    }

    #[test]
    fn header_ops_set_add_remove() {
        let mut h = HeaderMap::new();
        let name = HeaderName::from_static("x-a");
        HeaderOp::Add(name.clone(), HeaderValue::from_static("1")).apply(&mut h);
        HeaderOp::Add(name.clone(), HeaderValue::from_static("2")).apply(&mut h);
        assert_eq!(h.get_all(&name).iter().count(), 2);
        HeaderOp::Set(name.clone(), HeaderValue::from_static("3")).apply(&mut h);
        assert_eq!(h.get_all(&name).iter().collect::<Vec<_>>(), ["3"]);
        HeaderOp::Remove(name.clone()).apply(&mut h);
        assert!(h.get(&name).is_none());
    }

    #[test]
    fn metadata_keys() {
        assert!(valid_metadata_key("auth.sub"));
        assert!(valid_metadata_key("waf-score_1"));
        assert!(!valid_metadata_key(""));
        assert!(!valid_metadata_key("Auth"));
        assert!(!valid_metadata_key("a b"));
        assert!(!valid_metadata_key(&"a".repeat(65)));
    }
}
