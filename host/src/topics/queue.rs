//! One subscriber's bounded queue: events wait here until the subscriber
//! takes them, in publish order; a full queue drops the oldest or the
//! newest event (counted), never blocks the publisher.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use bytes::Bytes;
use metrics::Counter;
use tokio::sync::Notify;

use crate::config::Overflow;

/// One published message, shared by every subscriber it goes to: the
/// payload is not copied per subscriber.
#[derive(Debug)]
pub struct Event {
    pub topic: Box<str>,
    pub payload: Bytes,
    pub published: Instant,
}

/// What a subscriber's queue counts.
#[derive(Clone)]
pub struct QueueCounters {
    pub queued: Counter,
    pub dropped: Counter,
}

/// A bounded queue of shared events.
pub struct Queue {
    events: Mutex<VecDeque<std::sync::Arc<Event>>>,
    ready: Notify,
    capacity: usize,
    overflow: Overflow,
    closed: AtomicBool,
    counters: QueueCounters,
}

impl Queue {
    pub fn new(capacity: usize, overflow: Overflow, counters: QueueCounters) -> Queue {
        Queue {
            events: Mutex::new(VecDeque::with_capacity(capacity.min(64))),
            ready: Notify::new(),
            capacity: capacity.max(1),
            overflow,
            closed: AtomicBool::new(false),
            counters,
        }
    }

    /// Queues `event`; false when it was dropped (the queue is full and
    /// drops the newest, or it is closed).
    pub fn push(&self, event: &std::sync::Arc<Event>) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return false;
        }
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if events.len() >= self.capacity {
            self.counters.dropped.increment(1);
            match self.overflow {
                Overflow::DropNewest => return false,
                Overflow::DropOldest => {
                    events.pop_front();
                }
            }
        }
        events.push_back(event.clone());
        drop(events);
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

    pub fn try_pop(&self) -> Option<std::sync::Arc<Event>> {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.pop_front()
    }

    /// Events waiting now.
    pub fn len(&self) -> usize {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
            published: Instant::now(),
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
            let q = Queue::new(2, overflow, counters());
            for n in 1..=3 {
                q.push(&event(n));
            }
            let got: Vec<u8> = std::iter::from_fn(|| q.try_pop())
                .map(|e| e.payload[0])
                .collect();
            assert_eq!(got, kept, "{overflow:?}");
        }
    }

    #[tokio::test]
    async fn pop_waits_and_close_ends_it() {
        let q = Arc::new(Queue::new(4, Overflow::DropOldest, counters()));
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
