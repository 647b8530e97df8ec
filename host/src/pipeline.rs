//! The pipeline: the only place stages meet. A transport hands it a neutral
//! [`Request`] (head and headers) and its [`Body`] for a named agent; it
//! finds the agent's route and filter chain in the current snapshot, runs
//! the request-headers filters before the body is read, then the body
//! filters, the agent (through the router), and the response filters, and
//! writes the audit record. Nothing here knows which transport called.

use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::filter::audit::{AuditRecord, now_rfc3339};
use crate::filter::{AuditLog, ChainRun, Chains, FilterFailure, Flow};
use crate::metrics::Metrics;
use crate::registry::{Registry, Snapshot};
use crate::request::{Body, BodyError, Request, Response};
use crate::router::{AgentRoute, RouteError, Routes, error_status};

/// Why the pipeline did not produce a response.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("no agent named `{0}`")]
    AgentNotFound(String),
    #[error(transparent)]
    Body(#[from] BodyError),
    #[error(transparent)]
    Route(#[from] RouteError),
    #[error(transparent)]
    Filter(#[from] FilterFailure),
}

impl PipelineError {
    /// The HTTP status this error maps to (for metrics, audit, transports).
    pub fn status(&self) -> u16 {
        match self {
            PipelineError::AgentNotFound(_) => 404,
            PipelineError::Body(BodyError::TooLarge(_)) => 413,
            PipelineError::Body(BodyError::Unreadable) => 400,
            PipelineError::Route(err) => error_status(err),
            PipelineError::Filter(FilterFailure::BodyTooLarge { what, .. }) => {
                if *what == "request" { 413 } else { 502 }
            }
            PipelineError::Filter(FilterFailure::Failed { kind, .. }) => {
                if *kind == crate::filter::FailureKind::Deadline {
                    504
                } else {
                    503
                }
            }
        }
    }
}

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What answers a request once its request filters have passed: the
/// agent's `handle` through its route ([`Dispatch`]), or a protocol served
/// over the agent (A2A), which calls the agent through the same route.
pub trait Terminal: Send + Sync {
    fn answer<'a>(
        &'a self,
        route: &'a Arc<AgentRoute>,
        req: Request,
    ) -> BoxFuture<'a, Result<Response, PipelineError>>;
}

/// The agent's `handle`, through its route.
pub struct Dispatch;

impl Terminal for Dispatch {
    fn answer<'a>(
        &'a self,
        route: &'a Arc<AgentRoute>,
        req: Request,
    ) -> BoxFuture<'a, Result<Response, PipelineError>> {
        Box::pin(async move {
            if route.core.entry.image.streams() {
                return Ok(crate::stream::dispatch(route.clone(), req).await?);
            }
            Ok(route.dispatch(req).await?)
        })
    }
}

/// Routes and filter chains for one snapshot, swapped together.
#[derive(Default)]
struct Stages {
    routes: Arc<Routes>,
    chains: Chains,
}

impl Stages {
    /// The stages for `snapshot`, keeping from `previous` the routes of
    /// every agent and filter whose loaded entry did not change.
    fn rebuild(snapshot: &Snapshot, metrics: &Metrics, previous: &Stages) -> Stages {
        Stages {
            routes: Arc::new(Routes::rebuild(snapshot, metrics, &previous.routes)),
            chains: Chains::rebuild(snapshot, metrics, &previous.chains),
        }
    }
}

/// Shared by every transport.
pub struct Pipeline {
    registry: Registry,
    stages: ArcSwap<Stages>,
    metrics: Metrics,
    audit: AuditLog,
}

impl Pipeline {
    pub fn new(snapshot: Snapshot, metrics: Metrics, audit: AuditLog) -> Self {
        let stages = Stages::rebuild(&snapshot, &metrics, &Stages::default());
        Pipeline {
            registry: Registry::new(snapshot),
            stages: ArcSwap::from_pointee(stages),
            metrics,
            audit,
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
        self.stages.load().routes.clone()
    }

    /// The route serving `name` now.
    pub fn lookup(&self, name: &str) -> Option<Arc<AgentRoute>> {
        self.stages.load().routes.get(name).cloned()
    }

    /// The names of the filters requests to `agent` pass, in order.
    pub fn chain_names(&self, agent: &str) -> Vec<String> {
        let stages = self.stages.load();
        stages
            .chains
            .for_agent(agent)
            .iter()
            .map(|f| f.name().to_string())
            .collect()
    }

    /// Publishes a newly loaded snapshot with its routes and chains.
    /// Requests in flight finish on the stages they started with; agents
    /// and filters whose entries did not change keep their routes. Calls
    /// to `publish` must not race (the reloader makes them one at a time).
    pub fn publish(&self, snapshot: Snapshot) {
        let stages = Stages::rebuild(&snapshot, &self.metrics, &self.stages.load());
        self.registry.publish(snapshot);
        self.stages.store(Arc::new(stages));
    }

    /// Runs one request for `agent`: filters, the agent's `handle`,
    /// response filters.
    pub async fn handle(
        &self,
        agent: &str,
        req: Request,
        body: Body,
    ) -> Result<Response, PipelineError> {
        self.handle_with(agent, req, body, &Dispatch).await
    }

    /// Runs one request for `agent` with `terminal` answering it once the
    /// request filters have passed: filters, terminal, response filters.
    pub async fn handle_with(
        &self,
        agent: &str,
        mut req: Request,
        body: Body,
        terminal: &dyn Terminal,
    ) -> Result<Response, PipelineError> {
        let stages = self.stages.load_full();
        let route = stages
            .routes
            .get(agent)
            .ok_or_else(|| PipelineError::AgentNotFound(agent.to_string()))?;
        req.affinity = route.affinity_for(req.affinity.take(), &req.headers);
        req.agent = route.core.entry.origin.name.as_str().into();
        let chain = stages.chains.for_agent(agent);
        if chain.is_empty() {
            admit_body(route, &mut req, body).await?;
            return terminal.answer(route, req).await;
        }
        let mut run = ChainRun::new(chain, &route.core.policy.filter_values);
        let result = filtered(route, &mut run, &mut req, body, terminal).await;
        let (verdicts, late_metadata) = run.finish();
        if !verdicts.is_empty() {
            let status = match &result {
                Ok(resp) => resp.status.as_u16(),
                Err(err) => err.status(),
            };
            let metadata = req
                .metadata
                .iter()
                .chain(&late_metadata)
                .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                .collect();
            self.audit.record(&AuditRecord {
                time: now_rfc3339(),
                request_id: &req.id,
                agent,
                method: req.method.as_str(),
                path: &req.path,
                client: req.client.map(|c| c.to_string()).unwrap_or_default(),
                status,
                verdicts: &verdicts,
                metadata,
            });
        }
        result
    }
}

/// The body for the agent when no filter reads it: whole, or, for an agent
/// that reads it as it arrives (a `wasi:http` component), as chunks.
async fn admit_body(
    route: &AgentRoute,
    req: &mut Request,
    body: Body,
) -> Result<(), PipelineError> {
    let limit = route.core.policy.limits.request_body;
    if route.core.entry.image.is_http() {
        req.incoming = Some(crate::request::Incoming::new(body.chunks(limit)));
    } else {
        req.body = body.read(limit).await?;
    }
    Ok(())
}

/// The request through its chain: headers phase, body read, body phase,
/// agent, response phases.
async fn filtered(
    route: &Arc<AgentRoute>,
    run: &mut ChainRun<'_>,
    req: &mut Request,
    body: Body,
    terminal: &dyn Terminal,
) -> Result<Response, PipelineError> {
    let early = match run.request_headers(req).await? {
        Flow::Stop(resp) => Some(resp),
        Flow::Continue if run.wants_request_body() => {
            req.body = body.read(route.core.policy.limits.request_body).await?;
            match run.request_body(req).await? {
                Flow::Stop(resp) => Some(resp),
                Flow::Continue => None,
            }
        }
        Flow::Continue => {
            admit_body(route, req, body).await?;
            None
        }
    };
    let response_work = run.has_response_work();
    let resp = match early {
        Some(resp) => resp,
        None => terminal.answer(route, req.forward(response_work)).await?,
    };
    if !run.has_response_work() {
        return Ok(resp);
    }
    req.body = bytes::Bytes::new();
    Ok(run.response(req, resp).await?)
}
