//! Topics: publish/subscribe inside the host. Agents subscribe in KDL
//! (`subscribe "orders.>"`), clients watch a pattern as server-sent
//! events; a publish (from an agent through `peers.publish`, or from a
//! client) finds the matching subscriptions in the [`Index`] and queues
//! one shared [`Event`] on each subscriber's bounded [`Queue`]. Each agent
//! subscription has one delivery task that calls the agent with the
//! events in order, one at a time, so a slow or failing subscriber delays
//! only itself.
//!
//! Guarantees, stated and tested: delivery is at most once and in process
//! (an event queued for a subscriber that is then removed, or dropped by a
//! full queue, is not delivered) unless a subscription asks for
//! at-least-once delivery ([`Durable`]: handed over again until taken,
//! then dead-lettered, its place kept in the history); each subscriber
//! sees events in the order they were published. A topic a `topic` block keeps also goes to the
//! [`History`], which gives each message an id: clients read kept messages
//! back ([`read`]) and watchers resume after an id ([`watch_response`]),
//! across restarts. Each event
//! counts the republishes in a row behind it ([`Event::hops`]); past
//! `topics { max-hops }` a publish is refused, which ends a loop of agents
//! republishing each other's events.
//!
//! In a cluster ([`Bus::share`], `shared`) topics are the cluster's: a
//! publish goes out over NATS and comes back to every node's watchers,
//! to one node per agent subscription, and, when kept, through the
//! cluster's stream into each node's copy of the history.

mod catchup;
mod pattern;
mod queue;
pub mod read;
mod resume;
mod shared;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use bytes::Bytes;

pub use pattern::Index;
pub use wharf_config::topic::{MAX_TOPIC_LEN, Pattern, TopicError, check_topic, matches};

/// Why the bus refused a publish or a watch.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// The topic or pattern cannot be used.
    #[error(transparent)]
    Topic(#[from] TopicError),
    /// The event would be republish `hops` in a row, past the host's
    /// `max-hops`.
    #[error("the event would be republish {hops} in a row, past this host's `max-hops` of {max}")]
    TooManyHops {
        /// Which republish in a row the event would be.
        hops: u32,
        /// The host's `max-hops`.
        max: u32,
    },
    /// The topic is kept and its history refused or failed the write.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// The cluster did not take the message.
    #[error(transparent)]
    Cluster(#[from] wharf_cluster::topics::TopicsError),
    /// The payload is over the host's `max-payload`.
    #[error("a payload of {len} bytes is over this host's `max-payload` of {max}")]
    TooLarge {
        /// The payload's length in bytes.
        len: usize,
        /// The host's `max-payload`.
        max: usize,
    },
}
pub use queue::{Event, Queue, QueueCounters};
pub use resume::watch_response;
pub use shared::Sent;

use arc_swap::ArcSwapOption;
use wharf_config::{Delivery, Overflow, Redelivery, Subscription, TopicKeep, Topics};
use wharf_core::metrics::{Metrics, counter};
use wharf_tasks::history::{History, HistoryError};

type BoxFuture<T> = std::pin::Pin<Box<dyn Future<Output = T> + Send>>;

/// Hands one event to a subscribed agent (through the pipeline); true when
/// the agent took it (a 2xx).
pub type Deliver = Arc<dyn Fn(Arc<str>, Arc<Event>) -> BoxFuture<bool> + Send + Sync>;

/// One subscription: who, to what, and its queue.
pub struct Subscriber {
    /// The agent, or `watch` for a client.
    pub name: Arc<str>,
    /// Whether an agent subscribes (else a client watches).
    pub agent: bool,
    /// What it subscribes to.
    pub pattern: Pattern,
    /// Its events waiting.
    pub queue: Queue,
}

/// The agents' subscriptions by agent and pattern, with their settings.
type AgentSubscriptions = BTreeMap<(String, String), (Subscription, Arc<Subscriber>)>;

/// Every subscription of one running host.
pub struct Bus {
    index: RwLock<Index<Arc<Subscriber>>>,
    /// Agents' subscriptions from the configuration, by agent and pattern.
    agents: Mutex<AgentSubscriptions>,
    metrics: Metrics,
    /// The largest payload one may publish (`topics { max-payload }`).
    max_payload: AtomicUsize,
    /// The most republishes in a row an event may go through
    /// (`topics { max-hops }`).
    max_hops: AtomicU32,
    /// The kept topics and where they are kept, once a `topic` block
    /// asks for it: read on every publish.
    keeping: ArcSwapOption<Keeping>,
    /// The history attached and the `topic` blocks in force, from which
    /// `keeping` is made.
    kept: Mutex<(Option<Arc<History>>, Vec<TopicKeep>)>,
    /// `wharf_topic_kept_total{outcome="queued"}` and `"refused"`.
    kept_counts: [metrics::Counter; 2],
    /// Held from a kept message's id to its last queue.
    kept_order: Mutex<()>,
    /// The other nodes, when this one is in a cluster: publishes go
    /// through them.
    shared: std::sync::OnceLock<Arc<shared::Shared>>,
}

/// Where a publish went.
pub enum Published {
    /// Queued for this many subscriptions here.
    Here(usize),
    /// Sent to the cluster, whose nodes queue it for their subscriptions:
    /// answers once NATS took it (with the id of a kept message).
    Cluster(Sent),
}

/// Which topics are kept, and the history that keeps them.
pub struct Keeping {
    /// Where their messages are written.
    pub history: Arc<History>,
    /// The `topic` blocks' patterns, in the order written.
    patterns: Vec<Arc<str>>,
}

impl Keeping {
    /// The pattern a message to `topic` is kept under: the first that
    /// matches it.
    fn keep_for(&self, topic: &str) -> Option<&Arc<str>> {
        self.patterns.iter().find(|p| matches(p, topic))
    }

    /// Whether some kept pattern may match a topic `pattern` matches.
    pub fn overlaps(&self, pattern: &str) -> bool {
        self.patterns
            .iter()
            .any(|p| wharf_config::topic::overlap(p, pattern))
    }
}

impl Bus {
    /// An empty bus counting into `metrics`.
    pub fn new(metrics: Metrics) -> Bus {
        Bus {
            index: RwLock::new(Index::default()),
            agents: Mutex::new(BTreeMap::new()),
            max_payload: AtomicUsize::new(Topics::default().max_payload),
            max_hops: AtomicU32::new(Topics::default().max_hops as u32),
            keeping: ArcSwapOption::empty(),
            kept: Mutex::new((None, Vec::new())),
            kept_order: Mutex::new(()),
            shared: std::sync::OnceLock::new(),
            kept_counts: ["queued", "refused"].map(|outcome| {
                let labels = vec![metrics::Label::new("outcome", outcome)];
                counter(metrics.recorder(), "wharf_topic_kept_total", labels)
            }),
            metrics,
        }
    }

    /// Keeps the messages of the topics `keeps` lists from now on, in the
    /// history attached (none is kept until one is).
    pub fn set_keeps(&self, keeps: &[TopicKeep]) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.1 = keeps.to_vec();
        self.apply_keeps(&kept);
        if let (Some(shared), Some(_)) = (self.shared.get(), &kept.0) {
            shared.set_keeps(keeps.to_vec());
        }
    }

    /// Keeps messages in `history` from now on.
    pub fn attach_history(&self, history: Arc<History>) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.0 = Some(history.clone());
        self.apply_keeps(&kept);
        if let Some(shared) = self.shared.get() {
            shared.follow(history, kept.1.clone());
        }
    }

    /// Joins the bus to the other nodes of a cluster: from now on a
    /// publish goes out over NATS, and this node's watchers and agents
    /// get what any node publishes (an agent's subscription shares each
    /// message with the other nodes serving it: one of them gets it).
    ///
    /// The agents' subscriptions made before are ended: sync them again.
    pub fn share(self: &Arc<Self>, topics: wharf_cluster::topics::Topics) {
        let mut agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        let shared = shared::Shared::start(self, topics);
        if self.shared.set(shared.clone()).is_err() {
            return;
        }
        for (_, (_, sub)) in std::mem::take(&mut *agents) {
            self.unsubscribe(&sub);
        }
        drop(agents);
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(history) = &kept.0 {
            shared.follow(history.clone(), kept.1.clone());
        }
    }

    /// Queues `event` for this node's watchers of its topic.
    fn to_watchers(&self, event: &Arc<Event>) {
        let mut matched = Vec::new();
        self.index
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .matches(&event.topic, &mut matched);
        for sub in matched.iter().filter(|s| !s.agent) {
            sub.queue.push(event);
        }
    }

    /// A kept message from the cluster's stream: into this node's copy of
    /// the history under its id, then to its watchers, in id order.
    fn kept_arrived(&self, history: &History, incoming: wharf_cluster::topics::Incoming) {
        let keeping = self.keeping.load();
        let patterns = keeping.as_ref().map_or(&[][..], |k| &k.patterns[..]);
        let _in_order = self.kept_order.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(keep), Some(at)) = (shared::block_of(patterns, &incoming), incoming.kept) {
            let appended =
                history.append_at(keep, &incoming.topic, &incoming.payload, incoming.hops, at);
            if let Err(e) = appended {
                tracing::warn!(error = %e, topic = %incoming.topic, "a kept message from the cluster is not in this node's copy");
            }
        }
        self.to_watchers(&shared::event(incoming));
    }

    /// Whether a history is attached.
    pub fn has_history(&self) -> bool {
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .is_some()
    }

    fn apply_keeps(&self, (history, keeps): &(Option<Arc<History>>, Vec<TopicKeep>)) {
        let Some(history) = history else {
            self.keeping.store(None);
            return;
        };
        if let Err(e) = history.set_keeps(keeps.clone()) {
            tracing::error!(error = %e, "the topic history cannot take its new limits");
        }
        if keeps.is_empty() {
            self.keeping.store(None);
            return;
        }
        let patterns = keeps
            .iter()
            .map(|k| Arc::from(k.pattern.as_str()))
            .collect();
        let history = history.clone();
        self.keeping
            .store(Some(Arc::new(Keeping { history, patterns })));
    }

    /// The kept topics and their history, when there are any.
    pub fn keeping(&self) -> Option<Arc<Keeping>> {
        self.keeping.load_full()
    }

    /// Applies `topics { max-payload; max-hops }` from now on.
    pub fn set_limits(&self, topics: &Topics) {
        self.max_payload
            .store(topics.max_payload, Ordering::Relaxed);
        let hops = u32::try_from(topics.max_hops).unwrap_or(u32::MAX);
        self.max_hops.store(hops, Ordering::Relaxed);
    }

    /// The largest payload one may publish.
    pub fn max_payload(&self) -> usize {
        self.max_payload.load(Ordering::Relaxed)
    }

    /// Queues `payload` for every subscription `topic` matches; how many
    /// queued it. The event is republish `hops` in a row (0 for a publish
    /// no delivered event led to), refused past `max-hops`; its deliveries
    /// are traced under `trace`.
    pub fn publish(
        &self,
        topic: &str,
        payload: Bytes,
        hops: u32,
        trace: Option<&wharf_core::trace::Trace>,
    ) -> Result<usize, BusError> {
        match self.publish_sent(topic, payload, hops, trace)? {
            Published::Here(queued) => Ok(queued),
            Published::Cluster(_) => Ok(0),
        }
    }

    /// [`Bus::publish`], saying where the message went: in a cluster it
    /// goes out over NATS (and comes back to this node's subscriptions
    /// from there), answered once NATS took it.
    pub fn publish_sent(
        &self,
        topic: &str,
        payload: Bytes,
        hops: u32,
        trace: Option<&wharf_core::trace::Trace>,
    ) -> Result<Published, BusError> {
        check_topic(topic)?;
        let max = self.max_hops.load(Ordering::Relaxed);
        if hops > max {
            return Err(BusError::TooManyHops { hops, max });
        }
        let max = self.max_payload();
        if payload.len() > max {
            return Err(BusError::TooLarge {
                len: payload.len(),
                max,
            });
        }
        let keeping = self.keeping.load();
        if let Some(shared) = self.shared.get() {
            let keep = keeping.as_ref().and_then(|k| k.keep_for(topic)).cloned();
            return Ok(Published::Cluster(shared.send(topic, payload, hops, keep)?));
        }
        let kept = keeping.as_ref().and_then(|k| Some((k, k.keep_for(topic)?)));
        // Kept messages reach every queue in the order of their ids, so a
        // watcher's last id seen is a cursor that skips nothing.
        let _in_order = kept
            .is_some()
            .then(|| self.kept_order.lock().unwrap_or_else(|e| e.into_inner()));
        let id = match kept {
            Some((keeping, keep)) => match keeping.history.append(keep, topic, &payload, hops) {
                Ok((id, _)) => {
                    self.kept_counts[0].increment(1);
                    Some(id)
                }
                Err(e) => {
                    self.kept_counts[1].increment(1);
                    return Err(e.into());
                }
            },
            None => None,
        };
        let event = Arc::new(Event {
            topic: topic.into(),
            payload,
            hops,
            id,
            published: Instant::now(),
            trace: trace.cloned(),
        });
        let mut matched = Vec::new();
        self.index
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .matches(topic, &mut matched);
        Ok(Published::Here(
            matched.iter().filter(|s| s.queue.push(&event)).count(),
        ))
    }

    /// Subscriptions now (agents' and watchers').
    pub fn len(&self) -> usize {
        self.index.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether nothing subscribes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A subscription of `agent`, or of a watching client (`None`).
    fn subscriber(
        &self,
        agent: Option<&str>,
        pattern: Pattern,
        capacity: usize,
        max_bytes: usize,
        overflow: Overflow,
    ) -> Arc<Subscriber> {
        let name = agent.unwrap_or("watch");
        let labels = |outcome: &'static str| {
            vec![
                metrics::Label::new("subscriber", name.to_string()),
                metrics::Label::new("outcome", outcome),
            ]
        };
        let r = self.metrics.recorder();
        let counters = QueueCounters {
            queued: counter(r, "wharf_topic_events_total", labels("queued")),
            dropped: counter(r, "wharf_topic_events_total", labels("dropped")),
        };
        let sub = Arc::new(Subscriber {
            agent: agent.is_some(),
            name: name.into(),
            queue: Queue::new(capacity, max_bytes, overflow, counters),
            pattern,
        });
        self.index
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(&sub.pattern, sub.clone());
        sub
    }

    fn unsubscribe(&self, sub: &Arc<Subscriber>) {
        sub.queue.close();
        self.index
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&sub.pattern, |s| Arc::ptr_eq(s, sub));
    }

    /// A client's subscription to `pattern`, ended when dropped: at most
    /// `capacity` events and `max_bytes` of payload wait for the client.
    pub fn watch(
        self: &Arc<Self>,
        pattern: &str,
        capacity: usize,
        max_bytes: usize,
    ) -> Result<Watch, BusError> {
        let pattern = Pattern::parse(pattern)?;
        let sub = self.subscriber(None, pattern, capacity, max_bytes, Overflow::DropOldest);
        Ok(Watch {
            bus: self.clone(),
            sub,
        })
    }

    /// Makes the agents' subscriptions those `wanted` lists: one that stays
    /// the same keeps its queue and delivery task (nothing queued is lost
    /// across a reload); one removed is closed; one added starts a task
    /// that hands its events to `deliver`.
    pub fn sync(self: &Arc<Self>, wanted: Vec<(String, Subscription)>, deliver: &Deliver) {
        let mut agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = BTreeMap::new();
        for (agent, sub) in wanted {
            let key = (agent.clone(), sub.pattern.clone());
            match agents.remove(&key) {
                Some((same, kept)) if same == sub => {
                    next.insert(key, (same, kept));
                    continue;
                }
                Some((_, changed)) => self.unsubscribe(&changed),
                None => {}
            }
            let Ok(pattern) = Pattern::parse(&sub.pattern) else {
                continue; // checked when the configuration was parsed
            };
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                tracing::warn!(agent, pattern = %sub.pattern, "no async runtime: the subscription is not served");
                continue;
            };
            let history = self
                .kept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .0
                .clone();
            if matches!(sub.delivery, Delivery::AtLeastOnce(_)) && history.is_none() {
                // It starts once a history is attached (the next sync).
                tracing::debug!(agent, pattern = %sub.pattern, "an at-least-once subscription waits for the topic history");
                continue;
            }
            let subscriber = self.subscriber(
                Some(&agent),
                pattern,
                sub.queue,
                sub.queue_bytes,
                sub.overflow,
            );
            match (&sub.delivery, history) {
                (Delivery::AtLeastOnce(again), Some(history)) => {
                    let durable = Durable {
                        sub: subscriber.clone(),
                        deliver: deliver.clone(),
                        history,
                        again: again.clone(),
                        bus: Arc::downgrade(self),
                        dead: counter(
                            self.metrics.recorder(),
                            "wharf_topic_events_total",
                            vec![
                                metrics::Label::new("subscriber", agent.clone()),
                                metrics::Label::new("outcome", "dead_lettered"),
                            ],
                        ),
                    };
                    match self.shared.get() {
                        Some(shared) => shared.durable(durable),
                        None => drop(runtime.spawn(durable.run())),
                    }
                }
                _ => {
                    if let Some(shared) = self.shared.get() {
                        shared.share(subscriber.clone());
                    }
                    runtime.spawn(deliver_all(subscriber.clone(), deliver.clone()));
                }
            }
            next.insert(key, (sub, subscriber));
        }
        for (_, (_, gone)) in std::mem::replace(&mut *agents, next) {
            self.unsubscribe(&gone);
        }
    }
}

impl Drop for Bus {
    /// Ends every agent subscription's delivery task (a host stopping
    /// within a process lets go of its history).
    fn drop(&mut self) {
        let agents = self.agents.get_mut().unwrap_or_else(|e| e.into_inner());
        for (_, sub) in agents.values() {
            sub.queue.close();
        }
    }
}

/// One agent subscription's delivery task: its events in order, one at a
/// time, until the subscription is removed.
async fn deliver_all(sub: Arc<Subscriber>, deliver: Deliver) {
    while let Some(event) = sub.queue.pop().await {
        deliver(sub.name.clone(), event).await;
    }
}

/// The most a redelivery waits, however many tries came before.
const MAX_BACKOFF: std::time::Duration = std::time::Duration::from_secs(300);

/// One at-least-once subscription's delivery task: its events in id order
/// from where its cursor left off, each handed over until the agent takes
/// it (a 2xx) or its tries are spent (then to the dead-letter topic), and
/// acknowledged in the history after; the next waits meanwhile.
struct Durable {
    sub: Arc<Subscriber>,
    deliver: Deliver,
    history: Arc<History>,
    again: Redelivery,
    bus: std::sync::Weak<Bus>,
    dead: metrics::Counter,
}

impl Durable {
    async fn run(self) {
        let (name, pattern) = (self.sub.name.clone(), self.sub.pattern.as_str());
        let mut source = match self.history.cursor(&name, pattern) {
            Some(after) => {
                let lost = self
                    .history
                    .lost_after(after, |k| wharf_config::topic::overlap(k, pattern));
                if let Some(through) = lost {
                    tracing::warn!(agent = %name, pattern, after, through, "retention deleted kept messages this subscriber had not taken: raise `keep` or `for`");
                }
                catchup::Catchup::after(self.history.clone(), pattern, after)
            }
            None => {
                let source = catchup::Catchup::live(Some(self.history.clone()), pattern);
                self.ack(source.sent());
                source
            }
        };
        while let Some(next) = source.next(&self.sub.queue).await {
            let event = match next {
                catchup::Next::Event(event) => event,
                catchup::Next::Failed(e) => {
                    tracing::error!(agent = %name, pattern, error = %e, "the topic history could not be read: kept events are skipped");
                    continue;
                }
            };
            if !self.hand_over(&event).await {
                return; // removed: its cursor stays where it was
            }
            if let Some(id) = event.id {
                self.ack(id);
            }
        }
    }

    /// Hands `event` over until taken or out of tries; false when the
    /// subscription was removed meanwhile.
    async fn hand_over(&self, event: &Arc<Event>) -> bool {
        let mut wait = self.again.backoff;
        for attempt in 1..=self.again.attempts {
            if (self.deliver)(self.sub.name.clone(), event.clone()).await {
                return true;
            }
            if self.sub.queue.is_closed() {
                return false;
            }
            if attempt < self.again.attempts {
                tokio::select! {
                    () = tokio::time::sleep(wait.min(MAX_BACKOFF)) => {}
                    () = self.sub.queue.closed() => return false,
                }
                wait = wait.saturating_mul(2);
            }
        }
        self.dead.increment(1);
        let Some(topic) = &self.again.dead_letter else {
            tracing::warn!(agent = %self.sub.name, topic = %event.topic, attempts = self.again.attempts, "an event was not taken after its last try; no `dead-letter` topic: dropped");
            return true;
        };
        if let Some(bus) = self.bus.upgrade()
            && let Err(e) = bus.publish(
                topic,
                event.payload.clone(),
                event.hops + 1,
                event.trace.as_ref(),
            )
        {
            tracing::warn!(agent = %self.sub.name, dead_letter = %topic, error = %e, "an event was not taken and could not go to its dead-letter topic");
        }
        true
    }

    fn ack(&self, id: u64) {
        if let Err(e) = self
            .history
            .ack(&self.sub.name, self.sub.pattern.as_str(), id)
        {
            tracing::error!(agent = %self.sub.name, error = %e, "a durable subscription's place could not be kept");
        }
    }
}

/// A client watching a pattern; unsubscribes when dropped.
pub struct Watch {
    bus: Arc<Bus>,
    sub: Arc<Subscriber>,
}

impl Watch {
    /// The next event for this watcher.
    pub async fn next(&self) -> Option<Arc<Event>> {
        self.sub.queue.pop().await
    }

    /// The pattern watched.
    pub fn pattern(&self) -> &str {
        self.sub.pattern.as_str()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.bus.unsubscribe(&self.sub);
    }
}

/// An event as one server-sent event: `event: message`, and as data a JSON
/// object with the topic and the payload (see [`message_json`]); a kept
/// event has its id as the event's `id`, which a watcher resumes after.
pub fn sse_frame(event: &Event) -> Bytes {
    message_frame(&event.topic, &event.payload, event.id)
}

/// A message as one server-sent event (see [`sse_frame`]).
pub fn message_frame(topic: &str, payload: &[u8], id: Option<u64>) -> Bytes {
    let data = message_json(topic, payload, id, None);
    match id {
        Some(id) => Bytes::from(format!("id: {id}\nevent: message\ndata: {data}\n\n")),
        None => Bytes::from(format!("event: message\ndata: {data}\n\n")),
    }
}

/// A message as JSON: its topic, its payload (text when it is UTF-8, else
/// base64 with `"encoding":"base64"`), and for a kept one its `id` and
/// when it was `published` (RFC 3339).
pub fn message_json(
    topic: &str,
    payload: &[u8],
    id: Option<u64>,
    published_ms: Option<i64>,
) -> serde_json::Value {
    use base64::Engine;
    let mut data = serde_json::Map::new();
    if let Some(id) = id {
        data.insert("id".into(), id.into());
    }
    data.insert("topic".into(), topic.into());
    if let Some(ms) = published_ms {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
        data.insert("published".into(), wharf_core::time::rfc3339(at).into());
    }
    match std::str::from_utf8(payload) {
        Ok(text) => {
            data.insert("payload".into(), text.into());
        }
        Err(_) => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(payload);
            data.insert("payload".into(), b64.into());
            data.insert("encoding".into(), "base64".into());
        }
    }
    serde_json::Value::Object(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(pattern: &str, queue: usize) -> Subscription {
        Subscription {
            pattern: pattern.into(),
            queue,
            queue_bytes: 16 << 20,
            overflow: Overflow::DropOldest,
            delivery: Delivery::AtMostOnce,
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn at_least_once_hands_over_again_in_order_and_resumes_from_its_cursor() {
        use std::collections::HashMap;
        let dir = tempfile::tempdir().unwrap();
        let keeps = vec![TopicKeep {
            pattern: "jobs.>".into(),
            keep: 100,
            age: None,
        }];
        let history = History::open(&dir.path().join("t.db"), keeps.clone(), 1 << 20);
        let history = Arc::new(history.unwrap());
        let bus = Arc::new(Bus::new(Metrics::new()));
        bus.attach_history(history.clone());
        bus.set_keeps(&keeps);
        let dead = bus.watch("dead.>", 16, usize::MAX).unwrap();
        // `flaky` fails twice then is taken; `bad` is never taken.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tries: Arc<Mutex<HashMap<Bytes, u32>>> = Arc::default();
        let deliver: Deliver = Arc::new(move |_, event: Arc<Event>| {
            let (tx, tries) = (tx.clone(), tries.clone());
            Box::pin(async move {
                let n = {
                    let mut tries = tries.lock().unwrap();
                    let n = tries.entry(event.payload.clone()).or_default();
                    *n += 1;
                    *n
                };
                let taken = match &event.payload[..] {
                    b"flaky" => n > 2,
                    b"bad" => false,
                    _ => true,
                };
                tx.send((String::from_utf8(event.payload.to_vec()).unwrap(), taken))
                    .unwrap();
                taken
            })
        });
        let mut durable = sub("jobs.*", 8);
        durable.delivery = Delivery::AtLeastOnce(Redelivery {
            attempts: 3,
            backoff: std::time::Duration::from_millis(1),
            dead_letter: Some("dead.jobs".into()),
        });
        let wanted = || vec![("w".to_string(), durable.clone())];
        bus.sync(wanted(), &deliver);
        let publish = |p: &'static str| bus.publish("jobs.a", Bytes::from(p), 0, None).unwrap();
        for p in ["flaky", "bad", "ok"] {
            publish(p);
        }
        let mut seen = Vec::new();
        while seen.len() < 7 {
            let (p, taken) = rx.recv().await.unwrap();
            seen.push(format!("{p}:{}", if taken { "taken" } else { "failed" }));
        }
        assert_eq!(
            seen,
            [
                "flaky:failed",
                "flaky:failed",
                "flaky:taken",
                "bad:failed",
                "bad:failed",
                "bad:failed",
                "ok:taken",
            ]
        );
        let letter = dead.next().await.unwrap();
        assert_eq!((&letter.payload[..], letter.hops), (&b"bad"[..], 1));

        // Removed, it keeps its place: what is published meanwhile is
        // handed over when it is back.
        let mut ok_id = None;
        for _ in 0..200 {
            ok_id = history.cursor("w", "jobs.*");
            if ok_id == Some(history.last_id()) {
                break; // acknowledged through `ok`, the last kept
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(ok_id, Some(history.last_id()));
        bus.sync(vec![], &deliver);
        publish("while away");
        bus.sync(wanted(), &deliver);
        let (p, taken) = rx.recv().await.unwrap();
        assert_eq!((p.as_str(), taken), ("while away", true));
    }

    #[tokio::test]
    async fn a_reload_keeps_what_is_queued_for_a_subscription_that_stays() {
        let bus = Arc::new(Bus::new(Metrics::new()));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let deliver: Deliver = {
            let gate = gate.clone();
            Arc::new(move |name, event| {
                let (tx, gate) = (tx.clone(), gate.clone());
                Box::pin(async move {
                    gate.acquire().await.unwrap().forget();
                    tx.send((name.to_string(), event.payload.clone())).unwrap();
                    true
                })
            })
        };
        bus.sync(vec![("a".into(), sub("x.>", 8))], &deliver);
        for n in 0..3u8 {
            assert_eq!(
                bus.publish("x.y", Bytes::from(vec![n]), 0, None).unwrap(),
                1
            );
        }
        // Same subscription, one more agent: the queue and its task stay.
        bus.sync(
            vec![("a".into(), sub("x.>", 8)), ("b".into(), sub("x.y", 8))],
            &deliver,
        );
        assert_eq!(bus.len(), 2);
        gate.add_permits(3);
        let got: Vec<u8> = [rx.recv().await, rx.recv().await, rx.recv().await]
            .into_iter()
            .map(|r| r.unwrap().1[0])
            .collect();
        assert_eq!(got, [0, 1, 2]);
        bus.sync(vec![], &deliver);
        assert!(bus.is_empty());
        assert_eq!(bus.publish("x.y", Bytes::new(), 0, None).unwrap(), 0);
    }

    #[tokio::test]
    async fn an_event_past_max_hops_is_refused_and_queued_nowhere() {
        let bus = Arc::new(Bus::new(Metrics::new()));
        bus.set_limits(&Topics {
            max_hops: 2,
            ..Topics::default()
        });
        let watch = bus.watch("a.>", 4, usize::MAX).unwrap();
        assert_eq!(bus.publish("a.b", Bytes::new(), 2, None).unwrap(), 1);
        assert_eq!(watch.next().await.unwrap().hops, 2);
        let err = bus.publish("a.b", Bytes::new(), 3, None).unwrap_err();
        assert!(
            matches!(err, BusError::TooManyHops { hops: 3, max: 2 }),
            "{err}"
        );
        assert!(watch.sub.queue.try_pop().is_none());
    }

    #[tokio::test]
    async fn a_watch_ends_its_subscription_when_dropped() {
        let bus = Arc::new(Bus::new(Metrics::new()));
        let watch = bus.watch("a.*", 4, usize::MAX).unwrap();
        assert_eq!(
            bus.publish("a.b", Bytes::from_static(b"hi"), 0, None)
                .unwrap(),
            1
        );
        let event = watch.next().await.unwrap();
        let frame = String::from_utf8(sse_frame(&event).to_vec()).unwrap();
        let data = frame
            .strip_prefix("event: message\ndata: ")
            .and_then(|f| f.strip_suffix("\n\n"))
            .unwrap();
        let data: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(data, serde_json::json!({"topic": "a.b", "payload": "hi"}));
        drop(watch);
        assert!(bus.is_empty());
        assert!(bus.watch("a.>.b", 4, usize::MAX).is_err());
        assert!(bus.publish("a.*", Bytes::new(), 0, None).is_err());
    }

    /// A node cut off from NATS holds at most its backlog of publishes
    /// (in its own queue, not the client's), then refuses with a reason.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_node_cut_off_from_nats_refuses_publishes_past_its_backlog() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port(); // closed again: nothing listens there
        let client = async_nats::ConnectOptions::new()
            .retry_on_initial_connect()
            .connect(format!("nats://127.0.0.1:{port}"))
            .await
            .unwrap();
        let bus = Arc::new(Bus::new(Metrics::new()));
        bus.share(wharf_cluster::topics::Topics::new(client, "alone"));
        let quarter = Bytes::from(vec![0u8; 256 << 10]);
        let mut taken = 0;
        let refused = loop {
            match bus.publish_sent("a.b", quarter.clone(), 0, None) {
                Ok(Published::Cluster(_)) => taken += 1,
                Ok(Published::Here(_)) => panic!("a node in a cluster publishes through it"),
                Err(e) => break e,
            }
            assert!(taken <= 256, "held past its 64 MiB");
            // The sending task has its turn at each.
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        };
        assert_eq!(taken, 256);
        assert!(
            matches!(
                refused,
                BusError::Cluster(wharf_cluster::topics::TopicsError::Backlog { .. })
            ),
            "{refused}"
        );
    }
}
