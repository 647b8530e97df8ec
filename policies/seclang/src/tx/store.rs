//! Where one transaction keeps its data: one byte arena that every
//! extracted value and every transformed value lives in (a value is an
//! offset and a length, so values are compared and cached by position,
//! never copied), the keyed collections, and the writable variables
//! (`TX`, `IP`, …) in insertion order.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::transform::{Mask, byte_mask};

/// A value in the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Str {
    pub off: u32,
    pub len: u32,
}

/// Append-only bytes of one transaction.
#[derive(Debug, Default)]
pub struct Arena {
    bytes: Vec<u8>,
}

impl Arena {
    /// An empty arena in `bytes`' memory.
    pub fn reusing(mut bytes: Vec<u8>) -> Arena {
        bytes.clear();
        Arena { bytes }
    }

    /// The arena's memory, for the next transaction.
    pub fn into_buffer(self) -> Vec<u8> {
        self.bytes
    }

    pub fn push(&mut self, b: &[u8]) -> Str {
        let off = self.bytes.len() as u32;
        self.bytes.extend_from_slice(b);
        Str {
            off,
            len: b.len() as u32,
        }
    }

    /// Appends what `write` writes.
    pub fn push_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> Str {
        let off = self.bytes.len() as u32;
        write(&mut self.bytes);
        Str {
            off,
            len: self.bytes.len() as u32 - off,
        }
    }

    pub fn get(&self, s: Str) -> &[u8] {
        &self.bytes[s.off as usize..(s.off + s.len) as usize]
    }
}

/// One keyed value of a collection, with the byte classes of its key and
/// value (what makes transformations skippable).
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub key: Str,
    pub value: Str,
    pub kmask: Mask,
    pub vmask: Mask,
}

/// A keyed collection extracted from the request or response.
#[derive(Debug, Default, Clone)]
pub struct Collection {
    pub entries: Vec<Entry>,
}

impl Collection {
    pub fn add(&mut self, arena: &mut Arena, key: &[u8], value: &[u8]) {
        let (key, value) = (arena.push(key), arena.push(value));
        self.add_decoded(arena, key, value);
    }

    /// Adds an entry whose key and value are in `arena` already.
    pub fn add_decoded(&mut self, arena: &Arena, key: Str, value: Str) {
        self.entries.push(Entry {
            key,
            value,
            kmask: byte_mask(arena.get(key)),
            vmask: byte_mask(arena.get(value)),
        });
    }

    /// The first value under `key` (compared without case).
    pub fn first(&self, arena: &Arena, key: &[u8]) -> Option<Str> {
        self.entries
            .iter()
            .find(|e| arena.get(e.key).eq_ignore_ascii_case(key))
            .map(|e| e.value)
    }
}

/// One variable of a [`Vars`]: its key as last written, its value, and
/// whether it is set in this transaction (and where in `order`).
#[derive(Debug, Default, Clone)]
struct Slot {
    key: Vec<u8>,
    value: Vec<u8>,
    live: bool,
    at: u32,
}

/// Variables a [`Vars`] keeps for the next transaction, unset: beyond
/// this many, it starts again empty (keys can come from requests).
const KEEP: usize = 512;

/// A writable collection (`TX`, `IP`, …): keys without case, in the order
/// first set. A transaction made from the [`super::Scratch`] of one before
/// finds the variables that one created unset, with their memory, so
/// that setting the same variables again (as CRS does on every request)
/// allocates nothing.
///
/// A rule set numbers the variables its rules name in their text
/// ([`Vars::preset`]): those have the first slots, in that order, so a
/// compiled rule reads and writes them by number, without hashing.
#[derive(Debug, Default, Clone)]
pub struct Vars {
    index: FxHashMap<Box<[u8]>, usize>,
    slots: Vec<Slot>,
    /// Slots in the order they were set; an entry whose slot was unset
    /// and set again since (its `at` moved on) is skipped.
    order: Vec<u32>,
    /// The names of the first slots, when preset.
    preset: Option<Arc<[Box<[u8]>]>>,
}

impl Vars {
    /// Gives `names` (lowercase, distinct) the first slots, unset, unless
    /// they have them already; anything else is forgotten then.
    pub fn preset(&mut self, names: &Arc<[Box<[u8]>]>) {
        if self.preset.as_ref().is_some_and(|p| Arc::ptr_eq(p, names)) {
            return;
        }
        *self = Vars::default();
        for (i, name) in names.iter().enumerate() {
            self.index.insert(name.clone(), i);
            self.slots.push(Slot {
                key: name.to_vec(),
                ..Slot::default()
            });
        }
        self.preset = Some(names.clone());
    }

    fn presets(&self) -> usize {
        self.preset.as_ref().map_or(0, |p| p.len())
    }

    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.value_at(self.find(key)?)
    }

    /// The slot of `key`, set or not: it stays `key`'s until
    /// [`Vars::unset_all`].
    pub fn find(&self, key: &[u8]) -> Option<u32> {
        with_lower(key, |k| self.index.get(k).map(|&i| i as u32))
    }

    /// The value in slot `i` (from [`Vars::find`]), if set.
    pub fn value_at(&self, i: u32) -> Option<&[u8]> {
        let slot = &self.slots[i as usize];
        slot.live.then_some(slot.value.as_slice())
    }

    /// The slot of `key`, set (appended to the order when it was not),
    /// its key as written now.
    fn slot(&mut self, key: &[u8]) -> &mut Slot {
        let i = match with_lower(key, |k| self.index.get(k).copied()) {
            Some(i) => i,
            None => {
                let i = self.slots.len();
                self.index
                    .insert(key.to_ascii_lowercase().into_boxed_slice(), i);
                self.slots.push(Slot::default());
                i
            }
        };
        self.slot_at(i, key)
    }

    /// Slot `i` (a preset one, or one [`Vars::find`] gave), set as
    /// [`Vars::slot`] sets it; `key` is its name as written now.
    fn slot_at(&mut self, i: usize, key: &[u8]) -> &mut Slot {
        let slot = &mut self.slots[i];
        if !slot.live {
            slot.live = true;
            slot.at = self.order.len() as u32;
            self.order.push(i as u32);
        }
        if slot.key != key {
            key.clone_into(&mut slot.key);
        }
        slot
    }

    pub fn set(&mut self, key: &[u8], value: Vec<u8>) {
        self.slot(key).value = value;
    }

    /// Sets `key` to a copy of `value`, in the buffer the variable had.
    pub fn set_bytes(&mut self, key: &[u8], value: &[u8]) {
        value.clone_into(&mut self.slot(key).value);
    }

    /// [`Vars::set_bytes`] of preset slot `i`, named `key` as written.
    pub fn set_bytes_at(&mut self, i: u32, key: &[u8], value: &[u8]) {
        value.clone_into(&mut self.slot_at(i as usize, key).value);
    }

    /// Unsets slot `i`.
    pub fn remove_at(&mut self, i: u32) {
        self.slots[i as usize].live = false;
    }

    pub fn remove(&mut self, key: &[u8]) {
        if let Some(i) = with_lower(key, |k| self.index.get(k).copied()) {
            self.slots[i].live = false;
        }
    }

    /// Every (key, value) set, in the order first set.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.order.iter().enumerate().filter_map(|(at, &i)| {
            let slot = &self.slots[i as usize];
            (slot.live && slot.at as usize == at).then_some((&slot.key[..], &slot.value[..]))
        })
    }

    /// Unsets every variable, keeping their memory for the next
    /// transaction (or only the preset ones, past [`KEEP`] more).
    pub fn unset_all(&mut self) {
        if self.slots.len() > self.presets() + KEEP {
            let preset = self.preset.take();
            *self = Vars::default();
            if let Some(names) = preset {
                self.preset(&names);
            }
            return;
        }
        for slot in &mut self.slots {
            slot.live = false;
        }
        self.order.clear();
    }
}

/// `f` of `key` in ASCII lowercase, on the stack when it is short (as
/// variable names are), so a lookup allocates nothing.
fn with_lower<R>(key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    let mut buf = [0u8; 64];
    match buf.get_mut(..key.len()) {
        Some(low) => {
            for (d, s) in low.iter_mut().zip(key) {
                *d = s.to_ascii_lowercase();
            }
            f(low)
        }
        None => f(&key.to_ascii_lowercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vars_keep_order_and_ignore_case() {
        let mut v = Vars::default();
        v.set(b"Score", b"1".to_vec());
        v.set(b"other", b"x".to_vec());
        v.set(b"SCORE", b"2".to_vec());
        assert_eq!(v.get(b"score"), Some(&b"2"[..]));
        let keys: Vec<_> = v.iter().map(|(k, _)| k.to_vec()).collect();
        assert_eq!(keys, [b"SCORE".to_vec(), b"other".to_vec()]);
        v.remove(b"score");
        assert_eq!(v.get(b"Score"), None);
        // Set again after removal: last in the order.
        v.set(b"score", b"3".to_vec());
        let keys: Vec<_> = v.iter().map(|(k, _)| k.to_vec()).collect();
        assert_eq!(keys, [b"other".to_vec(), b"score".to_vec()]);
    }

    #[test]
    fn vars_unset_for_the_next_transaction_read_as_new() {
        let mut v = Vars::default();
        v.set(b"a", b"1".to_vec());
        v.set(b"b", b"2".to_vec());
        v.unset_all();
        assert_eq!(v.get(b"a"), None);
        assert_eq!(v.iter().count(), 0);
        v.set_bytes(b"B", b"3");
        v.set_bytes(b"c", b"4");
        v.set_bytes(b"a", b"5");
        let all: Vec<_> = v.iter().map(|(k, x)| (k.to_vec(), x.to_vec())).collect();
        assert_eq!(
            all,
            [
                (b"B".to_vec(), b"3".to_vec()),
                (b"c".to_vec(), b"4".to_vec()),
                (b"a".to_vec(), b"5".to_vec())
            ]
        );
        // Past KEEP variables, nothing is kept.
        for i in 0..=KEEP {
            v.set_bytes(format!("k{i}").as_bytes(), b"x");
        }
        v.unset_all();
        assert!(v.slots.is_empty() && v.index.is_empty());
    }

    #[test]
    fn preset_variables_keep_their_numbers() {
        let names: Arc<[Box<[u8]>]> = [b"score".to_vec().into(), b"pl".to_vec().into()].into();
        let mut v = Vars::default();
        v.preset(&names);
        assert_eq!((v.find(b"SCORE"), v.find(b"pl")), (Some(0), Some(1)));
        assert_eq!((v.value_at(0), v.iter().count()), (None, 0));
        v.set_bytes_at(1, b"PL", b"2");
        v.set_bytes(b"Score", b"5");
        v.set_bytes(b"other", b"x");
        let all: Vec<_> = v.iter().map(|(k, x)| (k.to_vec(), x.to_vec())).collect();
        assert_eq!(
            all,
            [
                (b"PL".to_vec(), b"2".to_vec()),
                (b"Score".to_vec(), b"5".to_vec()),
                (b"other".to_vec(), b"x".to_vec())
            ]
        );
        v.remove_at(0);
        assert_eq!(v.get(b"score"), None);
        // Past KEEP variables beside them, only the preset ones are kept,
        // with their numbers; the same names again change nothing.
        for i in 0..=KEEP {
            v.set_bytes(format!("k{i}").as_bytes(), b"x");
        }
        v.unset_all();
        v.preset(&names);
        assert_eq!(v.slots.len(), 2);
        assert_eq!(
            (v.find(b"score"), v.find(b"pl"), v.find(b"other")),
            (Some(0), Some(1), None)
        );
        // Other names: the slots are theirs.
        v.preset(&[b"pl".to_vec().into()].into());
        assert_eq!((v.find(b"pl"), v.find(b"score")), (Some(0), None));
    }

    #[test]
    fn collections_find_keys_without_case() {
        let mut a = Arena::default();
        let mut c = Collection::default();
        c.add(&mut a, b"User-Agent", b"curl");
        assert_eq!(
            c.first(&a, b"user-agent").map(|s| a.get(s).to_vec()),
            Some(b"curl".to_vec())
        );
    }
}
