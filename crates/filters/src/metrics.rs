//! Per-filter Prometheus handles, registered once when a filter's route is
//! built: calls and decisions per phase, latency, failures by kind, skips,
//! and hits per rule id (bounded, so a filter cannot grow the registry
//! without limit).

use std::sync::Arc;

use dashmap::DashMap;
use metrics::{Counter, Histogram, Label};
use metrics_exporter_prometheus::PrometheusRecorder;

use wharf_core::metrics::{Metrics, counter, histogram};
use wharf_core::verdict::{Decision, Phase};

/// Distinct rule ids counted per filter; hits on more ids count as `_other`.
pub const MAX_RULE_IDS: usize = 1000;

/// Why a filter call did not produce a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The filter trapped.
    Trap = 0,
    /// It did not answer within its deadline.
    Deadline = 1,
    /// It passed its memory limit.
    Memory = 2,
    /// Its verdict broke the phase's contract.
    InvalidVerdict = 3,
    /// Its breaker is open, or its warm pool is full.
    Unavailable = 4,
}

/// The kinds' names in metrics, in order.
pub const FAILURE_KINDS: [&str; 5] = [
    "trap",
    "deadline",
    "memory",
    "invalid_verdict",
    "unavailable",
];

impl FailureKind {
    /// The kind's name in metrics and audit records.
    pub fn as_str(self) -> &'static str {
        FAILURE_KINDS[self as usize]
    }
}

/// Why a filter was passed over for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// It failed and its failure mode is `open`.
    FailedOpen = 0,
    /// The body was past its body limit and the policy says `pass`.
    BodyPastLimit = 1,
}

const SKIPS: [&str; 2] = ["failed_open", "body_past_limit"];
const DECISIONS: [&str; 3] = ["allow", "block", "redirect"];

/// One filter's metric handles.
pub struct FilterMetrics {
    recorder: Arc<PrometheusRecorder>,
    filter: String,
    calls: [Counter; 4],
    /// [phase][decision][enforced]
    decisions: [[[Counter; 2]; 3]; 4],
    /// Time per call.
    pub seconds: Histogram,
    failures: [Counter; 5],
    skips: [Counter; 2],
    /// Verdicts given from memory instead of a call.
    remembered: Counter,
    rules: DashMap<String, Counter>,
    other_rules: Counter,
}

impl FilterMetrics {
    /// The handles of `filter`'s series.
    pub fn new(metrics: &Metrics, filter: &str) -> Self {
        let r = metrics.recorder();
        let labels = |pairs: &[(&'static str, &'static str)]| {
            let mut l = vec![Label::new("filter", filter.to_string())];
            l.extend(pairs.iter().map(|(k, v)| Label::new(*k, *v)));
            l
        };
        let phase = |p: Phase| p.as_str();
        FilterMetrics {
            calls: Phase::ALL.map(|p| {
                counter(
                    r,
                    "wharf_filter_calls_total",
                    labels(&[("phase", phase(p))]),
                )
            }),
            decisions: Phase::ALL.map(|p| {
                DECISIONS.map(|d| {
                    ["true", "false"].map(|e| {
                        counter(
                            r,
                            "wharf_filter_decisions_total",
                            labels(&[("phase", phase(p)), ("decision", d), ("enforced", e)]),
                        )
                    })
                })
            }),
            seconds: histogram(r, "wharf_filter_duration_seconds", labels(&[])),
            failures: FAILURE_KINDS
                .map(|k| counter(r, "wharf_filter_failures_total", labels(&[("kind", k)]))),
            skips: SKIPS
                .map(|k| counter(r, "wharf_filter_skipped_total", labels(&[("reason", k)]))),
            remembered: counter(r, "wharf_filter_remembered_total", labels(&[])),
            rules: DashMap::new(),
            other_rules: counter(
                r,
                "wharf_filter_rule_hits_total",
                labels(&[("rule", "_other")]),
            ),
            recorder: r.clone(),
            filter: filter.to_string(),
        }
    }

    /// Counts a request-headers verdict given from memory, without a call.
    pub fn remembered(&self) {
        self.remembered.increment(1);
    }

    /// Counts a call in `phase`.
    pub fn call(&self, phase: Phase) {
        self.calls[phase as usize].increment(1);
    }

    /// Counts a decision in `phase`, enforced or only recorded.
    pub fn decision(&self, phase: Phase, decision: &Decision, enforced: bool) {
        let d = match decision {
            Decision::Allow => 0,
            Decision::Block(_) => 1,
            Decision::Redirect { .. } => 2,
        };
        self.decisions[phase as usize][d][usize::from(!enforced)].increment(1);
    }

    /// Counts a failure.
    pub fn failure(&self, kind: FailureKind) {
        self.failures[kind as usize].increment(1);
    }

    /// Counts a skipped filter or body.
    pub fn skip(&self, why: Skip) {
        self.skips[why as usize].increment(1);
    }

    /// Counts one hit on each rule id, registering new ids up to the bound.
    pub fn rule_hits(&self, ids: &[String]) {
        for id in ids {
            if let Some(c) = self.rules.get(id.as_str()) {
                c.increment(1);
                continue;
            }
            if self.rules.len() >= MAX_RULE_IDS {
                self.other_rules.increment(1);
                continue;
            }
            let labels = vec![
                Label::new("filter", self.filter.clone()),
                Label::new("rule", id.clone()),
            ];
            let c = self
                .rules
                .entry(id.clone())
                .or_insert_with(|| counter(&self.recorder, "wharf_filter_rule_hits_total", labels))
                .clone();
            c.increment(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_bounded() {
        let metrics = Metrics::new();
        let f = FilterMetrics::new(&metrics, "waf");
        let ids: Vec<String> = (0..MAX_RULE_IDS + 5).map(|i| format!("r{i}")).collect();
        f.rule_hits(&ids);
        f.rule_hits(&ids[..1]);
        let text = metrics.render();
        assert!(
            text.contains(r#"wharf_filter_rule_hits_total{filter="waf",rule="r0"} 2"#),
            "{text}"
        );
        assert!(text.contains(r#"wharf_filter_rule_hits_total{filter="waf",rule="_other"} 5"#));
        assert!(!text.contains(&format!("rule=\"r{}\"", MAX_RULE_IDS)));
    }

    #[test]
    fn decisions_by_phase_and_enforcement() {
        let metrics = Metrics::new();
        let f = FilterMetrics::new(&metrics, "auth");
        f.call(Phase::RequestHeaders);
        f.decision(Phase::RequestHeaders, &Decision::Allow, false);
        f.failure(FailureKind::Deadline);
        let text = metrics.render();
        assert!(text.contains(
            r#"wharf_filter_decisions_total{filter="auth",phase="request_headers",decision="allow",enforced="false"} 1"#
        ), "{text}");
        assert!(text.contains(r#"wharf_filter_failures_total{filter="auth",kind="deadline"} 1"#));
        assert!(
            text.contains(r#"wharf_filter_calls_total{filter="auth",phase="request_headers"} 1"#)
        );
    }
}
