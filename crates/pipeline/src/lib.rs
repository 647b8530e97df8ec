//! The pipeline: the only place stages meet. A transport hands it a neutral
//! [`Request`] (head and headers) and its [`Body`] for a named agent; it
//! finds the agent's route and filter chain in the current snapshot, runs
//! the request-headers filters before the body is read, then the body
//! filters, the agent (through the router), and the response filters, and
//! writes the audit record. A `pipeline` block's virtual agent and a
//! client's publish to a topic pass the same filters (the top-level
//! chain) around what [`crate::compose`] and [`crate::topics`] do.
//! Nothing here knows which transport called.

#![deny(missing_docs)]

pub mod compose;
mod pieces;
mod placement;
pub mod topics;

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use arc_swap::ArcSwap;

use crate::topics::{Bus, Published};
use futures_util::TryFutureExt;
use placement::Placed;
use wharf_cluster::Cluster;
use wharf_cluster::topics::TopicsError;
use wharf_config::{Composition, Limits};
use wharf_core::metrics::{Answers, Metrics, Stage};
use wharf_core::request::{Body, BodyError, Reach, Request, Response};
use wharf_core::time::now_rfc3339;
use wharf_core::trace::{Attribute, Kind, Span, Trace, Tracer};
use wharf_filters::audit::AuditRecord;
use wharf_filters::{AuditLog, ChainRun, Chains, FilterFailure, Flow};
use wharf_registry::{Registry, Snapshot, Wanted};
use wharf_routing::{AgentRoute, RouteError, Routes, error_status};

/// Why the pipeline did not produce a response.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("no agent named `{0}`")]
    /// No agent or pipeline of that name.
    AgentNotFound(String),
    /// An agent or pipeline of that name exists but was refused: its
    /// name, and why (naming it).
    #[error("{1}")]
    AgentRefused(String, String),
    #[error(transparent)]
    /// The request body could not be had.
    Body(#[from] BodyError),
    #[error(transparent)]
    /// The agent's route gave no answer.
    Route(#[from] RouteError),
    #[error(transparent)]
    /// A filter failed.
    Filter(#[from] FilterFailure),
    /// A topic or pattern that cannot be used, a payload too large, or a
    /// kept topic's history refusing the write.
    #[error(transparent)]
    Topic(#[from] crate::topics::BusError),
    /// A read of kept topics that cannot be answered.
    #[error(transparent)]
    TopicRead(#[from] crate::topics::read::ReadError),
    /// A step of a pipeline block failed, or none of its branches answered.
    #[error("{1}")]
    Composition(u16, String),
    /// The request went to another node, which gave no answer.
    #[error(transparent)]
    Forward(#[from] wharf_cluster::ForwardError),
    /// A long-lived stream past the host's budget.
    #[error(transparent)]
    Streams(#[from] wharf_core::streams::StreamRefusal),
}

impl PipelineError {
    /// The stage of the host this error comes from (for metrics).
    pub fn stage(&self) -> Stage {
        match self {
            PipelineError::AgentNotFound(_)
            | PipelineError::AgentRefused(..)
            | PipelineError::Topic(_)
            | PipelineError::TopicRead(_)
            | PipelineError::Forward(_) => Stage::Router,
            PipelineError::Body(_) | PipelineError::Streams(_) => Stage::Transport,
            PipelineError::Route(RouteError::Call(_) | RouteError::Worker(_)) => Stage::Agent,
            PipelineError::Route(_) => Stage::Router,
            PipelineError::Filter(_) => Stage::Filter,
            PipelineError::Composition(..) => Stage::Agent,
        }
    }

    /// The HTTP status this error maps to (for metrics, audit, transports).
    pub fn status(&self) -> u16 {
        match self {
            PipelineError::AgentNotFound(_) => 404,
            PipelineError::AgentRefused(..) => 503,
            PipelineError::Topic(crate::topics::BusError::History(e)) => {
                crate::topics::read::history_status(e)
            }
            PipelineError::Topic(crate::topics::BusError::Cluster(_)) => 503,
            PipelineError::Topic(_) => 400,
            PipelineError::TopicRead(e) => e.status(),
            PipelineError::Composition(status, _) => *status,
            PipelineError::Forward(err) => err.status(),
            PipelineError::Streams(wharf_core::streams::StreamRefusal::Client(_)) => 429,
            PipelineError::Streams(wharf_core::streams::StreamRefusal::Host(_)) => 503,
            PipelineError::Body(BodyError::TooLarge(_)) => 413,
            PipelineError::Body(BodyError::Unreadable) => 400,
            PipelineError::Route(err) => error_status(err),
            PipelineError::Filter(FilterFailure::BodyTooLarge { what, .. }) => {
                if *what == "request" { 413 } else { 502 }
            }
            PipelineError::Filter(FilterFailure::Failed { kind, .. }) => {
                if *kind == wharf_filters::FailureKind::Deadline {
                    504
                } else {
                    503
                }
            }
        }
    }
}

pub(crate) type BoxFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What answers a request once its request filters have passed: the
/// agent's `handle` through its route ([`Dispatch`]), or a protocol served
/// over the agent (A2A), which calls the agent through the same route.
pub trait Terminal: Send + Sync {
    /// Answers `req` through `route`.
    fn answer<'a>(
        &'a self,
        route: &'a Arc<AgentRoute>,
        req: Request,
    ) -> BoxFuture<'a, Result<Response, PipelineError>>;

    /// Whether another node of a cluster can answer in its place (it
    /// answers with the agent's `handle`).
    fn forwardable(&self) -> bool {
        false
    }
}

/// The agent's `handle`, through its route.
pub struct Dispatch;

impl Terminal for Dispatch {
    fn answer<'a>(
        &'a self,
        route: &'a Arc<AgentRoute>,
        req: Request,
    ) -> BoxFuture<'a, Result<Response, PipelineError>> {
        // The calls' own futures, boxed as they are: an async block
        // around them would hold the request a second time.
        if route.core.entry.image.streams() {
            Box::pin(wharf_routing::stream::dispatch(route, req).err_into())
        } else {
            Box::pin(route.dispatch(req).err_into())
        }
    }

    fn forwardable(&self) -> bool {
        true
    }
}

/// Routes and filter chains for one snapshot, swapped together.
#[derive(Default)]
struct Stages {
    routes: Arc<Routes>,
    chains: Chains,
    /// The `pipeline` blocks served (every step loaded).
    compositions: BTreeMap<String, Arc<Composition>>,
    /// The answers counted for each pipeline block.
    composition_answers: BTreeMap<String, Arc<Answers>>,
    /// The longest chain of calls between agents.
    call_depth: usize,
}

impl Stages {
    /// The stages for `snapshot`, keeping from `previous` the routes of
    /// every agent and filter whose loaded entry did not change.
    fn rebuild(snapshot: &Snapshot, metrics: &Metrics, previous: &Stages) -> Stages {
        Stages {
            routes: Arc::new(Routes::rebuild(snapshot, metrics, &previous.routes)),
            chains: Chains::rebuild(snapshot, metrics, &previous.chains),
            compositions: snapshot.compositions.clone(),
            composition_answers: snapshot
                .compositions
                .keys()
                .map(|name| (name.clone(), Arc::new(metrics.answers(name))))
                .collect(),
            call_depth: snapshot
                .config
                .as_ref()
                .map_or(wharf_config::DEFAULT_CALL_DEPTH, |c| c.call_depth),
        }
    }
}

/// Where a request's body goes and how much of it: the agent's limits, or
/// the host's defaults for a pipeline or a topic.
struct Gate<'a> {
    body_limit: usize,
    /// The body goes on as it arrives (a `wasi:http` agent).
    streams_body: bool,
    filter_values: &'a BTreeMap<String, Arc<BTreeMap<String, String>>>,
}

impl PipelineError {
    /// What another agent, or a pipeline's merged answer, may be told:
    /// the error without what a guest only meant for the log (an internal
    /// error's text, a trap's details).
    pub fn public(&self) -> String {
        use wharf_runtime::CallError as C;
        match self {
            PipelineError::Route(RouteError::Call(call)) => match call {
                C::Internal(_) => "the agent reported an internal error".into(),
                C::Trap(_) => "the agent trapped".into(),
                C::Instantiate(_) => "the agent could not be instantiated".into(),
                C::InvalidResponse(_) => "the agent returned an invalid response".into(),
                other => other.to_string(),
            },
            PipelineError::Route(RouteError::Worker(_)) => "internal error".into(),
            other => other.to_string(),
        }
    }
}

/// Shared by every transport.
pub struct Pipeline {
    registry: Registry,
    stages: ArcSwap<Stages>,
    metrics: Metrics,
    audit: AuditLog,
    /// Topics and their subscribers.
    bus: Arc<Bus>,
    /// What guests reach through the host (calls, publishing).
    peers: Arc<crate::compose::Link>,
    /// The other nodes, when this one is in a cluster.
    cluster: std::sync::OnceLock<Arc<Cluster>>,
    /// Long-lived streams open, within their budget.
    streams: Arc<wharf_core::streams::Streams>,
    /// Where spans start, when the host exports traces.
    tracer: std::sync::OnceLock<Tracer>,
    /// Told of every publish: requests waiting for a pending agent.
    published: tokio::sync::watch::Sender<()>,
    /// The pending agents those requests wait for, loaded first.
    wanted: Arc<Wanted>,
    /// `wharf_agents_pending`.
    pending: metrics::Gauge,
}

impl Pipeline {
    /// The pipeline over `snapshot`, with its metrics, audit log and stream budget.
    pub fn new(
        snapshot: Snapshot,
        metrics: Metrics,
        audit: AuditLog,
        streams: Arc<wharf_core::streams::Streams>,
    ) -> Arc<Self> {
        let stages = Stages::rebuild(&snapshot, &metrics, &Stages::default());
        let topics = snapshot
            .config
            .as_ref()
            .map(|c| (c.topics, c.keeps.clone()));
        let pending =
            wharf_core::metrics::gauge(metrics.recorder(), "wharf_agents_pending", Vec::new());
        pending.set(snapshot.pending.len() as f64);
        let pipeline = Arc::new_cyclic(|me: &Weak<Pipeline>| Pipeline {
            registry: Registry::new(snapshot),
            stages: ArcSwap::from_pointee(stages),
            bus: Arc::new(Bus::new(metrics.clone())),
            peers: Arc::new(crate::compose::Link::new(me.clone(), metrics.clone())),
            metrics,
            audit,
            cluster: std::sync::OnceLock::new(),
            streams,
            tracer: std::sync::OnceLock::new(),
            published: tokio::sync::watch::Sender::new(()),
            wanted: Arc::default(),
            pending,
        });
        if let Some((topics, keeps)) = &topics {
            pipeline.bus.set_limits(topics);
            pipeline.bus.set_keeps(keeps);
        }
        pipeline.subscribe_agents();
        pipeline
    }

    /// Joins this node to `cluster`: requests for agents not served here
    /// (or past their limits here) go to the nodes that serve them.
    /// Topics cross the nodes from now on ([`Bus::share`]).
    pub fn join(&self, cluster: Arc<Cluster>) {
        let topics = wharf_cluster::topics::Topics::new(cluster.client().clone(), cluster.node());
        let _ = self.cluster.set(cluster);
        self.bus.share(topics);
        self.subscribe_agents();
    }

    /// Traces every request from now on with `tracer`: a span for the
    /// request, each filter, the agent and what it reaches through the
    /// host.
    pub fn trace_with(&self, tracer: Tracer) {
        let _ = self.tracer.set(tracer);
    }

    /// The span of a request that enters the pipeline for `name`: under
    /// the span the request carries (a call between agents, a delivery),
    /// else under the client's `traceparent`, else a new trace. The
    /// request carries it from now on.
    fn enter(&self, name: &str, req: &mut Request) -> Option<Span> {
        let tracer = self.tracer.get()?;
        let attributes = || {
            vec![
                Attribute::new("wharf.agent", name.to_string()),
                Attribute::new("http.request.method", req.method.to_string()),
                Attribute::new("wharf.request.id", req.id.to_string()),
            ]
        };
        let span = match &req.trace {
            Some(outer) => outer.child(REQUEST_SPAN, Kind::Server, attributes),
            None => Trace::enter(tracer, REQUEST_SPAN, &req.headers, attributes()),
        };
        // The log lines of the request name its trace.
        tracing::Span::current().record("trace_id", span.trace().trace_id());
        req.trace = Some(span.trace().clone());
        Some(span)
    }

    /// The cluster this node is in.
    pub fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.cluster.get()
    }

    /// The cluster, when `req` may still go to another node for `terminal`.
    fn forwarder(&self, req: &Request, terminal: &dyn Terminal) -> Option<&Arc<Cluster>> {
        let cluster = self.cluster.get()?;
        (terminal.forwardable() && !req.hop.pinned_here).then_some(cluster)
    }

    /// The names this node answers requests for: its agents and pipelines.
    pub fn served(&self) -> Vec<String> {
        let stages = self.stages.load();
        let agents = stages
            .routes
            .iter()
            .map(|r| r.core.entry.origin.name.clone());
        agents.chain(stages.compositions.keys().cloned()).collect()
    }

    /// Topics and their subscribers.
    pub fn bus(&self) -> &Arc<Bus> {
        &self.bus
    }

    /// What guests reach through the host.
    pub(crate) fn peers(&self) -> &Arc<crate::compose::Link> {
        &self.peers
    }

    /// The `pipeline` block called `name`, when it is served.
    pub fn composition(&self, name: &str) -> Option<Arc<Composition>> {
        self.stages.load().compositions.get(name).cloned()
    }

    /// The longest chain of calls between agents now.
    pub fn call_depth(&self) -> usize {
        self.stages.load().call_depth
    }

    /// Keeps kept topics' messages in `history` from now on, and starts
    /// the at-least-once subscriptions that were waiting for it.
    pub fn attach_history(&self, history: Arc<wharf_tasks::history::History>) {
        self.bus.attach_history(history);
        self.subscribe_agents();
    }

    /// Makes the bus's agent subscriptions those of the loaded agents.
    fn subscribe_agents(&self) {
        let routes = self.routes();
        let wanted = routes
            .iter()
            .flat_map(|route| {
                let name = &route.core.entry.origin.name;
                route
                    .core
                    .policy
                    .subscribes
                    .iter()
                    .map(move |sub| (name.clone(), sub.clone()))
            })
            .collect();
        self.bus.sync(wanted, &self.peers.deliverer());
    }

    /// The loaded components.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The budget of long-lived streams.
    pub fn streams(&self) -> &Arc<wharf_core::streams::Streams> {
        &self.streams
    }

    /// The metrics registry.
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

    /// The route serving `name` once it is no longer pending (see
    /// [`Pipeline::settled`]).
    pub async fn lookup_settled(&self, name: &str) -> Option<Arc<AgentRoute>> {
        self.settled(name).await;
        self.lookup(name)
    }

    /// Returns once `name` is not pending: at once, unless a start that
    /// loads agents while serving has not loaded it yet; then it is asked
    /// for first, and this waits for it to be served or refused. Only
    /// names in the agents directory or the configuration are pending, so
    /// a name that is neither is answered at once.
    pub async fn settled(&self, name: &str) {
        // Every request passes here: nothing pending costs one load.
        if !self.registry.is_pending(name) {
            return;
        }
        let mut told = self.published.subscribe();
        while self.registry.is_pending(name) {
            self.wanted.want(name);
            if told.changed().await.is_err() {
                return;
            }
        }
    }

    /// The pending names that requests are waiting for.
    pub fn wanted(&self) -> &Arc<Wanted> {
        &self.wanted
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
        if let Some(config) = &snapshot.config {
            self.bus.set_limits(&config.topics);
            self.bus.set_keeps(&config.keeps);
        }
        self.pending.set(snapshot.pending.len() as f64);
        self.registry.publish(snapshot);
        self.stages.store(Arc::new(stages));
        self.subscribe_agents();
        self.published.send_replace(());
    }

    /// Runs one request for `agent`: filters, the agent's `handle`,
    /// response filters.
    pub fn handle<'a>(
        &'a self,
        agent: &'a str,
        req: Request,
        body: Body,
    ) -> impl Future<Output = Result<Response, PipelineError>> + Send + 'a {
        // `handle_with`'s own future: an `async fn` here would hold the
        // request a second time.
        self.handle_with(agent, req, body, &Dispatch)
    }

    /// Runs one request for `agent` with `terminal` answering it once the
    /// request filters have passed: filters, terminal, response filters.
    /// A `pipeline` block's name runs its flow instead of a terminal. The
    /// answer is counted under the agent's name when it is served.
    pub async fn handle_with(
        &self,
        agent: &str,
        mut req: Request,
        body: Body,
        terminal: &dyn Terminal,
    ) -> Result<Response, PipelineError> {
        self.settled(agent).await;
        let stages = self.stages.load_full();
        let span = self.enter(agent, &mut req);
        let result = self.run_with(&stages, agent, req, body, terminal).await;
        traced(span, &result);
        let answers: &Answers = match stages.routes.get(agent) {
            Some(route) => &route.core.metrics.answers,
            None => match stages.composition_answers.get(agent) {
                Some(answers) => answers,
                None => self.metrics.unnamed(),
            },
        };
        counted(answers, result)
    }

    async fn run_with(
        &self,
        stages: &Arc<Stages>,
        agent: &str,
        req: Request,
        body: Body,
        terminal: &dyn Terminal,
    ) -> Result<Response, PipelineError> {
        let forwarder = self.forwarder(&req, terminal);
        // Where the request runs is decided once, before anything else.
        let (mut req, body) = match forwarder {
            // Boxed: forwarding holds a large state, which a request
            // served here should not carry room for.
            Some(cluster) => {
                match Box::pin(placement::decide(cluster, stages, agent, req, body)).await {
                    Placed::Elsewhere(answered) => return answered,
                    Placed::Here(req, body) => (req, body),
                }
            }
            None => (req, body),
        };
        req.has_body = !body.is_known_empty();
        let Some(route) = stages.routes.get(agent) else {
            let Some(flow) = stages.compositions.get(agent).cloned() else {
                return Err(self.not_served(agent));
            };
            req.agent = agent.into();
            let chain = stages.chains.for_agent(agent);
            let gate = default_gate();
            let answer = |req| crate::compose::run(self, flow, req);
            return self.guarded(agent, chain, &gate, req, body, answer).await;
        };
        req.affinity = route.affinity_for(req.affinity.take(), &req.headers);
        req.agent = route.core.entry.origin.name.as_str().into();
        req.hop.reach = self.reach(route, &req);
        let chain = stages.chains.for_agent(agent);
        let gate = Gate {
            body_limit: route.core.policy.limits.request_body,
            streams_body: route.core.entry.image.is_http(),
            filter_values: &route.core.policy.filter_values,
        };
        // In a cluster, an agent at its limit here overflows to another
        // node: a layer around the terminal.
        let overflow = forwarder.filter(|_| req.hop.from_node.is_none());
        let answer = |mut req: Request| -> BoxFuture<'_, Result<Response, PipelineError>> {
            let span = agent_span(&mut req);
            let answered = match overflow {
                Some(cluster) => {
                    placement::or_overflow(cluster, agent, req, |req| terminal.answer(route, req))
                }
                None => terminal.answer(route, req),
            };
            match span {
                None => answered,
                Some(span) => Box::pin(async move {
                    let result = answered.await;
                    traced(Some(span), &result);
                    result
                }),
            }
        };
        let mut result = self.guarded(agent, chain, &gate, req, body, answer).await;
        if let (Some(cluster), Ok(resp)) = (self.cluster.get(), &mut result) {
            placement::mark(cluster, resp);
        }
        result
    }

    /// Why nothing answers for `name`: refused (and why), or unknown.
    pub fn not_served(&self, name: &str) -> PipelineError {
        let Some(refusal) = self.registry.snapshot().refusal(name).cloned() else {
            return PipelineError::AgentNotFound(name.to_string());
        };
        // Some reasons name what they refuse ("agent `x` is not served: …").
        let why = if refusal.reason.contains(&format!("`{name}`")) {
            refusal.reason
        } else {
            format!("`{name}` is not served: {}", refusal.reason)
        };
        PipelineError::AgentRefused(name.to_string(), why)
    }

    /// What the agent of `route` may reach through the host during this
    /// request: none unless its block allows calls or publishing.
    fn reach(&self, route: &AgentRoute, req: &Request) -> Option<Reach> {
        let policy = &route.core.policy;
        if policy.calls.is_empty() && policy.publishes.is_empty() {
            return None;
        }
        let name: Arc<str> = route.core.entry.origin.name.as_str().into();
        let path = match &req.hop.path {
            Some(outer) => outer.iter().cloned().chain([name]).collect(),
            None => Arc::from([name]),
        };
        Some(Reach {
            peers: self.peers.clone(),
            path,
            relayed: req.hop.relayed,
        })
    }

    /// A client's publish to `topic`: the top-level filters, then the bus.
    /// The answer says how many subscribers it was queued for.
    pub async fn publish_topic(
        &self,
        topic: &str,
        req: Request,
        body: Body,
    ) -> Result<Response, PipelineError> {
        let mut gate = default_gate();
        gate.body_limit = self.bus.max_payload();
        let answer = |req: Request| -> BoxFuture<'_, Result<Response, PipelineError>> {
            let result = self
                .bus
                .publish_sent(topic, req.body, 0, req.trace.as_ref());
            // In a cluster the answer waits for NATS, as long as a request
            // forwarded to another node would.
            let wait = self
                .cluster
                .get()
                .map_or(std::time::Duration::ZERO, |c| c.settings.forward_timeout);
            Box::pin(async move {
                let body = match result.map_err(PipelineError::Topic)? {
                    Published::Here(queued) => {
                        serde_json::json!({ "topic": topic, "queued": queued })
                    }
                    Published::Cluster(sent) => {
                        let stopping = || TopicsError::Publish("this node is stopping".into());
                        let late = || {
                            TopicsError::Publish(format!(
                                "NATS did not take the message within {wait:?} (it is still queued here and may be delivered)"
                            ))
                        };
                        let id = tokio::time::timeout(wait, sent)
                            .await
                            .unwrap_or_else(|_| Ok(Err(late())))
                            .unwrap_or_else(|_| Err(stopping()))
                            .map_err(|e| PipelineError::Topic(e.into()))?;
                        serde_json::json!({ "topic": topic, "cluster": true, "id": id })
                    }
                };
                Ok(json_response(http::StatusCode::ACCEPTED, &body))
            })
        };
        self.at_topics(req, body, gate, answer).await
    }

    /// A client's watch of `pattern` as server-sent events, after the
    /// top-level filters. With a `Last-Event-ID` header (or `?after=ID`)
    /// it first replays what kept topics received after that id.
    pub async fn watch_topic(
        &self,
        pattern: &str,
        req: Request,
    ) -> Result<Response, PipelineError> {
        let answer = |req: Request| -> BoxFuture<'_, Result<Response, PipelineError>> {
            let after = resume_after(&req);
            let watch = self.bus.watch(pattern, WATCH_QUEUE, WATCH_QUEUE_BYTES);
            let keeping = self.bus.keeping();
            Box::pin(async move {
                let after = after?;
                let watch = watch.map_err(PipelineError::Topic)?;
                Ok(crate::topics::watch_response(watch, keeping, after))
            })
        };
        let body = Body::Ready(bytes::Bytes::new());
        self.at_topics(req, body, default_gate(), answer).await
    }

    /// A client's read of what kept topics matching `pattern` received
    /// (`GET /topics/{pattern}/messages?…`), after the top-level filters:
    /// one page as JSON, bounded in messages and bytes, streamed.
    pub async fn read_topic(&self, pattern: &str, req: Request) -> Result<Response, PipelineError> {
        use crate::topics::read::{ReadError, page_response, parse_query};
        let answer = |req: Request| -> BoxFuture<'_, Result<Response, PipelineError>> {
            let checked = crate::topics::Pattern::parse(pattern)
                .map_err(|e| PipelineError::Topic(e.into()))
                .and_then(|_| Ok(parse_query(pattern, &req.query)?));
            let keeping = self.bus.keeping().filter(|k| k.overlaps(pattern));
            Box::pin(async move {
                let query = checked?;
                let keeping = keeping.ok_or_else(|| ReadError::NotKept(pattern.into()))?;
                let page = keeping.history.read(query).await.map_err(ReadError::from)?;
                Ok(page_response(pattern, page))
            })
        };
        let body = Body::Ready(bytes::Bytes::new());
        self.at_topics(req, body, default_gate(), answer).await
    }

    /// A request to the topics (a publish, a watch, a read) through the
    /// top-level filters to `answer`, traced and counted.
    async fn at_topics<'s, F>(
        &'s self,
        mut req: Request,
        body: Body,
        gate: Gate<'_>,
        answer: F,
    ) -> Result<Response, PipelineError>
    where
        F: FnOnce(Request) -> BoxFuture<'s, Result<Response, PipelineError>>,
    {
        let stages = self.stages.load_full();
        req.agent = "topics".into();
        let span = self.enter("topics", &mut req);
        let chain = stages.chains.topics().map_err(unserved)?;
        let result = self
            .guarded("topics", chain, &gate, req, body, answer)
            .await;
        traced(span, &result);
        counted(self.metrics.unnamed(), result)
    }

    /// `req` through `chain` (request phases, body read under `gate`),
    /// `answer`, then the response phases and the audit record.
    async fn guarded<'s, F>(
        &'s self,
        agent: &str,
        chain: &[Arc<wharf_filters::FilterRoute>],
        gate: &Gate<'_>,
        mut req: Request,
        body: Body,
        answer: F,
    ) -> Result<Response, PipelineError>
    where
        F: FnOnce(Request) -> BoxFuture<'s, Result<Response, PipelineError>>,
    {
        let client = req.client.map(|c| c.ip());
        if chain.is_empty() {
            admit_body(gate, &mut req, body).await?;
            return Ok(self.streams.admit(client, answer(req).await?)?);
        }
        let mut run = ChainRun::new(chain, gate.filter_values);
        let result = filtered(gate, &mut run, &mut req, body, answer).await;
        let result = result.and_then(|resp| Ok(self.streams.admit(client, resp)?));
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

/// The name of the span of a request entering the pipeline.
const REQUEST_SPAN: &str = "wharf.request";

/// The span of the agent's call, under the request's: the agent sees it
/// as the request's `traceparent`, and what it reaches through the host
/// starts under it.
fn agent_span(req: &mut Request) -> Option<Span> {
    let span = req
        .trace
        .as_ref()?
        .child("wharf.agent", Kind::Internal, || {
            vec![Attribute::new("wharf.agent", req.agent.to_string())]
        });
    span.trace().inject(&mut req.headers);
    req.trace = Some(span.trace().clone());
    Some(span)
}

/// Ends `span` with the status `result` answers.
fn traced(span: Option<Span>, result: &Result<Response, PipelineError>) {
    if let Some(span) = span {
        match result {
            Ok(resp) => span.status(resp.status.as_u16()),
            Err(err) => {
                span.status(err.status());
                if err.status() >= 500 {
                    span.fail(err.to_string());
                }
            }
        }
    }
}

/// `result`, counted in `answers` by the stage that gave it.
fn counted(
    answers: &Answers,
    result: Result<Response, PipelineError>,
) -> Result<Response, PipelineError> {
    match &result {
        Ok(resp) => answers.count(resp.answered_by, resp.status.as_u16()),
        Err(err) => answers.count(err.stage(), err.status()),
    }
    result
}

fn unserved(why: &str) -> PipelineError {
    PipelineError::Composition(503, why.to_string())
}

/// Events, and payload bytes, a client's watch holds before it drops the
/// oldest.
/// A JSON answer.
fn json_response(status: http::StatusCode, body: &serde_json::Value) -> Response {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Response::new(status, headers, body.to_string().into())
}

/// The id a watcher resumes after: its `Last-Event-ID` header (as an
/// `EventSource` sends on reconnecting), else `?after=ID`.
fn resume_after(req: &Request) -> Result<Option<u64>, PipelineError> {
    let given = match req.headers.get("last-event-id") {
        Some(v) => Some(("Last-Event-ID", v.to_str().unwrap_or("").trim().to_string())),
        None => form_urlencoded::parse(req.query.as_bytes())
            .find(|(k, _)| k == "after")
            .map(|(_, v)| ("after", v.into_owned())),
    };
    let Some((name, text)) = given else {
        return Ok(None);
    };
    text.parse().map(Some).map_err(|_| {
        PipelineError::TopicRead(crate::topics::read::ReadError::Param {
            name: name.into(),
            reason: format!("`{text}` is not a message id"),
        })
    })
}

const WATCH_QUEUE: usize = 1024;
const WATCH_QUEUE_BYTES: usize = 4 << 20;

/// What a pipeline block or a topic admits: the default limits.
fn default_gate() -> Gate<'static> {
    static NONE: std::sync::LazyLock<BTreeMap<String, Arc<BTreeMap<String, String>>>> =
        std::sync::LazyLock::new(BTreeMap::new);
    Gate {
        body_limit: Limits::default().request_body,
        streams_body: false,
        filter_values: &NONE,
    }
}

/// The body for the agent when no filter reads it: whole, or, for an agent
/// that reads it as it arrives (a `wasi:http` component), as chunks.
async fn admit_body(gate: &Gate<'_>, req: &mut Request, body: Body) -> Result<(), PipelineError> {
    if gate.streams_body {
        req.incoming = Some(wharf_core::request::Incoming::new(
            body.chunks(gate.body_limit),
        ));
    } else {
        req.body = body.read(gate.body_limit).await?;
    }
    Ok(())
}

/// The request phases: headers, then the body to the filters that read it
/// in pieces as it arrives, then to those that read it whole, then the body
/// admitted for the agent. `Some`: a filter answered.
async fn request_phases(
    gate: &Gate<'_>,
    run: &mut ChainRun<'_>,
    req: &mut Request,
    body: Body,
) -> Result<Option<Response>, PipelineError> {
    if let Flow::Stop(resp) = run.request_headers(req).await? {
        return Ok(Some(resp));
    }
    let body = if run.wants_request_body() && run.streams_request_body() {
        match pieces::shown_in_pieces(run, req, body, gate.body_limit).await? {
            Ok(body) => body,
            Err(resp) => return Ok(Some(resp)),
        }
    } else {
        body
    };
    if run.wants_request_body() {
        req.body = body.read(gate.body_limit).await?;
        if let Flow::Stop(resp) = run.request_body(req).await? {
            return Ok(Some(resp));
        }
    } else {
        admit_body(gate, req, body).await?;
    }
    Ok(None)
}

/// The request through its chain: headers phase, body read, body phase,
/// agent, response phases.
async fn filtered<'s, F>(
    gate: &Gate<'_>,
    run: &mut ChainRun<'_>,
    req: &mut Request,
    body: Body,
    answer: F,
) -> Result<Response, PipelineError>
where
    F: FnOnce(Request) -> BoxFuture<'s, Result<Response, PipelineError>>,
{
    let early = request_phases(gate, run, req, body).await?;
    let response_work = run.has_response_work();
    let resp = match early {
        Some(mut resp) => {
            resp.answered_by = Stage::Filter;
            resp
        }
        None => answer(req.forward(response_work)).await?,
    };
    if !run.has_response_work() {
        return Ok(resp);
    }
    req.body = bytes::Bytes::new();
    let (status, by) = (resp.status, resp.answered_by);
    let mut resp = run.response(req, resp).await?;
    // A response filter that changed the status answered in the agent's place.
    resp.answered_by = if resp.status == status {
        by
    } else {
        Stage::Filter
    };
    Ok(resp)
}
