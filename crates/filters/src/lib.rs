//! Inspection filters: each loaded filter's route (instances from the
//! router's machinery: fresh or a warm pool, health, breaker, metrics), the
//! chains that agents' requests pass, and running one request through its
//! chain (`run`). The pipeline is the only caller; nothing here knows
//! which transport a request came from.

#![deny(missing_docs)]

pub mod audit;
pub mod metrics;
mod remembered;
mod run;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use audit::AuditLog;
pub use metrics::FailureKind;
pub use run::{ChainRun, FilterFailure, Flow};

use wharf_config::Mode;
use wharf_core::metrics::{AgentMetrics, Metrics};
use wharf_registry::{FilterEntry, Snapshot};
use wharf_routing::{CircuitBreaker, HealthCell, WarmPool};
use wharf_runtime::FilterLive;

/// One filter as requests meet it.
pub struct FilterRoute {
    /// The loaded filter.
    pub entry: Arc<FilterEntry>,
    /// Its calls, decisions and failures.
    pub metrics: metrics::FilterMetrics,
    /// Instance counts, retirements and memory, in the families agents use
    /// (labelled with the filter's name).
    pub instances: AgentMetrics,
    /// Its health.
    pub health: HealthCell,
    /// Its circuit breaker.
    pub breaker: CircuitBreaker,
    /// Its warm instances (warm filters).
    pub pool: Option<WarmPool<FilterLive>>,
    /// The request-headers verdicts it asked to be remembered.
    pub remembered: remembered::Remembered,
}

impl FilterRoute {
    /// The route of `entry`.
    pub fn new(entry: Arc<FilterEntry>, metrics: &Metrics) -> Self {
        let name = &entry.origin.name;
        let policy = &entry.policy;
        FilterRoute {
            metrics: metrics::FilterMetrics::new(metrics, name),
            instances: metrics.filter(name),
            health: HealthCell::new(policy.health.unhealthy_after),
            breaker: CircuitBreaker::new(policy.breaker.failures, policy.breaker.cool_down),
            pool: (policy.instances.mode == Mode::Warm)
                .then(|| WarmPool::new(policy.instances, policy.health.unhealthy_after)),
            remembered: remembered::Remembered::default(),
            entry,
        }
    }

    /// The filter's name.
    pub fn name(&self) -> &str {
        &self.entry.origin.name
    }
}

/// Every agent's chain for one snapshot; agents with an empty chain have
/// none here.
pub struct Chains {
    filters: BTreeMap<String, Arc<FilterRoute>>,
    by_agent: BTreeMap<String, Arc<[Arc<FilterRoute>]>>,
    topics: Result<Arc<[Arc<FilterRoute>]>, String>,
}

impl Default for Chains {
    fn default() -> Self {
        Chains {
            filters: BTreeMap::new(),
            by_agent: BTreeMap::new(),
            topics: Ok(Arc::from([])),
        }
    }
}

impl Chains {
    /// Builds one route per loaded filter and each agent's chain from its
    /// policy, keeping the route (pool, health, breaker) of every filter
    /// whose entry `previous` already served. The loader refused agents
    /// whose chain names a missing filter.
    pub fn rebuild(snapshot: &Snapshot, metrics: &Metrics, previous: &Chains) -> Chains {
        let filters: BTreeMap<String, Arc<FilterRoute>> = snapshot
            .filters
            .iter()
            .map(|(name, entry)| {
                let route = match previous.filters.get(name) {
                    Some(route) if Arc::ptr_eq(&route.entry, entry) => route.clone(),
                    _ => Arc::new(FilterRoute::new(entry.clone(), metrics)),
                };
                (name.clone(), route)
            })
            .collect();
        let chain_of = |names: &[String]| -> Arc<[Arc<FilterRoute>]> {
            names
                .iter()
                .filter_map(|f| filters.get(f).cloned())
                .collect()
        };
        let mut by_agent: BTreeMap<String, Arc<[Arc<FilterRoute>]>> = snapshot
            .agents
            .iter()
            .filter(|(_, a)| !a.policy.filters.is_empty())
            .map(|(name, agent)| (name.clone(), chain_of(&agent.policy.filters)))
            .collect();
        // Pipeline blocks and topics pass the top-level chain. The loader
        // refused pipelines when one of its filters did not load; topics
        // are refused then ([`Chains::topics`]).
        let top = snapshot
            .config
            .as_ref()
            .map(|c| c.defaults.filters.clone())
            .unwrap_or_default();
        let missing: Vec<&str> = top
            .iter()
            .filter(|f| !filters.contains_key(*f))
            .map(String::as_str)
            .collect();
        let topics = missing.is_empty().then(|| chain_of(&top));
        let topics = topics.ok_or_else(|| {
            format!(
                "topics are not served: the top-level filter chain names `{}`, which did not load",
                missing.join("`, `")
            )
        });
        if !top.is_empty() {
            for name in snapshot.compositions.keys() {
                by_agent.insert(name.clone(), chain_of(&top));
            }
        }
        Chains {
            filters,
            by_agent,
            topics,
        }
    }

    /// The chain a client's publish or watch passes (the top-level one),
    /// or why topics are not served.
    pub fn topics(&self) -> Result<&[Arc<FilterRoute>], &str> {
        match &self.topics {
            Ok(chain) => Ok(chain),
            Err(why) => Err(why),
        }
    }

    /// The chain requests to `agent` pass; empty when it has none.
    pub fn for_agent(&self, agent: &str) -> &[Arc<FilterRoute>] {
        self.by_agent.get(agent).map_or(&[], |c| c)
    }
}
