//! The cluster transport: requests other nodes forward over NATS, answered
//! by this node's pipeline. One queue group per agent served here (NATS
//! gives each request to one member), one subject per agent for sessions
//! pinned to this node, calls about A2A tasks whose turns run here, and
//! this node's heartbeat. On shutdown the node
//! drains: it says so, leaves its queue groups, answers what it already
//! received, then says it left.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use metrics::Label;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::ApiError;
use wharf_a2a::A2a;
use wharf_cluster::Cluster;
use wharf_cluster::members::Announce;
use wharf_cluster::wire;
use wharf_core::request::Body;
use wharf_pipeline::Pipeline;

/// One agent's subscriptions, until told to stop.
struct Served {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Serves forwarded requests and keeps this node announced until `down`
/// turns true, then drains.
pub async fn run(
    cluster: Arc<Cluster>,
    pipeline: Weak<Pipeline>,
    a2a: Weak<A2a>,
    mut down: watch::Receiver<bool>,
) {
    let client = cluster.client().clone();
    let mut calls = match client.subscribe(wire::tasks_subject(cluster.node())).await {
        Ok(sub) => Some(sub),
        Err(e) => {
            tracing::warn!(error = %e, "other nodes cannot reach the tasks running here");
            None
        }
    };
    let mut served: BTreeMap<String, Served> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut heard = match client.subscribe(wire::MEMBERS).await {
        Ok(sub) => Some(sub),
        Err(e) => {
            tracing::warn!(error = %e, "cannot hear other nodes");
            None
        }
    };
    let mut tick = tokio::time::interval(cluster.settings.heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let Some(pipeline) = pipeline.upgrade() else { break };
                let names = pipeline.served();
                sync(&cluster, &pipeline, &mut served, &names);
                say(&cluster, cluster.announce(names, "serving")).await;
                gauges(&cluster, &pipeline);
                sweep(&cluster, &a2a, &mut seen);
            }
            Some(msg) = async { heard.as_mut()?.next().await } => {
                if let Ok(announce) = rmp_serde::from_slice::<Announce>(&msg.payload) {
                    cluster.heard(announce);
                }
            }
            Some(msg) = async { calls.as_mut()?.next().await } => {
                if let Some(a2a) = a2a.upgrade() {
                    let cluster = cluster.clone();
                    tokio::spawn(async move { a2a.answer_call(&cluster, msg).await });
                }
            }
            _ = down.changed() => break,
        }
    }
    cluster.start_draining();
    say(&cluster, cluster.announce(Vec::new(), "draining")).await;
    tracing::info!(node = cluster.node(), "draining: leaving the queue groups");
    for s in served.values() {
        let _ = s.stop.send(true);
    }
    for (_, s) in served {
        let _ = s.task.await;
    }
    if tokio::time::timeout(cluster.settings.forward_timeout, cluster.idle())
        .await
        .is_err()
    {
        tracing::warn!("requests forwarded here were still running when the node left");
    }
    say(&cluster, cluster.announce(Vec::new(), "left")).await;
    let _ = tokio::time::timeout(DRAIN_STEP, client.flush()).await;
    tracing::info!(node = cluster.node(), "left the cluster");
}

/// Longest wait for NATS while draining: a server that is gone must not
/// hold the shutdown.
const DRAIN_STEP: Duration = Duration::from_secs(2);

async fn say(cluster: &Cluster, announce: Announce) {
    let payload = rmp_serde::to_vec_named(&announce).expect("an announcement encodes");
    // Not connected: the next heartbeat says it again.
    let publish = cluster.client().publish(wire::MEMBERS, payload.into());
    let _ = tokio::time::timeout(DRAIN_STEP, publish).await;
}

fn gauges(cluster: &Cluster, pipeline: &Pipeline) {
    let recorder = pipeline.metrics().recorder();
    let members = cluster.members();
    for state in ["serving", "draining"] {
        let n = members.iter().filter(|m| m.state == state).count();
        wharf_core::metrics::gauge(
            recorder,
            "wharf_cluster_nodes",
            vec![Label::new("state", state)],
        )
        .set(n as f64);
    }
    let connected = if cluster.connected() { 1.0 } else { 0.0 };
    wharf_core::metrics::gauge(recorder, "wharf_cluster_connected", vec![]).set(connected);
}

/// When nodes have gone from the view since the last heartbeat, the first
/// serving node by name (one node, so a task is failed once) fails the A2A
/// turns they were running, if they are truly gone.
fn sweep(cluster: &Arc<Cluster>, a2a: &Weak<A2a>, seen: &mut BTreeSet<String>) {
    let members = cluster.members();
    let now: BTreeSet<String> = members.iter().map(|m| m.node.clone()).collect();
    let sweeper = members
        .iter()
        .filter(|m| m.state == "serving")
        .map(|m| m.node.as_str())
        .min();
    if sweeper == Some(cluster.node())
        && let Some(a2a) = a2a.upgrade()
    {
        for gone in seen.difference(&now).filter(|n| *n != cluster.node()) {
            let (a2a, cluster, gone) = (a2a.clone(), cluster.clone(), gone.clone());
            tokio::spawn(async move {
                let failed = a2a.sweep(&cluster, &gone).await;
                if failed > 0 {
                    tracing::warn!(node = %gone, failed, "a node went away: the A2A turns it ran are marked failed");
                }
            });
        }
    }
    *seen = now;
}

/// Subscribes for the names served now and leaves those no longer served.
fn sync(
    cluster: &Arc<Cluster>,
    pipeline: &Arc<Pipeline>,
    served: &mut BTreeMap<String, Served>,
    names: &[String],
) {
    served.retain(|name, s| {
        let keep = names.contains(name) && !s.task.is_finished();
        if !keep {
            let _ = s.stop.send(true);
        }
        keep
    });
    for name in names {
        if served.contains_key(name) {
            continue;
        }
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(serve_agent(
            cluster.clone(),
            Arc::downgrade(pipeline),
            name.clone(),
            stopped,
        ));
        served.insert(name.clone(), Served { stop, task });
    }
}

/// Answers `agent`'s forwarded requests until stopped; then leaves its
/// subscriptions and answers what had already arrived.
async fn serve_agent(
    cluster: Arc<Cluster>,
    pipeline: Weak<Pipeline>,
    agent: String,
    mut stop: watch::Receiver<bool>,
) {
    let client = cluster.client();
    let queue = client
        .queue_subscribe(wire::agent_subject(&agent), "wharf".into())
        .await;
    let direct = client
        .subscribe(wire::node_subject(cluster.node(), &agent))
        .await;
    let (mut queue, mut direct) = match (queue, direct) {
        (Ok(q), Ok(d)) => (q, d),
        (Err(e), _) | (_, Err(e)) => {
            // The next heartbeat tries again.
            tracing::warn!(agent, error = %e, "cannot subscribe for forwarded requests");
            return;
        }
    };
    loop {
        let msg = tokio::select! {
            Some(msg) = queue.next() => msg,
            Some(msg) = direct.next() => msg,
            _ = stop.changed() => break,
            else => return,
        };
        answer(&cluster, &pipeline, msg);
    }
    let drained = async {
        let _ = queue.drain().await;
        let _ = direct.drain().await;
        let mut rest = futures_util::stream::select(queue, direct);
        while let Some(msg) = rest.next().await {
            answer(&cluster, &pipeline, msg);
        }
    };
    if tokio::time::timeout(DRAIN_STEP * 5, drained).await.is_err() {
        tracing::warn!(agent, "NATS did not confirm the drain in time");
    }
}

/// Answers one forwarded request on a task of its own.
fn answer(cluster: &Arc<Cluster>, pipeline: &Weak<Pipeline>, msg: async_nats::Message) {
    let Some(reply) = msg.reply else {
        return;
    };
    let Some(pipeline) = pipeline.upgrade() else {
        return;
    };
    let guard = cluster.answering();
    let cluster = cluster.clone();
    tokio::spawn(async move {
        let node = cluster.node();
        let answer = match wire::decode_request(&msg.payload) {
            Err(why) => error_answer(
                &ApiError::new(
                    http::StatusCode::BAD_REQUEST,
                    "bad_forward",
                    format!("a forwarded request could not be read: {why}"),
                ),
                node,
            ),
            Ok((agent, mut req)) => {
                let body = Body::Ready(std::mem::take(&mut req.body));
                match pipeline.handle(&agent, req, body).await {
                    Ok(resp) => match resp.gathered().await {
                        Ok(r) => wire::encode_answer(r.status, &r.headers, &r.body, node),
                        Err(why) => error_answer(
                            &ApiError::new(
                                http::StatusCode::BAD_GATEWAY,
                                "cut_off",
                                why.to_string(),
                            ),
                            node,
                        ),
                    },
                    Err(err) => error_answer(&ApiError::from(&err), node),
                }
            }
        };
        wharf_core::metrics::counter(
            pipeline.metrics().recorder(),
            "wharf_cluster_answered_total",
            vec![],
        )
        .increment(1);
        if let Err(e) = cluster.client().publish(reply.clone(), answer).await {
            // Too large for the server's max_payload, say: the asker learns why.
            let why = format!("the answer could not be sent back: {e}");
            let short = ApiError::new(http::StatusCode::BAD_GATEWAY, "forward_failed", why);
            let _ = cluster
                .client()
                .publish(reply, error_answer(&short, node))
                .await;
        }
        drop(guard);
    });
}

/// An error as the answer to a forwarded request: the same JSON an HTTP
/// client gets.
fn error_answer(err: &ApiError, node: &str) -> bytes::Bytes {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    if let Some(secs) = err.retry_secs() {
        headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
    }
    wire::encode_answer(
        err.status,
        &headers,
        err.body().to_string().as_bytes(),
        node,
    )
}
