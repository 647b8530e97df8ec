//! Writing filters: the generated `filter` world types, re-exported, and
//! small builders for verdicts so a filter reads as its policy.
//!
//! ```ignore
//! struct Deny;
//! impl wharf_guest::filter::Guest for Deny {
//!     fn phases() -> Phases { Phases::REQUEST_HEADERS }
//!     fn on_request_headers(head: Vec<u8>, headers: Vec<u8>) -> Verdict {
//!         Verdict::block(403, "no")
//!     }
//!     // the other phases: Verdict::allow()
//! }
//! wharf_guest::export_filter!(Deny);
//! ```

pub use crate::filter_bindings::Guest;
pub use crate::filter_bindings::wharf::plugin::filtering::{
    Audit, BodyStep, Cors, Decision, Effects, HeaderLimits, HeaderOp, Phases, Redirect, Verdict,
};
/// A filter that also declares what the host may apply for it without
/// calling it (the `filter-effects` world); export it with
/// [`crate::export_filter_effects!`].
pub use crate::filter_effects_bindings::Guest as EffectsGuest;
/// A filter that also builds its start-up state once, at load time, for
/// the host to snapshot (the `filter-preinit` world); export it with
/// [`crate::export_filter_preinit!`].
pub use crate::filter_preinit_bindings::Guest as PreinitGuest;
/// A filter that reads the request body in pieces as it arrives and may
/// decide on the first of them (the `filter-streaming` world); export it
/// with [`crate::export_filter_streaming!`].
pub use crate::filter_streaming_bindings::Guest as StreamingGuest;

use crate::Response;

/// Asks the host, from `on-request-headers`, to give the verdict this call
/// returns again, without calling the filter, to later requests with the
/// same values of `headers` (lower-case names, 1 to 8), until `until`
/// (seconds since the Unix epoch; at most 300 seconds ahead are used).
/// Only an `allow` that keeps the body is remembered, and only while the
/// filter's config is unchanged. Ask only when the verdict depends on
/// nothing else: `auth` asks once a credential verified.
pub fn remember_verdict(headers: &[&str], until: u64) -> Result<(), String> {
    let names: Vec<String> = headers.iter().map(|h| (*h).to_string()).collect();
    crate::filter_bindings::wharf::plugin::filtering::remember_verdict(&names, until)
}

impl Verdict {
    /// Allow, change nothing, want no body.
    pub fn allow() -> Self {
        Verdict {
            decision: Decision::Allow,
            request_header_ops: Vec::new(),
            response_header_ops: Vec::new(),
            body: None,
            metadata: Vec::new(),
            want_body: false,
            audit: Audit {
                rule_ids: Vec::new(),
                tags: Vec::new(),
                reason: String::new(),
            },
        }
    }

    /// Answer with `status` and `body` (content type given by `headers`).
    pub fn block(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Self {
        let mut v = Verdict::allow();
        v.decision = Decision::Block(Response {
            status,
            headers: crate::headers_with(&[], headers).unwrap_or_default(),
            body: body.into(),
        });
        v
    }

    /// Redirect to `location` with `status` (301, 302, 303, 307 or 308).
    pub fn redirect(status: u16, location: &str) -> Self {
        let mut v = Verdict::allow();
        v.decision = Decision::Redirect(Redirect {
            status,
            location: location.into(),
        });
        v
    }

    /// Asks for the body (after a header phase).
    pub fn want_body(mut self) -> Self {
        self.want_body = true;
        self
    }

    /// Records a matched rule and a reason.
    pub fn rule(mut self, id: &str, reason: &str) -> Self {
        self.audit.rule_ids.push(id.into());
        if self.audit.reason.is_empty() {
            self.audit.reason = reason.into();
        }
        self
    }

    pub fn tag(mut self, tag: &str) -> Self {
        self.audit.tags.push(tag.into());
        self
    }

    pub fn meta(mut self, key: &str, value: &str) -> Self {
        self.metadata.push((key.into(), value.into()));
        self
    }

    pub fn set_request_header(mut self, name: &str, value: &[u8]) -> Self {
        self.request_header_ops
            .push(HeaderOp::Set((name.into(), value.to_vec())));
        self
    }

    pub fn remove_request_header(mut self, name: &str) -> Self {
        self.request_header_ops.push(HeaderOp::Remove(name.into()));
        self
    }

    pub fn set_response_header(mut self, name: &str, value: &[u8]) -> Self {
        self.response_header_ops
            .push(HeaderOp::Set((name.into(), value.to_vec())));
        self
    }

    pub fn add_response_header(mut self, name: &str, value: &[u8]) -> Self {
        self.response_header_ops
            .push(HeaderOp::Add((name.into(), value.to_vec())));
        self
    }

    pub fn remove_response_header(mut self, name: &str) -> Self {
        self.response_header_ops.push(HeaderOp::Remove(name.into()));
        self
    }

    /// Replaces the body the phase inspected.
    pub fn replace_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self
    }
}
