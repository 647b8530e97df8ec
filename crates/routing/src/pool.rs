//! Warm instance pools: live instances reused across requests, grown up to
//! a maximum, retired after a trap, after `max-uses` requests, or past a
//! memory cap. Requests wait for a busy pool in a bounded queue. Affinity
//! pins a session to one instance so state kept in the guest lasts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tokio::sync::{Mutex, OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};

use super::RouteError;
use super::affinity::{AffinityTable, Lookup};
use super::health::HealthCell;
use wharf_config::Instances;
use wharf_core::metrics::{AgentMetrics, Retire, Shed};
use wharf_core::request::{Request, Response};
use wharf_registry::AgentEntry;
use wharf_runtime::{AgentImage, CallError, FilterLive, Live};

/// What a pool keeps: a live instance of an agent or of a filter.
pub trait Pooled: Send + 'static {
    /// Its last call was cut off half-way: it must not be used again.
    fn abandoned(&self) -> bool;
    /// Bytes of linear memory it holds now.
    fn memory_bytes(&self) -> u64;
    /// A health probe on this thread; true when healthy.
    fn probe(&mut self) -> bool;
}

impl Pooled for Live {
    fn abandoned(&self) -> bool {
        Live::abandoned(self)
    }
    fn memory_bytes(&self) -> u64 {
        Live::memory_bytes(self)
    }
    fn probe(&mut self) -> bool {
        matches!(self.health(), Ok(wharf_runtime::Health::Ok))
    }
}

impl Pooled for FilterLive {
    fn abandoned(&self) -> bool {
        FilterLive::abandoned(self)
    }
    fn memory_bytes(&self) -> u64 {
        FilterLive::memory_bytes(self)
    }
    /// Filters have no health export: an idle instance that has not
    /// trapped is healthy; request outcomes decide the rest.
    fn probe(&mut self) -> bool {
        true
    }
}

/// A slot and the lock on its instance.
type Held<I> = (Arc<Slot<I>>, OwnedMutexGuard<Option<I>>);

/// One live instance (or a place for one, before its first use).
pub struct Slot<I = Live> {
    /// The instance's id, for logs and listings.
    pub id: u64,
    live: Arc<Mutex<Option<I>>>,
    /// Its health.
    pub health: HealthCell,
    /// Calls it has served.
    pub uses: AtomicU64,
    retired: AtomicBool,
}

impl<I> Slot<I> {
    /// Not retired and not marked unhealthy: two relaxed loads.
    #[inline]
    pub fn usable(&self) -> bool {
        !self.retired.load(Ordering::Relaxed) && self.health.is_healthy()
    }
}

/// Warm instances of one agent or filter, leased one request at a time.
pub struct WarmPool<I = Live> {
    settings: Instances,
    health_threshold: u32,
    slots: ArcSwap<Vec<Arc<Slot<I>>>>,
    /// One permit per instance that may be leased at once.
    capacity: Arc<Semaphore>,
    waiting: AtomicUsize,
    busy: Arc<AtomicUsize>,
    next_id: AtomicU64,
    /// Serializes changes to the slot list so its length stays within `max`.
    grow: std::sync::Mutex<()>,
}

/// Exclusive use of one instance for one request. Dropping it (also when
/// the request is abandoned half-way) returns the instance to the pool.
pub struct Lease<I = Live> {
    slot: Arc<Slot<I>>,
    guard: OwnedMutexGuard<Option<I>>,
    busy: Arc<AtomicUsize>,
    _permit: OwnedSemaphorePermit,
}

impl<I> Drop for Lease<I> {
    fn drop(&mut self) {
        self.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<I> Lease<I> {
    /// The id of the instance leased.
    pub fn instance_id(&self) -> u64 {
        self.slot.id
    }

    /// The leased instance; none until it is first instantiated.
    pub fn instance(&mut self) -> &mut Option<I> {
        &mut self.guard
    }
}

/// What affinity did for one request, for metrics and the request span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AffinityOutcome {
    /// The route has no affinity, or the request no session.
    None,
    /// The session's pinned instance served it.
    Hit,
    /// The session had no pin: one was made.
    Miss,
    /// The pinned instance was gone: pinned again.
    Repin,
}

impl AffinityOutcome {
    /// The outcome's name in spans.
    pub fn as_str(self) -> &'static str {
        match self {
            AffinityOutcome::None => "none",
            AffinityOutcome::Hit => "hit",
            AffinityOutcome::Miss => "miss",
            AffinityOutcome::Repin => "repin",
        }
    }
}

impl<I: Pooled> WarmPool<I> {
    /// An empty pool with `settings`, instances unhealthy after `health_threshold` failures.
    pub fn new(settings: Instances, health_threshold: u32) -> Self {
        WarmPool {
            settings,
            health_threshold,
            slots: ArcSwap::from_pointee(Vec::new()),
            capacity: Arc::new(Semaphore::new(settings.max)),
            waiting: AtomicUsize::new(0),
            busy: Arc::new(AtomicUsize::new(0)),
            next_id: AtomicU64::new(1),
            grow: std::sync::Mutex::new(()),
        }
    }

    /// The live instances now (for listings and probes).
    pub fn slots(&self) -> Arc<Vec<Arc<Slot<I>>>> {
        self.slots.load_full()
    }

    /// Instances leased now.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Relaxed)
    }

    /// Leases an instance: the pinned one when `key` has a usable pin, else
    /// any idle one, else a new one; waits (bounded) when all are busy.
    pub async fn acquire(
        &self,
        key: Option<&str>,
        pins: Option<&AffinityTable>,
        metrics: &AgentMetrics,
        wait: Duration,
    ) -> Result<(Lease<I>, AffinityOutcome), RouteError> {
        let permit = self.permit(metrics, wait).await?;
        let pinned = key.zip(pins);
        let mut outcome = AffinityOutcome::None;
        if let Some((key, pins)) = pinned {
            outcome = AffinityOutcome::Miss;
            if let Lookup::Hit(id) = pins.lookup(key) {
                outcome = AffinityOutcome::Repin;
                if let Some(slot) = self.find(id).filter(|s| s.usable()) {
                    // The session's own instance: wait for its previous request.
                    let guard = slot.live.clone().lock_owned().await;
                    if slot.usable() {
                        metrics.affinity_hits().increment(1);
                        return Ok((self.lease(slot, guard, permit), AffinityOutcome::Hit));
                    }
                }
            }
        }
        let (slot, guard) = self.idle_or_new(metrics);
        if let Some((key, pins)) = pinned {
            let evicted = pins.pin(key, slot.id);
            metrics.affinity_evictions().increment(evicted as u64);
            match outcome {
                AffinityOutcome::Repin => metrics.affinity_repins().increment(1),
                _ => metrics.affinity_misses().increment(1),
            }
        }
        Ok((self.lease(slot, guard, permit), outcome))
    }

    async fn permit(
        &self,
        metrics: &AgentMetrics,
        wait: Duration,
    ) -> Result<OwnedSemaphorePermit, RouteError> {
        if let Ok(permit) = self.capacity.clone().try_acquire_owned() {
            return Ok(permit);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.settings.queue {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            metrics.shed(Shed::Queue);
            return Err(RouteError::Overloaded);
        }
        let waited = tokio::time::timeout(wait, self.capacity.clone().acquire_owned()).await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        match waited {
            Ok(Ok(permit)) => Ok(permit),
            _ => {
                metrics.shed(Shed::Queue);
                Err(RouteError::Overloaded)
            }
        }
    }

    fn lease(
        &self,
        slot: Arc<Slot<I>>,
        guard: OwnedMutexGuard<Option<I>>,
        permit: OwnedSemaphorePermit,
    ) -> Lease<I> {
        self.busy.fetch_add(1, Ordering::Relaxed);
        Lease {
            slot,
            guard,
            busy: self.busy.clone(),
            _permit: permit,
        }
    }

    fn find(&self, id: u64) -> Option<Arc<Slot<I>>> {
        self.slots.load().iter().find(|s| s.id == id).cloned()
    }

    fn try_idle(&self) -> Option<Held<I>> {
        self.slots
            .load()
            .iter()
            .filter(|s| s.usable())
            .find_map(|slot| {
                let guard = slot.live.clone().try_lock_owned().ok()?;
                Some((slot.clone(), guard))
            })
    }

    /// An idle usable instance, or a new slot. Holding a permit guarantees
    /// fewer than `max` leases exist, so one of the two is always possible
    /// once unhealthy idle instances are retired.
    fn idle_or_new(&self, metrics: &AgentMetrics) -> Held<I> {
        if let Some(found) = self.try_idle() {
            return found;
        }
        let _grow = self.grow.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = self.try_idle() {
            return found;
        }
        let current = self.slots.load_full();
        if current.len() >= self.settings.max {
            // Make room: retire idle instances that are unhealthy.
            for slot in current.iter().filter(|s| !s.usable()) {
                if let Ok(mut guard) = slot.live.clone().try_lock_owned() {
                    guard.take();
                    self.retire_locked(slot, Retire::Unhealthy, metrics);
                }
            }
        }
        let slot = Arc::new(Slot {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            live: Arc::new(Mutex::new(None)),
            health: HealthCell::new(self.health_threshold),
            uses: AtomicU64::new(0),
            retired: AtomicBool::new(false),
        });
        let guard = slot
            .live
            .clone()
            .try_lock_owned()
            .expect("a new slot is unlocked");
        self.slots.rcu(|slots| {
            let mut next = Vec::with_capacity(slots.len() + 1);
            next.extend(slots.iter().cloned());
            next.push(slot.clone());
            next
        });
        self.gauges(metrics);
        (slot, guard)
    }

    /// Updates the instance after a call and retires it when it must go.
    pub fn settle(&self, mut lease: Lease<I>, failure: Option<&CallError>, metrics: &AgentMetrics) {
        let slot = lease.slot.clone();
        let uses = slot.uses.fetch_add(1, Ordering::Relaxed) + 1;
        let retire = match failure {
            Some(
                CallError::Trap(_)
                | CallError::Deadline
                | CallError::MemoryLimit
                | CallError::Instantiate(_),
            ) => {
                // A trapped store cannot be entered again.
                lease.guard.take();
                slot.health.record(false);
                Some(Retire::Trap)
            }
            Some(CallError::Canceled) => {
                // Interrupted half-way: the store cannot be entered again,
                // but the instance did nothing wrong.
                lease.guard.take();
                Some(Retire::Abandoned)
            }
            other => {
                let ok = !matches!(
                    other,
                    Some(
                        CallError::Internal(_)
                            | CallError::Unavailable(_)
                            | CallError::InvalidResponse(_)
                            | CallError::InvalidVerdict(_)
                    )
                );
                slot.health.record(ok);
                let memory = lease.guard.as_ref().map_or(0, I::memory_bytes);
                metrics.instance_memory(memory);
                if uses >= self.settings.max_uses {
                    Some(Retire::Uses)
                } else if self.settings.max_memory.is_some_and(|cap| memory > cap) {
                    Some(Retire::Memory)
                } else {
                    None
                }
            }
        };
        if let Some(why) = retire {
            lease.guard.take();
            let _grow = self.grow.lock().unwrap_or_else(|e| e.into_inner());
            self.retire_locked(&slot, why, metrics);
        }
        drop(lease);
        self.gauges(metrics);
    }

    /// Removes a slot from the pool; the caller holds `grow`.
    fn retire_locked(&self, slot: &Arc<Slot<I>>, why: Retire, metrics: &AgentMetrics) {
        if slot.retired.swap(true, Ordering::AcqRel) {
            return;
        }
        metrics.retired(why);
        self.slots.rcu(|slots| {
            slots
                .iter()
                .filter(|s| s.id != slot.id)
                .cloned()
                .collect::<Vec<_>>()
        });
        tracing::debug!(instance = slot.id, reason = ?why, "instance retired");
    }

    fn gauges(&self, metrics: &AgentMetrics) {
        let live = self.slots.load().len();
        let busy = self.busy.load(Ordering::Relaxed).min(live);
        metrics.instances_live().set(live as f64);
        metrics.instances_idle().set((live - busy) as f64);
    }

    /// Retires every idle instance (an agent being unloaded); whether the
    /// pool is empty now (none was busy).
    pub fn retire_idle(&self, metrics: &AgentMetrics) -> bool {
        let _grow = self.grow.lock().unwrap_or_else(|e| e.into_inner());
        for slot in self.slots.load_full().iter() {
            if let Ok(mut guard) = slot.live.clone().try_lock_owned() {
                guard.take();
                self.retire_locked(slot, Retire::Idle, metrics);
            }
        }
        self.gauges(metrics);
        self.slots.load().is_empty()
    }

    /// Probes idle instances' `health` export; busy ones are skipped.
    pub async fn probe(&self, metrics: &AgentMetrics) {
        for slot in self.slots().iter() {
            let Ok(mut guard) = slot.live.clone().try_lock_owned() else {
                continue;
            };
            if guard.is_none() {
                continue;
            }
            let probed = tokio::task::spawn_blocking(move || {
                let ok = guard.as_mut().is_some_and(I::probe);
                (guard, ok)
            })
            .await;
            if let Ok((mut guard, ok)) = probed {
                slot.health.record(ok);
                if !ok && !slot.health.is_healthy() {
                    guard.take();
                    let _grow = self.grow.lock().unwrap_or_else(|e| e.into_inner());
                    self.retire_locked(slot, Retire::Unhealthy, metrics);
                }
            }
        }
        self.gauges(metrics);
    }
}

impl WarmPool<Live> {
    /// Runs one request on a leased instance, instantiating it first if it
    /// is new, and retires the instance when the call leaves it unusable,
    /// worn out or too big. The call runs on a fiber in this task; if the
    /// request is abandoned half-way the instance is marked and replaced at
    /// its next lease.
    pub async fn run(
        &self,
        mut lease: Lease,
        entry: &AgentEntry,
        req: &Request,
        metrics: &AgentMetrics,
    ) -> Result<Response, RouteError> {
        let result = call_on(&mut lease.guard, &entry.image, req, metrics).await;
        self.settle(lease, result.as_ref().err(), metrics);
        result.map_err(RouteError::Call)
    }
}

/// A warm call: instantiate when needed, then handle.
async fn call_on(
    live: &mut Option<Live>,
    image: &AgentImage,
    req: &Request,
    metrics: &AgentMetrics,
) -> Result<Response, CallError> {
    let instance = ensure_instance(live, || image.instantiate_async(), metrics).await?;
    let started = Instant::now();
    let result = instance.call_async(req).await;
    metrics
        .call_seconds()
        .record(started.elapsed().as_secs_f64());
    result
}

/// The slot's instance, made now when it has none or when its last call
/// was cut off half-way (such an instance cannot be entered again).
pub async fn ensure_instance<'a, I: Pooled, F>(
    live: &'a mut Option<I>,
    make: impl FnOnce() -> F,
    metrics: &AgentMetrics,
) -> Result<&'a mut I, CallError>
where
    F: Future<Output = Result<I, CallError>>,
{
    if live.as_ref().is_some_and(I::abandoned) {
        live.take();
        metrics.retired(Retire::Abandoned);
    }
    match live {
        Some(instance) => Ok(instance),
        None => {
            let started = Instant::now();
            let instance = live.insert(make().await?);
            metrics
                .instantiate_seconds()
                .record(started.elapsed().as_secs_f64());
            Ok(instance)
        }
    }
}
