//! The filter parts of `wharf.kdl`: `filter "name" { … }` blocks (failure
//! mode, enforce or detect, limits, instances, body limit, config values),
//! the `filters` chain (top level: every agent's default; in an `agent`
//! block: that agent's own), per-route `filter-config`, and `audit`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kdl::{KdlNode, KdlValue};

use super::diag::Problem;
use super::walker::{Seen, Walker, set};
use super::{Breaker, Health, Instances, Limits};

pub(super) const FILTER: &[&str] = &[
    "failure",
    "mode",
    "memory",
    "deadline",
    "response-body",
    "body-limit",
    "instances",
    "health",
    "breaker",
    "config",
    "files",
    "preinit",
    "digest",
];

/// What happens when a filter fails (traps, runs past its deadline or its
/// memory, answers an invalid verdict, or its breaker is open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The request fails: 503, or 504 for a deadline.
    Closed,
    /// The filter is skipped for this request (counted and logged).
    Open,
}

/// Whether a filter's decisions take effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterMode {
    /// Decisions, header and body changes apply.
    Enforce,
    /// Every verdict is recorded (audit, metrics) but none applies.
    Detect,
}

/// What a filter does with a body larger than its body limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PastLimit {
    /// Refuse it: 413 for a request body, 502 for a response body.
    Reject,
    /// Skip inspecting that body (counted).
    Pass,
    /// Inspect only the first `size` bytes.
    InspectPrefix,
}

/// The largest body a filter inspects, and what happens past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimit {
    /// The limit, in bytes.
    pub size: usize,
    /// What happens past it.
    pub past: PastLimit,
}

/// Everything that applies to one filter.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterPolicy {
    /// What a failure of the filter does to the request.
    pub failure: Failure,
    /// Whether its decisions take effect.
    pub mode: FilterMode,
    /// Memory and deadline per call; `response-body` bounds what a verdict
    /// may carry (a block body, a replacement body).
    pub limits: Limits,
    /// Its instances.
    pub instances: Instances,
    /// Its health checks.
    pub health: Health,
    /// Its circuit breaker.
    pub breaker: Breaker,
    /// None: bodies up to the agent's own limits are inspected whole.
    pub body_limit: Option<BodyLimit>,
    /// The filter's configuration values.
    pub values: Arc<BTreeMap<String, String>>,
    /// A directory the filter reads at `/files` (read-only): its rule
    /// files. Relative to the configuration file.
    pub files: Option<PathBuf>,
    /// Run a `filter-preinit` component's `preinit` at load time and start
    /// every instance from its snapshot (default); `preinit #false` loads
    /// the component as it is.
    pub preinit: bool,
    /// `digest "sha256:…"`: the only contents the component may have.
    pub digest: Option<String>,
}

impl Default for FilterPolicy {
    fn default() -> Self {
        FilterPolicy {
            failure: Failure::Closed,
            mode: FilterMode::Enforce,
            limits: Limits {
                deadline: Duration::from_millis(500),
                ..Limits::default()
            },
            instances: Instances::default(),
            health: Health::default(),
            breaker: Breaker::default(),
            body_limit: None,
            values: Arc::default(),
            files: None,
            preinit: true,
            digest: None,
        }
    }
}

/// Where audit records go.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AuditSink {
    #[default]
    /// To standard error.
    Stderr,
    /// Appended to this file.
    File(PathBuf),
    /// Not written.
    Off,
}

impl Walker {
    pub(super) fn filter(&mut self, node: &KdlNode, filters: &mut BTreeMap<String, FilterPolicy>) {
        let Some((name, span)) = self.guest_name(node, "filter") else {
            return;
        };
        let mut policy = FilterPolicy::default();
        let mut seen = Seen::default();
        for child in node.children().map(|d| d.nodes()).unwrap_or_default() {
            if !seen.first(self, child) {
                continue;
            }
            match child.name().value() {
                "failure" => set(&mut policy.failure, self.failure(child)),
                "mode" => set(&mut policy.mode, self.filter_mode(child)),
                "memory" => set(&mut policy.limits.memory, self.size(child)),
                "deadline" => set(&mut policy.limits.deadline, self.duration(child)),
                "response-body" => set(&mut policy.limits.response_body, self.usize_size(child)),
                "body-limit" => policy.body_limit = self.body_limit(child),
                "instances" => self.instances(child, &mut policy.instances),
                "health" => self.health(child, &mut policy.health),
                "breaker" => self.breaker(child, &mut policy.breaker),
                "config" => policy.values = Arc::new(self.values(child)),
                "files" => policy.files = self.string(child).map(|(dir, _)| dir.into()),
                "preinit" => set(&mut policy.preinit, self.boolean(child)),
                "digest" => policy.digest = self.digest(child),
                _ => self.unknown(child, &format!("in `filter \"{name}\"`"), FILTER),
            }
        }
        if filters.insert(name.clone(), policy).is_some() {
            self.problems.push(Problem::new(
                span,
                format!("filter `{name}` is configured twice"),
            ));
        }
    }

    fn failure(&mut self, node: &KdlNode) -> Option<Failure> {
        let (text, span) = self.string(node)?;
        match text.as_str() {
            "closed" => Some(Failure::Closed),
            "open" => Some(Failure::Open),
            _ => {
                self.problems.push(
                    Problem::new(span, format!("unknown failure mode `{text}`")).help(
                        "use \"closed\" (a failing filter fails the request) or \"open\" (it is skipped)",
                    ),
                );
                None
            }
        }
    }

    fn filter_mode(&mut self, node: &KdlNode) -> Option<FilterMode> {
        let (text, span) = self.string(node)?;
        match text.as_str() {
            "enforce" => Some(FilterMode::Enforce),
            "detect" => Some(FilterMode::Detect),
            _ => {
                self.problems.push(
                    Problem::new(span, format!("unknown filter mode `{text}`")).help(
                        "use \"enforce\" (decisions apply) or \"detect\" (recorded, not applied)",
                    ),
                );
                None
            }
        }
    }

    /// `body-limit "64KiB" past="reject" | "pass" | "inspect-prefix"`.
    fn body_limit(&mut self, node: &KdlNode) -> Option<BodyLimit> {
        let mut size = None;
        let mut past = PastLimit::Reject;
        if let Some(children) = node.children() {
            self.problems.push(Problem::new(
                children.span(),
                "`body-limit` takes a size and `past=…`, not a block",
            ));
            return None;
        }
        for entry in node.entries() {
            match entry.name().map(|n| n.value()) {
                None if size.is_none() => {
                    let parsed = match entry.value() {
                        KdlValue::Integer(i) => {
                            usize::try_from(*i).map_err(|_| format!("`{i}` is out of range"))
                        }
                        KdlValue::String(s) => super::units::parse_size(s)
                            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                        _ => {
                            self.wrong_type(entry, "`body-limit` expects a size such as \"64KiB\"");
                            return None;
                        }
                    };
                    let parsed = parsed.and_then(|n| {
                        super::bounds::size("body-limit", n as u64).map(|n| n as usize)
                    });
                    size = Some(self.check(entry, parsed)?);
                }
                None => {
                    self.problems
                        .push(Problem::new(entry.span(), "`body-limit` takes one size"));
                    return None;
                }
                Some("past") => {
                    past = match entry.value().as_string() {
                        Some("reject") => PastLimit::Reject,
                        Some("pass") => PastLimit::Pass,
                        Some("inspect-prefix") => PastLimit::InspectPrefix,
                        other => {
                            let what = match other {
                                Some(text) => format!("unknown `past` value `{text}`"),
                                None => "`past` expects a string".to_string(),
                            };
                            self.problems.push(
                                Problem::new(entry.span(), what)
                                    .help("use \"reject\" (413), \"pass\" (skip inspection) or \"inspect-prefix\" (inspect the first bytes)"),
                            );
                            return None;
                        }
                    };
                }
                Some(other) => {
                    self.problems.push(
                        Problem::new(
                            entry.span(),
                            format!("`body-limit` has no property `{other}`"),
                        )
                        .help("write `body-limit \"64KiB\" past=\"reject\"`"),
                    );
                    return None;
                }
            }
        }
        let Some(size) = size else {
            self.problems.push(Problem::new(
                node.name().span(),
                "`body-limit` needs a size",
            ));
            return None;
        };
        Some(BodyLimit { size, past })
    }

    /// `filters "a" "b"` (a chain, in order) or `filters #false` (none).
    pub(super) fn chain(&mut self, node: &KdlNode) -> Option<Vec<String>> {
        if let Some(children) = node.children() {
            self.problems.push(Problem::new(
                children.span(),
                "`filters` takes filter names, not a block",
            ));
            return None;
        }
        match node.entries() {
            [] => {
                self.problems.push(
                    Problem::new(
                        node.name().span(),
                        "`filters` needs filter names, or #false",
                    )
                    .help("write `filters \"auth\" \"waf\"`, or `filters #false` to run none"),
                );
                return None;
            }
            [only] if matches!(only.value(), KdlValue::Bool(false)) && only.name().is_none() => {
                return Some(Vec::new());
            }
            _ => {}
        }
        let mut chain: Vec<String> = Vec::new();
        for entry in node.entries() {
            if entry.name().is_some() {
                self.problems
                    .push(Problem::new(entry.span(), "`filters` takes no properties"));
                return None;
            }
            let Some(name) = entry.value().as_string() else {
                self.wrong_type(
                    entry,
                    "`filters` takes filter names as strings, or #false alone",
                );
                return None;
            };
            if !super::valid_agent_name(name) {
                self.problems.push(Problem::new(
                    entry.span(),
                    format!("`{name}` is not a valid filter name"),
                ));
                return None;
            }
            if chain.iter().any(|n| n == name) {
                self.problems.push(Problem::new(
                    entry.span(),
                    format!("filter `{name}` appears twice in the chain"),
                ));
                return None;
            }
            chain.push(name.to_string());
        }
        Some(chain)
    }

    /// `audit "stderr"`, `audit "FILE"` or `audit #false`.
    pub(super) fn audit(&mut self, node: &KdlNode) -> Option<AuditSink> {
        let entry = self.sole_entry(node, false)?;
        match entry.value() {
            KdlValue::String(s) if s == "stderr" => Some(AuditSink::Stderr),
            KdlValue::String(s) if !s.is_empty() => Some(AuditSink::File(s.into())),
            KdlValue::Bool(false) => Some(AuditSink::Off),
            _ => {
                self.wrong_type(
                    entry,
                    "`audit` expects \"stderr\", a file path, or #false to turn it off",
                );
                None
            }
        }
    }
}
