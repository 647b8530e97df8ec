//! Prometheus metrics: one recorder per running Wharf (not a process-wide
//! global, so several can run side by side), and per-agent handles
//! registered once (at load, or on an agent's first use of a series) so
//! the hot path only touches atomics.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Metadata, Recorder};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

pub mod catalog;

/// Latency buckets, in seconds: 25 µs to 10 s.
const BUCKETS: &[f64] = &[
    0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Why an instance was retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retire {
    /// It served its `max-uses`.
    Uses = 0,
    /// It trapped.
    Trap = 1,
    /// It passed its memory limit.
    Memory = 2,
    /// Its health checks failed.
    Unhealthy = 3,
    /// Its request was abandoned half-way (the client went away).
    Abandoned = 4,
    /// Its agent was asked nothing for its `unload-after` and unloaded.
    Idle = 5,
}

const RETIRE_REASONS: [&str; 6] = ["uses", "trap", "memory", "unhealthy", "abandoned", "idle"];

/// Why a request was turned away before reaching a guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shed {
    /// At the concurrency limit.
    Concurrency = 0,
    /// The wait queue was full.
    Queue = 1,
    /// The circuit breaker is open.
    Breaker = 2,
    /// Past the rate limit.
    RateLimit = 3,
}

const SHED_REASONS: [&str; 4] = ["concurrency", "queue", "breaker", "rate_limit"];

/// The part of the host that gave an answer (`wharf_requests_total{stage}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stage {
    /// The transport itself: an unknown route, a method not allowed, a
    /// whole-request timeout, a body it could not read or that was too
    /// large, the host's own endpoints (`/metrics`, `/agents`, an A2A card).
    Transport = 0,
    /// An inspection filter (a block, a redirect, a changed response, a
    /// filter that failed closed).
    Filter = 1,
    /// Routing: no such agent, rate limit, breaker, overload, no node.
    Router = 2,
    /// The agent (or a pipeline's steps): its answer, or its failure.
    #[default]
    Agent = 3,
}

const STAGES: [&str; 4] = ["transport", "filter", "router", "agent"];

impl Stage {
    /// Its label value.
    pub fn as_str(self) -> &'static str {
        STAGES[self as usize]
    }
}

/// The registry all handles come from; renders the `/metrics` text.
#[derive(Clone)]
pub struct Metrics {
    recorder: Arc<PrometheusRecorder>,
    handle: PrometheusHandle,
    /// Answers with no agent to name (`agent=""`).
    unnamed: Arc<Answers>,
    /// Samples the process's own figures (CPU, RSS, fds) at each render.
    process: Arc<metrics_process::Collector>,
    /// Gauges read from elsewhere at each render.
    sampled: Arc<Mutex<Vec<Sampled>>>,
}

/// A gauge and what reads its value.
type Sampled = (Gauge, Box<dyn Fn() -> Option<f64> + Send + Sync>);

impl Metrics {
    /// A registry with no series yet, every family in [`catalog`] described.
    pub fn new() -> Self {
        let recorder = PrometheusBuilder::new()
            .set_buckets(BUCKETS)
            .expect("the bucket list is not empty")
            .build_recorder();
        for family in catalog::FAMILIES {
            let name = KeyName::from_const_str(family.name);
            let help = family.help.into();
            match family.kind {
                catalog::Kind::Counter => recorder.describe_counter(name, None, help),
                catalog::Kind::Gauge => recorder.describe_gauge(name, None, help),
                catalog::Kind::Histogram => recorder.describe_histogram(name, None, help),
            }
        }
        let process = metrics_process::Collector::default();
        metrics::with_local_recorder(&recorder, || process.describe());
        let handle = recorder.handle();
        let recorder = Arc::new(recorder);
        Metrics {
            unnamed: Arc::new(Answers::new(recorder.clone(), "agent", "")),
            recorder,
            handle,
            process: Arc::new(process),
            sampled: Arc::default(),
        }
    }

    /// Prometheus text exposition format, the process figures sampled now.
    pub fn render(&self) -> String {
        metrics::with_local_recorder(&*self.recorder, || self.process.collect());
        for (gauge, read) in self
            .sampled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            if let Some(value) = read() {
                gauge.set(value);
            }
        }
        self.handle.render()
    }

    /// Sets the gauge `name` (no labels) from `read` at each render; a
    /// `None` leaves it as it was.
    pub fn sample(
        &self,
        name: &'static str,
        read: impl Fn() -> Option<f64> + Send + Sync + 'static,
    ) {
        let gauge = gauge(&self.recorder, name, Vec::new());
        self.sampled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((gauge, Box::new(read)));
    }

    /// `wharf_build_info{version,commit} 1`.
    pub fn build_info(&self, version: &str, commit: &str) {
        let labels = vec![
            Label::new("version", version.to_string()),
            Label::new("commit", commit.to_string()),
        ];
        gauge(&self.recorder, "wharf_build_info", labels).set(1.0);
    }

    /// The answers that name no agent: unknown names, topics, the
    /// transport's own answers.
    pub fn unnamed(&self) -> &Arc<Answers> {
        &self.unnamed
    }

    /// The answers given for `name` (an agent or a pipeline).
    pub fn answers(&self, name: &str) -> Answers {
        Answers::new(self.recorder.clone(), "agent", name)
    }

    /// Drains histogram samples into their buckets; call periodically.
    pub fn upkeep(&self) {
        self.handle.run_upkeep();
    }

    /// The recorder every series is registered on.
    pub fn recorder(&self) -> &Arc<PrometheusRecorder> {
        &self.recorder
    }

    /// Handles for one agent, registered now.
    /// `wharf_outbound_requests_total{agent,outcome}`: a component's
    /// outbound HTTP requests, allowed, denied or failed.
    pub fn outbound(&self, agent: &str) -> OutboundCounters {
        let labels = |outcome: &'static str| {
            vec![
                Label::new("agent", agent.to_string()),
                Label::new("outcome", outcome),
            ]
        };
        let r = &self.recorder;
        OutboundCounters {
            allowed: counter(r, "wharf_outbound_requests_total", labels("allowed")),
            denied: counter(r, "wharf_outbound_requests_total", labels("denied")),
            failed: counter(r, "wharf_outbound_requests_total", labels("failed")),
        }
    }

    /// The handles of `agent`'s series (labelled `agent=`).
    pub fn agent(&self, agent: &str) -> AgentMetrics {
        self.component("agent", agent)
    }

    /// The handles of a filter's instances (the same families as an
    /// agent's, labelled `filter=`).
    pub fn filter(&self, filter: &str) -> AgentMetrics {
        self.component("filter", filter)
    }

    fn component(&self, kind: &'static str, agent: &str) -> AgentMetrics {
        let r = &self.recorder;
        let base = vec![Label::new(kind, agent.to_string())];
        AgentMetrics {
            answers: Answers::new(self.recorder.clone(), kind, agent),
            breaker_state: gauge(r, "wharf_breaker_state", base.clone()),
            healthy: gauge(r, "wharf_agent_healthy", base.clone()),
            probes: counter(r, "wharf_health_probes_total", Vec::new()),
            unloads: counter(r, "wharf_agent_unloads_total", Vec::new()),
            reloads: counter(r, "wharf_agent_reloads_total", Vec::new()),
            memory_max: {
                // The peak starts again with each route (start or reload).
                let g = gauge(r, "wharf_instance_memory_max_bytes", base);
                g.set(0.0);
                g
            },
            memory_peak: std::sync::atomic::AtomicU64::new(0),
            request_seconds: OnceLock::new(),
            call_seconds: OnceLock::new(),
            instantiate_seconds: OnceLock::new(),
            traps: OnceLock::new(),
            deadlines: OnceLock::new(),
            memory_limits: OnceLock::new(),
            retries: OnceLock::new(),
            instances_live: OnceLock::new(),
            instances_idle: OnceLock::new(),
            retired: Default::default(),
            shed: Default::default(),
            affinity_hits: OnceLock::new(),
            affinity_misses: OnceLock::new(),
            affinity_repins: OnceLock::new(),
            affinity_evictions: OnceLock::new(),
            ahead_hits: OnceLock::new(),
            ahead_misses: OnceLock::new(),
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

const META: Metadata<'static> = Metadata::new("wharf", metrics::Level::INFO, Some("wharf"));

/// A counter registered on `r` under `name` and `labels`.
pub fn counter(r: &PrometheusRecorder, name: &'static str, labels: Vec<Label>) -> Counter {
    r.register_counter(&Key::from_parts(name, labels), &META)
}

/// A gauge registered on `r` under `name` and `labels`.
pub fn gauge(r: &PrometheusRecorder, name: &'static str, labels: Vec<Label>) -> Gauge {
    r.register_gauge(&Key::from_parts(name, labels), &META)
}

/// A histogram registered on `r` under `name` and `labels`.
pub fn histogram(r: &PrometheusRecorder, name: &'static str, labels: Vec<Label>) -> Histogram {
    r.register_histogram(&Key::from_parts(name, labels), &META)
}

/// Statuses counted apart (100–599); others are not counted.
const STATUSES: usize = 500;

/// `wharf_requests_total` for one name: a counter per stage and status,
/// registered on first use (an idle agent holds four empty cells).
pub struct Answers {
    recorder: Arc<PrometheusRecorder>,
    key: &'static str,
    name: String,
    by_stage: [OnceLock<Box<[OnceLock<Counter>]>>; 4],
}

impl Answers {
    fn new(recorder: Arc<PrometheusRecorder>, key: &'static str, name: &str) -> Answers {
        Answers {
            recorder,
            key,
            name: name.to_string(),
            by_stage: Default::default(),
        }
    }

    /// Counts one answer with `status`, given by `stage`.
    pub fn count(&self, stage: Stage, status: u16) {
        let Some(i) = usize::from(status)
            .checked_sub(100)
            .filter(|i| *i < STATUSES)
        else {
            return;
        };
        let cells = self.by_stage[stage as usize]
            .get_or_init(|| (0..STATUSES).map(|_| OnceLock::new()).collect());
        cells[i]
            .get_or_init(|| {
                let labels = vec![
                    Label::new(self.key, self.name.clone()),
                    Label::new("stage", stage.as_str()),
                    Label::new("status", status.to_string()),
                ];
                counter(&self.recorder, "wharf_requests_total", labels)
            })
            .increment(1);
    }
}

/// One agent's metric handles; cheap to use from any thread. Its state
/// gauges (health, breaker, memory peak) exist from load; every other
/// series is registered when it is first counted, so an agent that is
/// never asked for costs neither their memory nor their lines on
/// `/metrics` (about 8 KB and 84 lines an agent, most of it the
/// histograms' buckets).
pub struct AgentMetrics {
    /// Every answer given for this agent, by stage and status; it also
    /// holds the recorder and the agent's label the other series are made
    /// with.
    pub answers: Answers,
    /// The circuit breaker's state (0 closed, 1 open, 2 half-open).
    pub breaker_state: Gauge,
    /// 1 when the agent is healthy, else 0.
    pub healthy: Gauge,
    /// Health probes of every agent (one series, no label).
    pub probes: Counter,
    /// Agents unloaded while idle (one series, no label).
    pub unloads: Counter,
    /// Unloaded agents loaded again (one series, no label).
    pub reloads: Counter,
    /// The most linear memory a warm instance held after a call, since the
    /// agent's route was built (at start, and again on each reload).
    memory_max: Gauge,
    memory_peak: std::sync::atomic::AtomicU64,
    request_seconds: OnceLock<Histogram>,
    call_seconds: OnceLock<Histogram>,
    instantiate_seconds: OnceLock<Histogram>,
    traps: OnceLock<Counter>,
    deadlines: OnceLock<Counter>,
    memory_limits: OnceLock<Counter>,
    retries: OnceLock<Counter>,
    instances_live: OnceLock<Gauge>,
    instances_idle: OnceLock<Gauge>,
    retired: [OnceLock<Counter>; 6],
    shed: [OnceLock<Counter>; 4],
    affinity_hits: OnceLock<Counter>,
    affinity_misses: OnceLock<Counter>,
    affinity_repins: OnceLock<Counter>,
    affinity_evictions: OnceLock<Counter>,
    ahead_hits: OnceLock<Counter>,
    ahead_misses: OnceLock<Counter>,
}

/// The accessors of an agent's series registered on first use:
/// `name: Type = register("family", extra label)`.
macro_rules! first_use {
    ($($(#[$doc:meta])* $field:ident: $ty:ident = $register:ident($family:literal $(, $k:literal = $v:literal)?);)*) => {
        impl AgentMetrics {
            $(
                $(#[$doc])*
                pub fn $field(&self) -> &$ty {
                    self.$field.get_or_init(|| {
                        $register(&self.answers.recorder, $family, self.labels(&[$(($k, $v))?]))
                    })
                }
            )*
        }
    };
}

first_use! {
    /// Whole requests, from the route's admission to the answer (`wharf_request_duration_seconds`).
    request_seconds: Histogram = histogram("wharf_request_duration_seconds");
    /// Guest calls alone (`wharf_guest_call_duration_seconds`).
    call_seconds: Histogram = histogram("wharf_guest_call_duration_seconds");
    /// Making a fresh instance (`wharf_instantiate_duration_seconds`).
    instantiate_seconds: Histogram = histogram("wharf_instantiate_duration_seconds");
    /// Calls that trapped.
    traps: Counter = counter("wharf_traps_total");
    /// Calls cut off at their deadline.
    deadlines: Counter = counter("wharf_deadline_exceeded_total");
    /// Calls that hit the memory limit.
    memory_limits: Counter = counter("wharf_memory_limit_total");
    /// Calls retried on another instance.
    retries: Counter = counter("wharf_retries_total");
    /// Warm instances alive.
    instances_live: Gauge = gauge("wharf_instances", "state" = "live");
    /// Warm instances idle.
    instances_idle: Gauge = gauge("wharf_instances", "state" = "idle");
    /// Requests whose session found its pinned instance.
    affinity_hits: Counter = counter("wharf_affinity_total", "outcome" = "hit");
    /// Requests whose session had no pinned instance yet.
    affinity_misses: Counter = counter("wharf_affinity_total", "outcome" = "miss");
    /// Sessions pinned again (their instance was gone).
    affinity_repins: Counter = counter("wharf_affinity_total", "outcome" = "repin");
    /// Pins dropped to stay within the bound.
    affinity_evictions: Counter = counter("wharf_affinity_evictions_total");
    /// Fresh requests that found an instance made ahead.
    ahead_hits: Counter = counter("wharf_instances_ahead_total", "outcome" = "hit");
    /// Fresh requests that found no instance made ahead.
    ahead_misses: Counter = counter("wharf_instances_ahead_total", "outcome" = "miss");
}

impl AgentMetrics {
    /// Records the latency of a request through the agent's route (its
    /// answer is counted by whoever gives it, in [`Answers`]).
    pub fn request(&self, elapsed: Duration) {
        self.request_seconds().record(elapsed.as_secs_f64());
    }

    /// This agent's label, then `extra`.
    fn labels(&self, extra: &[(&'static str, &'static str)]) -> Vec<Label> {
        let mut labels = Vec::with_capacity(1 + extra.len());
        labels.push(Label::new(self.answers.key, self.answers.name.clone()));
        labels.extend(extra.iter().map(|&(k, v)| Label::new(k, v)));
        labels
    }

    /// Notes the linear memory a warm instance holds after a call.
    pub fn instance_memory(&self, bytes: u64) {
        use std::sync::atomic::Ordering;
        if bytes > self.memory_peak.fetch_max(bytes, Ordering::Relaxed) {
            self.memory_max.set(bytes as f64);
        }
    }

    /// Counts an instance retired for `why`.
    pub fn retired(&self, why: Retire) {
        let i = why as usize;
        self.by_reason(
            &self.retired[i],
            "wharf_instances_retired_total",
            RETIRE_REASONS[i],
        );
    }

    /// Counts a request shed for `why`.
    pub fn shed(&self, why: Shed) {
        let i = why as usize;
        self.by_reason(&self.shed[i], "wharf_requests_shed_total", SHED_REASONS[i]);
    }

    /// Counts one in `cell`, the series of `family` for `reason`, made on
    /// first use.
    fn by_reason(&self, cell: &OnceLock<Counter>, family: &'static str, reason: &'static str) {
        cell.get_or_init(|| {
            counter(
                &self.answers.recorder,
                family,
                self.labels(&[("reason", reason)]),
            )
        })
        .increment(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_registered_names_with_labels() {
        let metrics = Metrics::new();
        let a = metrics.agent("echo");
        a.request(Duration::from_micros(120));
        a.answers.count(Stage::Agent, 200);
        a.answers.count(Stage::Agent, 200);
        a.retired(Retire::Trap);
        a.affinity_hits().increment(3);
        metrics.upkeep();
        let text = metrics.render();
        assert!(
            text.contains(r#"wharf_requests_total{agent="echo",stage="agent",status="200"} 2"#),
            "{text}"
        );
        assert!(text.contains(r#"wharf_instances_retired_total{agent="echo",reason="trap"} 1"#));
        assert!(text.contains(r#"wharf_affinity_total{agent="echo",outcome="hit"} 3"#));
        assert!(text.contains("wharf_request_duration_seconds_bucket"));
    }

    #[test]
    fn an_agents_series_are_made_when_first_counted() {
        let metrics = Metrics::new();
        let a = metrics.agent("idle");
        metrics.upkeep();
        let idle = metrics.render();
        assert!(
            idle.contains(r#"wharf_agent_healthy{agent="idle"}"#),
            "{idle}"
        );
        assert!(
            !idle.contains(r#"wharf_traps_total{agent="idle"}"#),
            "{idle}"
        );
        assert!(!idle.contains(r#"wharf_request_duration_seconds_count{agent="idle"}"#));
        a.traps().increment(1);
        a.shed(Shed::Queue);
        let text = metrics.render();
        assert!(
            text.contains(r#"wharf_traps_total{agent="idle"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"wharf_requests_shed_total{agent="idle",reason="queue"} 1"#));
        assert!(!text.contains(r#"reason="breaker""#), "{text}");
    }

    #[test]
    fn two_registries_are_independent() {
        let a = Metrics::new();
        let b = Metrics::new();
        a.agent("x").traps().increment(1);
        assert!(!b.render().contains("wharf_traps_total{agent=\"x\"} 1"));
    }
}

/// The counters of one agent's outbound requests, by outcome; set when
/// its route is built (the runtime has no metrics registry of its own).
#[derive(Debug, Clone)]
pub struct OutboundCounters {
    /// Requests the allow-list let through.
    pub allowed: Counter,
    /// Requests it refused.
    pub denied: Counter,
    /// Requests that failed on the way.
    pub failed: Counter,
}
