//! Connection slots: the limit on open connections every listener keeps,
//! made safe against floods. A connection is *busy* while a request on it
//! is being answered (its body included) and *idle* otherwise: waiting for
//! its next request on keep-alive, or stalled half-way through a request
//! head or frame. At the limit, a new connection evicts the connection that
//! has been idle longest instead of waiting behind it, so idle and stalled
//! connections can never lock good clients out; only when every connection
//! is busy do new ones wait (one accepted, the rest in the kernel's
//! backlog). A slot is asked for once a connection has been accepted, so
//! nothing is evicted for a connection that has not arrived.
//!
//! A busy connection can also be *stalled*: every answer on it has been
//! handed to hyper, which is waiting for the client to take it (an HTTP/2
//! flow-control window the client never opens, a socket it does not
//! read). Each answer's body keeps a [`Progress`] clock: since when hyper has
//! held data of it without coming back for more. At the limit a connection
//! stalled for [`STALLED_EVICT_AFTER`] is evicted as an idle one is, and
//! [`Slot::stalled`] ends a connection one of whose answers has made no
//! progress for the write timeout, however the others fare.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// How long an acquire waits for an evicted connection to let go of its
/// slot before it looks for another one to evict.
const EVICT_RETRY: Duration = Duration::from_millis(10);

/// How long every answer of a busy connection must have waited on the
/// client before the connection may be evicted to make room: the host's
/// work for it is done, and only the client's reading is missing.
pub const STALLED_EVICT_AFTER: Duration = Duration::from_millis(250);

/// The slots of one listener (or of several that share a limit).
pub struct Slots {
    permits: Arc<Semaphore>,
    live: Mutex<Vec<Arc<State>>>,
    started: Instant,
    evicted: Counter,
    /// Connections closed because an answer made no progress.
    stalled: Counter,
    /// Connections holding a slot now.
    open: Gauge,
}

/// One connection's state, shared with the slots that may evict it.
#[derive(Debug)]
struct State {
    busy: AtomicUsize,
    /// Milliseconds from `Slots::started` when it last became idle.
    idle_since: AtomicU64,
    evict: Notify,
    /// The answers being sent on it, each with its clock.
    answers: Mutex<Vec<Arc<Owed>>>,
    /// Chosen for eviction while stalled (not idle): it closes though busy.
    evict_stalled: AtomicBool,
}

/// One answer's clock: since when (milliseconds from `Slots::started`,
/// plus one) hyper has held data of it without asking for more; 0 while
/// it owes nothing (the host is still producing it, or hyper came back).
#[derive(Debug, Default)]
struct Owed {
    since: AtomicU64,
}

/// A held slot; dropping it frees the slot.
pub struct Slot {
    state: Arc<State>,
    slots: Arc<Slots>,
    /// Released in `drop` before the connection leaves the live list.
    permit: Option<OwnedSemaphorePermit>,
}

/// Marks a connection busy while it lives.
#[derive(Debug)]
pub struct Busy {
    state: Arc<State>,
    slots_started: Instant,
}

impl Slots {
    /// Slots for `limit` connections, counting evictions on `evicted`,
    /// connections closed for a stalled answer on `stalled`, and the
    /// connections open on `open`.
    pub fn new(limit: usize, evicted: Counter, stalled: Counter, open: Gauge) -> Arc<Slots> {
        Arc::new(Slots {
            permits: Arc::new(Semaphore::new(limit)),
            live: Mutex::new(Vec::with_capacity(limit.min(4096))),
            started: Instant::now(),
            evicted,
            stalled,
            open,
        })
    }

    /// A slot for the next connection: a free one, or one freed by
    /// evicting the connection idle longest; waits only while every
    /// connection is busy.
    pub async fn acquire(self: &Arc<Self>) -> Slot {
        loop {
            if let Ok(permit) = self.permits.clone().try_acquire_owned() {
                return self.hold(permit);
            }
            if let Some(victim) = self.victim() {
                victim.evict.notify_one();
                self.evicted.increment(1);
            }
            tokio::select! {
                permit = self.permits.clone().acquire_owned() => {
                    return self.hold(permit.expect("the semaphore is never closed"));
                }
                () = tokio::time::sleep(EVICT_RETRY) => {}
            }
        }
    }

    fn hold(self: &Arc<Self>, permit: OwnedSemaphorePermit) -> Slot {
        let state = Arc::new(State {
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(self.now()),
            evict: Notify::new(),
            answers: Mutex::new(Vec::new()),
            evict_stalled: AtomicBool::new(false),
        });
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(state.clone());
        self.open.increment(1.0);
        Slot {
            state,
            slots: self.clone(),
            permit: Some(permit),
        }
    }

    fn now(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// The connection to close for a new one: the one idle longest, or,
    /// when none is idle, the one stalled longest (every answer on it
    /// waiting on the client for at least [`STALLED_EVICT_AFTER`]).
    fn victim(&self) -> Option<Arc<State>> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let idlest = live
            .iter()
            .filter(|s| s.busy.load(Ordering::Acquire) == 0)
            .min_by_key(|s| s.idle_since.load(Ordering::Acquire));
        if let Some(idle) = idlest {
            return Some(idle.clone());
        }
        let now = self.now();
        let after = STALLED_EVICT_AFTER.as_millis() as u64;
        let stalled = live
            .iter()
            .filter_map(|s| s.stalled_since().map(|since| (since, s)))
            .filter(|(since, _)| now.saturating_sub(*since) >= after)
            .min_by_key(|(since, _)| *since)?;
        stalled.1.evict_stalled.store(true, Ordering::Release);
        Some(stalled.1.clone())
    }
}

impl State {
    /// Since when every answer in flight on this connection has waited on
    /// the client (the latest of their clocks); `None` when the host still
    /// works on one, or nothing is in flight.
    fn stalled_since(&self) -> Option<u64> {
        let busy = self.busy.load(Ordering::Acquire);
        if busy == 0 {
            return None;
        }
        let answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        if answers.len() < busy {
            return None; // a request still being answered by the host
        }
        let mut latest = 0;
        for owed in answers.iter() {
            match owed.since.load(Ordering::Acquire) {
                0 => return None,
                since => latest = latest.max(since - 1),
            }
        }
        Some(latest)
    }

    /// Since when the answer waiting longest on the client has waited.
    fn oldest_owed(&self) -> Option<u64> {
        let answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers
            .iter()
            .map(|o| o.since.load(Ordering::Acquire))
            .filter(|since| *since != 0)
            .min()
            .map(|since| since - 1)
    }
}

impl Slot {
    /// Marks the connection busy until the guard is dropped.
    pub fn busy(&self) -> Busy {
        self.state.busy.fetch_add(1, Ordering::AcqRel);
        Busy {
            state: self.state.clone(),
            slots_started: self.slots.started,
        }
    }

    /// Resolves when the connection should close to make room: it was
    /// chosen for eviction while idle, or while stalled. An eviction that
    /// arrives while a request is running is ignored.
    pub async fn evicted(&self) {
        loop {
            self.state.evict.notified().await;
            if self.state.busy.load(Ordering::Acquire) == 0
                || self.state.evict_stalled.swap(false, Ordering::AcqRel)
            {
                return;
            }
        }
    }

    /// A clock for one answer sent on this connection, counted among its
    /// answers until the returned guard is dropped.
    pub fn progress(&self) -> Progress {
        let owed = Arc::new(Owed::default());
        self.state
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(owed.clone());
        Progress {
            owed,
            state: self.state.clone(),
            started: self.slots.started,
        }
    }

    /// Resolves when an answer on this connection has waited on the client
    /// for `timeout` without progress (checked a few times a timeout), and
    /// counts it: the connection is to be closed.
    pub async fn stalled(&self, timeout: Duration) {
        let every = (timeout / 4).max(Duration::from_millis(20));
        let limit = timeout.as_millis() as u64;
        loop {
            tokio::time::sleep(every).await;
            if let Some(since) = self.state.oldest_owed()
                && self.slots.now().saturating_sub(since) >= limit
            {
                self.slots.stalled.increment(1);
                return;
            }
        }
    }
}

/// One answer's place among its connection's; leaves it when dropped.
#[derive(Debug)]
pub struct Progress {
    owed: Arc<Owed>,
    state: Arc<State>,
    started: Instant,
}

impl Progress {
    /// Hyper took data of the answer and has not come back for more.
    pub fn owes(&self) {
        let now = self.started.elapsed().as_millis() as u64 + 1;
        self.owed.since.store(now, Ordering::Release);
    }

    /// Hyper came back for more: the answer owes nothing to the client.
    pub fn settled(&self) {
        self.owed.since.store(0, Ordering::Release);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        let mut answers = self.state.answers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = answers.iter().position(|o| Arc::ptr_eq(o, &self.owed)) {
            answers.swap_remove(i);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // The place is given back first, then the connection leaves the
        // list: the other way round, an `acquire` looking for the idlest
        // connection in between found neither this place nor this
        // connection, and evicted a newer one (a connection just accepted,
        // its request not read yet, closed unanswered).
        drop(self.permit.take());
        let mut live = self.slots.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = live.iter().position(|s| Arc::ptr_eq(s, &self.state)) {
            live.swap_remove(i);
        }
        self.slots.open.decrement(1.0);
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if self.state.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
            let now = self.slots_started.elapsed().as_millis() as u64;
            self.state.idle_since.store(now, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_set_evicts_the_connection_idle_longest() {
        let slots = Slots::new(2, Counter::noop(), Counter::noop(), Gauge::noop());
        let first = slots.acquire().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        let second = slots.acquire().await;
        let busy = first.busy();
        // Full: the only idle one is `second`, though `first` is older.
        let third = tokio::spawn({
            let slots = slots.clone();
            async move { slots.acquire().await }
        });
        tokio::time::timeout(Duration::from_secs(5), second.evicted())
            .await
            .expect("the idle connection is asked to close");
        drop(second);
        let third = third.await.unwrap();
        // Every connection busy: a new one waits.
        let _busy_third = third.busy();
        let waiting = tokio::time::timeout(Duration::from_millis(50), slots.acquire()).await;
        assert!(waiting.is_err(), "no busy connection is evicted");
        drop(busy);
        let fourth = tokio::spawn({
            let slots = slots.clone();
            async move { slots.acquire().await }
        });
        tokio::time::timeout(Duration::from_secs(5), first.evicted())
            .await
            .expect("once idle, the first connection is asked to close");
        drop(first);
        let fourth = tokio::time::timeout(Duration::from_secs(5), fourth)
            .await
            .expect("its slot goes to the new connection");
        drop(fourth);
    }
}
