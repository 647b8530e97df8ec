//! A subscription's events in id order with no kept one lost: from its
//! bounded queue as they come, and from the history where the queue
//! cannot help: after an id to resume from (a watcher's `Last-Event-ID`,
//! a durable subscriber's cursor), and in place of events the queue
//! dropped. Used by watchers and by at-least-once deliveries alike.
//!
//! No kept message falls between the two: the subscription is in the
//! index before the history's last id is read, so a message is either at
//! or below that id (and read from the history) or above it (and queued);
//! and kept messages reach the queues in id order (the bus holds a lock
//! from an id to its last queue).
//!
//! What is read back is bounded apart from the queue: one page at a time,
//! of at most [`PAGE`] messages and [`PAGE_BYTES`] of payload (one message
//! when a single one is larger), held in the history's read-back budget
//! until its last event is handed on.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::{Event, Queue};
use wharf_tasks::history::{History, HistoryError, Hold, Query};

/// Kept messages read from the history per page while catching up.
pub const PAGE: usize = 256;

/// Payload bytes read from the history per page while catching up.
pub const PAGE_BYTES: usize = 1 << 20;

/// What comes next.
pub(crate) enum Next {
    /// An event, live or read back.
    Event(Arc<Event>),
    /// The history could not be read: what it held is skipped.
    Failed(HistoryError),
}

pub(crate) struct Catchup {
    /// The history, when it keeps something the pattern matches.
    history: Option<Arc<History>>,
    pattern: String,
    /// The last kept id handed on (or the one to resume after): a read
    /// from the history starts after it.
    sent: u64,
    /// Kept ids up to this come from the history, not the queue.
    upto: u64,
    /// Whether ids `sent + 1 ..= upto` are still to be read back.
    replaying: bool,
    page: VecDeque<Arc<Event>>,
    /// The page's place in the history's read-back budget.
    hold: Hold,
}

impl Catchup {
    /// Live events from now on (the subscription is already indexed);
    /// dropped kept ones are read back.
    pub fn live(history: Option<Arc<History>>, pattern: &str) -> Catchup {
        Catchup {
            sent: history.as_ref().map_or(0, |h| h.last_id()),
            upto: 0,
            replaying: false,
            history,
            pattern: pattern.into(),
            page: VecDeque::new(),
            hold: Hold::default(),
        }
    }

    /// What the history kept after `after`, then live events (the
    /// subscription is already indexed).
    pub fn after(history: Arc<History>, pattern: &str, after: u64) -> Catchup {
        Catchup {
            sent: after,
            upto: history.last_id(),
            replaying: true,
            history: Some(history),
            pattern: pattern.into(),
            page: VecDeque::new(),
            hold: Hold::default(),
        }
    }

    /// The last kept id handed on, or the one started after.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// The next event; none once `queue` is closed.
    pub async fn next(&mut self, queue: &Queue) -> Option<Next> {
        loop {
            if let Some(event) = self.page.pop_front() {
                return Some(Next::Event(event));
            }
            // The page is handed on: its place in the budget is free.
            self.hold = Hold::default();
            if let (true, Some(history)) = (self.replaying, &self.history) {
                let mut q = Query::new(&self.pattern, PAGE);
                q.after = Some(self.sent);
                q.before = Some(self.upto.saturating_add(1));
                q.max_bytes = PAGE_BYTES;
                match history.read(q).await {
                    Ok(mut page) => {
                        self.hold = std::mem::take(&mut page.hold);
                        self.page.extend(page.messages.into_iter().map(|m| {
                            Arc::new(Event {
                                topic: m.topic.into(),
                                payload: Bytes::from(m.payload),
                                hops: m.hops,
                                id: Some(m.id),
                                published: Instant::now(),
                                trace: None,
                            })
                        }));
                        match page.next {
                            Some(next) => self.sent = next,
                            None => self.replaying = false,
                        }
                    }
                    Err(e) => {
                        self.replaying = false;
                        self.sent = self.upto;
                        return Some(Next::Failed(e));
                    }
                }
                if !self.replaying {
                    self.sent = self.upto.max(self.sent);
                }
                continue;
            }
            let event = queue.pop().await?;
            if let Some(history) = &self.history
                && queue.take_dropped()
            {
                // The queue dropped events: the kept ones come from the
                // history, up to the newest given now.
                self.upto = self.upto.max(history.last_id());
                self.replaying = true;
            }
            match event.id {
                Some(id) if id <= self.upto => continue, // read back instead
                Some(id) => self.sent = self.sent.max(id),
                None => {}
            }
            return Some(Next::Event(event));
        }
    }
}
