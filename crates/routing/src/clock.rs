//! A coarse process clock: milliseconds since start, advanced by one
//! background thread every few milliseconds, read with one atomic load.
//! Affinity TTLs and breaker cool-downs need no finer time than this.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const RESOLUTION: Duration = Duration::from_millis(5);

static NOW_MS: AtomicU64 = AtomicU64::new(0);
static STARTED: OnceLock<Instant> = OnceLock::new();

/// Milliseconds since the clock started; never goes backwards.
#[inline]
pub fn now_ms() -> u64 {
    start();
    NOW_MS.load(Ordering::Relaxed)
}

fn start() {
    STARTED.get_or_init(|| {
        let origin = Instant::now();
        let spawned = std::thread::Builder::new()
            .name("wharf-clock".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(RESOLUTION);
                    let ms = u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX);
                    NOW_MS.store(ms, Ordering::Relaxed);
                }
            });
        if let Err(err) = spawned {
            panic!("cannot start the clock thread: {err}");
        }
        origin
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_advances() {
        let a = now_ms();
        std::thread::sleep(Duration::from_millis(30));
        assert!(now_ms() > a);
    }
}
