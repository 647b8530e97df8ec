//! Affinity pins: session key → warm instance id, in a sharded map with a
//! TTL and a capacity cap. Past the cap the least recently used of a sample
//! of pins is evicted (sampled LRU, as Redis does), so an insert never scans
//! the whole table. Lookups never hold a guard across an `.await`.

use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;

use super::clock::now_ms;

/// The instance id no instance has (pools number theirs from 1).
const NO_INSTANCE: u64 = 0;

/// How many pins an eviction looks at to pick the least recently used.
const EVICTION_SAMPLE: usize = 16;

struct Pin {
    instance: u64,
    last_seen_ms: AtomicU64,
}

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Pinned to this instance.
    Hit(u64),
    /// No pin (never pinned, expired, or evicted).
    Miss,
}

/// Session pins: which instance serves each session key, bounded in entries and age.
pub struct AffinityTable {
    pins: DashMap<String, Pin, ahash::RandomState>,
    ttl_ms: u64,
    capacity: usize,
}

impl AffinityTable {
    /// A table keeping pins for `ttl` unused, `capacity` at most.
    pub fn new(ttl: std::time::Duration, capacity: usize) -> Self {
        AffinityTable {
            pins: DashMap::with_hasher(ahash::RandomState::new()),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            capacity: capacity.max(1),
        }
    }

    /// The instance `key` is pinned to, refreshing the pin's age.
    #[inline]
    pub fn lookup(&self, key: &str) -> Lookup {
        let now = now_ms();
        let expired = match self.pins.get(key) {
            None => return Lookup::Miss,
            Some(pin) => {
                let seen = pin.last_seen_ms.load(Ordering::Relaxed);
                if now.saturating_sub(seen) <= self.ttl_ms {
                    // Write only when the coarse clock moved: a hot pin's
                    // cache line is not bounced between cores on every hit.
                    if seen != now {
                        pin.last_seen_ms.store(now, Ordering::Relaxed);
                    }
                    return Lookup::Hit(pin.instance);
                }
                true
            }
        };
        if expired {
            self.pins.remove(key);
        }
        Lookup::Miss
    }

    /// Pins `key` to `instance`; returns how many pins were evicted for room.
    pub fn pin(&self, key: &str, instance: u64) -> usize {
        let pin = Pin {
            instance,
            last_seen_ms: AtomicU64::new(now_ms()),
        };
        let replaced = self.pins.insert(key.to_string(), pin).is_some();
        if replaced || self.pins.len() <= self.capacity {
            return 0;
        }
        let mut evicted = 0;
        while self.pins.len() > self.capacity {
            match self.least_recent_sample(key) {
                Some(victim) => {
                    if self.pins.remove(&victim).is_some() {
                        evicted += 1;
                    }
                }
                None => break,
            }
        }
        evicted
    }

    /// Takes the sessions pinned in `old` (another version's table) as
    /// pins to no instance: their next lookup is a hit that finds no
    /// instance, so they are re-pinned and counted as such.
    pub fn carry_over(&self, old: &AffinityTable) {
        for pin in old.pins.iter() {
            if self.pins.len() >= self.capacity {
                break;
            }
            let seen = pin.last_seen_ms.load(Ordering::Relaxed);
            self.pins.insert(
                pin.key().clone(),
                Pin {
                    instance: NO_INSTANCE,
                    last_seen_ms: AtomicU64::new(seen),
                },
            );
        }
    }

    /// Forgets `key`'s pin.
    pub fn unpin(&self, key: &str) {
        self.pins.remove(key);
    }

    /// Drops expired pins; returns how many.
    pub fn sweep(&self) -> usize {
        let now = now_ms();
        let before = self.pins.len();
        self.pins.retain(|_, pin| {
            now.saturating_sub(pin.last_seen_ms.load(Ordering::Relaxed)) <= self.ttl_ms
        });
        before.saturating_sub(self.pins.len())
    }

    /// Pins held.
    pub fn len(&self) -> usize {
        self.pins.len()
    }

    /// Whether no pin is held.
    pub fn is_empty(&self) -> bool {
        self.pins.is_empty()
    }

    fn least_recent_sample(&self, keep: &str) -> Option<String> {
        // Start the sample at a pseudo-random shard so evictions spread out.
        let skip = (now_ms() as usize).wrapping_mul(2654435761) % self.pins.len().max(1);
        let mut best: Option<(u64, String)> = None;
        let sample = self
            .pins
            .iter()
            .skip(skip)
            .chain(self.pins.iter())
            .take(EVICTION_SAMPLE + 1);
        for entry in sample {
            if entry.key() == keep {
                continue;
            }
            let seen = entry.value().last_seen_ms.load(Ordering::Relaxed);
            if best.as_ref().is_none_or(|(oldest, _)| seen < *oldest) {
                best = Some((seen, entry.key().clone()));
            }
        }
        best.map(|(_, key)| key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn carried_over_pins_hit_no_instance() {
        let old = AffinityTable::new(Duration::from_secs(60), 10);
        old.pin("a", 3);
        old.pin("b", 4);
        let new = AffinityTable::new(Duration::from_secs(60), 1);
        new.carry_over(&old);
        assert_eq!(new.len(), 1, "the new table's capacity holds");
        let key = if new.lookup("a") == Lookup::Miss {
            "b"
        } else {
            "a"
        };
        assert_eq!(new.lookup(key), Lookup::Hit(NO_INSTANCE));
    }

    #[test]
    fn pins_hit_and_miss() {
        let t = AffinityTable::new(Duration::from_secs(60), 10);
        assert_eq!(t.lookup("a"), Lookup::Miss);
        assert_eq!(t.pin("a", 7), 0);
        assert_eq!(t.lookup("a"), Lookup::Hit(7));
        t.pin("a", 9);
        assert_eq!(t.lookup("a"), Lookup::Hit(9));
        t.unpin("a");
        assert_eq!(t.lookup("a"), Lookup::Miss);
    }

    #[test]
    fn pins_expire_after_the_ttl() {
        let t = AffinityTable::new(Duration::from_millis(20), 10);
        t.pin("a", 1);
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(t.lookup("a"), Lookup::Miss);
        assert!(t.is_empty(), "an expired pin is removed on lookup");
        t.pin("b", 1);
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(t.sweep(), 1);
    }

    #[test]
    fn the_cap_evicts_and_counts() {
        let t = AffinityTable::new(Duration::from_secs(60), 100);
        let mut evicted = 0;
        for i in 0..150 {
            evicted += t.pin(&format!("k{i}"), i);
        }
        assert_eq!(t.len(), 100);
        assert_eq!(evicted, 50);
        // The newest pin always survives its own insertion.
        assert_eq!(t.lookup("k149"), Lookup::Hit(149));
    }
}
