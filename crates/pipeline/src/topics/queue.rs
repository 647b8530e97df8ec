//! One subscriber's bounded queue: events wait here until the subscriber
//! takes them, in publish order; a queue full (in events or in payload
//! bytes) drops the oldest or the newest event (counted), never blocks the
//! publisher.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use bytes::Bytes;
use metrics::Counter;
use tokio::sync::Notify;

use wharf_config::Overflow;

/// One published message, shared by every subscriber it goes to: the
/// payload is not copied per subscriber.
#[derive(Debug)]
pub struct Event {
    /// The topic it was published to.
    pub topic: Box<str>,
    /// Its payload, shared by every queue.
    pub payload: Bytes,
    /// Which republish in a row it is: 0 when no delivered event led to
    /// its publish; its deliveries serve requests one further.
    pub hops: u32,
    /// Its id in the topic history, when its topic is kept.
    pub id: Option<u64>,
    /// When it was published.
    pub published: Instant,
    /// The span that published it, when the host exports traces: its
    /// deliveries are traced under it.
    pub trace: Option<wharf_core::trace::Trace>,
}

/// What a subscriber's queue counts.
#[derive(Clone)]
pub struct QueueCounters {
    /// Events queued.
    pub queued: Counter,
    /// Events dropped by the overflow policy.
    pub dropped: Counter,
}

/// A bounded queue of shared events.
pub struct Queue {
    events: Mutex<Held>,
    ready: Notify,
    capacity: usize,
    /// Payload bytes held at most (one event larger than this is held
    /// alone).
    max_bytes: usize,
    overflow: Overflow,
    closed: AtomicBool,
    /// Whether an event was dropped since [`Queue::take_dropped`] last
    /// looked.
    dropped: AtomicBool,
    counters: QueueCounters,
}

/// The events waiting, and the bytes of their payloads.
struct Held {
    events: VecDeque<std::sync::Arc<Event>>,
    bytes: usize,
}

impl Held {
    fn pop(&mut self) -> Option<std::sync::Arc<Event>> {
        let event = self.events.pop_front()?;
        self.bytes -= event.payload.len();
        Some(event)
    }
}

impl Queue {
    /// A queue of `capacity` events and `max_bytes` of payload at most.
    pub fn new(
        capacity: usize,
        max_bytes: usize,
        overflow: Overflow,
        counters: QueueCounters,
    ) -> Queue {
        Queue {
            events: Mutex::new(Held {
                events: VecDeque::with_capacity(capacity.min(64)),
                bytes: 0,
            }),
            ready: Notify::new(),
            capacity: capacity.max(1),
            max_bytes,
            overflow,
            closed: AtomicBool::new(false),
            dropped: AtomicBool::new(false),
            counters,
        }
    }

    /// Queues `event`; false when it was dropped (the queue is full and
    /// drops the newest, or it is closed).
    pub fn push(&self, event: &std::sync::Arc<Event>) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return false;
        }
        let mut held = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let size = event.payload.len();
        let full = |held: &Held| {
            !held.events.is_empty()
                && (held.events.len() >= self.capacity || held.bytes + size > self.max_bytes)
        };
        if full(&held) {
            self.dropped.store(true, Ordering::Release);
            if self.overflow == Overflow::DropNewest {
                self.counters.dropped.increment(1);
                return false;
            }
            while full(&held) {
                held.pop();
                self.counters.dropped.increment(1);
            }
        }
        held.bytes += size;
        held.events.push_back(event.clone());
        drop(held);
        self.counters.queued.increment(1);
        self.ready.notify_one();
        true
    }

    /// The next event, waiting for one; none once the queue is closed.
    pub async fn pop(&self) -> Option<std::sync::Arc<Event>> {
        loop {
            let notified = self.ready.notified();
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            if let Some(event) = self.try_pop() {
                return Some(event);
            }
            notified.await;
        }
    }

    /// The oldest event, if any, without waiting.
    pub fn try_pop(&self) -> Option<std::sync::Arc<Event>> {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    /// Whether an event was dropped since the last look; looking resets
    /// it.
    pub fn take_dropped(&self) -> bool {
        self.dropped.swap(false, Ordering::AcqRel)
    }

    /// Events waiting now.
    pub fn len(&self) -> usize {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .events
            .len()
    }

    /// Payload bytes waiting now.
    pub fn bytes(&self) -> usize {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }

    /// Whether no event waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the queue was stopped.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Waits until the queue is stopped.
    pub async fn closed(&self) {
        loop {
            let notified = self.ready.notified();
            if self.is_closed() {
                return;
            }
            notified.await;
        }
    }

    /// Stops the queue: nothing more is queued and `pop` returns none.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.ready.notify_waiters();
        self.ready.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn event(n: u8) -> Arc<Event> {
        Arc::new(Event {
            topic: "t".into(),
            payload: Bytes::from(vec![n]),
            hops: 0,
            id: None,
            published: Instant::now(),
            trace: None,
        })
    }

    fn counters() -> QueueCounters {
        QueueCounters {
            queued: Counter::noop(),
            dropped: Counter::noop(),
        }
    }

    #[test]
    fn a_full_queue_drops_by_its_policy_and_keeps_order() {
        for (overflow, kept) in [
            (Overflow::DropOldest, [2u8, 3]),
            (Overflow::DropNewest, [1, 2]),
        ] {
            let q = Queue::new(2, usize::MAX, overflow, counters());
            for n in 1..=3 {
                q.push(&event(n));
            }
            let got: Vec<u8> = std::iter::from_fn(|| q.try_pop())
                .map(|e| e.payload[0])
                .collect();
            assert_eq!(got, kept, "{overflow:?}");
        }
    }

    #[test]
    fn payload_bytes_are_bounded_too() {
        let big = |n: u8, len: usize| {
            Arc::new(Event {
                topic: "t".into(),
                payload: Bytes::from(vec![n; len]),
                hops: 0,
                id: None,
                published: Instant::now(),
                trace: None,
            })
        };
        let q = Queue::new(1024, 10, Overflow::DropOldest, counters());
        for n in 1..=4 {
            q.push(&big(n, 4));
        }
        assert_eq!((q.len(), q.bytes()), (2, 8), "the oldest went");
        // One event larger than the bound is held alone.
        q.push(&big(9, 64));
        assert_eq!((q.len(), q.bytes()), (1, 64));
        let newest = Queue::new(1024, 10, Overflow::DropNewest, counters());
        for n in 1..=4 {
            newest.push(&big(n, 4));
        }
        let got: Vec<u8> = std::iter::from_fn(|| newest.try_pop())
            .map(|e| e.payload[0])
            .collect();
        assert_eq!(got, [1, 2]);
        assert_eq!(newest.bytes(), 0);
    }

    #[tokio::test]
    async fn pop_waits_and_close_ends_it() {
        let q = Arc::new(Queue::new(4, usize::MAX, Overflow::DropOldest, counters()));
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.pop().await.map(|e| e.payload[0]) }
        });
        tokio::task::yield_now().await;
        q.push(&event(7));
        assert_eq!(waiter.await.unwrap(), Some(7));
        q.close();
        assert!(q.pop().await.is_none());
        assert!(!q.push(&event(1)));
    }
}
