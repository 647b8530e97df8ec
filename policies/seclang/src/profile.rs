//! Where a transaction's time goes, rule by rule (the `profile` feature,
//! for `examples/profile.rs`; never in the `waf` filter): each chain
//! starter's evaluations and the time they took, per thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Counted work, by kind: calls and bytes.
#[derive(Debug, Clone, Copy)]
pub enum Work {
    Scan,
    Regex,
    Matched,
    Column,
    Lookup,
    /// Values and bytes the prefilter's automaton went through.
    Stepped,
}

thread_local! {
    static WORK: RefCell<[(u64, u64); 6]> = const { RefCell::new([(0, 0); 6]) };
    static TIMES: RefCell<HashMap<u32, (u64, Duration)>> = RefCell::new(HashMap::new());
}

/// Times one evaluation of a rule (its whole chain).
pub struct Timer {
    id: u32,
    started: Instant,
}

impl Timer {
    pub fn start(id: u32) -> Timer {
        Timer {
            id,
            started: Instant::now(),
        }
    }

    pub fn stop(self) {
        let spent = self.started.elapsed();
        TIMES.with(|t| {
            let mut t = t.borrow_mut();
            let e = t.entry(self.id).or_default();
            e.0 += 1;
            e.1 += spent;
        });
    }
}

/// Every rule evaluated on this thread so far: (id, evaluations, time),
/// the costliest first; the record is emptied.
pub fn take() -> Vec<(u32, u64, Duration)> {
    let mut out: Vec<_> = TIMES.with(|t| {
        t.borrow_mut()
            .drain()
            .map(|(id, (n, d))| (id, n, d))
            .collect()
    });
    out.sort_by_key(|&(id, _, d)| (std::cmp::Reverse(d), id));
    out
}

/// Counts one piece of work of `len` bytes.
pub fn count(w: Work, len: usize) {
    WORK.with(|c| {
        let mut c = c.borrow_mut();
        c[w as usize].0 += 1;
        c[w as usize].1 += len as u64;
    });
}

/// The work counted on this thread so far (calls, bytes), by kind; the
/// count is emptied.
pub fn take_work() -> [(u64, u64); 6] {
    WORK.with(|c| std::mem::take(&mut *c.borrow_mut()))
}
