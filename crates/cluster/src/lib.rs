//! Wharf nodes as one service over NATS: this node's connection, forwarding
//! a request to the nodes serving its agent (one queue group per agent) or
//! to the one node a session is pinned to, the pins themselves
//! ([`pins`], in JetStream KV), who is in the cluster ([`members`]), and
//! topics that cross the nodes ([`topics`], kept ones in JetStream).
//! What answers requests forwarded here is a transport of its own
//! (the NATS transport); nothing here runs an agent.

#![deny(missing_docs)]

pub mod members;
pub mod pins;
pub mod topics;
pub mod wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_nats::RequestErrorKind;
use metrics::Label;

use members::{Announce, Members};
use pins::{Outcome, Pins, Place};
use wharf_config as config;
use wharf_core::metrics::Metrics;
use wharf_core::request::{Request, Response};
use wharf_core::trace::{self, Attribute, Kind};

/// Why another node gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// No node serves the agent (or the pinned node is gone).
    #[error("no node in the cluster serves agent `{0}`")]
    NoResponders(String),
    #[error("no node answered agent `{0}` in time")]
    /// No node answered in time.
    TimedOut(String),
    #[error("forwarding to another node failed: {0}")]
    /// The request or its answer could not cross.
    Failed(String),
}

impl ForwardError {
    /// The HTTP status this maps to.
    pub fn status(&self) -> u16 {
        match self {
            ForwardError::NoResponders(_) => 503,
            ForwardError::TimedOut(_) => 504,
            ForwardError::Failed(_) => 502,
        }
    }
}

/// This node's place in the cluster.
pub struct Cluster {
    /// The `cluster` block.
    pub settings: config::Cluster,
    client: async_nats::Client,
    pins: tokio::sync::OnceCell<Pins>,
    members: Members,
    metrics: Metrics,
    draining: AtomicBool,
    /// Requests this node is answering for other nodes.
    answering: AtomicU64,
    idle: tokio::sync::Notify,
}

/// Why the cluster, or its session pins, cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The NATS server cannot be used.
    #[error("cannot use NATS at {url}: {reason}")]
    Connect {
        /// The server's URL, as configured.
        url: String,
        /// What the client said.
        reason: String,
    },
    /// The session pins' JetStream KV bucket cannot be opened.
    #[error("cannot open the pins bucket: {0}")]
    Bucket(String),
    /// A read or write of a pin failed.
    #[error("session pin: {0}")]
    Pin(String),
    /// Other nodes kept changing the pin while this one read it.
    #[error("the session's pin keeps changing")]
    Contended,
}

impl Cluster {
    /// Connects to NATS. A server that is not up yet is retried in the
    /// background: the node serves its own agents meanwhile.
    pub async fn connect(
        settings: config::Cluster,
        metrics: Metrics,
    ) -> Result<Cluster, ClusterError> {
        let client = async_nats::ConnectOptions::new()
            .name(format!("wharf {}", settings.node))
            .retry_on_initial_connect()
            .connection_timeout(Duration::from_secs(2))
            .request_timeout(Some(settings.forward_timeout))
            .connect(settings.nats.as_str())
            .await
            .map_err(|e| ClusterError::Connect {
                url: settings.nats.clone(),
                reason: e.to_string(),
            })?;
        Ok(Cluster {
            settings,
            client,
            pins: tokio::sync::OnceCell::new(),
            members: Members::default(),
            metrics,
            draining: AtomicBool::new(false),
            answering: AtomicU64::new(0),
            idle: tokio::sync::Notify::new(),
        })
    }

    /// This node's name.
    pub fn node(&self) -> &str {
        &self.settings.node
    }

    /// The NATS client.
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// Whether this node is connected to NATS now.
    pub fn connected(&self) -> bool {
        self.client.connection_state() == async_nats::connection::State::Connected
    }

    /// Whether this node is draining (shutting down).
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Stops taking new forwarded requests: the node is leaving.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// The nodes heard from lately, this one among them.
    pub fn members(&self) -> Vec<members::Member> {
        self.members.view(self.settings.heartbeat)
    }

    /// Records another node's announcement.
    pub fn heard(&self, announce: Announce) {
        self.members.heard(announce);
    }

    /// What this node announces now.
    pub fn announce(&self, agents: Vec<String>, state: &str) -> Announce {
        Announce {
            node: self.settings.node.clone(),
            state: state.into(),
            agents,
            in_flight: self.answering.load(Ordering::Relaxed),
        }
    }

    /// One more request answered for another node, until the guard drops.
    pub fn answering(self: &Arc<Self>) -> Answering {
        self.answering.fetch_add(1, Ordering::AcqRel);
        Answering(self.clone())
    }

    /// Waits until no request forwarded here is being answered.
    pub async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.answering.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }

    fn count(&self, name: &'static str, labels: Vec<Label>) {
        self.count_by(name, labels, 1);
    }

    /// Adds `n` to counter `name` of this node's metrics.
    pub fn count_by(&self, name: &'static str, labels: Vec<Label>, n: u64) {
        wharf_core::metrics::counter(self.metrics.recorder(), name, labels).increment(n);
    }

    /// Sends `req` (its body read) for `agent` to the nodes serving it, or
    /// to `node` alone (a session pinned there), and waits for the answer.
    pub async fn forward(
        &self,
        agent: &str,
        req: &Request,
        node: Option<&str>,
    ) -> Result<Response, ForwardError> {
        let subject = match node {
            Some(node) => wire::node_subject(node, agent),
            None => wire::agent_subject(agent),
        };
        // The node that answers continues the trace under this span.
        let span = trace::child(req.trace.as_ref(), "wharf.forward", Kind::Client, || {
            vec![
                Attribute::new("wharf.agent", agent.to_string()),
                Attribute::new("wharf.node", node.unwrap_or("any").to_string()),
            ]
        });
        let payload = match &span {
            Some(span) => {
                let mut req = req.clone();
                span.trace().inject(&mut req.headers);
                wire::encode_request(agent, &req, self.node(), node.is_some())
            }
            None => wire::encode_request(agent, req, self.node(), node.is_some()),
        };
        let mut timeout = self.settings.forward_timeout;
        if let Some(deadline) = req.hop.deadline {
            timeout = timeout.min(deadline.saturating_duration_since(Instant::now()));
        }
        let started = Instant::now();
        let ask = async_nats::Request::new()
            .payload(payload.into())
            .timeout(Some(timeout));
        let result = match self.client.send_request(subject, ask).await {
            Ok(msg) => {
                wire::decode_answer(&msg.payload).map_err(|e| ForwardError::Failed(e.to_string()))
            }
            Err(e) => Err(match e.kind() {
                RequestErrorKind::NoResponders => ForwardError::NoResponders(agent.to_string()),
                RequestErrorKind::TimedOut => ForwardError::TimedOut(agent.to_string()),
                _ => ForwardError::Failed(e.to_string()),
            }),
        };
        let outcome = match &result {
            Ok(_) => "ok",
            Err(ForwardError::NoResponders(_)) => "no_responders",
            Err(ForwardError::TimedOut(_)) => "timed_out",
            Err(ForwardError::Failed(_)) => "failed",
        };
        if let Some(span) = span {
            match &result {
                Ok((resp, _)) => span.status(resp.status.as_u16()),
                Err(err) => span.fail(err.to_string()),
            }
        }
        let to = if node.is_some() { "node" } else { "any" };
        let labels = vec![
            Label::new("agent", agent.to_string()),
            Label::new("to", to),
            Label::new("outcome", outcome),
        ];
        self.count("wharf_cluster_forwarded_total", labels);
        wharf_core::metrics::histogram(
            self.metrics.recorder(),
            "wharf_cluster_forward_seconds",
            vec![Label::new("to", to)],
        )
        .record(started.elapsed().as_secs_f64());
        let (resp, _node) = result?;
        Ok(resp)
    }

    async fn pins(&self) -> Result<&Pins, ClusterError> {
        self.pins
            .get_or_try_init(|| async {
                Pins::open(&self.client, self.node(), self.settings.pin_ttl).await
            })
            .await
    }

    /// Where `agent`'s session `session` is served: here (pinned now if
    /// it had no pin), or on the node it is pinned to. When the pins
    /// cannot be reached, here (counted, and logged).
    pub async fn place(&self, agent: &str, session: &str) -> (Place, String) {
        let key = pins::key(agent, session);
        let placed = match self.pins().await {
            Ok(pins) => pins.place(&key).await,
            Err(e) => Err(e),
        };
        if let Ok((_, Outcome::Created | Outcome::Found)) = &placed {
            self.count("wharf_cluster_pin_reads_total", vec![]);
        }
        let outcome = match &placed {
            Ok((Place::Here, Outcome::Created)) => "created",
            Ok((Place::Here, Outcome::Found | Outcome::Remembered)) => "here",
            Ok((Place::At { .. }, _)) => "elsewhere",
            Err(_) => "unavailable",
        };
        self.count(
            "wharf_cluster_pins_total",
            vec![Label::new("outcome", outcome)],
        );
        match placed {
            Ok((place, _)) => (place, key),
            Err(e) => {
                tracing::warn!(agent, error = %e, "session pins unavailable: served here");
                (Place::Here, key)
            }
        }
    }

    /// Takes over a pin whose node is gone; true when this node holds it now.
    pub async fn take_over(&self, key: &str, revision: u64) -> bool {
        let Ok(pins) = self.pins().await else {
            return false;
        };
        let taken = pins.take_over(key, revision).await.unwrap_or(false);
        if taken {
            self.count(
                "wharf_cluster_pins_total",
                vec![Label::new("outcome", "repinned")],
            );
        }
        taken
    }
}

/// A request being answered for another node.
pub struct Answering(Arc<Cluster>);

impl Drop for Answering {
    fn drop(&mut self) {
        if self.0.answering.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}
