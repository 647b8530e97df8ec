//! A store's SQLite file: the lock beside it (`PATH.lock`: one Wharf
//! process at a time writes a store; the holder's pid is written in it so
//! a refusal can name it), opening it in WAL mode at a schema version this
//! build can read, and how its one writer thread takes work in batches.

use std::io::{Read, Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// Why a lock was not taken.
pub(crate) enum Locked {
    /// Another process holds it (its pid, when it said).
    Held(Option<u32>),
    /// The lock file cannot be made or locked.
    Io(std::io::Error),
}

/// Locks `PATH.lock` for this process. A lock this same process still
/// holds is one being closed (a restart within the process): it is waited
/// for, briefly.
pub(crate) fn lock(path: &Path) -> Result<std::fs::File, Locked> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&name)
        .map_err(Locked::Io)?;
    let patience = Instant::now() + Duration::from_secs(5);
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut said = String::new();
                let _ = file.rewind();
                let _ = file.read_to_string(&mut said);
                let holder: Option<u32> = said.trim().parse().ok();
                if holder == Some(std::process::id()) && Instant::now() < patience {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                return Err(Locked::Held(holder));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Locked::Io(e)),
        }
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "{}", std::process::id());
    Ok(file)
}

/// Opens the database at `path` for writing: refused when a newer build
/// wrote it (its `user_version` above `schema`), in WAL mode, with
/// `synchronous` as given. Errors are the reason, for the store's own
/// error type.
pub(crate) fn open_wal(
    path: &Path,
    schema: i64,
    synchronous: &str,
) -> Result<rusqlite::Connection, String> {
    let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if version > schema {
        return Err(format!(
            "it was written by a newer Wharf (schema {version}; this one knows {schema})"
        ));
    }
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("WAL mode is unavailable (got `{mode}`)"));
    }
    conn.pragma_update(None, "synchronous", synchronous)
        .and_then(|()| conn.busy_timeout(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    Ok(conn)
}

/// What a writer thread's wait for work gave.
pub(crate) enum Batch<T> {
    /// The ops queued, in order: one waited for, then those already there.
    Ops(Vec<T>),
    /// Nothing came within the wait.
    Idle,
    /// Every sender is gone.
    Closed,
}

/// Waits up to `idle` for an op, then takes what else is queued, `max`
/// in all at most (group commit: one transaction for them). While no op
/// taken is `waited` for, it keeps taking ops for up to `linger` after the
/// first: saves nobody waits for share a larger transaction, and the
/// first op someone waits for ends the wait.
///
/// While it lingers the thread sleeps parked, not in the queue's receive:
/// an op sent then wakes nobody (a wake-up per save, and the thread
/// switches it brings, cost each queued send tens of microseconds on two
/// cores), and the ops are taken when the linger ends. A sender of an op
/// someone waits for unparks the thread after sending it.
pub(crate) fn next_batch<T>(
    rx: &std::sync::mpsc::Receiver<T>,
    idle: Duration,
    max: usize,
    linger: Duration,
    waited: impl Fn(&T) -> bool,
) -> Batch<T> {
    use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
    let first = match rx.recv_timeout(idle) {
        Ok(op) => op,
        Err(RecvTimeoutError::Timeout) => return Batch::Idle,
        Err(RecvTimeoutError::Disconnected) => return Batch::Closed,
    };
    let until = Instant::now() + linger;
    let mut urgent = waited(&first);
    let mut ops = vec![first];
    while ops.len() < max {
        match rx.try_recv() {
            Ok(op) => {
                urgent |= waited(&op);
                ops.push(op);
                continue;
            }
            // Closed: commit what is here; the next call sees it.
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) if urgent => break,
            Err(TryRecvError::Empty) => {}
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::park_timeout(left);
    }
    Batch::Ops(ops)
}
