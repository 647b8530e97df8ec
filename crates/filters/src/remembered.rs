//! Verdicts a filter asked the host to remember
//! (`filtering.remember-verdict`): an `allow` from `on-request-headers`
//! that depends on nothing but the values of some request headers, given
//! again without a call to a request with the same values until the time
//! the filter said. Bounded in entries, in the bytes of each key and
//! verdict, and in time; one per filter route, so a reload that changes the filter's
//! config starts an empty one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderName};
use wharf_core::verdict::{Audit, Decision, HeaderOp, Remember, Verdict};

/// Most verdicts one filter route keeps.
pub const MAX_REMEMBERED: usize = 1024;
/// Most bytes of header values one remembered verdict is keyed by; a
/// request with more is served by a call.
pub const MAX_KEY_BYTES: usize = 4096;
/// The longest a verdict is given again after it was remembered, whatever
/// the filter asked.
pub const MAX_REMEMBER_SECS: u64 = 300;
/// Most bytes of a kept verdict's header changes, metadata and audit: with
/// [`MAX_KEY_BYTES`] and [`MAX_REMEMBERED`], what a filter may make the
/// host hold is bounded (about 12 MiB per filter), whatever it asks.
pub const MAX_VERDICT_BYTES: usize = 8192;

/// The bytes of `v`'s parts a kept verdict holds.
fn verdict_bytes(v: &Verdict) -> usize {
    let op = |op: &HeaderOp| match op {
        HeaderOp::Set(n, v) | HeaderOp::Add(n, v) => n.as_str().len() + v.len(),
        HeaderOp::Remove(n) => n.as_str().len(),
    };
    let ops: usize = v.request_ops.iter().chain(&v.response_ops).map(op).sum();
    let metadata: usize = v.metadata.iter().map(|(k, v)| k.len() + v.len()).sum();
    let audit = &v.audit;
    let texts = audit
        .rule_ids
        .iter()
        .chain(&audit.tags)
        .map(String::len)
        .sum::<usize>();
    ops + metadata + texts + audit.reason.len()
}

/// One filter route's remembered verdicts.
#[derive(Default)]
pub struct Remembered {
    /// Set at the first verdict kept: until then a request takes no lock
    /// (most filters never ask).
    used: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The headers the kept verdicts are keyed by: the last ask's. An ask
    /// naming others empties the map.
    names: Vec<HeaderName>,
    entries: HashMap<Box<[u8]>, Kept>,
}

/// An `allow` verdict as given again.
struct Kept {
    until: u64,
    request_ops: Vec<HeaderOp>,
    response_ops: Vec<HeaderOp>,
    metadata: Vec<(String, String)>,
    want_body: bool,
    audit: Audit,
}

/// Seconds since the Unix epoch, the clock the guests' `until` is read on.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The key of `headers`' values of `names`: each value's length and
/// bytes, each header closed by a marker no length can be, so no two
/// different lists of values make the same key. `None` past
/// [`MAX_KEY_BYTES`].
fn key(names: &[HeaderName], headers: &HeaderMap) -> Option<Box<[u8]>> {
    let mut key = Vec::new();
    for name in names {
        for value in headers.get_all(name) {
            let bytes = value.as_bytes();
            key.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            key.extend_from_slice(bytes);
            if key.len() > MAX_KEY_BYTES {
                return None;
            }
        }
        key.extend_from_slice(&u32::MAX.to_le_bytes());
    }
    Some(key.into_boxed_slice())
}

impl Remembered {
    /// Whether a verdict was ever kept here.
    pub fn in_use(&self) -> bool {
        self.used.load(Ordering::Relaxed)
    }

    /// The verdict remembered for a request with `headers`, at `now`, if
    /// one is and has not expired.
    pub fn get(&self, headers: &HeaderMap, now: u64) -> Option<Verdict> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.entries.is_empty() {
            return None;
        }
        let key = key(&state.names, headers)?;
        let kept = state.entries.get(&key)?;
        if now >= kept.until {
            state.entries.remove(&key);
            return None;
        }
        let mut v = Verdict::allow();
        v.request_ops.clone_from(&kept.request_ops);
        v.response_ops.clone_from(&kept.response_ops);
        v.metadata.clone_from(&kept.metadata);
        v.want_body = kept.want_body;
        v.audit = kept.audit.clone();
        Some(v)
    }

    /// Keeps `v`, the verdict a call gave for a request with `headers`,
    /// when it asked to be remembered and may be: an `allow` that keeps
    /// the body, not yet expired, its key and its parts within bounds. When full,
    /// expired verdicts go first, then the one expiring soonest.
    pub fn put(&self, headers: &HeaderMap, v: &Verdict, now: u64) {
        let Some(Remember {
            headers: names,
            until,
        }) = &v.remember
        else {
            return;
        };
        let until = (*until).min(now.saturating_add(MAX_REMEMBER_SECS));
        if !matches!(v.decision, Decision::Allow)
            || v.body.is_some()
            || until <= now
            || verdict_bytes(v) > MAX_VERDICT_BYTES
        {
            return;
        }
        let Some(key) = key(names, headers) else {
            return;
        };
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.used.store(true, Ordering::Relaxed);
        if state.names != *names {
            state.entries.clear();
            state.names.clone_from(names);
        }
        if state.entries.len() >= MAX_REMEMBERED && !state.entries.contains_key(&key) {
            state.entries.retain(|_, kept| kept.until > now);
            if state.entries.len() >= MAX_REMEMBERED
                && let Some(soonest) = state
                    .entries
                    .iter()
                    .min_by_key(|(_, kept)| kept.until)
                    .map(|(k, _)| k.clone())
            {
                state.entries.remove(&soonest);
            }
        }
        state.entries.insert(
            key,
            Kept {
                until,
                request_ops: v.request_ops.clone(),
                response_ops: v.response_ops.clone(),
                metadata: v.metadata.clone(),
                want_body: v.want_body,
                audit: v.audit.clone(),
            },
        );
    }

    /// How many verdicts are kept (expired ones included until met).
    pub fn len(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entries
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn asked(names: &[&'static str], until: u64) -> Verdict {
        let mut v = Verdict::allow();
        v.metadata = vec![("auth.sub".into(), "alice".into())];
        v.request_ops = vec![HeaderOp::Remove(http::header::AUTHORIZATION)];
        v.remember = Some(Remember {
            headers: names.iter().map(|n| HeaderName::from_static(n)).collect(),
            until,
        });
        v
    }

    fn with(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_static(value));
        }
        h
    }

    #[test]
    fn a_verdict_is_given_again_for_the_same_values_until_it_expires() {
        let memo = Remembered::default();
        let token = with(&[("authorization", "Bearer a"), ("x-other", "1")]);
        memo.put(&token, &asked(&["authorization"], 110), 100);
        // Other headers do not count; the value does.
        let same = with(&[("authorization", "Bearer a"), ("x-other", "2")]);
        let again = memo.get(&same, 105).expect("remembered");
        assert_eq!(again.metadata, vec![("auth.sub".into(), "alice".into())]);
        assert_eq!(
            again.request_ops,
            vec![HeaderOp::Remove(http::header::AUTHORIZATION)]
        );
        assert!(again.remember.is_none());
        assert!(
            memo.get(&with(&[("authorization", "Bearer b")]), 105)
                .is_none()
        );
        assert!(memo.get(&HeaderMap::new(), 105).is_none());
        // Never at or past `until`, and never past 300 s from when kept.
        assert!(memo.get(&same, 110).is_none());
        assert_eq!(memo.len(), 0, "met expired, it is dropped");
        memo.put(&token, &asked(&["authorization"], u64::MAX), 100);
        assert!(memo.get(&token, 399).is_some());
        assert!(memo.get(&token, 400).is_none());
    }

    #[test]
    fn only_an_allow_that_keeps_the_body_and_asked_is_kept() {
        let memo = Remembered::default();
        let h = with(&[("authorization", "Bearer a")]);
        memo.put(&h, &Verdict::allow(), 100);
        let mut block = asked(&["authorization"], 200);
        block.decision = Decision::Block(wharf_core::request::Response::new(
            http::StatusCode::UNAUTHORIZED,
            HeaderMap::new(),
            bytes::Bytes::new(),
        ));
        memo.put(&h, &block, 100);
        let mut body = asked(&["authorization"], 200);
        body.body = Some(bytes::Bytes::from_static(b"x"));
        memo.put(&h, &body, 100);
        memo.put(&h, &asked(&["authorization"], 100), 100);
        // Nor one whose parts are past what the host keeps per verdict.
        let mut large = asked(&["authorization"], 200);
        large.metadata = (0..9)
            .map(|i| (format!("k{i}"), "v".repeat(1000)))
            .collect();
        memo.put(&h, &large, 100);
        assert_eq!(memo.len(), 0);
        large.metadata.pop();
        memo.put(&h, &large, 100);
        assert_eq!(memo.len(), 1, "8 KiB and less is kept");
    }

    #[test]
    fn values_are_keyed_apart_and_bounded() {
        let memo = Remembered::default();
        let names = ["authorization", "x-api-key"];
        // The same bytes split differently between two headers, or two
        // values of one, are different keys.
        let a = with(&[("authorization", "ab"), ("x-api-key", "c")]);
        let b = with(&[("authorization", "a"), ("x-api-key", "bc")]);
        let c = with(&[
            ("authorization", "a"),
            ("authorization", "b"),
            ("x-api-key", "c"),
        ]);
        memo.put(&a, &asked(&names, 200), 100);
        assert!(memo.get(&a, 101).is_some());
        assert!(memo.get(&b, 101).is_none());
        assert!(memo.get(&c, 101).is_none());
        // An ask keyed by other headers starts over.
        memo.put(&a, &asked(&["x-api-key"], 200), 100);
        assert_eq!(memo.len(), 1);
        assert!(memo.get(&b, 101).is_none());
        // Values past the key's bound are not kept.
        let mut long = HeaderMap::new();
        let value = HeaderValue::from_str(&"x".repeat(MAX_KEY_BYTES)).unwrap();
        long.insert("x-api-key", value);
        memo.put(&long, &asked(&["x-api-key"], 200), 100);
        assert_eq!(memo.len(), 1);
        // Full: the one expiring soonest makes room.
        let memo = Remembered::default();
        let key_of = |i: usize| {
            let mut h = HeaderMap::new();
            h.insert("x-api-key", HeaderValue::from(i));
            h
        };
        for i in 0..=MAX_REMEMBERED {
            let until = if i == 3 { 101 } else { 400 };
            memo.put(&key_of(i), &asked(&["x-api-key"], until), 100);
        }
        assert_eq!(memo.len(), MAX_REMEMBERED);
        assert!(memo.get(&key_of(3), 100).is_none(), "the soonest went");
        assert!(memo.get(&key_of(0), 100).is_some());
        assert!(memo.get(&key_of(MAX_REMEMBERED), 100).is_some());
    }
}
