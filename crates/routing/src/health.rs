//! The health cache and the circuit breaker: atomics written by request
//! outcomes and probes, read on the hot path without locks.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use super::clock::now_ms;

/// Consecutive-failure health of one instance or one agent.
#[derive(Debug)]
pub struct HealthCell {
    failures: AtomicU32,
    threshold: u32,
}

impl HealthCell {
    /// Healthy until `threshold` calls in a row fail.
    pub fn new(threshold: u32) -> Self {
        HealthCell {
            failures: AtomicU32::new(0),
            threshold: threshold.max(1),
        }
    }

    /// One relaxed load: the hot-path read.
    #[inline]
    pub fn is_healthy(&self) -> bool {
        self.failures.load(Ordering::Relaxed) < self.threshold
    }

    /// Records a call's outcome.
    pub fn record(&self, ok: bool) {
        if ok {
            self.failures.store(0, Ordering::Relaxed);
        } else {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Failures in a row since the last success.
    pub fn consecutive_failures(&self) -> u32 {
        self.failures.load(Ordering::Relaxed)
    }
}

/// Breaker states, as stored and as exported in metrics (0, 1, 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls go through.
    Closed = 0,
    /// Calls are refused until the cool-down ends.
    Open = 1,
    /// One trial call goes through.
    HalfOpen = 2,
}

impl BreakerState {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => BreakerState::Open,
            2 => BreakerState::HalfOpen,
            _ => BreakerState::Closed,
        }
    }

    /// The state's name in listings.
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        }
    }
}

/// Closed → open after `threshold` consecutive failures → half-open after
/// `cool_down`, letting exactly one trial request through → closed when it
/// succeeds, open again when it fails (or is abandoned).
#[derive(Debug)]
pub struct CircuitBreaker {
    state: AtomicU8,
    failures: AtomicU32,
    opened_at_ms: AtomicU64,
    trial_in_flight: AtomicBool,
    threshold: u32,
    cool_down_ms: u64,
}

/// Permission to send one request; report its outcome with [`Admission::finish`].
/// Dropping a trial admission unfinished counts as a failure, so an
/// abandoned trial cannot leave the breaker half-open forever.
#[derive(Debug)]
pub struct Admission<'a> {
    breaker: &'a CircuitBreaker,
    trial: bool,
    finished: bool,
}

impl CircuitBreaker {
    /// Opens after `threshold` failures in a row, for `cool_down`.
    pub fn new(threshold: u32, cool_down: Duration) -> Self {
        CircuitBreaker {
            state: AtomicU8::new(BreakerState::Closed as u8),
            failures: AtomicU32::new(0),
            opened_at_ms: AtomicU64::new(0),
            trial_in_flight: AtomicBool::new(false),
            threshold: threshold.max(1),
            cool_down_ms: u64::try_from(cool_down.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The breaker's state now.
    pub fn state(&self) -> BreakerState {
        BreakerState::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Admits a request, or says how long until the breaker may let one through.
    pub fn admit(&self) -> Result<Admission<'_>, Duration> {
        match self.state() {
            BreakerState::Closed => Ok(self.admission(false)),
            BreakerState::Open => {
                let waited = now_ms().saturating_sub(self.opened_at_ms.load(Ordering::Acquire));
                if waited < self.cool_down_ms {
                    return Err(Duration::from_millis(self.cool_down_ms - waited));
                }
                self.try_trial()
            }
            BreakerState::HalfOpen => self.try_trial(),
        }
    }

    fn try_trial(&self) -> Result<Admission<'_>, Duration> {
        if self
            .trial_in_flight
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.state
                .store(BreakerState::HalfOpen as u8, Ordering::Release);
            Ok(self.admission(true))
        } else {
            // Another request is the trial: fail fast until it reports.
            Err(Duration::from_millis(self.cool_down_ms.clamp(1, 1000)))
        }
    }

    fn admission(&self, trial: bool) -> Admission<'_> {
        Admission {
            breaker: self,
            trial,
            finished: false,
        }
    }

    fn record(&self, trial: bool, ok: bool) {
        if ok {
            self.failures.store(0, Ordering::Relaxed);
            if trial {
                self.state
                    .store(BreakerState::Closed as u8, Ordering::Release);
                self.trial_in_flight.store(false, Ordering::Release);
            }
            return;
        }
        let failures = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
        if trial || failures >= self.threshold {
            self.opened_at_ms.store(now_ms(), Ordering::Release);
            self.state
                .store(BreakerState::Open as u8, Ordering::Release);
            if trial {
                self.trial_in_flight.store(false, Ordering::Release);
            }
        }
    }
}

impl Admission<'_> {
    pub fn finish(mut self, ok: bool) {
        self.finished = true;
        self.breaker.record(self.trial, ok);
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if !self.finished && self.trial {
            self.breaker.record(true, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_turns_after_threshold_and_recovers() {
        let h = HealthCell::new(2);
        h.record(false);
        assert!(h.is_healthy());
        h.record(false);
        assert!(!h.is_healthy());
        h.record(true);
        assert!(h.is_healthy());
    }

    #[test]
    fn breaker_opens_then_half_opens_then_closes() {
        let b = CircuitBreaker::new(2, Duration::from_millis(30));
        b.admit().unwrap().finish(false);
        assert_eq!(b.state(), BreakerState::Closed);
        b.admit().unwrap().finish(false);
        assert_eq!(b.state(), BreakerState::Open);
        assert!(b.admit().is_err());
        std::thread::sleep(Duration::from_millis(60));
        let trial = b.admit().expect("half-open lets one trial through");
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.admit().is_err(), "only one trial at a time");
        trial.finish(true);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn a_failed_or_abandoned_trial_reopens() {
        let b = CircuitBreaker::new(1, Duration::from_millis(20));
        b.admit().unwrap().finish(false);
        std::thread::sleep(Duration::from_millis(40));
        b.admit().unwrap().finish(false);
        assert_eq!(b.state(), BreakerState::Open);
        std::thread::sleep(Duration::from_millis(40));
        drop(b.admit().unwrap());
        assert_eq!(b.state(), BreakerState::Open);
        assert!(b.admit().is_err());
    }
}
