//! One request through its filter chain: the request-headers phase (before
//! the body is read), the request-body phase for the filters that asked for
//! it (in pieces as it arrives for those that read it so: [`pieces`]),
//! then the response phases on whatever response the client gets. One
//! instance per filter serves all the phases of the request; what a filter
//! declared ahead (its effects) is applied at its place without a call,
//! before the guest's own call in the same phase; a request-headers verdict
//! the filter asked to be remembered is given again without a call
//! ([`remembered`]). Failures are
//! classified and the filter's failure mode decides; detect mode records
//! verdicts without applying them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::HeaderMap;

use super::FilterRoute;
use super::audit::AuditVerdict;
use super::metrics::{FailureKind, Skip};
use super::remembered::{self, Remembered};
use wharf_config::{Failure, FilterMode, PastLimit};
use wharf_core::effects::Effects;
use wharf_core::request::{Request, Response};
use wharf_core::trace::{self, Attribute, Kind};
use wharf_core::verdict::{Decision, HeaderOp, Phase, Phases, Verdict};
use wharf_routing::{Lease, ensure_instance};
use wharf_runtime::{CallError, FilterLive};

mod pieces;

/// Why the chain failed the request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterFailure {
    /// A filter whose failure mode is `closed` failed.
    #[error("filter `{filter}` failed in {phase}: {kind:?}")]
    Failed {
        /// The filter.
        filter: String,
        /// The phase it failed in.
        phase: &'static str,
        /// How.
        kind: FailureKind,
    },
    /// A body past a filter's body limit, whose policy is `reject`.
    #[error("the {what} body is over filter `{filter}`'s limit of {limit} bytes")]
    BodyTooLarge {
        /// The filter.
        filter: String,
        /// Its limit, in bytes.
        limit: usize,
        /// `request` or `response`.
        what: &'static str,
    },
}

/// What the request phases decided.
pub enum Flow {
    /// Every filter allowed: go on to the body, or the agent.
    Continue,
    /// A filter answered: skip the rest of the request path.
    Stop(Response),
}

enum Slot {
    Empty,
    Fresh(FilterLive),
    Warm(Lease<FilterLive>),
    /// Failed in an earlier phase: not called again for this request.
    Skipped,
}

/// The state of one request's pass through its chain.
pub struct ChainRun<'a> {
    chain: &'a [Arc<FilterRoute>],
    route_values: &'a BTreeMap<String, Arc<BTreeMap<String, String>>>,
    slots: Vec<Slot>,
    /// How many filters saw the request; the response phases run for these.
    ran: usize,
    want_request_body: Vec<bool>,
    /// Response header changes from the request phases, for the response.
    response_ops: Vec<HeaderOp>,
    /// Metadata from the response phases (the request's own is in the request).
    pub late_metadata: Vec<(String, String)>,
    /// Which filter set each entry of the request's metadata and of
    /// `late_metadata`: (filter, position), so a later phase of the same
    /// filter updates its keys instead of repeating them.
    request_keys: Vec<(usize, usize)>,
    late_keys: Vec<(usize, usize)>,
    /// Flagged verdicts and failures, for the audit record.
    pub records: Vec<AuditVerdict>,
    /// The filters still reading the request body in pieces, in chain
    /// order, and how many bytes of it they were shown.
    reading: Vec<usize>,
    shown: usize,
}

/// What one call shows a filter besides the request's head and headers.
#[derive(Clone, Copy)]
enum Input<'r> {
    /// The phase's whole input: the response in the response phases.
    Phase(Option<&'r Response>),
    /// One piece of the request body, and whether it is the last.
    Piece(&'r [u8], bool),
}

/// What one call came to (returned once and matched at once, as an
/// `Option<Verdict>` would be: not worth a box).
#[allow(clippy::large_enum_variant)]
enum Step {
    /// The filter failed open, now or earlier: passed over.
    Skipped,
    /// A filter reading pieces wants the next one.
    More,
    /// Its verdict.
    Decided(Verdict),
}

impl<'a> ChainRun<'a> {
    /// A run of `chain`, with each route's filter settings in `filter_values`.
    pub fn new(
        chain: &'a [Arc<FilterRoute>],
        route_values: &'a BTreeMap<String, Arc<BTreeMap<String, String>>>,
    ) -> Self {
        ChainRun {
            chain,
            route_values,
            slots: chain.iter().map(|_| Slot::Empty).collect(),
            ran: 0,
            want_request_body: vec![false; chain.len()],
            response_ops: Vec::new(),
            late_metadata: Vec::new(),
            request_keys: Vec::new(),
            late_keys: Vec::new(),
            records: Vec::new(),
            reading: Vec::new(),
            shown: 0,
        }
    }

    /// Filter `i`'s declared effects on this request: none when it
    /// declares none, when the request's route overrides its config, or
    /// when the filter failed open earlier in this request (it is passed
    /// over whole, as if it were not in the chain).
    fn effects(&self, i: usize) -> Option<&'a Effects> {
        if !self.own_config(i) {
            return None;
        }
        let route: &'a FilterRoute = &self.chain[i];
        route.entry.effects.as_deref()
    }

    /// Whether filter `i` serves this request under its own config, as
    /// what it declared or asked to be remembered was made: not on a route
    /// that overrides its config, nor once it failed open in this request.
    fn own_config(&self, i: usize) -> bool {
        !self.route_values.contains_key(self.chain[i].name())
            && !matches!(self.slots[i], Slot::Skipped)
    }

    /// Filter `i`'s remembered request-headers verdicts, when they apply
    /// to this request: not on a route that overrides its config (the
    /// verdicts were given under the filter's own), nor once it failed,
    /// nor for a filter called in other phases too (an instance there
    /// would not have seen the request's headers).
    fn remembered(&self, i: usize, phases: Phases) -> Option<&'a Remembered> {
        let only_headers = Phases::default().with(Phase::RequestHeaders);
        let route: &'a FilterRoute = &self.chain[i];
        (phases == only_headers && self.own_config(i)).then_some(&route.remembered)
    }

    /// The phases filter `i`'s guest is called in for this request, given
    /// its effects (`self.effects(i)`).
    fn guest_phases(&self, i: usize, fx: Option<&Effects>) -> Phases {
        fx.map_or(self.chain[i].entry.phases, |fx| fx.phases)
    }

    /// The request-headers phase; `req.body` is empty.
    pub async fn request_headers(&mut self, req: &mut Request) -> Result<Flow, FilterFailure> {
        for i in 0..self.chain.len() {
            self.ran = i + 1;
            let fx = self.effects(i);
            let phases = self.guest_phases(i, fx);
            self.want_request_body[i] = phases.has(Phase::RequestBody);
            if let Some(v) = fx.and_then(|fx| fx.on_request(req)) {
                self.record(i, Phase::RequestHeaders, &v);
                if let Flow::Stop(resp) = self.apply_request(i, v, req) {
                    self.ran = i;
                    return Ok(Flow::Stop(resp));
                }
            }
            if !phases.has(Phase::RequestHeaders) {
                continue;
            }
            let memo = self.remembered(i, phases);
            let given = memo
                .filter(|m| m.in_use())
                .and_then(|m| m.get(&req.headers, remembered::now_secs()));
            let verdict = match given {
                Some(v) => {
                    self.chain[i].metrics.remembered();
                    self.record(i, Phase::RequestHeaders, &v);
                    Some(v)
                }
                None => {
                    let v = self
                        .call(i, Phase::RequestHeaders, req, None, false)
                        .await?;
                    if let (Some(memo), Some(v)) = (memo, &v)
                        && v.remember.is_some()
                    {
                        memo.put(&req.headers, v, remembered::now_secs());
                    }
                    v
                }
            };
            if let Some(v) = verdict {
                self.want_request_body[i] &= v.want_body;
                if let Flow::Stop(resp) = self.apply_request(i, v, req) {
                    self.ran = i;
                    return Ok(Flow::Stop(resp));
                }
            }
        }
        Ok(Flow::Continue)
    }

    /// Whether any filter wants the request body.
    pub fn wants_request_body(&self) -> bool {
        self.want_request_body.iter().any(|w| *w)
    }

    /// The request-body phase for the filters that want the body.
    pub async fn request_body(&mut self, req: &mut Request) -> Result<Flow, FilterFailure> {
        for i in 0..self.ran {
            if !self.want_request_body[i] {
                continue;
            }
            let Some(prefix) = self.body_view(i, req.body.len(), "request")? else {
                continue;
            };
            let full = prefix.map(|n| {
                let full = req.body.clone();
                req.body = full.slice(..n);
                full
            });
            let verdict = self
                .call(i, Phase::RequestBody, req, None, full.is_some())
                .await;
            if let Some(full) = full {
                req.body = full;
            }
            if let Some(v) = verdict?
                && let Flow::Stop(resp) = self.apply_request(i, v, req)
            {
                self.ran = i;
                return Ok(Flow::Stop(resp));
            }
        }
        Ok(Flow::Continue)
    }

    /// Whether the response phases have anything to do.
    pub fn has_response_work(&self) -> bool {
        !self.response_ops.is_empty()
            || (0..self.ran).any(|i| {
                let fx = self.effects(i);
                let phases = self.guest_phases(i, fx);
                phases.has(Phase::ResponseHeaders)
                    || phases.has(Phase::ResponseBody)
                    || fx.is_some_and(Effects::touches_response)
            })
    }

    /// The response phases, for the filters that saw the request. `req`
    /// carries the request's head and headers (its body is not passed).
    pub async fn response(
        &mut self,
        req: &Request,
        mut resp: Response,
    ) -> Result<Response, FilterFailure> {
        for op in std::mem::take(&mut self.response_ops) {
            op.apply(&mut resp.headers);
        }
        let mut want_body = vec![false; self.ran];
        for (i, want) in want_body.iter_mut().enumerate() {
            let fx = self.effects(i);
            let phases = self.guest_phases(i, fx);
            *want = phases.has(Phase::ResponseBody);
            if let Some(fx) = fx {
                let ops = fx.on_response(req, &resp);
                if !ops.is_empty() {
                    let mut v = Verdict::allow();
                    v.response_ops = ops;
                    self.record(i, Phase::ResponseHeaders, &v);
                    self.apply_response(i, v, &mut resp);
                }
            }
            if !phases.has(Phase::ResponseHeaders) {
                continue;
            }
            if let Some(v) = self
                .call(i, Phase::ResponseHeaders, req, Some(&resp), false)
                .await?
            {
                *want &= v.want_body;
                if self.apply_response(i, v, &mut resp) {
                    return Ok(resp);
                }
            }
        }
        if resp.stream.is_some() {
            // A streamed body leaves as it is produced: no filter holds it.
            return Ok(resp);
        }
        for (i, _) in want_body.iter().enumerate().filter(|(_, w)| **w) {
            let Some(prefix) = self.body_view(i, resp.body.len(), "response")? else {
                continue;
            };
            let verdict = match prefix {
                None => {
                    self.call(i, Phase::ResponseBody, req, Some(&resp), false)
                        .await?
                }
                Some(n) => {
                    let view =
                        Response::new(resp.status, resp.headers.clone(), resp.body.slice(..n));
                    self.call(i, Phase::ResponseBody, req, Some(&view), true)
                        .await?
                }
            };
            if let Some(v) = verdict
                && self.apply_response(i, v, &mut resp)
            {
                return Ok(resp);
            }
        }
        Ok(resp)
    }

    /// Returns every warm instance to its pool. Dropping the run without
    /// this (a request abandoned half-way) also returns them, marked.
    pub fn finish(mut self) -> (Vec<AuditVerdict>, Vec<(String, String)>) {
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if let Slot::Warm(lease) = std::mem::replace(slot, Slot::Empty) {
                let route = &self.chain[i];
                if let Some(pool) = &route.pool {
                    pool.settle(lease, None, &route.instances);
                }
            }
        }
        (
            std::mem::take(&mut self.records),
            std::mem::take(&mut self.late_metadata),
        )
    }

    /// How much of a body of `len` bytes filter `i` inspects: `Some(None)`
    /// all of it, `Some(Some(n))` its first `n` bytes, `None` none.
    fn body_view(
        &self,
        i: usize,
        len: usize,
        what: &'static str,
    ) -> Result<Option<Option<usize>>, FilterFailure> {
        let route = &self.chain[i];
        let Some(limit) = route.entry.policy.body_limit.filter(|l| len > l.size) else {
            return Ok(Some(None));
        };
        match limit.past {
            PastLimit::Reject => Err(FilterFailure::BodyTooLarge {
                filter: route.name().to_string(),
                limit: limit.size,
                what,
            }),
            PastLimit::Pass => {
                route.metrics.skip(Skip::BodyPastLimit);
                Ok(None)
            }
            PastLimit::InspectPrefix => Ok(Some(Some(limit.size))),
        }
    }

    fn enforced(&self, i: usize) -> bool {
        self.chain[i].entry.policy.mode == FilterMode::Enforce
    }

    /// Applies a request-phase verdict (unless in detect mode).
    fn apply_request(&mut self, i: usize, v: Verdict, req: &mut Request) -> Flow {
        merge_metadata(&mut req.metadata, &mut self.request_keys, i, v.metadata);
        if !self.enforced(i) {
            return Flow::Continue;
        }
        for op in &v.request_ops {
            op.apply(&mut req.headers);
        }
        self.response_ops.extend(v.response_ops);
        if let Some(body) = v.body {
            req.body = body;
        }
        match decision_response(v.decision) {
            Some(resp) => Flow::Stop(resp),
            None => Flow::Continue,
        }
    }

    /// Applies a response-phase verdict; true when it replaced the response
    /// (a block or redirect), which ends the response phases.
    fn apply_response(&mut self, i: usize, v: Verdict, resp: &mut Response) -> bool {
        merge_metadata(&mut self.late_metadata, &mut self.late_keys, i, v.metadata);
        if !self.enforced(i) {
            return false;
        }
        for op in &v.response_ops {
            op.apply(&mut resp.headers);
        }
        if let Some(body) = v.body {
            resp.body = body;
        }
        match decision_response(v.decision) {
            Some(new) => {
                *resp = new;
                true
            }
            None => false,
        }
    }

    /// Calls filter `i` for `phase`. `Ok(None)` when the filter is skipped
    /// (it failed with failure mode `open`, now or earlier).
    async fn call(
        &mut self,
        i: usize,
        phase: Phase,
        req: &Request,
        resp: Option<&Response>,
        prefix: bool,
    ) -> Result<Option<Verdict>, FilterFailure> {
        match self
            .call_step(i, phase, req, Input::Phase(resp), prefix)
            .await?
        {
            Step::Decided(v) => Ok(Some(v)),
            Step::Skipped | Step::More => Ok(None),
        }
    }

    /// Calls filter `i` for `phase` with `input`: its breaker, metrics,
    /// span, audit record and failure mode.
    async fn call_step(
        &mut self,
        i: usize,
        phase: Phase,
        req: &Request,
        input: Input<'_>,
        prefix: bool,
    ) -> Result<Step, FilterFailure> {
        if matches!(self.slots[i], Slot::Skipped) {
            return Ok(Step::Skipped);
        }
        let route = self.chain[i].clone();
        route.metrics.call(phase);
        let span = trace::child(req.trace.as_ref(), "wharf.filter", Kind::Internal, || {
            vec![
                Attribute::new("wharf.filter", route.name().to_string()),
                Attribute::new("wharf.phase", phase.as_str()),
            ]
        });
        let started = Instant::now();
        let result = match route.breaker.admit() {
            Err(_) => Err(CallError::Unavailable(
                "the filter's breaker is open".into(),
            )),
            Ok(admission) => {
                let result = self.call_instance(i, &route, phase, req, input).await;
                let result = match result {
                    Ok(Some(v)) if prefix && v.body.is_some() => Err(CallError::InvalidVerdict(
                        "a body replacement for a body it saw only the first bytes of".into(),
                    )),
                    other => other,
                };
                admission.finish(result.is_ok());
                result
            }
        };
        route
            .metrics
            .seconds
            .record(started.elapsed().as_secs_f64());
        route.health.record(result.is_ok());
        if let Some(span) = span {
            match &result {
                Ok(Some(v)) => span.set(Attribute::new("wharf.decision", v.decision.as_str())),
                Ok(None) => span.set(Attribute::new("wharf.decision", "more")),
                Err(err) => span.fail(err.to_string()),
            }
        }
        match result {
            Ok(Some(v)) => {
                self.record(i, phase, &v);
                Ok(Step::Decided(v))
            }
            Ok(None) => Ok(Step::More),
            Err(err) => self.failed(i, &route, phase, err),
        }
    }

    /// Counts filter `i`'s verdict for `phase` (the guest's, or one its
    /// declared effects made) and keeps it for the audit record when it
    /// says anything.
    fn record(&mut self, i: usize, phase: Phase, v: &Verdict) {
        let route = &self.chain[i];
        let enforced = self.enforced(i);
        route.metrics.decision(phase, &v.decision, enforced);
        route.metrics.rule_hits(&v.audit.rule_ids);
        if v.flagged() {
            self.records.push(AuditVerdict {
                filter: route.name().to_string(),
                phase: phase.as_str(),
                decision: v.decision.as_str(),
                enforced,
                rule_ids: v.audit.rule_ids.clone(),
                tags: v.audit.tags.clone(),
                reason: v.audit.reason.clone(),
                failure: None,
            });
        }
    }

    /// Classifies a failure, discards the instance, and applies the
    /// filter's failure mode.
    fn failed(
        &mut self,
        i: usize,
        route: &FilterRoute,
        phase: Phase,
        err: CallError,
    ) -> Result<Step, FilterFailure> {
        let kind = match &err {
            CallError::Deadline => FailureKind::Deadline,
            CallError::MemoryLimit => FailureKind::Memory,
            CallError::InvalidVerdict(_) => FailureKind::InvalidVerdict,
            CallError::Unavailable(_) => FailureKind::Unavailable,
            _ => FailureKind::Trap,
        };
        route.metrics.failure(kind);
        if let Slot::Warm(lease) = std::mem::replace(&mut self.slots[i], Slot::Skipped)
            && let Some(pool) = &route.pool
        {
            pool.settle(lease, Some(&err), &route.instances);
        }
        let open = route.entry.policy.failure == Failure::Open;
        tracing::warn!(
            filter = route.name(),
            phase = phase.as_str(),
            kind = kind.as_str(),
            failure_mode = if open { "open" } else { "closed" },
            error = %err,
            "filter failed"
        );
        self.records.push(AuditVerdict {
            filter: route.name().to_string(),
            phase: phase.as_str(),
            decision: "failed",
            enforced: !open,
            rule_ids: Vec::new(),
            tags: Vec::new(),
            reason: String::new(),
            failure: Some(kind.as_str()),
        });
        if open {
            route.metrics.skip(Skip::FailedOpen);
            return Ok(Step::Skipped);
        }
        Err(FilterFailure::Failed {
            filter: route.name().to_string(),
            phase: phase.as_str(),
            kind,
        })
    }

    /// Runs one phase (or shows one piece of the body) on filter `i`'s
    /// instance for this request, making the instance (fresh, or leased
    /// from the warm pool) at its first call. `Ok(None)`: it wants the
    /// next piece.
    async fn call_instance(
        &mut self,
        i: usize,
        route: &FilterRoute,
        phase: Phase,
        req: &Request,
        input: Input<'_>,
    ) -> Result<Option<Verdict>, CallError> {
        let image = &route.entry.image;
        if matches!(self.slots[i], Slot::Empty) {
            self.slots[i] = match &route.pool {
                None => Slot::Fresh(image.instantiate_async().await?),
                Some(pool) => {
                    let wait = route.entry.policy.limits.deadline;
                    let (lease, _) = pool
                        .acquire(None, None, &route.instances, wait)
                        .await
                        .map_err(|_| CallError::Unavailable("the filter's pool is full".into()))?;
                    Slot::Warm(lease)
                }
            };
        }
        let live = match &mut self.slots[i] {
            Slot::Fresh(live) => live,
            Slot::Warm(lease) => {
                ensure_instance(
                    lease.instance(),
                    || image.instantiate_async(),
                    &route.instances,
                )
                .await?
            }
            Slot::Empty | Slot::Skipped => {
                unreachable!("filled above; skipped filters return early")
            }
        };
        let values = self.route_values.get(route.name()).cloned();
        match input {
            Input::Phase(resp) => live.phase(phase, req, resp, values).await.map(Some),
            Input::Piece(piece, last) => live.body_piece(req, piece, last, values).await,
        }
    }
}

/// The response a blocking or redirecting decision answers with.
fn decision_response(decision: Decision) -> Option<Response> {
    match decision {
        Decision::Allow => None,
        Decision::Block(resp) => Some(resp),
        Decision::Redirect { status, location } => {
            let mut headers = HeaderMap::new();
            headers.insert(http::header::LOCATION, location);
            Some(Response::new(status, headers, Bytes::new()))
        }
    }
}

/// Adds filter `filter`'s metadata to `into`: a key the same filter set
/// in an earlier phase takes the new value (its later phase updates what
/// it said, as the WAF's score does), any other key is appended, so a
/// filter never changes what another one said. `keys` records who set
/// which entry.
fn merge_metadata(
    into: &mut Vec<(String, String)>,
    keys: &mut Vec<(usize, usize)>,
    filter: usize,
    new: Vec<(String, String)>,
) {
    for (key, value) in new {
        let mine = keys
            .iter()
            .find(|&&(f, at)| f == filter && into.get(at).is_some_and(|(k, _)| *k == key));
        match mine {
            Some(&(_, at)) => into[at].1 = value,
            None => {
                keys.push((filter, into.len()));
                into.push((key, value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::merge_metadata;

    fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_later_phase_updates_its_own_keys_and_leaves_others() {
        let (mut meta, mut keys) = (kv(&[("auth.sub", "carol")]), Vec::new());
        merge_metadata(&mut meta, &mut keys, 0, kv(&[("auth.sub", "alice")]));
        merge_metadata(&mut meta, &mut keys, 1, kv(&[("waf.score", "0")]));
        merge_metadata(
            &mut meta,
            &mut keys,
            1,
            kv(&[("waf.score", "15"), ("waf.x", "1")]),
        );
        // Filter 2 cannot overwrite filter 0's identity: its key is added.
        merge_metadata(&mut meta, &mut keys, 2, kv(&[("auth.sub", "mallory")]));
        assert_eq!(
            meta,
            kv(&[
                ("auth.sub", "carol"),
                ("auth.sub", "alice"),
                ("waf.score", "15"),
                ("waf.x", "1"),
                ("auth.sub", "mallory"),
            ])
        );
    }
}
