//! The `cluster { … }` block: the NATS server that joins Wharf nodes into
//! one service, this node's name, and how long session pins and
//! heartbeats last, and the PostgreSQL database the nodes keep A2A tasks
//! in. Absent: one node, as without it.
//!
//! ```kdl
//! cluster {
//!     nats "nats://127.0.0.1:4222"
//!     node "edge-1"            // unique in the cluster
//!     pin-ttl "10m"            // a session pin not used this long is forgotten
//!     heartbeat "1s"           // a node silent for three of these is gone
//!     forward-timeout "30s"    // longest wait for another node's answer
//!     postgres "postgres://wharf@127.0.0.1:5432/wharf"  // shared A2A tasks
//! }
//! ```

use std::time::Duration;

use kdl::KdlNode;

use super::diag::Problem;
use super::walker::{Walker, set};

const CLUSTER: &[&str] = &[
    "nats",
    "node",
    "pin-ttl",
    "heartbeat",
    "forward-timeout",
    "postgres",
];

/// How this node joins the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// The NATS server's URL (`nats://host:port`).
    pub nats: String,
    /// This node's name: unique among the nodes, stable across restarts.
    pub node: String,
    /// How long a session pin lives unused.
    pub pin_ttl: Duration,
    /// How often a node announces itself.
    pub heartbeat: Duration,
    /// How long a forwarded request may take.
    pub forward_timeout: Duration,
    /// The PostgreSQL database A2A tasks live in, shared by every node
    /// (absent: each node keeps its own tasks in SQLite).
    pub postgres: Option<String>,
}

impl Cluster {
    /// A cluster of node `node` over the NATS server at `nats`, with the default timings.
    pub fn new(nats: impl Into<String>, node: impl Into<String>) -> Cluster {
        Cluster {
            nats: nats.into(),
            node: node.into(),
            pin_ttl: Duration::from_secs(600),
            heartbeat: Duration::from_secs(1),
            forward_timeout: Duration::from_secs(30),
            postgres: None,
        }
    }
}

impl Walker {
    pub(super) fn cluster(&mut self, node: &KdlNode) -> Option<Cluster> {
        let mut cluster = Cluster::new("", "");
        for child in self.block(node) {
            match child.name().value() {
                "nats" => {
                    if let Some((url, span)) = self.string(child) {
                        if url.starts_with("nats://") || url.starts_with("tls://") {
                            cluster.nats = url;
                        } else {
                            self.problems.push(
                                Problem::new(span, format!("`{url}` is not a NATS URL"))
                                    .help("write nats://HOST:PORT, e.g. \"nats://127.0.0.1:4222\""),
                            );
                        }
                    }
                }
                "node" => {
                    if let Some((name, span)) = self.string(child)
                        && self.valid_name(&name, span, "node")
                    {
                        cluster.node = name;
                    }
                }
                "pin-ttl" => set(&mut cluster.pin_ttl, self.duration(child)),
                "heartbeat" => set(&mut cluster.heartbeat, self.duration(child)),
                "forward-timeout" => set(&mut cluster.forward_timeout, self.duration(child)),
                "postgres" => {
                    if let Some((url, span)) = self.string(child) {
                        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                            cluster.postgres = Some(url);
                        } else {
                            self.problems.push(
                                Problem::new(span, format!("`{url}` is not a PostgreSQL URL"))
                                    .help("write postgres://USER@HOST:PORT/DATABASE"),
                            );
                        }
                    }
                }
                _ => self.unknown(child, "in `cluster`", CLUSTER),
            }
        }
        let mut missing = Vec::new();
        if cluster.nats.is_empty() {
            missing.push("`nats \"nats://HOST:PORT\"`");
        }
        if cluster.node.is_empty() {
            missing.push("`node \"NAME\"`");
        }
        if !missing.is_empty() {
            self.problems.push(
                Problem::new(node.name().span(), "`cluster` is incomplete")
                    .help(format!("add {}", missing.join(" and "))),
            );
            return None;
        }
        Some(cluster)
    }
}
