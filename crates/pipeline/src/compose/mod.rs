//! Agents working together through the host: a guest's call to another
//! agent ([`Link`], the pipeline's side of the `peers` imports), events
//! handed to subscribed agents, and `pipeline` blocks ([`run`]). Every
//! call goes back through [`Pipeline::handle`], so it meets the callee's
//! route (pool, affinity, breaker, limits) and filter chain; nothing here
//! knows which transport the first request came from.

mod flow;

use std::sync::{Arc, Weak};
use std::time::Instant;

use bytes::Bytes;
use dashmap::DashMap;
use http::{HeaderValue, Method};
use metrics::{Counter, Histogram, Label};

pub use flow::run;

use crate::topics::{BusError, Deliver, Event};
use crate::{Pipeline, PipelineError};
use wharf_core::metrics::{Metrics, counter, histogram};
use wharf_core::request::{Body, Hop, PeerError, Peers, PublishError, Request, Response};
use wharf_core::trace::{self, Attribute, Kind, Trace};

type BoxFuture<T> = std::pin::Pin<Box<dyn Future<Output = T> + Send>>;

/// What guests reach through the host, with the counts per caller and
/// callee (`wharf_agent_calls_total`, `wharf_agent_call_duration_seconds`)
/// and per subscriber.
pub struct Link {
    pipeline: Weak<Pipeline>,
    metrics: Metrics,
    edges: DashMap<(Arc<str>, Arc<str>), Arc<Edge>>,
    subscribers: DashMap<Arc<str>, Arc<Delivery>>,
    /// Per publishing agent, its events refused past `max-hops`.
    looped: DashMap<Arc<str>, Counter>,
}

/// One caller → callee edge's counts.
struct Edge {
    ok: Counter,
    failed: Counter,
    refused: Counter,
    seconds: Histogram,
}

/// One subscriber's delivery counts.
struct Delivery {
    delivered: Counter,
    failed: Counter,
    seconds: Histogram,
}

impl Link {
    /// The link of `pipeline` (held weakly: the pipeline owns the link).
    pub fn new(pipeline: Weak<Pipeline>, metrics: Metrics) -> Link {
        Link {
            pipeline,
            metrics,
            edges: DashMap::new(),
            subscribers: DashMap::new(),
            looped: DashMap::new(),
        }
    }

    /// `wharf_topic_hops_refused_total{publisher}`: the events
    /// `publisher` published past `max-hops`, refused.
    fn looped(&self, publisher: &str) -> Counter {
        if let Some(c) = self.looped.get(publisher) {
            return c.clone();
        }
        let labels = vec![Label::new("publisher", publisher.to_string())];
        let c = counter(
            self.metrics.recorder(),
            "wharf_topic_hops_refused_total",
            labels,
        );
        self.looped.entry(publisher.into()).or_insert(c).clone()
    }

    fn edge(&self, caller: &Arc<str>, callee: &str) -> Arc<Edge> {
        let key = (caller.clone(), Arc::from(callee));
        if let Some(edge) = self.edges.get(&key) {
            return edge.clone();
        }
        let r = self.metrics.recorder();
        let labels = |outcome: Option<&'static str>| {
            let mut labels = vec![
                Label::new("caller", caller.to_string()),
                Label::new("callee", callee.to_string()),
            ];
            labels.extend(outcome.map(|o| Label::new("outcome", o)));
            labels
        };
        let edge = Arc::new(Edge {
            ok: counter(r, "wharf_agent_calls_total", labels(Some("ok"))),
            failed: counter(r, "wharf_agent_calls_total", labels(Some("failed"))),
            refused: counter(r, "wharf_agent_calls_total", labels(Some("refused"))),
            seconds: histogram(r, "wharf_agent_call_duration_seconds", labels(None)),
        });
        self.edges.entry(key).or_insert(edge).clone()
    }

    fn delivery(&self, subscriber: &Arc<str>) -> Arc<Delivery> {
        if let Some(d) = self.subscribers.get(subscriber) {
            return d.clone();
        }
        let r = self.metrics.recorder();
        let labels = |outcome: Option<&'static str>| {
            let mut labels = vec![Label::new("subscriber", subscriber.to_string())];
            labels.extend(outcome.map(|o| Label::new("outcome", o)));
            labels
        };
        let d = Arc::new(Delivery {
            delivered: counter(r, "wharf_topic_events_total", labels(Some("delivered"))),
            failed: counter(r, "wharf_topic_events_total", labels(Some("failed"))),
            seconds: histogram(r, "wharf_topic_delivery_seconds", labels(None)),
        });
        self.subscribers
            .entry(subscriber.clone())
            .or_insert(d)
            .clone()
    }

    /// Hands events to subscribed agents: a `POST /` with the payload as
    /// its body and the topic in `x-wharf-topic`, through the agent's
    /// route and filters; counted as delivered (2xx) or failed.
    pub fn deliverer(&self) -> Deliver {
        let pipeline = self.pipeline.clone();
        Arc::new(
            move |name: Arc<str>, event: Arc<Event>| -> BoxFuture<bool> {
                let pipeline = pipeline.clone();
                Box::pin(async move {
                    let Some(pipeline) = pipeline.upgrade() else {
                        return false;
                    };
                    let counts = pipeline.peers().delivery(&name);
                    let mut req = Request::new(Method::POST, "/");
                    req.hop.relayed = event.hops.saturating_add(1);
                    if let Ok(topic) = HeaderValue::from_bytes(event.topic.as_bytes()) {
                        req.headers.insert("x-wharf-topic", topic);
                    }
                    let span = trace::child(
                        event.trace.as_ref(),
                        "wharf.deliver",
                        Kind::Consumer,
                        || {
                            vec![
                                Attribute::new(
                                    "messaging.destination.name",
                                    event.topic.to_string(),
                                ),
                                Attribute::new("wharf.subscriber", name.to_string()),
                            ]
                        },
                    );
                    req.trace = span.as_ref().map(|s| s.trace().clone());
                    let body = Body::Ready(event.payload.clone());
                    let ok = match pipeline.handle(&name, req, body).await {
                        Ok(resp) => {
                            let status = resp.status;
                            resp.gathered().await.is_ok() && status.is_success()
                        }
                        Err(err) => {
                            tracing::debug!(subscriber = %name, topic = %event.topic, error = %err, "an event was not delivered");
                            false
                        }
                    };
                    drop(span);
                    if ok {
                        counts.delivered.increment(1);
                        counts
                            .seconds
                            .record(event.published.elapsed().as_secs_f64());
                    } else {
                        counts.failed.increment(1);
                    }
                    ok
                })
            },
        )
    }
}

impl Peers for Link {
    fn call(
        &self,
        path: Arc<[Arc<str>]>,
        deadline: Instant,
        callee: String,
        mut req: Request,
    ) -> BoxFuture<Result<Response, PeerError>> {
        let pipeline = self.pipeline.upgrade();
        Box::pin(async move {
            let Some(pipeline) = pipeline else {
                return Err(PeerError::Failed(503, "the host is shutting down".into()));
            };
            let caller = path.last().cloned().unwrap_or_else(|| Arc::from(""));
            let edge = pipeline.peers().edge(&caller, &callee);
            if let Err(err) = admit(&pipeline, &path, &caller, &callee) {
                edge.refused.increment(1);
                return Err(err);
            }
            let span = trace::child(req.trace.as_ref(), "wharf.call", Kind::Client, || {
                vec![
                    Attribute::new("wharf.caller", caller.to_string()),
                    Attribute::new("wharf.callee", callee.clone()),
                ]
            });
            req.trace = span.as_ref().map(|s| s.trace().clone());
            let start = Instant::now();
            req.hop = Hop {
                path: Some(path),
                deadline: Some(deadline),
                relayed: req.hop.relayed,
                ..Hop::default()
            };
            let body = Body::Ready(std::mem::take(&mut req.body));
            let call = pipeline.handle(&callee, req, body);
            let result = match tokio::time::timeout_at(deadline.into(), call).await {
                Ok(Ok(resp)) => resp
                    .gathered()
                    .await
                    .map_err(|e| PeerError::Failed(502, e.to_string())),
                Ok(Err(PipelineError::AgentNotFound(_))) => Err(not_found(&callee)),
                Ok(Err(err)) => Err(PeerError::Failed(err.status(), err.public())),
                Err(_) => Err(PeerError::Failed(
                    504,
                    format!("`{callee}` did not answer within the caller's deadline"),
                )),
            };
            edge.seconds.record(start.elapsed().as_secs_f64());
            match &result {
                Ok(_) => edge.ok.increment(1),
                Err(_) => edge.failed.increment(1),
            }
            if let Some(span) = span {
                match &result {
                    Ok(resp) => span.status(resp.status.as_u16()),
                    Err(err) => span.fail(err.to_string()),
                }
            }
            result
        })
    }

    fn publish(
        &self,
        from: &str,
        relayed: u32,
        topic: &str,
        payload: Bytes,
        trace: Option<&Trace>,
    ) -> Result<usize, PublishError> {
        let pipeline = self.pipeline.upgrade().ok_or(PublishError::ShuttingDown)?;
        let route = pipeline
            .lookup(from)
            .ok_or_else(|| PublishError::NotLoaded(from.to_string()))?;
        crate::topics::check_topic(topic).map_err(|e| PublishError::Refused(e.to_string()))?;
        let allowed = route
            .core
            .policy
            .publishes
            .iter()
            // Checked when the configuration was parsed.
            .any(|p| crate::topics::matches(p, topic));
        if !allowed {
            return Err(PublishError::NotAllowed {
                from: from.to_string(),
                topic: topic.to_string(),
            });
        }
        match pipeline.bus().publish(topic, payload, relayed, trace) {
            Ok(queued) => Ok(queued),
            Err(BusError::TooManyHops { hops, max }) => {
                self.looped(from).increment(1);
                tracing::debug!(
                    agent = from,
                    topic,
                    hops,
                    "an event past `max-hops` was dropped"
                );
                Err(PublishError::TooManyHops {
                    from: from.to_string(),
                    topic: topic.to_string(),
                    hops,
                    max,
                })
            }
            Err(e) => Err(PublishError::Refused(e.to_string())),
        }
    }
}

/// Whether `caller` may call `callee` now: allowed by its block, not a
/// cycle, within the depth limit, and `callee` exists.
fn admit(
    pipeline: &Pipeline,
    path: &[Arc<str>],
    caller: &str,
    callee: &str,
) -> Result<(), PeerError> {
    let allowed = pipeline
        .lookup(caller)
        .is_some_and(|r| r.core.policy.calls.iter().any(|c| c == callee));
    if !allowed {
        return Err(PeerError::Denied(format!(
            "`{caller}` may not call `{callee}`: add it to `calls` in `agent \"{caller}\"`"
        )));
    }
    let trail = || {
        let mut names: Vec<&str> = path.iter().map(|a| &**a).collect();
        names.push(callee);
        names.join(" → ")
    };
    if path.iter().any(|a| &**a == callee) {
        return Err(PeerError::Loop(format!(
            "`{callee}` is already on the call path: {}",
            trail()
        )));
    }
    let depth = pipeline.call_depth();
    if path.len() >= depth {
        return Err(PeerError::Loop(format!(
            "the call path would pass the depth limit of {depth} agents: {}",
            trail()
        )));
    }
    // A callee still loading (a start that loads while serving) is
    // waited for where the call is run.
    if pipeline.lookup(callee).is_none()
        && pipeline.composition(callee).is_none()
        && !pipeline.registry().is_pending(callee)
    {
        return Err(not_found(callee));
    }
    Ok(())
}

fn not_found(callee: &str) -> PeerError {
    PeerError::NotFound(format!("no agent or pipeline named `{callee}` is loaded"))
}
