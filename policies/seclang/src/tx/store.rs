//! Where one transaction keeps its data: one byte arena that every
//! extracted value and every transformed value lives in (a value is an
//! offset and a length, so values are compared and cached by position,
//! never copied), the keyed collections, and the writable variables
//! (`TX`, `IP`, …) in insertion order.

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
        let (kmask, vmask) = (byte_mask(key), byte_mask(value));
        let key = arena.push(key);
        let value = arena.push(value);
        self.entries.push(Entry {
            key,
            value,
            kmask,
            vmask,
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

/// One key of a [`Vars`] as first written, and its value.
type Slot = (Box<[u8]>, Vec<u8>);

/// A writable collection (`TX`, `IP`, …): keys without case, in the order
/// first set.
#[derive(Debug, Default, Clone)]
pub struct Vars {
    index: FxHashMap<Box<[u8]>, usize>,
    slots: Vec<Option<Slot>>,
}

impl Vars {
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let i = with_lower(key, |k| self.index.get(k).copied())?;
        self.slots[i].as_ref().map(|(_, v)| v.as_slice())
    }

    pub fn set(&mut self, key: &[u8], value: Vec<u8>) {
        match with_lower(key, |k| self.index.get(k).copied()) {
            Some(i) => match &mut self.slots[i] {
                Some((k, v)) => {
                    if **k != *key {
                        *k = key.into();
                    }
                    *v = value;
                }
                slot => *slot = Some((key.into(), value)),
            },
            None => {
                self.index.insert(
                    key.to_ascii_lowercase().into_boxed_slice(),
                    self.slots.len(),
                );
                self.slots.push(Some((key.into(), value)));
            }
        }
    }

    /// Sets `key` to a copy of `value`, in the buffer of the value it
    /// replaces when there is one.
    pub fn set_bytes(&mut self, key: &[u8], value: &[u8]) {
        match with_lower(key, |k| self.index.get(k).copied()) {
            Some(i) => match &mut self.slots[i] {
                Some((k, v)) => {
                    if **k != *key {
                        *k = key.into();
                    }
                    v.clear();
                    v.extend_from_slice(value);
                }
                slot => *slot = Some((key.into(), value.to_vec())),
            },
            None => self.set(key, value.to_vec()),
        }
    }

    pub fn remove(&mut self, key: &[u8]) {
        if let Some(i) = with_lower(key, |k| self.index.remove(k)) {
            self.slots[i] = None;
        }
    }

    /// Every (key as first written, value), in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.slots
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_ref(), v.as_slice()))
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
