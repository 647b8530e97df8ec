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
//! full queue, is not delivered); each subscriber sees events in the order
//! they were published. A topic a `topic` block keeps also goes to the
//! [`History`], which gives each message an id: clients read kept messages
//! back ([`read`]) and watchers resume after an id ([`watch_response`]),
//! across restarts. Each event
//! counts the republishes in a row behind it ([`Event::hops`]); past
//! `topics { max-hops }` a publish is refused, which ends a loop of agents
//! republishing each other's events.

mod pattern;
mod queue;
pub mod read;
mod resume;

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

use arc_swap::ArcSwapOption;
use wharf_config::{Overflow, Subscription, TopicKeep, Topics};
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
    }

    /// Keeps messages in `history` from now on.
    pub fn attach_history(&self, history: Arc<History>) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.0 = Some(history);
        self.apply_keeps(&kept);
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
        let kept = keeping.as_ref().and_then(|k| Some((k, k.keep_for(topic)?)));
        // Kept messages reach every queue in the order of their ids, so a
        // watcher's last id seen is a cursor that skips nothing.
        let _in_order = kept
            .is_some()
            .then(|| self.kept_order.lock().unwrap_or_else(|e| e.into_inner()));
        let id = match kept {
            Some((keeping, keep)) => match keeping.history.append(keep, topic, &payload) {
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
        Ok(matched.iter().filter(|s| s.queue.push(&event)).count())
    }

    /// Subscriptions now (agents' and watchers').
    pub fn len(&self) -> usize {
        self.index.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether nothing subscribes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn subscriber(
        &self,
        name: &str,
        pattern: Pattern,
        capacity: usize,
        max_bytes: usize,
        overflow: Overflow,
    ) -> Arc<Subscriber> {
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
        let sub = self.subscriber("watch", pattern, capacity, max_bytes, Overflow::DropOldest);
        Ok(Watch {
            bus: self.clone(),
            sub,
        })
    }

    /// Makes the agents' subscriptions those `wanted` lists: one that stays
    /// the same keeps its queue and delivery task (nothing queued is lost
    /// across a reload); one removed is closed; one added starts a task
    /// that hands its events to `deliver`.
    pub fn sync(&self, wanted: Vec<(String, Subscription)>, deliver: &Deliver) {
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
            let subscriber =
                self.subscriber(&agent, pattern, sub.queue, sub.queue_bytes, sub.overflow);
            runtime.spawn(deliver_all(subscriber.clone(), deliver.clone()));
            next.insert(key, (sub, subscriber));
        }
        for (_, (_, gone)) in std::mem::replace(&mut *agents, next) {
            self.unsubscribe(&gone);
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

    /// Whether the watch's queue dropped an event since the last look.
    pub fn take_dropped(&self) -> bool {
        self.sub.queue.take_dropped()
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
        }
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
}
