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

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// How long an acquire waits for an evicted connection to let go of its
/// slot before it looks for another one to evict.
const EVICT_RETRY: Duration = Duration::from_millis(10);

/// The slots of one listener (or of several that share a limit).
pub struct Slots {
    permits: Arc<Semaphore>,
    live: Mutex<Vec<Arc<State>>>,
    started: Instant,
    evicted: Counter,
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
    /// Slots for `limit` connections, counting evictions on `evicted` and
    /// the connections open on `open`.
    pub fn new(limit: usize, evicted: Counter, open: Gauge) -> Arc<Slots> {
        Arc::new(Slots {
            permits: Arc::new(Semaphore::new(limit)),
            live: Mutex::new(Vec::with_capacity(limit.min(4096))),
            started: Instant::now(),
            evicted,
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
            if let Some(victim) = self.idlest() {
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

    /// The connection idle longest, if any is idle.
    fn idlest(&self) -> Option<Arc<State>> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.iter()
            .filter(|s| s.busy.load(Ordering::Acquire) == 0)
            .min_by_key(|s| s.idle_since.load(Ordering::Acquire))
            .cloned()
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
    /// chosen for eviction while idle. An eviction that arrives while a
    /// request is running is ignored.
    pub async fn evicted(&self) {
        loop {
            self.state.evict.notified().await;
            if self.state.busy.load(Ordering::Acquire) == 0 {
                return;
            }
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
        let slots = Slots::new(2, Counter::noop(), Gauge::noop());
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
