//! The range every number, size and duration in `wharf.kdl` must fall in,
//! by node name. A configuration `wharf check` accepts must start and
//! serve: a value that would overflow a timer, exhaust memory at start or
//! make every instance fail is refused here, with its range, instead.

use std::time::Duration;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const MS: Duration = Duration::from_millis(1);
const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}
const HOUR: Duration = secs(3600);
const DAY: Duration = secs(86_400);

/// Whole numbers, by node name.
const COUNTS: &[(&str, u64, u64)] = &[
    ("concurrency", 1, 65_536),
    ("retries", 0, 10),
    ("connections", 1, 1_000_000),
    ("streams", 1, 1_000_000),
    ("streams-per-client", 1, 1_000_000),
    ("in-flight", 1, 4096),
    // Each reserves about 8 GiB of address space (two 4 GiB memory
    // slots): 8,192 is 64 TiB of the 128 TiB a 47-bit process has.
    ("instance-slots", 16, 8_192),
    ("max", 1, 1024),
    ("max-uses", 1, 1_000_000_000_000),
    ("queue", 0, 65_536),
    ("ahead", 0, 64),
    ("unhealthy-after", 1, 1000),
    ("failures", 1, 10_000),
    ("capacity", 1, 10_000_000),
    ("requests", 1, 1_000_000_000),
    ("burst", 1, 1_000_000_000),
    ("attempts", 1, 100),
    ("max-configs", 1, 1_000_000),
    ("max-tasks", 1, 1_000_000_000),
    ("max-open-per-owner", 1, 1_000_000_000),
    ("call-depth", 1, 64),
    ("max-hops", 1, 64),
    ("keep", 1, 100_000_000),
];

/// Sizes in bytes, by node name. Linear memory is 32-bit: 4 GiB at most.
const SIZES: &[(&str, u64, u64)] = &[
    ("memory", 64 * KIB, 4 * GIB),
    ("max-memory", 64 * KIB, 4 * GIB),
    ("request-body", 0, GIB),
    ("response-body", 0, GIB),
    ("body-limit", 0, GIB),
    ("max-body", 0, GIB),
    ("queue-bytes", KIB, GIB),
    ("max-payload", 1, GIB),
    ("component-size", KIB, GIB),
    ("idle-memory", 0, 64 * GIB),
    ("max-frame", 64, GIB),
    // hyper needs at least 8 KiB to read a request head.
    ("max-head", 8 * KIB, MIB),
];

/// Durations, by node name.
const DURATIONS: &[(&str, Duration, Duration)] = &[
    ("deadline", MS, HOUR),
    // A request head needs time to arrive at all.
    ("header-timeout", Duration::from_millis(100), HOUR),
    ("request-timeout", MS, DAY),
    ("shutdown-grace", MS, HOUR),
    ("max-waiting", MS, secs(3650 * 86_400)),
    ("write-timeout", Duration::from_millis(100), HOUR),
    ("frame-timeout", MS, HOUR),
    ("interval", Duration::from_millis(10), DAY),
    ("idle-interval", Duration::from_millis(10), DAY),
    ("unload-after", secs(1), secs(3650 * 86_400)),
    ("cool-down", MS, DAY),
    ("ttl", MS, secs(30 * 86_400)),
    ("per", MS, DAY),
    ("timeout", MS, HOUR),
    ("backoff", MS, HOUR),
    ("max-age", secs(1), secs(3650 * 86_400)),
    ("pin-ttl", secs(1), secs(30 * 86_400)),
    ("heartbeat", Duration::from_millis(50), secs(60)),
    ("forward-timeout", MS, DAY),
    ("for", secs(1), secs(3650 * 86_400)),
];

fn find<T: Copy>(table: &[(&str, T, T)], key: &str) -> (T, T) {
    table
        .iter()
        .find(|(name, ..)| *name == key)
        .map(|&(_, lo, hi)| (lo, hi))
        .unwrap_or_else(|| panic!("`{key}` has no bounds in config/bounds.rs"))
}

/// `n` if `key`'s range holds it, else why not.
pub(super) fn count(key: &str, n: u64) -> Result<u64, String> {
    let (lo, hi) = find(COUNTS, key);
    match n {
        n if n < lo => Err(format!("`{key}` must be at least {lo}, found {n}")),
        n if n > hi => Err(format!("`{key}` must be at most {hi}, found {n}")),
        n => Ok(n),
    }
}

/// `bytes` if `key`'s range holds it, else why not.
pub(super) fn size(key: &str, bytes: u64) -> Result<u64, String> {
    let (lo, hi) = find(SIZES, key);
    let show = super::format_size;
    match bytes {
        n if n < lo => Err(format!(
            "`{key}` must be at least {}, found {}",
            show(lo),
            show(n)
        )),
        n if n > hi => Err(format!(
            "`{key}` must be at most {}, found {}",
            show(hi),
            show(n)
        )),
        n => Ok(n),
    }
}

/// `d` if `key`'s range holds it, else why not.
pub(super) fn duration(key: &str, d: Duration) -> Result<Duration, String> {
    let (lo, hi) = find(DURATIONS, key);
    match d {
        d if d < lo => Err(format!("`{key}` must be at least {lo:?}, found {d:?}")),
        d if d > hi => Err(format!("`{key}` must be at most {hi:?}, found {d:?}")),
        d => Ok(d),
    }
}

/// Every bounded node with its extreme values as KDL text (for tests that
/// check that such configurations start and serve).
pub fn extremes() -> Vec<(&'static str, String, String)> {
    let counts = COUNTS
        .iter()
        .map(|&(k, lo, hi)| (k, lo.to_string(), hi.to_string()));
    let sizes = SIZES
        .iter()
        .map(|&(k, lo, hi)| (k, lo.to_string(), hi.to_string()));
    let ms = |d: Duration| format!("\"{}ms\"", d.as_millis());
    let durations = DURATIONS
        .iter()
        .map(move |&(k, lo, hi)| (k, ms(lo), ms(hi)));
    counts.chain(sizes).chain(durations).collect()
}
