//! Routing: which instance serves a request, whether it is healthy, and
//! what happens when it is not. Per agent: rate limit → circuit breaker →
//! the tower stack (load shed, concurrency limit, trapped calls retried)
//! → a warm pool with affinity, or a fresh instance.

#![deny(missing_docs)]

mod affinity;
mod ahead;
pub mod clock;
mod health;
mod pool;
mod service;
pub mod stream;

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::HeaderMap;
use tower::ServiceExt;
use tower::util::Oneshot;

pub use affinity::{AffinityTable, Lookup};
pub use ahead::FreshStock;
pub use health::{BreakerState, CircuitBreaker, HealthCell};
pub use pool::{AffinityOutcome, Lease, Pooled, Slot, WarmPool, ensure_instance};

use service::AgentService;
use wharf_config::{AffinitySource, Mode, Policy, RateKey};
use wharf_core::metrics::{AgentMetrics, Metrics, Shed};
use wharf_core::request::{Request, Response};
use wharf_registry::{AgentEntry, Snapshot};
use wharf_runtime::{CallError, Live, UnloadedCode};

/// Why routing did not produce a response.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error(transparent)]
    /// The guest call failed.
    Call(#[from] CallError),
    #[error("the agent is at its concurrency limit or its queue is full")]
    /// Past the concurrency limit, or the queue is full.
    Overloaded,
    #[error("the agent's circuit breaker is open")]
    /// The circuit breaker is open.
    BreakerOpen {
        /// When to try again.
        retry_after: Duration,
    },
    #[error("rate limit exceeded")]
    /// Past the rate limit.
    RateLimited {
        /// When to try again.
        retry_after: Duration,
    },
    #[error("the worker running the call failed: {0}")]
    /// The task running the call failed.
    Worker(String),
}

/// How long an A2A conversation's pin lasts unused, and how many are kept,
/// when the agent has no `affinity` block.
const A2A_PIN_TTL: Duration = Duration::from_secs(600);
const A2A_PIN_CAPACITY: usize = 10_000;

/// Everything one agent's calls need; shared by its tower stack.
pub struct AgentCore {
    /// The loaded agent.
    pub entry: Arc<AgentEntry>,
    /// Its settings.
    pub policy: Policy,
    /// Its metric handles.
    pub metrics: AgentMetrics,
    /// Its health.
    pub health: HealthCell,
    /// Its warm instances (warm agents).
    pub pool: Option<WarmPool>,
    /// Its session pins (agents with affinity).
    pub pins: Option<AffinityTable>,
    /// Fresh instances made ahead (fresh agents with `ahead` > 0).
    pub ahead: Option<Arc<FreshStock>>,
}

/// One agent as the router sees it.
pub struct AgentRoute {
    /// What the route shares with its calls.
    pub core: Arc<AgentCore>,
    /// Its circuit breaker.
    pub breaker: CircuitBreaker,
    limiter: Option<(DefaultKeyedRateLimiter<String>, RateKey)>,
    service: AgentService,
    /// When it was last probed (at first: when the route was made).
    probed_ms: AtomicU64,
    /// Whether it was asked anything since.
    served: AtomicBool,
    /// Whether it was asked anything since the last sweep.
    used: AtomicBool,
    /// Since when it has been asked nothing (sweeps write it).
    quiet_since_ms: AtomicU64,
}

/// The routes for one registry snapshot.
#[derive(Default)]
pub struct Routes {
    agents: BTreeMap<String, Arc<AgentRoute>>,
}

impl Routes {
    /// The routes of every agent in `snapshot`.
    pub fn build(snapshot: &Snapshot, metrics: &Metrics) -> Routes {
        Routes::rebuild(snapshot, metrics, &Routes::default())
    }

    /// The routes for `snapshot`, after `previous`: an agent whose entry
    /// is the same keeps its route whole (pool, health, breaker, pins); a
    /// replaced agent gets a new route whose pin table remembers the old
    /// sessions, so each is re-pinned (and counted) on its next request.
    pub fn rebuild(snapshot: &Snapshot, metrics: &Metrics, previous: &Routes) -> Routes {
        let agents = snapshot
            .agents
            .iter()
            .map(|(name, entry)| {
                let old = previous.agents.get(name);
                let route = match old {
                    Some(route) if Arc::ptr_eq(&route.core.entry, entry) => route.clone(),
                    _ => {
                        let route = AgentRoute::new(entry.clone(), metrics);
                        if let (Some(new), Some(old)) =
                            (&route.core.pins, old.and_then(|r| r.core.pins.as_ref()))
                        {
                            new.carry_over(old);
                        }
                        Arc::new(route)
                    }
                };
                (name.clone(), route)
            })
            .collect();
        Routes { agents }
    }

    /// The route of the agent called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<AgentRoute>> {
        self.agents.get(name)
    }

    /// Every route.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<AgentRoute>> {
        self.agents.values()
    }
}

impl AgentRoute {
    /// The route of `entry`: its pool, health, breaker, limiter and metrics.
    pub fn new(entry: Arc<AgentEntry>, metrics: &Metrics) -> Self {
        let policy = entry.policy.clone();
        let name = entry.origin.name.clone();
        let warm = policy.instances.mode == Mode::Warm;
        if policy.affinity.is_some() && !warm {
            tracing::warn!(agent = %name, "affinity is configured but the agent runs fresh instances: pins have no effect");
        }
        if policy.instances.ahead > 0 && warm {
            tracing::warn!(agent = %name, "`ahead` is configured but the agent runs a warm pool: it applies to fresh instances only");
        }
        let _ = entry.image.outbound_counters().set(metrics.outbound(&name));
        let agent_metrics = metrics.agent(&name);
        let _ = entry
            .image
            .reload_counter()
            .set(agent_metrics.reloads.clone());
        let core = Arc::new(AgentCore {
            metrics: agent_metrics,
            health: HealthCell::new(policy.health.unhealthy_after),
            pool: warm.then(|| WarmPool::new(policy.instances, policy.health.unhealthy_after)),
            // An A2A agent's turns carry their context id as the key: a
            // warm A2A agent pins conversations even with no `affinity`.
            pins: match (&policy.affinity, warm && entry.image.serves_a2a()) {
                (Some(a), _) if warm => Some(AffinityTable::new(a.ttl, a.capacity)),
                (None, true) => Some(AffinityTable::new(A2A_PIN_TTL, A2A_PIN_CAPACITY)),
                _ => None,
            },
            ahead: if warm {
                None
            } else {
                FreshStock::new(policy.instances.ahead).map(Arc::new)
            },
            entry,
            policy: policy.clone(),
        });
        core.metrics.healthy.set(1.0);
        let limiter = policy.rate_limit.map(|r| {
            let per_request = r.per / r.requests.max(1);
            let quota = Quota::with_period(per_request.max(Duration::from_nanos(1)))
                .expect("a positive period")
                .allow_burst(NonZeroU32::new(r.burst.max(1)).expect("non-zero"));
            (RateLimiter::dashmap(quota), r.by)
        });
        AgentRoute {
            breaker: CircuitBreaker::new(policy.breaker.failures, policy.breaker.cool_down),
            limiter,
            service: service::stack(core.clone()),
            // Made as if just probed: loading the agent has just
            // instantiated it (so a directory of thousands loading while
            // serving does not probe each as it is published).
            probed_ms: AtomicU64::new(clock::now_ms()),
            served: AtomicBool::new(false),
            used: AtomicBool::new(false),
            quiet_since_ms: AtomicU64::new(clock::now_ms()),
            core,
        }
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.core.entry.origin.name
    }

    /// The request's affinity key, from the configured header or cookie.
    pub fn affinity_key(&self, headers: &HeaderMap) -> Option<String> {
        self.affinity_for(None, headers)
    }

    /// The session key of a request on this route: the one its transport
    /// carried (the binary transport's `affinity` field), else the
    /// configured header or cookie; none when the route has no affinity.
    pub fn affinity_for(&self, given: Option<String>, headers: &HeaderMap) -> Option<String> {
        let source = &self.core.policy.affinity.as_ref()?.source;
        given
            .filter(|key| !key.is_empty() && key.len() <= MAX_AFFINITY_KEY)
            .or_else(|| affinity_key(source, headers))
    }

    /// Runs one request through rate limit, breaker and the tower stack,
    /// recording the outcome in health, breaker and metrics.
    ///
    /// The request is moved once, into the stack's call, before the
    /// future is made: the future holds it once, not once for each layer
    /// that passes it on (an `async fn` keeps its arguments for its whole
    /// life beside what it moves them into), and every layer above that
    /// boxes this future copies it whole.
    pub fn dispatch(
        self: &Arc<Self>,
        req: Request,
    ) -> impl Future<Output = Result<Response, RouteError>> + Send + 'static {
        let started = Instant::now();
        // Read first: a busy agent's flag stays set without a write per
        // request to a line every worker shares.
        if !self.served.load(Ordering::Relaxed) {
            self.served.store(true, Ordering::Relaxed);
        }
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
        let limited = self.rate_limited(&req);
        let mut call = self.service.clone().oneshot(req);
        let route = self.clone();
        async move {
            let result = match limited {
                Some(err) => Err(err),
                // Polled where it lies, not moved into a second slot.
                None => route.admitted(&mut call).await,
            };
            route.core.metrics.request(started.elapsed());
            result
        }
    }

    /// The refusal of a request past its rate limit, if it is.
    fn rate_limited(&self, req: &Request) -> Option<RouteError> {
        let (limiter, by) = self.limiter.as_ref()?;
        let key = match (by, &req.affinity) {
            (RateKey::Affinity, Some(key)) => key.clone(),
            _ => req.client.map(|c| c.ip().to_string()).unwrap_or_default(),
        };
        let not_until = limiter.check_key(&key).err()?;
        self.core.metrics.shed(Shed::RateLimit);
        let retry_after = not_until.wait_time_from(DefaultClock::default().now());
        Some(RouteError::RateLimited { retry_after })
    }

    /// `call` if the breaker admits it, its outcome recorded.
    async fn admitted(
        &self,
        call: &mut Oneshot<AgentService, Request>,
    ) -> Result<Response, RouteError> {
        let m = &self.core.metrics;
        let admission = match self.breaker.admit() {
            Ok(admission) => admission,
            Err(retry_after) => {
                m.shed(Shed::Breaker);
                return Err(RouteError::BreakerOpen { retry_after });
            }
        };
        let result = match call.await {
            Ok(resp) => Ok(resp),
            Err(err) => Err(from_box(err, m)),
        };
        let failed = match &result {
            Ok(_) => false,
            Err(RouteError::Overloaded) => {
                // Shedding is not the agent's fault: leave the breaker alone.
                drop(admission);
                return result;
            }
            Err(err) => error_status(err) >= 500,
        };
        admission.finish(!failed);
        self.core.health.record(!failed);
        m.breaker_state.set(self.breaker.state() as u8 as f64);
        m.healthy.set(if self.core.health.is_healthy() {
            1.0
        } else {
            0.0
        });
        result
    }

    /// Probes health when it is due: idle warm instances, or one fresh
    /// instance for fresh agents. It is due an `interval` after the last
    /// probe, or an `idle-interval` after it while the agent is healthy
    /// and has served nothing since (the request that ends the quiet
    /// brings the next probe back to `interval`).
    /// An unloaded agent is not probed: that would load it again.
    pub async fn probe_if_due(&self) {
        if !self.core.entry.image.is_loaded() {
            return;
        }
        let now = clock::now_ms();
        let health = &self.core.policy.health;
        let quiet = !self.served.load(Ordering::Relaxed) && self.core.health.is_healthy();
        let wait = match quiet {
            true => health.idle_interval.max(health.interval),
            false => health.interval,
        };
        let wait = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        if now < self.probed_ms.load(Ordering::Relaxed).saturating_add(wait) {
            return;
        }
        self.probed_ms.store(now, Ordering::Relaxed);
        self.served.store(false, Ordering::Relaxed);
        let core = &self.core;
        core.metrics.probes.increment(1);
        match &core.pool {
            Some(pool) => pool.probe(&core.metrics).await,
            None => {
                let entry = core.entry.clone();
                let probed = tokio::spawn(async move {
                    let mut live = entry.image.instantiate_async().await?;
                    live.health_async().await
                })
                .await;
                let ok = matches!(probed, Ok(Ok(wharf_runtime::Health::Ok)));
                core.health.record(ok);
            }
        }
        core.metrics
            .healthy
            .set(if core.health.is_healthy() { 1.0 } else { 0.0 });
    }

    /// Periodic housekeeping: expired pins, idle rate-limit keys, and the
    /// code of an agent asked nothing for its `unload-after`: what it
    /// unloaded, to be dropped off the async workers.
    pub fn sweep(&self) -> Option<UnloadedCode> {
        let unloaded = self.unload_if_idle();
        if let Some(pins) = &self.core.pins {
            pins.sweep();
        }
        if let Some((limiter, _)) = &self.limiter {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        self.core
            .metrics
            .breaker_state
            .set(self.breaker.state() as u8 as f64);
        unloaded
    }

    /// Unloads the agent's code once it has been asked nothing for its
    /// `instances { unload-after }`: its idle warm instances are retired
    /// first, and it stays loaded while any instance is busy. Not for an
    /// agent that makes instances ahead (they would hold the code), nor
    /// one that cannot be loaded again (no compile cache).
    fn unload_if_idle(&self) -> Option<UnloadedCode> {
        let core = &self.core;
        let image = &core.entry.image;
        let after = core.policy.instances.unload_after?;
        let now = clock::now_ms();
        if self.used.swap(false, Ordering::Relaxed) || !image.is_loaded() {
            self.quiet_since_ms.store(now, Ordering::Relaxed);
            return None;
        }
        let after = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        let quiet_since = self.quiet_since_ms.load(Ordering::Relaxed);
        if core.ahead.is_some() || !image.unloadable() || now < quiet_since.saturating_add(after) {
            return None;
        }
        if let Some(pool) = &core.pool
            && !pool.retire_idle(&core.metrics)
        {
            return None;
        }
        let unloaded = image.unload()?;
        core.metrics.unloads.increment(1);
        tracing::debug!(agent = %self.name(), "idle agent unloaded");
        Some(unloaded)
    }
}

impl AgentCore {
    /// One attempt, below the tower stack: a warm lease or a fresh instance.
    async fn attempt(self: Arc<Self>, req: &Request) -> Result<Response, RouteError> {
        let result = self.clone().attempt_inner(req).await;
        if let Err(RouteError::Call(err)) = &result {
            self.count_failure(err);
        }
        result
    }

    async fn attempt_inner(self: Arc<Self>, req: &Request) -> Result<Response, RouteError> {
        let span = tracing::Span::current();
        let deadline = self.policy.limits.deadline;
        match &self.pool {
            Some(pool) => {
                let key = req.affinity.as_deref();
                let (lease, outcome) = pool
                    .acquire(key, self.pins.as_ref(), &self.metrics, deadline)
                    .await?;
                // A retry's instance is logged by the retry, not recorded
                // on the span again (a field recorded twice prints twice).
                if req.attempt == 0 {
                    span.record("instance", lease.instance_id());
                    span.record("affinity", outcome.as_str());
                } else {
                    tracing::info!(
                        instance = lease.instance_id(),
                        "retrying on another instance"
                    );
                }
                pool.run(lease, &self.entry, req, &self.metrics).await
            }
            None => {
                if req.attempt == 0 {
                    span.record("instance", "fresh");
                } else {
                    tracing::info!("retrying on a fresh instance");
                }
                self.fresh_call(req).await.map_err(RouteError::Call)
            }
        }
    }

    async fn fresh_call(self: &Arc<Self>, req: &Request) -> Result<Response, CallError> {
        let ready = self.ahead.as_ref().and_then(|s| s.take(&self.metrics));
        let mut live = match ready {
            Some(live) => live,
            None => {
                let started = Instant::now();
                let live = self.entry.image.instantiate_async().await;
                self.metrics
                    .instantiate_seconds()
                    .record(started.elapsed().as_secs_f64());
                match live {
                    Ok(live) => live,
                    Err(err) => {
                        self.after_fresh_call(None);
                        return Err(err);
                    }
                }
            }
        };
        let started = Instant::now();
        let result = live.call_async(req).await;
        self.metrics
            .call_seconds()
            .record(started.elapsed().as_secs_f64());
        self.after_fresh_call(Some(live));
        result
    }

    /// With a stock, the used instance is dropped and replaced on a task
    /// of its own; without, it is dropped here.
    fn after_fresh_call(self: &Arc<Self>, used: Option<Live>) {
        if self.ahead.is_some() {
            FreshStock::after_call(self.clone(), used);
        }
    }

    fn count_failure(&self, err: &CallError) {
        match err {
            CallError::Trap(_) | CallError::Instantiate(_) => self.metrics.traps().increment(1),
            CallError::Deadline => self.metrics.deadlines().increment(1),
            CallError::MemoryLimit => self.metrics.memory_limits().increment(1),
            _ => {}
        }
    }
}

fn from_box(err: tower::BoxError, metrics: &AgentMetrics) -> RouteError {
    if err.is::<tower::load_shed::error::Overloaded>() {
        metrics.shed(Shed::Concurrency);
        return RouteError::Overloaded;
    }
    match err.downcast::<RouteError>() {
        Ok(route) => *route,
        Err(other) => RouteError::Worker(other.to_string()),
    }
}

/// The HTTP status a routing error maps to (for metrics and transports).
pub fn error_status(err: &RouteError) -> u16 {
    match err {
        RouteError::Call(call) => call_status(call),
        RouteError::Overloaded | RouteError::BreakerOpen { .. } => 503,
        RouteError::RateLimited { .. } => 429,
        RouteError::Worker(_) => 500,
    }
}

fn call_status(err: &CallError) -> u16 {
    match err {
        CallError::Deadline => 504,
        CallError::InvalidResponse(_) | CallError::InvalidVerdict(_) => 502,
        CallError::BadRequest(_) => 400,
        CallError::BodyTooLarge(_) => 413,
        CallError::NotFound(_) => 404,
        CallError::Unavailable(_) => 503,
        // The client that canceled is not waiting for this answer.
        CallError::Canceled => 499,
        CallError::MemoryLimit
        | CallError::Trap(_)
        | CallError::Instantiate(_)
        | CallError::Internal(_) => 500,
    }
}

/// Reads an affinity key from a header or a cookie.
/// The longest session key kept: bounds what a client makes the host store.
pub const MAX_AFFINITY_KEY: usize = 256;

/// The session key `source` names in `headers`, if present and not too long.
pub fn affinity_key(source: &AffinitySource, headers: &HeaderMap) -> Option<String> {
    let key = match source {
        AffinitySource::Header(name) => headers.get(name)?.to_str().ok()?.trim().to_string(),
        AffinitySource::Cookie(name) => headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_string())?,
    };
    // Bound what a client can make the host store.
    (!key.is_empty() && key.len() <= MAX_AFFINITY_KEY).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_keys_from_headers_and_cookies() {
        let mut headers = HeaderMap::new();
        headers.insert("x-session-id", "abc".parse().unwrap());
        headers.insert("cookie", "theme=dark; sid=s-42 ; other=1".parse().unwrap());
        let header = AffinitySource::Header(http::HeaderName::from_static("x-session-id"));
        assert_eq!(affinity_key(&header, &headers).as_deref(), Some("abc"));
        let cookie = AffinitySource::Cookie("sid".into());
        assert_eq!(affinity_key(&cookie, &headers).as_deref(), Some("s-42"));
        let missing = AffinitySource::Cookie("nope".into());
        assert_eq!(affinity_key(&missing, &headers), None);
        headers.insert("x-session-id", "x".repeat(300).parse().unwrap());
        assert_eq!(
            affinity_key(&header, &headers),
            None,
            "overlong keys are ignored"
        );
    }
}
