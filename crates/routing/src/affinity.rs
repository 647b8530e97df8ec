//! Affinity pins: session key → warm instance id, bounded in entries and
//! age. The table is split in shards by the key's hash, each an LRU list
//! under its own lock: a lookup moves its pin to the recent end, and past a
//! shard's share of the capacity the least recently used pin goes, so an
//! insert costs the same whether the table holds ten pins or its cap.
//! Lookups never hold a lock across an `.await`.

use std::sync::{Mutex, MutexGuard};

use hashlink::LruCache;

use super::clock::now_ms;

/// The instance id no instance has (pools number theirs from 1).
const NO_INSTANCE: u64 = 0;

/// Most shards; a table has fewer when each would hold under
/// [`MIN_PER_SHARD`] pins, so a small cap is one exact LRU.
const MAX_SHARDS: usize = 16;
const MIN_PER_SHARD: usize = 256;

struct Pin {
    instance: u64,
    last_seen_ms: u64,
}

type Shard = LruCache<String, Pin, ahash::RandomState>;

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
    shards: Box<[Mutex<Shard>]>,
    /// Picks a key's shard.
    hasher: ahash::RandomState,
    ttl_ms: u64,
}

impl AffinityTable {
    /// A table keeping pins for `ttl` unused, `capacity` at most.
    pub fn new(ttl: std::time::Duration, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let count = (capacity / MIN_PER_SHARD).clamp(1, MAX_SHARDS);
        // A power of two, so a hash picks a shard with a mask.
        let count = 1 << count.ilog2();
        let shards = (0..count)
            .map(|i| {
                // The shares add up to `capacity` exactly.
                let share = capacity / count + usize::from(i < capacity % count);
                Mutex::new(LruCache::with_hasher(share, ahash::RandomState::new()))
            })
            .collect();
        AffinityTable {
            shards,
            hasher: ahash::RandomState::new(),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
        }
    }

    fn shard(&self, key: &str) -> MutexGuard<'_, Shard> {
        let hash = self.hasher.hash_one(key);
        // The high bits: the shard's own map indexes by the low ones of
        // its own hash, but keep the two apart all the same.
        let i = (hash >> 32) as usize & (self.shards.len() - 1);
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The instance `key` is pinned to, refreshing the pin's age.
    #[inline]
    pub fn lookup(&self, key: &str) -> Lookup {
        let now = now_ms();
        let mut shard = self.shard(key);
        let Some(pin) = shard.get_mut(key) else {
            return Lookup::Miss;
        };
        if now.saturating_sub(pin.last_seen_ms) <= self.ttl_ms {
            pin.last_seen_ms = now;
            return Lookup::Hit(pin.instance);
        }
        shard.remove(key);
        Lookup::Miss
    }

    /// Pins `key` to `instance`; returns how many pins were evicted for room.
    pub fn pin(&self, key: &str, instance: u64) -> usize {
        self.insert(key, instance, now_ms())
    }

    fn insert(&self, key: &str, instance: u64, last_seen_ms: u64) -> usize {
        let pin = Pin {
            instance,
            last_seen_ms,
        };
        let mut shard = self.shard(key);
        let held = shard.len();
        // A held key moves to the recent end; a new one past the shard's
        // share evicts its least recent pin, leaving the length as it was.
        let replaced = shard.insert(key.to_string(), pin).is_some();
        usize::from(!replaced && shard.len() == held)
    }

    /// Takes the sessions pinned in `old` (another version's table) as
    /// pins to no instance: their next lookup is a hit that finds no
    /// instance, so they are re-pinned and counted as such. Past this
    /// table's cap the most recently used are kept.
    pub fn carry_over(&self, old: &AffinityTable) {
        for shard in old.shards.iter() {
            // Least recent first, copied out so that no two locks are held.
            let pins: Vec<(String, u64)> = {
                let shard = shard.lock().unwrap_or_else(|e| e.into_inner());
                shard
                    .iter()
                    .map(|(key, pin)| (key.clone(), pin.last_seen_ms))
                    .collect()
            };
            for (key, seen) in pins {
                self.insert(&key, NO_INSTANCE, seen);
            }
        }
    }

    /// Forgets `key`'s pin.
    pub fn unpin(&self, key: &str) {
        self.shard(key).remove(key);
    }

    /// Drops expired pins; returns how many.
    pub fn sweep(&self) -> usize {
        let now = now_ms();
        let mut dropped = 0;
        for shard in self.shards.iter() {
            let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            let before = shard.len();
            shard.retain(|_, pin| now.saturating_sub(pin.last_seen_ms) <= self.ttl_ms);
            dropped += before - shard.len();
        }
        dropped
    }

    /// Pins held.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }

    /// Whether no pin is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    #[test]
    fn the_least_recently_used_pin_goes_first() {
        let t = AffinityTable::new(Duration::from_secs(60), 2);
        t.pin("a", 1);
        t.pin("b", 2);
        // `a` is used after `b` was pinned: `b` is now the least recent.
        assert_eq!(t.lookup("a"), Lookup::Hit(1));
        assert_eq!(t.pin("c", 3), 1);
        assert_eq!(t.lookup("b"), Lookup::Miss);
        assert_eq!(t.lookup("a"), Lookup::Hit(1));
        assert_eq!(t.lookup("c"), Lookup::Hit(3));
        // Re-pinning a held key evicts nothing.
        assert_eq!(t.pin("c", 4), 0);
        assert_eq!(t.lookup("c"), Lookup::Hit(4));
    }

    #[test]
    fn a_sharded_table_holds_its_cap_and_keeps_the_newest() {
        let cap = 10_000;
        let t = AffinityTable::new(Duration::from_secs(60), cap);
        assert!(t.shards.len() > 1, "a cap this large is sharded");
        let mut evicted = 0;
        for i in 0..3 * cap {
            evicted += t.pin(&format!("session-{i}"), i as u64 + 1);
        }
        assert_eq!(t.len(), cap, "the shards' shares add up to the cap");
        assert_eq!(evicted, 2 * cap, "every pin past the cap evicted one");
        // Each shard holds at least cap / 16 pins, so none of the newest
        // 100 can have been pushed out by newer ones.
        for i in 3 * cap - 100..3 * cap {
            let key = format!("session-{i}");
            assert_eq!(t.lookup(&key), Lookup::Hit(i as u64 + 1), "{key}");
        }
        assert_eq!(t.lookup("session-0"), Lookup::Miss);
    }
}
