//! What applies to one agent: limits, instance mode, health, breaker,
//! affinity, rate limit, and its config values. Defaults live here; the
//! top-level blocks of `wharf.kdl` change them for every agent and an
//! `agent` block changes them for one, field by field.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Per-call resource limits for an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest linear memory a guest may grow to, in bytes.
    pub memory: u64,
    /// Wall-clock budget for one call, instantiation included.
    pub deadline: Duration,
    /// Largest request body accepted, in bytes (larger: 413).
    pub request_body: usize,
    /// Largest response body a guest may return, in bytes (larger: 502).
    pub response_body: usize,
    /// Calls in flight at once; past it requests are shed with 503.
    pub concurrency: usize,
    /// Extra attempts for a call whose instance trapped before answering.
    pub retries: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory: 64 << 20,
            deadline: Duration::from_secs(2),
            request_body: 16 << 20,
            response_body: 16 << 20,
            concurrency: 256,
            retries: 1,
        }
    }
}

/// Whether an agent gets a fresh instance per request or a warm pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A new instance per request.
    Fresh,
    /// Instances kept and reused.
    Warm,
}

/// How an agent's instances are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instances {
    /// Fresh or warm.
    pub mode: Mode,
    /// Warm: most live instances.
    pub max: usize,
    /// Warm: an instance is retired after this many requests.
    pub max_uses: u64,
    /// Warm: an instance whose memory grew past this is retired; none: never.
    pub max_memory: Option<u64>,
    /// Warm: requests that may wait for a busy pool; more get 503.
    pub queue: usize,
    /// Fresh: instances made ahead of the requests that will use them, off
    /// the request's path (0: each request instantiates its own).
    pub ahead: usize,
    /// An agent asked nothing for this long gives back its instances and
    /// its loaded code, and is loaded again from the compile cache by its
    /// next request; none: kept loaded. Only with a compile cache, and not
    /// for agents that make instances `ahead`.
    pub unload_after: Option<Duration>,
}

impl Default for Instances {
    fn default() -> Self {
        Instances {
            mode: Mode::Fresh,
            max: 4,
            max_uses: 10_000,
            max_memory: None,
            queue: 64,
            ahead: 0,
            unload_after: Some(Duration::from_secs(600)),
        }
    }
}

/// Health tracking and probing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Health {
    /// How often the `health` export is probed.
    pub interval: Duration,
    /// How often it is probed instead while the agent is healthy and has
    /// served nothing since its last probe (never shorter than
    /// `interval`): a directory of idle agents is not instantiated over
    /// and over to learn what its last probe said.
    pub idle_interval: Duration,
    /// Consecutive failures that make an instance (or agent) unhealthy.
    pub unhealthy_after: u32,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            interval: Duration::from_secs(10),
            idle_interval: Duration::from_secs(60),
            unhealthy_after: 3,
        }
    }
}

/// The per-agent circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breaker {
    /// Consecutive failed requests that open the breaker.
    pub failures: u32,
    /// Time the breaker stays open before letting one trial request through.
    pub cool_down: Duration,
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker {
            failures: 5,
            cool_down: Duration::from_secs(10),
        }
    }
}

/// Where a request's affinity key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AffinitySource {
    /// A request header, e.g. `x-session-id`.
    Header(http::HeaderName),
    /// A cookie, by name.
    Cookie(String),
}

/// Session affinity: requests with one key go to one warm instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Affinity {
    /// Where a request's session key comes from.
    pub source: AffinitySource,
    /// A pin unused this long is forgotten.
    pub ttl: Duration,
    /// Most pins kept; the least recently used are evicted past it.
    pub capacity: usize,
}

/// What a rate limit counts per.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateKey {
    /// The client's IP address.
    Ip,
    /// The request's affinity key (IP when the request has none).
    Affinity,
}

/// A per-client rate limit (GCRA): `requests` per `per`, bursts up to `burst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests allowed per `per`.
    pub requests: u32,
    /// The period.
    pub per: Duration,
    /// Requests allowed at once beyond the rate.
    pub burst: u32,
    /// What the limit is kept per.
    pub by: RateKey,
}

/// `task-owner`: the metadata keys (set by filters) whose values make an
/// A2A caller's identity; each task belongs to the identity that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOwner(pub Vec<String>);

impl Default for TaskOwner {
    /// The `auth` filter's: a JWT's issuer and subject, or an API key's name.
    fn default() -> Self {
        TaskOwner(
            ["auth.iss", "auth.sub", "auth.key"]
                .map(String::from)
                .to_vec(),
        )
    }
}

impl TaskOwner {
    /// The owner a request with `metadata` acts as: the named keys present,
    /// with their values, written unambiguously; empty (the anonymous
    /// scope) when none is present.
    pub fn of(&self, metadata: &[(String, String)]) -> String {
        let found: Vec<(&str, &str)> = self
            .0
            .iter()
            .filter_map(|key| {
                metadata
                    .iter()
                    .rev()
                    .find(|(k, _)| k == key)
                    .map(|(k, v)| (k.as_str(), v.as_str()))
            })
            .collect();
        if found.is_empty() {
            return String::new();
        }
        serde_json::to_string(&found).unwrap_or_default()
    }
}

/// Everything that applies to one agent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    /// Its limits.
    pub limits: Limits,
    /// Its instances.
    pub instances: Instances,
    /// Its health checks.
    pub health: Health,
    /// Its circuit breaker.
    pub breaker: Breaker,
    /// Session affinity, when set.
    pub affinity: Option<Affinity>,
    /// Its rate limit, when set.
    pub rate_limit: Option<RateLimit>,
    /// Values the guest reads with the `config` host import.
    pub values: Arc<BTreeMap<String, String>>,
    /// The filter chain requests to this agent pass, in order; empty: none.
    pub filters: Vec<String>,
    /// Per-filter config values for this agent's requests
    /// (`filter-config "name" { … }`), read before the filter's own.
    pub filter_values: BTreeMap<String, Arc<BTreeMap<String, String>>>,
    /// What its A2A agent card says beyond `describe()`.
    pub card: super::CardSettings,
    /// `digest "sha256:…"`: the only contents the component may have.
    pub digest: Option<String>,
    /// `outbound { … }`: the HTTP requests it may make; none when absent.
    pub outbound: Option<std::sync::Arc<super::Outbound>>,
    /// `calls "a" "b"`: the agents and pipelines it may call; none by default.
    pub calls: Vec<String>,
    /// `publishes "pattern" …`: the topics it may publish to; none by default.
    pub publishes: Vec<String>,
    /// `subscribe "pattern" { … }`: the topics delivered to it.
    pub subscribes: Vec<super::Subscription>,
    /// Whose A2A tasks a caller reaches.
    pub task_owner: TaskOwner,
}
