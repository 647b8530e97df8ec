//! Inspection filters: each loaded filter's route (instances from the
//! router's machinery: fresh or a warm pool, health, breaker, metrics), the
//! chains that agents' requests pass, and running one request through its
//! chain ([`run`]). The pipeline is the only caller; nothing here knows
//! which transport a request came from.

pub mod audit;
pub mod metrics;
mod run;
pub mod verdict;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use audit::AuditLog;
pub use metrics::FailureKind;
pub use run::{ChainRun, FilterFailure, Flow};

use crate::config::Mode;
use crate::metrics::{AgentMetrics, Metrics};
use crate::registry::{FilterEntry, Snapshot};
use crate::router::{CircuitBreaker, HealthCell, WarmPool};
use crate::runtime::FilterLive;

/// One filter as requests meet it.
pub struct FilterRoute {
    pub entry: Arc<FilterEntry>,
    pub metrics: metrics::FilterMetrics,
    /// Instance counts, retirements and memory, in the families agents use
    /// (labelled with the filter's name).
    pub instances: AgentMetrics,
    pub health: HealthCell,
    pub breaker: CircuitBreaker,
    pub pool: Option<WarmPool<FilterLive>>,
}

impl FilterRoute {
    pub fn new(entry: Arc<FilterEntry>, metrics: &Metrics) -> Self {
        let name = &entry.origin.name;
        let policy = &entry.policy;
        FilterRoute {
            metrics: metrics::FilterMetrics::new(metrics, name),
            instances: metrics.agent(name),
            health: HealthCell::new(policy.health.unhealthy_after),
            breaker: CircuitBreaker::new(policy.breaker.failures, policy.breaker.cool_down),
            pool: (policy.instances.mode == Mode::Warm)
                .then(|| WarmPool::new(policy.instances, policy.health.unhealthy_after)),
            entry,
        }
    }

    pub fn name(&self) -> &str {
        &self.entry.origin.name
    }
}

/// Every agent's chain for one snapshot; agents with an empty chain have
/// none here.
#[derive(Default)]
pub struct Chains {
    filters: BTreeMap<String, Arc<FilterRoute>>,
    by_agent: BTreeMap<String, Arc<[Arc<FilterRoute>]>>,
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
        let by_agent = snapshot
            .agents
            .iter()
            .filter(|(_, a)| !a.policy.filters.is_empty())
            .map(|(name, agent)| {
                let chain: Arc<[Arc<FilterRoute>]> = agent
                    .policy
                    .filters
                    .iter()
                    .filter_map(|f| filters.get(f).cloned())
                    .collect();
                (name.clone(), chain)
            })
            .collect();
        Chains { filters, by_agent }
    }

    /// The chain requests to `agent` pass; empty when it has none.
    pub fn for_agent(&self, agent: &str) -> &[Arc<FilterRoute>] {
        self.by_agent.get(agent).map_or(&[], |c| c)
    }
}
