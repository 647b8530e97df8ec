//! The bus of a node in a cluster: what is published here goes out over
//! NATS ([`wharf_cluster::topics`]) in the order published, and what any
//! node published comes back in: live messages to this node's watchers,
//! kept ones from the cluster's stream into this node's copy of the
//! history (the stream's sequence number as the id) and then to its
//! watchers, and an agent subscription's share of both (one queue group
//! per subscription across the nodes) to its queue.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use tokio::sync::{mpsc, oneshot, watch};

use super::{Bus, Durable, Event, Subscriber};
use wharf_cluster::topics::{Incoming, Topics, TopicsError, block_token};
use wharf_tasks::history::History;

/// Payload bytes waiting for NATS at most; past it a publish is refused.
const MAX_BACKLOG: usize = 64 << 20;

/// Kept publishes whose acknowledgement may be awaited at once.
const IN_FLIGHT: usize = 256;

/// How long a lost subscription or stream waits before it is made again.
const RETRY: Duration = Duration::from_secs(1);

/// What a publish answered, once NATS took it: the id of a kept message.
pub type Sent = oneshot::Receiver<Result<Option<u64>, TopicsError>>;

/// One message on its way out.
struct Outgoing {
    topic: Box<str>,
    payload: Bytes,
    hops: u32,
    /// The `topic` block keeping it, when kept.
    keep: Option<Arc<str>>,
    /// Told what came of it (nobody may be listening).
    done: oneshot::Sender<Result<Option<u64>, TopicsError>>,
}

/// This node's side of the cluster's topics.
pub(crate) struct Shared {
    topics: Topics,
    out: mpsc::UnboundedSender<Outgoing>,
    backlog: Arc<AtomicUsize>,
    bus: Weak<Bus>,
    /// The `topic` blocks in force: the stream is made (again) to hold
    /// what they ask.
    keeps: Keeps,
    /// Whether the stream has been made: kept publishes wait for it (a
    /// node serves while NATS, or the stream, is not there yet).
    made: watch::Sender<bool>,
}

type Keeps = Arc<std::sync::Mutex<Vec<wharf_config::TopicKeep>>>;

/// Makes the stream, or brings it to what the `topic` blocks ask now.
async fn ensure(topics: &Topics, keeps: &Keeps) -> Result<(), TopicsError> {
    let keeps = keeps.lock().unwrap_or_else(|e| e.into_inner()).clone();
    topics.ensure_stream(&keeps).await
}

impl Shared {
    /// Starts sending what is published here, and hands this node's
    /// watchers what any node publishes live.
    pub fn start(bus: &Arc<Bus>, topics: Topics) -> Arc<Shared> {
        let (out, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(AtomicUsize::new(0));
        let (made, made_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            topics: topics.clone(),
            out,
            backlog: backlog.clone(),
            bus: Arc::downgrade(bus),
            keeps: Keeps::default(),
            made,
        });
        tokio::spawn(send_all(
            topics.clone(),
            rx,
            made_rx,
            backlog,
            bus.kept_counts.clone(),
        ));
        tokio::spawn(live(topics, Arc::downgrade(bus)));
        shared
    }

    /// Queues a publish; answers when NATS took it.
    pub fn send(
        &self,
        topic: &str,
        payload: Bytes,
        hops: u32,
        keep: Option<Arc<str>>,
    ) -> Result<Sent, TopicsError> {
        let queued = self.backlog.load(Ordering::Relaxed);
        if queued + payload.len() > MAX_BACKLOG {
            return Err(TopicsError::Backlog {
                queued,
                max: MAX_BACKLOG,
            });
        }
        self.backlog.fetch_add(payload.len(), Ordering::Relaxed);
        let (done, sent) = oneshot::channel();
        let out = Outgoing {
            topic: topic.into(),
            payload,
            hops,
            keep,
            done,
        };
        self.out
            .send(out)
            .map_err(|_| TopicsError::Publish("this node is stopping".into()))?;
        Ok(sent)
    }

    /// Makes the stream hold what the `topic` blocks ask, then follows it
    /// into `history` (from the last id it holds) and trims the stream
    /// as retention trims the history.
    pub fn follow(self: &Arc<Self>, history: Arc<History>, keeps: Vec<wharf_config::TopicKeep>) {
        *self.keeps.lock().unwrap_or_else(|e| e.into_inner()) = keeps;
        let me = self.clone();
        tokio::spawn(async move {
            // NATS may not be up yet: the node serves meanwhile.
            while let Err(e) = ensure(&me.topics, &me.keeps).await {
                tracing::warn!(error = %e, "kept topics are not shared with the cluster yet");
                tokio::time::sleep(RETRY).await;
                if me.bus.strong_count() == 0 {
                    return;
                }
            }
            me.made.send_replace(true);
            tokio::spawn(trim(me.topics.clone(), Arc::downgrade(&history)));
            follow(&me, history).await;
        });
    }

    /// Brings the stream's limits to the `topic` blocks after a reload.
    pub fn set_keeps(&self, keeps: Vec<wharf_config::TopicKeep>) {
        *self.keeps.lock().unwrap_or_else(|e| e.into_inner()) = keeps;
        let (topics, keeps) = (self.topics.clone(), self.keeps.clone());
        tokio::spawn(async move {
            if let Err(e) = ensure(&topics, &keeps).await {
                tracing::error!(error = %e, "the cluster's topic stream keeps its old limits");
            }
        });
    }

    /// Runs an at-least-once subscription on the cluster's stream: its
    /// events come from a durable consumer the nodes serving the agent
    /// share, one at a time, each acknowledged once the agent took it (or
    /// it went to the dead letters).
    pub(super) fn durable(&self, durable: Durable) {
        tokio::spawn(durable_shared(self.topics.clone(), durable));
    }

    /// Feeds `sub` (an agent's subscription) its share of what the nodes
    /// publish, until it is removed.
    pub fn share(&self, sub: Arc<Subscriber>) {
        tokio::spawn(share(self.topics.clone(), sub));
    }
}

/// Sends queued publishes in order; a kept one's acknowledgement is
/// awaited alongside later sends (at most [`IN_FLIGHT`]). The first kept
/// one waits until the stream is made: sent before, NATS would refuse it
/// ("no stream found").
async fn send_all(
    topics: Topics,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    mut made: watch::Receiver<bool>,
    backlog: Arc<AtomicUsize>,
    counts: [metrics::Counter; 2],
) {
    let mut acks = FuturesOrdered::new();
    loop {
        tokio::select! {
            next = rx.recv(), if acks.len() < IN_FLIGHT => {
                let Some(out) = next else { break };
                // While NATS is away, what waits stays counted here.
                topics.connected().await;
                let len = out.payload.len();
                let done = out.done;
                if out.keep.is_some() {
                    // Gone only with the node: the send then says why.
                    let _ = made.wait_for(|made| *made).await;
                }
                match out.keep {
                    Some(keep) => match topics.publish_kept(&keep, &out.topic, out.payload, out.hops).await {
                        Ok(ack) => acks.push_back(async move { (ack.await.map(Some), done, len) }),
                        Err(e) => {
                            backlog.fetch_sub(len, Ordering::Relaxed);
                            counts[1].increment(1);
                            tracing::warn!(error = %e, "a kept topic message was not sent to the cluster");
                            let _ = done.send(Err(e));
                        }
                    },
                    None => {
                        let sent = topics.publish(&out.topic, out.payload, out.hops).await;
                        backlog.fetch_sub(len, Ordering::Relaxed);
                        let _ = done.send(sent.map(|()| None));
                    }
                }
            }
            Some((sent, done, len)) = acks.next() => {
                backlog.fetch_sub(len, Ordering::Relaxed);
                counts[usize::from(sent.is_err())].increment(1);
                if let Err(e) = &sent {
                    tracing::warn!(error = %e, "a kept topic message was not stored by the cluster");
                }
                let _ = done.send(sent);
            }
        }
    }
    while let Some((sent, done, _)) = acks.next().await {
        let _ = done.send(sent);
    }
}

pub(super) fn event(incoming: Incoming) -> Arc<Event> {
    Arc::new(Event {
        topic: incoming.topic.into(),
        payload: incoming.payload,
        hops: incoming.hops,
        id: incoming.kept.map(|(id, _)| id),
        published: Instant::now(),
        trace: None,
    })
}

/// Hands every live message any node publishes to this node's watchers.
async fn live(topics: Topics, bus: Weak<Bus>) {
    loop {
        match topics.live().await {
            Ok(mut sub) => loop {
                let next = tokio::time::timeout(RETRY, sub.next()).await;
                let Some(bus) = bus.upgrade() else { return };
                let msg = match next {
                    Err(_) => continue,
                    Ok(None) => break,
                    Ok(Some(msg)) => msg,
                };
                if let Some(incoming) =
                    Incoming::parse(&msg.subject, msg.headers.as_ref(), msg.payload)
                {
                    bus.to_watchers(&event(incoming));
                }
            },
            Err(e) => tracing::warn!(error = %e, "live topics from the cluster"),
        }
        if bus.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Copies the cluster's stream into `history`, each message under its
/// stream sequence, then hands it to this node's watchers. A copy of
/// another stream (one deleted and made again) starts over.
async fn follow(shared: &Shared, history: Arc<History>) {
    let (topics, bus) = (&shared.topics, &shared.bus);
    loop {
        if bus.strong_count() == 0 {
            return;
        }
        let (last, origin) = match topics.last_id().await {
            Ok(last) => last,
            Err(e) => {
                // Deleted by hand, say: made again, empty.
                tracing::warn!(error = %e, "the cluster's topic stream");
                if let Err(e) = ensure(topics, &shared.keeps).await {
                    tracing::warn!(error = %e, "the cluster's topic stream cannot be made again yet");
                }
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        if history.origin().as_deref() != Some(origin.as_str()) || history.last_id() > last {
            if history.last_id() > 0 {
                tracing::warn!(
                    here = history.last_id(),
                    stream = last,
                    "this node's copy of the kept topics is of another stream (made again?): it starts over"
                );
            }
            if let Err(e) = history.start_over(&origin) {
                tracing::error!(error = %e, "the copy of the kept topics could not start over");
                return;
            }
        }
        match topics.follow(history.last_id()).await {
            Ok(messages) => {
                let mut messages = std::pin::pin!(messages);
                loop {
                    // A quiet stream still lets go of the history (and
                    // its writer commits) soon after the bus is gone.
                    let next = tokio::time::timeout(RETRY, messages.next()).await;
                    let Some(bus) = bus.upgrade() else { return };
                    match next {
                        // Quiet: still the stream this copy holds? (One
                        // deleted and made again is followed anew.)
                        Err(_) => match topics.last_id().await {
                            Ok((_, now)) if history.origin().as_deref() == Some(now.as_str()) => {}
                            _ => break,
                        },
                        Ok(Some(Ok(incoming))) => bus.kept_arrived(&history, incoming),
                        Ok(None) => break,
                        Ok(Some(Err(e))) => {
                            // Followed again from the last id copied.
                            tracing::warn!(error = %e, "following the cluster's topic stream");
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "following the cluster's topic stream"),
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Deletes from the stream what retention deleted from this node's copy,
/// once a second (every node does; it is the same cut).
async fn trim(topics: Topics, history: Weak<History>) {
    let mut done: HashMap<String, u64> = HashMap::new();
    loop {
        tokio::time::sleep(RETRY).await;
        let Some(history) = history.upgrade() else {
            return;
        };
        for (keep, through) in history.trimmed() {
            if done.get(&keep) == Some(&through) {
                continue;
            }
            match topics.trim(&keep, through).await {
                Ok(()) => {
                    done.insert(keep, through);
                }
                Err(e) => tracing::warn!(error = %e, keep, "trimming the cluster's topic stream"),
            }
        }
    }
}

/// One agent subscription's share of the nodes' publishes, to its queue.
async fn share(topics: Topics, sub: Arc<Subscriber>) {
    while !sub.queue.is_closed() {
        match topics.share(&sub.name, sub.pattern.as_str()).await {
            Ok(subs) => {
                let mut all = futures_util::stream::select_all(subs);
                loop {
                    tokio::select! {
                        () = sub.queue.closed() => return,
                        msg = all.next() => {
                            let Some(msg) = msg else { break };
                            if let Some(incoming) = Incoming::parse(&msg.subject, msg.headers.as_ref(), msg.payload) {
                                sub.queue.push(&event(incoming));
                            }
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(agent = %sub.name, error = %e, "an agent's share of the cluster's topics")
            }
        }
        tokio::select! {
            () = sub.queue.closed() => return,
            () = tokio::time::sleep(RETRY) => {}
        }
    }
}

/// How long a node may hold an at-least-once event before another node
/// is given it; the node handing it over says it is still at it a few
/// times within this.
const ACK_WAIT: Duration = Duration::from_secs(30);

async fn durable_shared(topics: Topics, durable: Durable) {
    use wharf_cluster::topics::AckKind;
    let sub = durable.sub.clone();
    while !sub.queue.is_closed() {
        match topics
            .durable(&sub.name, sub.pattern.as_str(), ACK_WAIT)
            .await
        {
            Ok(mut messages) => loop {
                let msg = tokio::select! {
                    () = sub.queue.closed() => return,
                    msg = messages.next() => msg,
                };
                let msg = match msg {
                    Some(Ok(msg)) => msg,
                    Some(Err(e)) => {
                        tracing::warn!(agent = %sub.name, error = %e, "an at-least-once subscription's consumer");
                        break;
                    }
                    None => break,
                };
                let incoming = match Incoming::kept(&msg) {
                    Ok(incoming) => incoming,
                    Err(e) => {
                        tracing::warn!(agent = %sub.name, error = %e, "an event that cannot be read is skipped");
                        let _ = msg.ack_with(AckKind::Term).await;
                        continue;
                    }
                };
                let event = event(incoming);
                let taken = {
                    let hand = durable.hand_over(&event);
                    let mut hand = std::pin::pin!(hand);
                    let mut still = tokio::time::interval(ACK_WAIT / 3);
                    still.tick().await;
                    loop {
                        tokio::select! {
                            taken = &mut hand => break taken,
                            _ = still.tick() => {
                                let _ = msg.ack_with(AckKind::Progress).await;
                            }
                        }
                    }
                };
                if !taken {
                    // Removed here: another node serving it may take it now.
                    let _ = msg.ack_with(AckKind::Nak(None)).await;
                    return;
                }
                if let Err(e) = msg.ack().await {
                    tracing::warn!(agent = %sub.name, error = %e, "an event taken may be handed over again");
                }
            },
            Err(e) => {
                tracing::warn!(agent = %sub.name, error = %e, "an at-least-once subscription on the cluster");
            }
        }
        tokio::select! {
            () = sub.queue.closed() => return,
            () = tokio::time::sleep(RETRY) => {}
        }
    }
}

/// The `topic` block a message arrived under: the one here with its
/// token, else the first here matching its topic.
pub(crate) fn block_of<'k>(patterns: &'k [Arc<str>], incoming: &Incoming) -> Option<&'k Arc<str>> {
    let token = incoming.block.as_deref();
    patterns
        .iter()
        .find(|p| Some(block_token(p).as_str()) == token)
        .or_else(|| patterns.iter().find(|p| super::matches(p, &incoming.topic)))
}
