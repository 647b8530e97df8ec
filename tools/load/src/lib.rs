//! Load drivers for Wharf, used by `scripts/` (the reliability suite and
//! the transport benchmarks, with large numbers) and by the integration
//! tests (the same code, with small numbers): steady load over HTTP or the
//! binary transport, connection floods, and RSS sampling.

pub mod binary;
pub mod flood;
pub mod load;

/// Resident memory of process `pid` in bytes (`VmRSS` in /proc).
pub fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
