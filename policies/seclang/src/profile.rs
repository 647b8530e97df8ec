//! Where a transaction's time goes, rule by rule (the `profile` feature,
//! for `examples/profile.rs`; never in the `waf` filter): each chain
//! starter's evaluations and the time they took, per thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

thread_local! {
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
