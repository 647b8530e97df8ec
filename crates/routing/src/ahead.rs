//! Fresh instances made ahead of the requests that will use them
//! (`instances { ahead N }`), and used ones dropped after their answer has
//! left: both off the request's path.
//!
//! Each fresh request takes a ready instance when there is one (else it
//! instantiates its own, as without a stock), and after its call hands the
//! used instance to a task that drops it and fills the stock back up. So
//! the stock costs one instantiation per request, as before, plus the
//! `ahead` instances it holds; what moves is when the work happens: while
//! the answer is on its way, or while the agent is idle.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use wharf_core::metrics::AgentMetrics;
use wharf_runtime::Live;

use super::AgentCore;

/// Ready fresh instances of one agent, at most `want` of them.
pub struct FreshStock {
    ready: Mutex<Vec<Live>>,
    want: usize,
    /// Replacements being made now, counted so two tasks do not both fill
    /// the last place.
    making: AtomicUsize,
}

impl FreshStock {
    /// A stock of `want` instances; none when `want` is 0.
    pub fn new(want: usize) -> Option<Self> {
        (want > 0).then(|| FreshStock {
            ready: Mutex::new(Vec::with_capacity(want)),
            want,
            making: AtomicUsize::new(0),
        })
    }

    /// A ready instance, counted as a hit or a miss.
    pub fn take(&self, metrics: &AgentMetrics) -> Option<Live> {
        let live = self.lock().pop();
        match &live {
            Some(_) => metrics.ahead_hits().increment(1),
            None => metrics.ahead_misses().increment(1),
        }
        live
    }

    /// Instances ready now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no instance is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops `used` and fills the stock back up, on a task of its own so
    /// the caller's answer does not wait.
    pub fn after_call(core: Arc<AgentCore>, used: Option<Live>) {
        tokio::spawn(async move {
            drop(used);
            if let Some(stock) = &core.ahead {
                stock.top_up(&core).await;
            }
        });
    }

    /// Makes instances until ready and being-made ones reach `want`. A
    /// failure ends the round and is left for the requests to meet: they
    /// instantiate their own and report what went wrong.
    async fn top_up(&self, core: &AgentCore) {
        loop {
            let making = self.making.fetch_add(1, Ordering::AcqRel);
            let short = self.len() + making < self.want;
            let made = if short { self.make(core).await } else { None };
            let failed = short && made.is_none();
            if let Some(live) = made {
                self.lock().push(live);
            }
            self.making.fetch_sub(1, Ordering::AcqRel);
            let full = self.len() + self.making.load(Ordering::Acquire) >= self.want;
            if !short || failed || full {
                return;
            }
        }
    }

    async fn make(&self, core: &AgentCore) -> Option<Live> {
        let started = Instant::now();
        match core.entry.image.instantiate_ahead().await {
            Ok(live) => {
                core.metrics
                    .instantiate_seconds()
                    .record(started.elapsed().as_secs_f64());
                Some(live)
            }
            Err(err) => {
                let agent = &core.entry.origin.name;
                tracing::debug!(%agent, error = %err, "an instance made ahead failed");
                None
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Live>> {
        // A panic while holding the lock leaves a plain Vec: still usable.
        self.ready.lock().unwrap_or_else(|e| e.into_inner())
    }
}
