//! `pipeline "name" { … }` blocks and the composition settings of `agent`
//! blocks (`calls`, `publishes`, `subscribe`): their typed form and their
//! parsing. Cycles between pipelines are found here; steps naming agents
//! that did not load are found when the agents are (the registry).

use std::collections::BTreeMap;
use std::time::Duration;

use kdl::{KdlNode, KdlValue};
use miette::SourceSpan;

use super::diag::Problem;
use super::walker::{Seen, Walker, set};

/// Longest call path (agent → agent → …) when `call-depth` is not set.
pub const DEFAULT_CALL_DEPTH: usize = 8;

/// A virtual agent built from agents and other pipelines.
#[derive(Debug, Clone, PartialEq)]
pub struct Composition {
    /// The pipeline's name: the virtual agent's.
    pub name: String,
    /// What it runs.
    pub flow: Flow,
    /// Where the block stands (`file:line:col`), for errors found later.
    pub at: String,
}

/// One node of a pipeline.
#[derive(Debug, Clone, PartialEq)]
pub enum Flow {
    /// Calls an agent or a pipeline by name.
    Step(Step),
    /// Each response body becomes the next request body.
    Sequential(Vec<Flow>),
    /// The same request to every branch at once, answers merged.
    Parallel {
        /// The flows run at once.
        branches: Vec<Flow>,
        /// How their answers become one.
        merge: Merge,
        /// How long each branch may take; none: the request's own deadline.
        deadline: Option<Duration>,
    },
    /// Tried in order until one succeeds.
    Fallback {
        /// The flows tried, in order.
        tries: Vec<Flow>,
        /// What counts as a failure that moves on to the next.
        on: FailOn,
    },
    /// The first case whose condition holds, else `otherwise`.
    Conditional {
        /// The cases, in order.
        cases: Vec<(Condition, Flow)>,
        /// What runs when no case holds.
        otherwise: Option<Box<Flow>>,
    },
}

/// A named agent or pipeline, and where the configuration names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The agent or pipeline named.
    pub name: String,
    /// Where the configuration names it, for messages.
    pub at: String,
    /// The same place in the text.
    pub span: SourceSpan,
}

/// How a parallel block merges its branches' answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// A JSON array with one object per branch, in order:
    /// `{"status":200,"body":…}` (the body as JSON when it is JSON, else a string).
    JsonArray,
    /// The first branch to answer with a 2xx; the others are dropped.
    First,
}

/// What a fallback block counts as failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    /// Any answer that is not 2xx, and any error.
    Error,
    /// Errors and 5xx answers only (a 4xx is the answer).
    ServerError,
}

/// What chooses a branch of a conditional block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The header is present (and, with `equals`, has exactly this value).
    Header {
        /// The header.
        name: http::HeaderName,
        /// The value it must have exactly.
        equals: Option<String>,
    },
    /// The path below the pipeline starts with this.
    PathPrefix(String),
    /// The request's method is this.
    Method(http::Method),
    /// The classifier agent's answer body, trimmed, equals this (it is
    /// called once per request, with the request).
    Classifier {
        /// The classifier agent.
        agent: Step,
        /// The answer that selects this case.
        equals: String,
    },
}

impl Flow {
    /// Every step, in order, classifiers included.
    pub fn steps(&self) -> Vec<&Step> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a Step>) {
        match self {
            Flow::Step(step) => out.push(step),
            Flow::Sequential(flows) => flows.iter().for_each(|f| f.collect(out)),
            Flow::Parallel { branches, .. } => branches.iter().for_each(|f| f.collect(out)),
            Flow::Fallback { tries, .. } => tries.iter().for_each(|f| f.collect(out)),
            Flow::Conditional { cases, otherwise } => {
                for (condition, flow) in cases {
                    if let Condition::Classifier { agent, .. } = condition {
                        out.push(agent);
                    }
                    flow.collect(out);
                }
                if let Some(flow) = otherwise {
                    flow.collect(out);
                }
            }
        }
    }
}

/// A subscription of an agent to a topic pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// The pattern, as written (checked when parsed).
    pub pattern: String,
    /// Events held for the agent at most; past it, `overflow` decides.
    pub queue: usize,
    /// Payload bytes held for the agent at most (`queue-bytes`), likewise.
    pub queue_bytes: usize,
    /// What happens to an event when the queue is full.
    pub overflow: Overflow,
    /// At most once (the default), or at least once with redelivery.
    pub delivery: Delivery,
}

/// How a subscribed agent is given its events.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Delivery {
    /// Each event is handed over once; one the agent fails on is gone.
    #[default]
    AtMostOnce,
    /// An event counts as delivered when the agent answers 2xx; until
    /// then it is handed over again, and the subscription's place is kept
    /// across restarts.
    AtLeastOnce(Redelivery),
}

/// `delivery "at-least-once"`'s settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redelivery {
    /// Tries per event, the first included.
    pub attempts: u32,
    /// The wait before the second try; it doubles with each further try.
    pub backoff: Duration,
    /// Where an event goes after its last try (published there as is);
    /// none: it is dropped and counted.
    pub dead_letter: Option<String>,
}

/// `attempts` of a `subscribe` block unless it says otherwise.
pub const DEFAULT_ATTEMPTS: u32 = 5;

/// `backoff` of a `subscribe` block unless it says otherwise.
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(1);

/// A subscription's `queue-bytes` unless it says otherwise.
pub const DEFAULT_QUEUE_BYTES: usize = 16 << 20;

/// What a full subscriber queue does with one more event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Drops the oldest queued event to make room (the default).
    DropOldest,
    /// Drops the new event.
    DropNewest,
}

pub(super) const SUBSCRIBE: &[&str] = &[
    "queue",
    "queue-bytes",
    "overflow",
    "delivery",
    "attempts",
    "backoff",
    "dead-letter",
];
const FLOWS: &[&str] = &["step", "sequential", "parallel", "fallback", "conditional"];

impl Walker {
    /// `pipeline "name" { <one flow> }`.
    pub(super) fn pipeline(&mut self, node: &KdlNode, place: &Place) -> Option<Composition> {
        let (name, _) = self.guest_name(node, "pipeline")?;
        let children = node.children().map(|d| d.nodes()).unwrap_or_default();
        let flow = match children {
            [one] => self.flow(one, place, 0)?,
            [] => {
                self.problems.push(
                    Problem::new(node.name().span(), format!("pipeline `{name}` is empty"))
                        .help("give it one of: step, sequential, parallel, fallback, conditional"),
                );
                return None;
            }
            [_, extra, ..] => {
                self.problems.push(
                    Problem::new(
                        extra.name().span(),
                        format!("pipeline `{name}` holds more than one flow"),
                    )
                    .help("wrap the steps in `sequential { … }` (or parallel, fallback)"),
                );
                return None;
            }
        };
        Some(Composition {
            name,
            flow,
            at: place.at(node.name().span()),
        })
    }

    fn flow(&mut self, node: &KdlNode, place: &Place, depth: usize) -> Option<Flow> {
        match node.name().value() {
            "step" => {
                let (name, span) = self.guest_name(node, "step")?;
                Some(Flow::Step(Step {
                    name,
                    at: place.at(span),
                    span,
                }))
            }
            "sequential" => Some(Flow::Sequential(self.flows(node, place, depth, 1)?)),
            "parallel" => {
                let mut merge = Merge::JsonArray;
                let mut deadline = None;
                for entry in node.entries() {
                    match (entry.name().map(|n| n.value()), entry.value()) {
                        (Some("merge"), KdlValue::String(s)) => match s.as_str() {
                            "json-array" => merge = Merge::JsonArray,
                            "first" => merge = Merge::First,
                            _ => self.problems.push(
                                Problem::new(entry.span(), format!("unknown merge `{s}`"))
                                    .help("merge is \"json-array\" or \"first\""),
                            ),
                        },
                        (Some("deadline"), KdlValue::String(s)) => {
                            let parsed = super::units::parse_duration(s).and_then(|d| {
                                super::bounds::duration("deadline", d)
                                    .and_then(|d| nonzero(d, "deadline"))
                            });
                            deadline = self.check(entry, parsed);
                        }
                        _ => self.bad_property(entry, "parallel", "merge=\"…\" deadline=\"…\""),
                    }
                }
                let branches = self.flows(node, place, depth, 1)?;
                Some(Flow::Parallel {
                    branches,
                    merge,
                    deadline,
                })
            }
            "fallback" => {
                let mut on = FailOn::Error;
                for entry in node.entries() {
                    match (entry.name().map(|n| n.value()), entry.value()) {
                        (Some("on"), KdlValue::String(s)) if s == "error" => on = FailOn::Error,
                        (Some("on"), KdlValue::String(s)) if s == "5xx" => on = FailOn::ServerError,
                        _ => self.bad_property(entry, "fallback", "on=\"error\" or on=\"5xx\""),
                    }
                }
                let tries = self.flows(node, place, depth, 2)?;
                Some(Flow::Fallback { tries, on })
            }
            "conditional" => self.conditional(node, place, depth),
            _ => {
                self.unknown(node, "in a pipeline", FLOWS);
                None
            }
        }
    }

    /// The child flows of a block, at least `min` of them.
    fn flows(
        &mut self,
        node: &KdlNode,
        place: &Place,
        depth: usize,
        min: usize,
    ) -> Option<Vec<Flow>> {
        let children = node.children().map(|d| d.nodes()).unwrap_or_default();
        if children.len() < min {
            let key = node.name().value();
            self.problems.push(Problem::new(
                node.name().span(),
                format!("`{key}` needs at least {min} step(s) or blocks"),
            ));
            return None;
        }
        let flows: Vec<Option<Flow>> = children
            .iter()
            .map(|c| self.flow(c, place, depth + 1))
            .collect();
        flows.into_iter().collect()
    }

    /// `conditional { when header="x" equals="y" { <flow> } … otherwise { <flow> } }`.
    fn conditional(&mut self, node: &KdlNode, place: &Place, depth: usize) -> Option<Flow> {
        let mut cases = Vec::new();
        let mut otherwise = None;
        let mut ok = true;
        for child in node.children().map(|d| d.nodes()).unwrap_or_default() {
            let inner = child.children().map(|d| d.nodes()).unwrap_or_default();
            let flow = match inner {
                [one] => self.flow(one, place, depth + 1),
                _ => {
                    self.problems.push(Problem::new(
                        child.name().span(),
                        format!("`{}` holds exactly one flow", child.name().value()),
                    ));
                    None
                }
            };
            match child.name().value() {
                "when" => match (self.condition(child, place), flow) {
                    (Some(c), Some(f)) => cases.push((c, f)),
                    _ => ok = false,
                },
                "otherwise" if otherwise.is_none() => match flow {
                    Some(f) => otherwise = Some(Box::new(f)),
                    None => ok = false,
                },
                "otherwise" => {
                    self.problems.push(Problem::new(
                        child.name().span(),
                        "`otherwise` is given more than once",
                    ));
                    ok = false;
                }
                _ => {
                    self.unknown(child, "in `conditional`", &["when", "otherwise"]);
                    ok = false;
                }
            }
        }
        if ok && cases.is_empty() {
            self.problems.push(Problem::new(
                node.name().span(),
                "`conditional` needs at least one `when`",
            ));
            return None;
        }
        ok.then_some(Flow::Conditional { cases, otherwise })
    }

    /// The condition of a `when`: exactly one of header, path-prefix,
    /// method or classifier (with equals).
    fn condition(&mut self, node: &KdlNode, place: &Place) -> Option<Condition> {
        let mut props: BTreeMap<&str, (&str, SourceSpan)> = BTreeMap::new();
        for entry in node.entries() {
            let (Some(key), Some(value)) = (entry.name(), entry.value().as_string()) else {
                self.bad_property(
                    entry,
                    "when",
                    "header=, path-prefix=, method= or classifier=, with equals=",
                );
                return None;
            };
            props.insert(key.value(), (value, entry.span()));
        }
        let equals = props.remove("equals");
        let kinds: Vec<_> = props.into_iter().collect();
        let [(kind, (value, span))] = kinds[..] else {
            self.problems.push(Problem::new(
                node.name().span(),
                "`when` takes exactly one of header=, path-prefix=, method= or classifier=",
            ));
            return None;
        };
        let equals_text = equals.map(|(v, _)| v.to_string());
        let condition = match kind {
            "header" => match http::HeaderName::from_bytes(value.as_bytes()) {
                Ok(name) => Condition::Header {
                    name,
                    equals: equals_text,
                },
                Err(_) => {
                    self.problems.push(Problem::new(
                        span,
                        format!("`{value}` is not a header name"),
                    ));
                    return None;
                }
            },
            "path-prefix" if value.starts_with('/') => Condition::PathPrefix(value.to_string()),
            "path-prefix" => {
                self.problems
                    .push(Problem::new(span, "a path prefix starts with `/`"));
                return None;
            }
            "method" => match http::Method::from_bytes(value.as_bytes()) {
                Ok(m) => Condition::Method(m),
                Err(_) => {
                    self.problems.push(Problem::new(
                        span,
                        format!("`{value}` is not an HTTP method"),
                    ));
                    return None;
                }
            },
            "classifier" => {
                let Some(equals) = equals_text else {
                    self.problems.push(Problem::new(
                        span,
                        "a classifier condition needs equals=\"…\" (the answer that selects it)",
                    ));
                    return None;
                };
                if !self.valid_name(value, span, "classifier agent") {
                    return None;
                }
                Condition::Classifier {
                    agent: Step {
                        name: value.to_string(),
                        at: place.at(span),
                        span,
                    },
                    equals,
                }
            }
            other => {
                self.problems.push(
                    Problem::new(span, format!("unknown condition `{other}`"))
                        .help("header=, path-prefix=, method= or classifier="),
                );
                return None;
            }
        };
        if equals.is_some() && matches!(condition, Condition::PathPrefix(_) | Condition::Method(_))
        {
            self.problems.push(Problem::new(
                equals.map(|(_, s)| s).unwrap_or(span),
                format!("`equals` does not apply to {kind}="),
            ));
            return None;
        }
        Some(condition)
    }

    fn bad_property(&mut self, entry: &kdl::KdlEntry, key: &str, expected: &str) {
        self.problems.push(
            Problem::new(entry.span(), format!("`{key}` does not take this"))
                .help(format!("it takes {expected}")),
        );
    }

    /// `calls "a" "b" …`: the agents and pipelines an agent may call.
    pub(super) fn names(&mut self, node: &KdlNode, what: &str) -> Option<Vec<String>> {
        let mut names = Vec::new();
        if node.entries().is_empty() {
            self.problems.push(Problem::new(
                node.name().span(),
                format!("`{}` needs at least one {what}", node.name().value()),
            ));
            return None;
        }
        for entry in node.entries() {
            match (entry.name(), entry.value().as_string()) {
                (None, Some(name)) => names.push((name.to_string(), entry.span())),
                _ => {
                    self.wrong_type(entry, &format!("`{}` lists names", node.name().value()));
                    return None;
                }
            }
        }
        let mut out = Vec::new();
        for (name, span) in names {
            let valid = match what {
                "topic pattern" => self.check_pattern(&name, span),
                _ => self.valid_name(&name, span, what),
            };
            if valid {
                out.push(name);
            }
        }
        Some(out)
    }

    pub(super) fn check_pattern(&mut self, pattern: &str, span: SourceSpan) -> bool {
        match super::Pattern::parse(pattern) {
            Ok(_) => true,
            Err(msg) => {
                self.problems.push(
                    Problem::new(span, msg.to_string())
                        .help("dot-separated tokens; `*` is one token, `>` the rest (last only)"),
                );
                false
            }
        }
    }

    /// `subscribe "pattern" { queue 64; overflow "drop-oldest" }`.
    pub(super) fn subscribe(&mut self, node: &KdlNode) -> Option<Subscription> {
        let (pattern, span) = {
            let entry = self.sole_entry(node, true)?;
            match entry.value().as_string() {
                Some(p) => (p.to_string(), entry.span()),
                None => {
                    self.wrong_type(entry, "`subscribe` takes a topic pattern as a string");
                    return None;
                }
            }
        };
        if !self.check_pattern(&pattern, span) {
            return None;
        }
        let mut sub = Subscription {
            pattern,
            queue: 1024,
            queue_bytes: DEFAULT_QUEUE_BYTES,
            overflow: Overflow::DropOldest,
            delivery: Delivery::AtMostOnce,
        };
        let mut at_least_once = None;
        let mut redelivery = Redelivery {
            attempts: DEFAULT_ATTEMPTS,
            backoff: DEFAULT_BACKOFF,
            dead_letter: None,
        };
        let mut retry_span = None;
        let mut seen = Seen::default();
        for child in node.children().map(|d| d.nodes()).unwrap_or_default() {
            if !seen.first(self, child) {
                continue;
            }
            match child.name().value() {
                "queue" => match self.count(child) {
                    Some(0) => self.problems.push(Problem::new(
                        child.name().span(),
                        "a subscriber's `queue` holds at least 1 event",
                    )),
                    other => set(&mut sub.queue, other),
                },
                "queue-bytes" => set(&mut sub.queue_bytes, self.usize_size(child)),
                "overflow" => {
                    let Some((text, span)) = self.string(child) else {
                        continue;
                    };
                    match text.as_str() {
                        "drop-oldest" => sub.overflow = Overflow::DropOldest,
                        "drop-newest" => sub.overflow = Overflow::DropNewest,
                        _ => self.problems.push(
                            Problem::new(span, format!("unknown overflow policy `{text}`"))
                                .help("\"drop-oldest\" or \"drop-newest\""),
                        ),
                    }
                }
                "delivery" => {
                    let Some((text, span)) = self.string(child) else {
                        continue;
                    };
                    match text.as_str() {
                        "at-most-once" => at_least_once = Some((false, span)),
                        "at-least-once" => at_least_once = Some((true, span)),
                        _ => self.problems.push(
                            Problem::new(span, format!("unknown delivery `{text}`"))
                                .help("\"at-most-once\" (the default) or \"at-least-once\""),
                        ),
                    }
                }
                "attempts" => {
                    retry_span.get_or_insert(child.name().span());
                    let n = self.count(child).map(|n| n as u32);
                    set(&mut redelivery.attempts, n);
                }
                "backoff" => {
                    retry_span.get_or_insert(child.name().span());
                    set(&mut redelivery.backoff, self.duration(child));
                }
                "dead-letter" => {
                    retry_span.get_or_insert(child.name().span());
                    let Some((topic, span)) = self.string(child) else {
                        continue;
                    };
                    if let Err(e) = super::topic::check_topic(&topic) {
                        self.problems.push(Problem::new(span, e.to_string()));
                    } else if super::topic::matches(&sub.pattern, &topic) {
                        self.problems.push(
                            Problem::new(
                                span,
                                format!(
                                    "the dead letters of `{}` would come back to it",
                                    sub.pattern
                                ),
                            )
                            .help("give a topic its pattern does not match"),
                        );
                    } else {
                        redelivery.dead_letter = Some(topic);
                    }
                }
                _ => self.unknown(child, "in `subscribe`", SUBSCRIBE),
            }
        }
        match at_least_once {
            Some((true, span)) => {
                if !self
                    .kept
                    .iter()
                    .any(|k| super::topic::covers(k, &sub.pattern))
                {
                    self.problems.push(
                        Problem::new(
                            span,
                            format!(
                                "`delivery \"at-least-once\"` needs what `{}` matches kept, to hand it over again",
                                sub.pattern
                            ),
                        )
                        .help(format!("add `topic \"{}\"` (or a pattern covering it)", sub.pattern)),
                    );
                }
                sub.delivery = Delivery::AtLeastOnce(redelivery);
            }
            _ => {
                if let Some(span) = retry_span {
                    self.problems.push(
                        Problem::new(span, "`attempts`, `backoff` and `dead-letter` apply to `delivery \"at-least-once\"`")
                            .help("add `delivery \"at-least-once\"` to this `subscribe` block"),
                    );
                }
            }
        }
        Some(sub)
    }
}

fn nonzero(d: Duration, key: &str) -> Result<Duration, String> {
    if d.is_zero() {
        Err(format!("`{key}` must be longer than zero"))
    } else {
        Ok(d)
    }
}

/// Turns spans into `file:line:col` for errors found after parsing.
pub(super) struct Place<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

impl Place<'_> {
    pub fn at(&self, span: SourceSpan) -> String {
        let before = &self.text[..span.offset().min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        format!("{}:{line}:{col}", self.name)
    }
}

/// Pipelines that reach themselves through other pipelines, as problems
/// at the step that closes the loop.
pub(super) fn cycles(pipelines: &BTreeMap<String, Composition>) -> Vec<Problem> {
    let mut found = Vec::new();
    for start in pipelines.keys() {
        let mut path = vec![start.as_str()];
        walk(pipelines, start, &mut path, &mut found);
    }
    found
}

fn walk<'a>(
    pipelines: &'a BTreeMap<String, Composition>,
    at: &str,
    path: &mut Vec<&'a str>,
    found: &mut Vec<Problem>,
) {
    let Some(composition) = pipelines.get(at) else {
        return;
    };
    for step in composition.flow.steps() {
        if step.name == path[0] {
            let mut ring: Vec<&str> = path.clone();
            ring.push(&step.name);
            // Reported once, from the pipeline that sorts first.
            if path.iter().all(|p| *p >= path[0]) {
                found.push(
                    Problem::new(
                        step.span,
                        format!("pipeline `{}` calls itself: {}", path[0], ring.join(" → ")),
                    )
                    .help("a pipeline may not reach itself through its steps"),
                );
            }
        } else if pipelines.contains_key(&step.name) && !path.contains(&step.name.as_str()) {
            path.push(&step.name);
            walk(pipelines, &step.name, path, found);
            path.pop();
        }
    }
}
