//! Filters in the runtime: a compiled filter image, one call per phase on a
//! live instance, and validating what the guest answered into a host
//! [`Verdict`]. A verdict that breaks the contract is a [`CallError::InvalidVerdict`],
//! never applied in part.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode};
use wasmtime::Engine;

use super::bindings::{
    Filter, FilterIndices, FilterPre, FilterStreaming, FilterStreamingIndices, GuestBodyStep,
    GuestDecision, GuestHeaderOp, GuestPhases, GuestVerdict,
};
use super::call::{CallError, Live, by_deadline, classify, new_store};
use super::convert::{decode_headers, encode_request, host_owned};
use super::state::{GuestIdentity, GuestState, Remembering};
use wharf_config::Limits;
use wharf_core::request::{Request, Response};
use wharf_core::verdict::{
    Audit, Decision, HeaderOp, MAX_AUDIT_ITEMS, MAX_AUDIT_TEXT, MAX_METADATA, MAX_METADATA_VALUE,
    Phase, Phases, Verdict, valid_metadata_key,
};

/// Most header operations one verdict may carry.
const MAX_HEADER_OPS: usize = 256;

/// A compiled, type-checked filter ready to be instantiated.
pub struct FilterImage {
    pub(super) engine: Engine,
    pub(super) pre: FilterPre<GuestState>,
    pre_async: FilterPre<GuestState>,
    indices: FilterIndices,
    /// For a filter that reads the request body in pieces
    /// (`on-request-body-chunk`).
    streaming: Option<FilterStreamingIndices>,
    pub(super) identity: Arc<GuestIdentity>,
    pub(super) limits: Limits,
}

/// What the host calls on a filter instance.
pub struct FilterExports {
    filter: Filter,
    /// Boxed: most filters have none, and a live instance is moved about.
    streaming: Option<Box<FilterStreaming>>,
}

/// A live filter instance.
pub type FilterLive = Live<FilterExports>;

/// The export a filter that reads the body in pieces provides.
const CHUNK: &str = "on-request-body-chunk";

impl FilterImage {
    pub(super) fn new(
        engine: Engine,
        pre: FilterPre<GuestState>,
        pre_async: FilterPre<GuestState>,
        identity: GuestIdentity,
        limits: Limits,
    ) -> Result<Self, String> {
        let instance_pre = pre.instance_pre();
        let indices = FilterIndices::new(instance_pre).map_err(|e| format!("{e:#}"))?;
        let streaming = match instance_pre.component().get_export_index(None, CHUNK) {
            None => None,
            Some(_) => Some(FilterStreamingIndices::new(instance_pre).map_err(|e| {
                format!("its `{CHUNK}` export is not `func(head: list<u8>, headers: list<u8>, chunk: list<u8>, last: bool) -> body-step`: {e:#}")
            })?),
        };
        Ok(FilterImage {
            engine,
            pre,
            pre_async,
            indices,
            streaming,
            identity: Arc::new(identity),
            limits,
        })
    }

    /// Whether the filter reads the request body in pieces as it arrives.
    pub fn streams_request_body(&self) -> bool {
        self.streaming.is_some()
    }

    /// A new instance on this thread (load time).
    pub fn instantiate(&self) -> Result<FilterLive, CallError> {
        let mut store = new_store(&self.engine, &self.identity, &self.limits, false);
        let exports = self
            .pre
            .instance_pre()
            .instantiate(&mut store)
            .and_then(|instance| self.load(&mut store, &instance));
        Live::new(store, exports, self.limits)
    }

    /// A new instance on a fiber that yields at every epoch tick.
    pub async fn instantiate_async(&self) -> Result<FilterLive, CallError> {
        let mut store = new_store(&self.engine, &self.identity, &self.limits, true);
        let deadline = store.data().deadline_at;
        let instance = by_deadline(
            deadline,
            self.pre_async.instance_pre().instantiate_async(&mut store),
        )
        .await
        .ok_or(CallError::Deadline)?;
        let exports = instance.and_then(|instance| self.load(&mut store, &instance));
        Live::new(store, exports, self.limits)
    }

    /// The exports the host calls, from a new instance.
    fn load(
        &self,
        store: &mut wasmtime::Store<GuestState>,
        instance: &wasmtime::component::Instance,
    ) -> wasmtime::Result<FilterExports> {
        Ok(FilterExports {
            filter: self.indices.load(&mut *store, instance)?,
            streaming: match &self.streaming {
                Some(indices) => Some(Box::new(indices.load(&mut *store, instance)?)),
                None => None,
            },
        })
    }
}

impl Live<FilterExports> {
    /// The phases the filter registers for (load time, on this thread).
    pub fn phases(&mut self) -> Result<Phases, CallError> {
        self.store.data_mut().may_yield = false;
        self.arm_deadline();
        let flags = self
            .exports
            .filter
            .call_phases(&mut self.store)
            .map_err(|e| classify(&self.store, e))?;
        Ok(phases_from_guest(flags))
    }

    /// Runs one phase on a fiber. `req.body` is what the filter inspects in
    /// the request-body phase (the host passes an empty body elsewhere);
    /// `resp` is given in the response phases. `route` holds the config
    /// values of the agent the request goes to.
    pub async fn phase(
        &mut self,
        phase: Phase,
        req: &Request,
        resp: Option<&Response>,
        route: Option<Arc<BTreeMap<String, String>>>,
    ) -> Result<Verdict, CallError> {
        self.begin(req, true);
        let data = self.store.data_mut();
        data.route_values = route;
        if phase == Phase::RequestHeaders {
            data.remember = Remembering::Open;
        }
        let (head, headers) = encode_request(req, &mut self.scratch);
        let f = &self.exports.filter;
        let deadline = self.store.data().deadline_at;
        let store = &mut self.store;
        let call = async move {
            match (phase, resp) {
                (Phase::RequestHeaders, _) => {
                    let func = f.func_on_request_headers();
                    func.call_async(store, (head, headers)).await
                }
                (Phase::RequestBody, _) => {
                    let func = f.func_on_request_body();
                    func.call_async(store, (head, headers, &req.body[..])).await
                }
                (Phase::ResponseHeaders, Some(resp)) => {
                    let resp_headers = super::encode_headers(&resp.headers);
                    let func = f.func_on_response_headers();
                    let args = (head, headers, resp.status.as_u16(), &resp_headers[..]);
                    func.call_async(store, args).await
                }
                (Phase::ResponseBody, Some(resp)) => {
                    let resp_headers = super::encode_headers(&resp.headers);
                    let func = f.func_on_response_body();
                    let args = (
                        head,
                        headers,
                        resp.status.as_u16(),
                        &resp_headers[..],
                        &resp.body[..],
                    );
                    func.call_async(store, args).await
                }
                (_, None) => unreachable!("response phases are always given the response"),
            }
        };
        // Past the deadline `in_call` stays set: the instance is abandoned.
        let result = by_deadline(deadline, call)
            .await
            .ok_or(CallError::Deadline)?;
        self.in_call = false;
        let data = self.store.data_mut();
        data.route_values = None;
        let remember = match std::mem::take(&mut data.remember) {
            Remembering::Asked(ask) => Some(ask),
            Remembering::Open | Remembering::Closed => None,
        };
        match result {
            Ok((verdict,)) => verdict_from_guest(verdict, phase, self.limits.response_body)
                .map(|mut v| {
                    v.remember = remember;
                    v
                })
                .map_err(CallError::InvalidVerdict),
            Err(err) => Err(classify(&self.store, err)),
        }
    }
}

impl Live<FilterExports> {
    /// Shows a streaming filter one piece of the request body, on a fiber:
    /// `Ok(None)` when it wants the next one. `req.body` is not read.
    pub async fn body_piece(
        &mut self,
        req: &Request,
        piece: &[u8],
        last: bool,
        route: Option<Arc<BTreeMap<String, String>>>,
    ) -> Result<Option<Verdict>, CallError> {
        if self.exports.streaming.is_none() {
            return Err(CallError::Internal(format!(
                "the filter has no `{CHUNK}` export"
            )));
        }
        self.begin(req, true);
        self.store.data_mut().route_values = route;
        let (head, headers) = encode_request(req, &mut self.scratch);
        let func = self
            .exports
            .streaming
            .as_ref()
            .map(|s| s.func_on_request_body_chunk())
            .expect("checked above");
        let deadline = self.store.data().deadline_at;
        let call = func.call_async(&mut self.store, (head, headers, piece, last));
        let result = by_deadline(deadline, call)
            .await
            .ok_or(CallError::Deadline)?;
        self.in_call = false;
        self.store.data_mut().route_values = None;
        match result {
            Ok((GuestBodyStep::More,)) => Ok(None),
            Ok((GuestBodyStep::Decided(v),)) => {
                if v.body.is_some() {
                    return Err(CallError::InvalidVerdict(
                        "a body replacement for a body it saw in pieces".into(),
                    ));
                }
                verdict_from_guest(v, Phase::RequestBody, self.limits.response_body)
                    .map(Some)
                    .map_err(CallError::InvalidVerdict)
            }
            Err(err) => Err(classify(&self.store, err)),
        }
    }
}

/// The host's form of a guest's phase flags.
pub(super) fn phases_from_guest(flags: GuestPhases) -> Phases {
    let mut phases = Phases::default();
    for (flag, phase) in [
        (GuestPhases::REQUEST_HEADERS, Phase::RequestHeaders),
        (GuestPhases::REQUEST_BODY, Phase::RequestBody),
        (GuestPhases::RESPONSE_HEADERS, Phase::ResponseHeaders),
        (GuestPhases::RESPONSE_BODY, Phase::ResponseBody),
    ] {
        if flags.contains(flag) {
            phases = phases.with(phase);
        }
    }
    phases
}

/// Checks a guest's verdict against the contract for `phase`.
pub(super) fn verdict_from_guest(
    v: GuestVerdict,
    phase: Phase,
    max_body: usize,
) -> Result<Verdict, String> {
    let decision = match v.decision {
        GuestDecision::Allow => Decision::Allow,
        GuestDecision::Block(resp) => {
            let status = StatusCode::from_u16(resp.status)
                .ok()
                .filter(|s| s.is_success() || s.is_client_error() || s.is_server_error())
                .ok_or_else(|| format!("block status {} is not 200–299 or 400–599", resp.status))?;
            if resp.body.len() > max_body {
                return Err(format!(
                    "block body of {} bytes exceeds the limit of {max_body} bytes",
                    resp.body.len()
                ));
            }
            let headers = decode_headers(Bytes::from(resp.headers))
                .map_err(|e| format!("block headers: {e}"))?;
            Decision::Block(Response::new(status, headers, Bytes::from(resp.body)))
        }
        GuestDecision::Redirect(r) => {
            let status = match r.status {
                301 | 302 | 303 | 307 | 308 => StatusCode::from_u16(r.status).expect("valid"),
                other => {
                    return Err(format!(
                        "redirect status {other} is not 301, 302, 303, 307 or 308"
                    ));
                }
            };
            let location = HeaderValue::from_str(&r.location)
                .ok()
                .filter(|l| !l.is_empty())
                .ok_or("redirect location is not a valid header value")?;
            Decision::Redirect { status, location }
        }
    };
    if !phase.is_request() && !v.request_header_ops.is_empty() {
        return Err("request header operations in a response phase".into());
    }
    if !phase.is_body() && v.body.is_some() {
        return Err("a body replacement in a header phase".into());
    }
    if let Some(body) = &v.body
        && body.len() > max_body
    {
        return Err(format!(
            "replacement body of {} bytes exceeds the limit of {max_body} bytes",
            body.len()
        ));
    }
    if v.metadata.len() > MAX_METADATA {
        return Err(format!(
            "{} metadata pairs, more than {MAX_METADATA}",
            v.metadata.len()
        ));
    }
    for (key, value) in &v.metadata {
        if !valid_metadata_key(key) {
            return Err(format!(
                "metadata key `{}` is not 1–64 of a-z 0-9 - _ .",
                clip(key)
            ));
        }
        if value.len() > MAX_METADATA_VALUE {
            return Err(format!(
                "metadata value of `{key}` is over {MAX_METADATA_VALUE} bytes"
            ));
        }
    }
    Ok(Verdict {
        decision,
        request_ops: header_ops(v.request_header_ops)?,
        response_ops: header_ops(v.response_header_ops)?,
        body: v.body.map(Bytes::from),
        metadata: v.metadata,
        want_body: v.want_body,
        audit: Audit {
            rule_ids: clip_list(v.audit.rule_ids),
            tags: clip_list(v.audit.tags),
            reason: clip(&v.audit.reason).to_string(),
        },
        remember: None,
    })
}

fn header_ops(ops: Vec<GuestHeaderOp>) -> Result<Vec<HeaderOp>, String> {
    if ops.len() > MAX_HEADER_OPS {
        return Err(format!(
            "{} header operations, more than {MAX_HEADER_OPS}",
            ops.len()
        ));
    }
    ops.into_iter()
        .map(|op| {
            let (name, value) = match op {
                GuestHeaderOp::Set((n, v)) => (n, Some((true, v))),
                GuestHeaderOp::Add((n, v)) => (n, Some((false, v))),
                GuestHeaderOp::Remove(n) => (n, None),
            };
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("`{}` is not a valid header name", clip(&name)))?;
            if host_owned(&name) {
                return Err(format!("header `{name}` is owned by the host"));
            }
            Ok(match value {
                None => HeaderOp::Remove(name),
                Some((set, value)) => {
                    let value = HeaderValue::from_bytes(&value)
                        .map_err(|_| format!("header `{name}` has an invalid value"))?;
                    if set {
                        HeaderOp::Set(name, value)
                    } else {
                        HeaderOp::Add(name, value)
                    }
                }
            })
        })
        .collect()
}

/// At most [`MAX_AUDIT_TEXT`] bytes, cut at a char boundary.
pub(super) fn clip(s: &str) -> &str {
    let mut end = s.len().min(MAX_AUDIT_TEXT);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn clip_list(mut items: Vec<String>) -> Vec<String> {
    items.truncate(MAX_AUDIT_ITEMS);
    for item in &mut items {
        let cut = clip(item).len();
        item.truncate(cut);
    }
    items
}

/// Checks a verdict built from arbitrary bytes against every phase's
/// contract: the entry point of the `verdict` fuzz target.
#[cfg(feature = "fuzzing")]
pub fn fuzz_verdict(data: &[u8]) {
    let mut u = arbitrary::Unstructured::new(data);
    let Ok(verdict) = arbitrary_verdict(&mut u) else {
        return;
    };
    for phase in Phase::ALL {
        let _ = verdict_from_guest(verdict.clone(), phase, 4096);
    }
}

#[cfg(feature = "fuzzing")]
fn arbitrary_verdict(u: &mut arbitrary::Unstructured<'_>) -> arbitrary::Result<GuestVerdict> {
    use super::bindings::GuestResponse;
    use arbitrary::Arbitrary;
    let decision = match u.int_in_range(0u8..=2)? {
        0 => GuestDecision::Allow,
        1 => GuestDecision::Block(GuestResponse {
            status: u.arbitrary()?,
            headers: Vec::arbitrary(u)?,
            body: Vec::arbitrary(u)?,
        }),
        _ => GuestDecision::Redirect(super::bindings::GuestRedirect {
            status: u.arbitrary()?,
            location: String::arbitrary(u)?,
        }),
    };
    let mut ops = || -> arbitrary::Result<Vec<GuestHeaderOp>> {
        let n = u.int_in_range(0usize..=8)?;
        (0..n)
            .map(|_| {
                Ok(match u.int_in_range(0u8..=2)? {
                    0 => GuestHeaderOp::Set((String::arbitrary(u)?, Vec::arbitrary(u)?)),
                    1 => GuestHeaderOp::Add((String::arbitrary(u)?, Vec::arbitrary(u)?)),
                    _ => GuestHeaderOp::Remove(String::arbitrary(u)?),
                })
            })
            .collect()
    };
    let request_header_ops = ops()?;
    let response_header_ops = ops()?;
    Ok(GuestVerdict {
        decision,
        request_header_ops,
        response_header_ops,
        body: Option::arbitrary(u)?,
        metadata: Vec::arbitrary(u)?,
        want_body: u.arbitrary()?,
        audit: super::bindings::GuestAudit {
            rule_ids: Vec::arbitrary(u)?,
            tags: Vec::arbitrary(u)?,
            reason: String::arbitrary(u)?,
        },
    })
}
