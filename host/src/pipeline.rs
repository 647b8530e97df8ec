//! The pipeline: the only place stages meet. A transport hands it a neutral
//! [`Request`] for a named agent; it finds the agent's route in the current
//! snapshot and lets the router run it. Filters slot in here.

use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::metrics::Metrics;
use crate::registry::{Registry, Snapshot};
use crate::request::{Request, Response};
use crate::router::{AgentRoute, RouteError, Routes};

/// Shared by every transport.
pub struct Pipeline {
    registry: Registry,
    routes: ArcSwap<Routes>,
    metrics: Metrics,
}

impl Pipeline {
    pub fn new(snapshot: Snapshot, metrics: Metrics) -> Self {
        let routes = Routes::build(&snapshot, &metrics);
        Pipeline {
            registry: Registry::new(snapshot),
            routes: ArcSwap::from_pointee(routes),
            metrics,
        }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The routes in force now.
    pub fn routes(&self) -> Arc<Routes> {
        self.routes.load_full()
    }

    /// The route serving `name` now.
    pub fn lookup(&self, name: &str) -> Option<Arc<AgentRoute>> {
        self.routes.load().get(name).cloned()
    }

    /// Publishes a newly loaded snapshot and its routes. Requests in flight
    /// finish on the routes they started with; new ones see the new set.
    pub fn publish(&self, snapshot: Snapshot) {
        let routes = Routes::build(&snapshot, &self.metrics);
        self.registry.publish(snapshot);
        self.routes.store(Arc::new(routes));
    }

    /// Runs one request on `route`.
    pub async fn dispatch(&self, route: &AgentRoute, req: Request) -> Result<Response, RouteError> {
        route.dispatch(req).await
    }
}
