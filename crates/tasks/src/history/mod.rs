//! Topic history: the messages of topics a `topic` block keeps, in their
//! own SQLite file (WAL, one writer thread committing queued appends in
//! batches), each with an id that only grows, so a client can read them
//! back by cursor, time and content and a watcher can resume after the
//! last id it saw.
//!
//! Ids are never reused, even after a crash lost appends that were queued
//! but not committed: a store opens at `max(last id + 1, now in µs)`.
//! Each message's time is never earlier than the one before it, so a time
//! range is an id range.

mod query;
mod writer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use rusqlite::{Connection, OpenFlags};

pub use query::{Kept, MAX_LIMIT, MAX_PAGE_BYTES, MAX_SCAN, Page, Query};
pub use wharf_config::TopicKeep;
use writer::{Op, Row, Writer};

/// The schema this build writes; a file with a higher version is refused.
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS messages (
    id           INTEGER PRIMARY KEY,
    keep         TEXT    NOT NULL,
    topic        TEXT    NOT NULL,
    published_ms INTEGER NOT NULL,
    hops         INTEGER NOT NULL,
    payload      BLOB    NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_keep ON messages (keep, id);
CREATE INDEX IF NOT EXISTS messages_by_topic ON messages (topic, id);
CREATE INDEX IF NOT EXISTS messages_by_time ON messages (published_ms);
CREATE TABLE IF NOT EXISTS trimmed (
    keep    TEXT    PRIMARY KEY,
    through INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cursors (
    subscriber TEXT    NOT NULL,
    pattern    TEXT    NOT NULL,
    acked      INTEGER NOT NULL,
    PRIMARY KEY (subscriber, pattern)
);
PRAGMA user_version = 1;
";

/// Most idle read connections kept, and most reads run at once (a read
/// may scan [`MAX_SCAN`] messages: more wait their turn rather than take
/// every core).
const MAX_READERS: usize = 4;

/// Payload bytes of pages read back that may be in memory at once, over
/// every read (clients' read-backs, resuming watchers, deliveries catching
/// up) until their answers are sent: a read waits for room first.
pub const READ_BUDGET: usize = 64 << 20;

/// A page's place in the read-back budget (see [`READ_BUDGET`]).
#[derive(Debug, Default)]
pub struct Hold(Option<tokio::sync::OwnedSemaphorePermit>);

impl Hold {
    /// The payload bytes held (in KiB, rounded up).
    pub fn kib(&self) -> usize {
        self.0.as_ref().map_or(0, |p| p.num_permits())
    }
}

/// Payload bytes queued for the writer at most, by default: past it a
/// publish to a kept topic is refused rather than held in memory.
pub const DEFAULT_MAX_BACKLOG: usize = 64 << 20;

/// Why the history refused or failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HistoryError {
    /// The file could not be opened or is not one Wharf can use.
    #[error("cannot open the topic history `{}`: {reason}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// Another process has the file open.
    #[error(
        "the topic history `{}` is in use by another Wharf process{}: give this one its own task store (`tasks {{ path \"…\" }}`, the history sits beside it) or stop the other",
        path.display(),
        holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Held {
        /// The file.
        path: PathBuf,
        /// The process holding it, when it said.
        holder: Option<u32>,
    },
    /// A read or write failed.
    #[error("topic history: {0}")]
    Database(String),
    /// The writer is behind by more than it may hold.
    #[error(
        "the topic history is {queued} bytes behind its disk (at most {max}): try again shortly"
    )]
    Backlog {
        /// Payload bytes queued.
        queued: usize,
        /// The most it holds.
        max: usize,
    },
    /// The history is closed.
    #[error("the topic history is closed")]
    Closed,
}

pub(crate) fn db(e: rusqlite::Error) -> HistoryError {
    HistoryError::Database(e.to_string())
}

/// Who gives the ids.
#[derive(Clone, Copy)]
enum Ids {
    /// This history: `max(last + 1, now in µs)` on open, then one more each.
    Own,
    /// A shared log this history copies ([`History::append_at`]).
    Given,
}

/// The next id to give and the time of the last message.
struct Tail {
    next: u64,
    last_ms: i64,
    tx: Sender<Op>,
}

/// Kept topic messages in one SQLite file.
pub struct History {
    path: PathBuf,
    tail: Mutex<Tail>,
    /// Payload bytes queued and not yet written.
    backlog: Arc<AtomicUsize>,
    max_backlog: usize,
    /// The highest id the writer has finished with (committed, or failed
    /// and logged).
    settled: tokio::sync::watch::Receiver<u64>,
    /// Per kept pattern, the highest id retention has deleted.
    trimmed: Arc<Mutex<HashMap<String, u64>>>,
    /// Per durable subscription (subscriber, pattern), the last id it
    /// acknowledged.
    cursors: Mutex<HashMap<(String, String), u64>>,
    /// Which shared log a copy holds (see [`History::start_over`]).
    origin: Mutex<Option<String>>,
    readers: Mutex<Vec<Connection>>,
    /// Permits for reads running at once.
    reading: tokio::sync::Semaphore,
    /// The read-back budget, in KiB of payload.
    budget: Arc<tokio::sync::Semaphore>,
    writer: Option<JoinHandle<()>>,
    /// Appends whose commit failed (each batch is also logged).
    pub failed_writes: Arc<AtomicU64>,
    _lock: std::fs::File,
}

impl History {
    /// Opens (creating when absent) the history at `path`, keeping what
    /// `keeps` lists; at most `max_backlog` payload bytes wait for the disk.
    pub fn open(
        path: &Path,
        keeps: Vec<TopicKeep>,
        max_backlog: usize,
    ) -> Result<History, HistoryError> {
        History::open_with(path, keeps, max_backlog, Ids::Own)
    }

    /// Opens the history at `path` as a copy of a shared log whose
    /// sequence numbers are the ids ([`History::append_at`]): a cluster's
    /// stream, which this node follows.
    pub fn open_copy(
        path: &Path,
        keeps: Vec<TopicKeep>,
        max_backlog: usize,
    ) -> Result<History, HistoryError> {
        History::open_with(path, keeps, max_backlog, Ids::Given)
    }

    fn open_with(
        path: &Path,
        keeps: Vec<TopicKeep>,
        max_backlog: usize,
        ids: Ids,
    ) -> Result<History, HistoryError> {
        let open_err = |reason: String| HistoryError::Open {
            path: path.to_path_buf(),
            reason,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| open_err(e.to_string()))?;
        }
        let lock = crate::dbfile::lock(path).map_err(|e| match e {
            crate::dbfile::Locked::Held(holder) => HistoryError::Held {
                path: path.to_path_buf(),
                holder,
            },
            crate::dbfile::Locked::Io(e) => open_err(format!("cannot make its lock file: {e}")),
        })?;
        let conn = crate::dbfile::open_wal(path, SCHEMA_VERSION, "NORMAL").map_err(open_err)?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| open_err(e.to_string()))?;
        let state = writer::State::load(&conn).map_err(|e| open_err(e.to_string()))?;
        let next = match ids {
            Ids::Own => (state.last_id + 1).max(now_micros()),
            Ids::Given => state.last_id + 1,
        };
        let trimmed = Arc::new(Mutex::new(state.trimmed.clone()));
        let cursors = Mutex::new(state.cursors.clone());
        let origin = Mutex::new(state.origin.clone());
        let (settled_tx, settled) = tokio::sync::watch::channel(next - 1);
        let backlog = Arc::new(AtomicUsize::new(0));
        let failed_writes = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel();
        let last_ms = state.last_ms;
        let writer = Writer {
            conn,
            keeps,
            counts: state.counts,
            trimmed: trimmed.clone(),
            settled: settled_tx,
            backlog: backlog.clone(),
            failed: failed_writes.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("wharf-topics-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| open_err(e.to_string()))?;
        Ok(History {
            path: path.to_path_buf(),
            tail: Mutex::new(Tail { next, last_ms, tx }),
            backlog,
            max_backlog,
            settled,
            trimmed,
            cursors,
            origin,
            readers: Mutex::new(Vec::new()),
            reading: tokio::sync::Semaphore::new(MAX_READERS),
            budget: Arc::new(tokio::sync::Semaphore::new(READ_BUDGET >> 10)),
            writer: Some(handle),
            failed_writes,
            _lock: lock,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues `payload`, published to `topic` and kept under the pattern
    /// `keep`; answers its id and time (ms since the epoch). The write is
    /// committed shortly after, with others queued meanwhile.
    pub fn append(
        &self,
        keep: &Arc<str>,
        topic: &str,
        payload: &Bytes,
        hops: u32,
    ) -> Result<(u64, i64), HistoryError> {
        self.queue(keep, topic, payload, hops, None)
    }

    /// Queues a message of the shared log this history copies, under the
    /// id and time the log gave it (a time earlier than the message
    /// before's is raised to it). Ids must grow: one at or below the last
    /// is refused.
    pub fn append_at(
        &self,
        keep: &Arc<str>,
        topic: &str,
        payload: &Bytes,
        hops: u32,
        (id, published_ms): (u64, i64),
    ) -> Result<(u64, i64), HistoryError> {
        self.queue(keep, topic, payload, hops, Some((id, published_ms)))
    }

    fn queue(
        &self,
        keep: &Arc<str>,
        topic: &str,
        payload: &Bytes,
        hops: u32,
        given: Option<(u64, i64)>,
    ) -> Result<(u64, i64), HistoryError> {
        let queued = self.backlog.load(Ordering::Relaxed);
        if queued + payload.len() > self.max_backlog {
            return Err(HistoryError::Backlog {
                queued,
                max: self.max_backlog,
            });
        }
        let mut tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        let (id, published_ms) = match given {
            Some((id, _)) if id < tail.next => {
                return Err(HistoryError::Database(format!(
                    "id {id} is not above the last kept ({})",
                    tail.next - 1
                )));
            }
            Some((id, ms)) => (id, ms.max(tail.last_ms)),
            None => (tail.next, now_ms().max(tail.last_ms)),
        };
        self.backlog.fetch_add(payload.len(), Ordering::Relaxed);
        let row = Row {
            id,
            keep: keep.clone(),
            topic: topic.into(),
            published_ms,
            hops,
            payload: payload.clone(),
        };
        if tail.tx.send(Op::Append(row)).is_err() {
            self.backlog.fetch_sub(payload.len(), Ordering::Relaxed);
            return Err(HistoryError::Closed);
        }
        tail.next = id + 1;
        tail.last_ms = published_ms;
        Ok((id, published_ms))
    }

    /// Which shared log this copy holds, as [`History::start_over`] last
    /// named it.
    pub fn origin(&self) -> Option<String> {
        self.origin
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Forgets every message and what retention deleted (not the durable
    /// cursors), and records that the copy now holds the shared log
    /// `origin`: a log made again, or one this copy never held.
    pub fn start_over(&self, origin: &str) -> Result<(), HistoryError> {
        let (tx, rx) = mpsc::sync_channel(1);
        {
            let mut tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
            let op = Op::StartOver(origin.to_string(), tx);
            tail.tx.send(op).map_err(|_| HistoryError::Closed)?;
            tail.next = 1;
            tail.last_ms = 0;
        }
        rx.recv().map_err(|_| HistoryError::Closed)??;
        *self.origin.lock().unwrap_or_else(|e| e.into_inner()) = Some(origin.to_string());
        Ok(())
    }

    /// Per kept pattern, the highest id retention has deleted.
    pub fn trimmed(&self) -> HashMap<String, u64> {
        self.trimmed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The last id given. (The first id a file gives is the time it was
    /// first opened, in µs since 1970; each message adds one.)
    pub fn last_id(&self) -> u64 {
        self.tail.lock().unwrap_or_else(|e| e.into_inner()).next - 1
    }

    /// The last id `subscriber` acknowledged of what `pattern` matches,
    /// if it ever did.
    pub fn cursor(&self, subscriber: &str, pattern: &str) -> Option<u64> {
        let cursors = self.cursors.lock().unwrap_or_else(|e| e.into_inner());
        cursors
            .get(&(subscriber.to_string(), pattern.to_string()))
            .copied()
    }

    /// Records that `subscriber` has everything `pattern` matches up to
    /// `id` (written with the next batch; a cursor never goes back).
    pub fn ack(&self, subscriber: &str, pattern: &str, id: u64) -> Result<(), HistoryError> {
        let key = (subscriber.to_string(), pattern.to_string());
        {
            let mut cursors = self.cursors.lock().unwrap_or_else(|e| e.into_inner());
            let at = cursors.entry(key.clone()).or_insert(id);
            *at = (*at).max(id);
        }
        self.send(Op::Ack(key.0, key.1, id))
    }

    /// Keeps what `keeps` lists from now on: messages kept under a pattern
    /// no longer listed are deleted at the next retention pass.
    pub fn set_keeps(&self, keeps: Vec<TopicKeep>) -> Result<(), HistoryError> {
        self.send(Op::Keeps(keeps))
    }

    /// Applies retention now; answers how many messages it deleted. The
    /// writer also applies it on its own, at least once a second.
    pub fn retain_now(&self) -> Result<u64, HistoryError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send(Op::Retain(tx))?;
        rx.recv().map_err(|_| HistoryError::Closed)?
    }

    /// The highest id retention deleted among the kept patterns for which
    /// `wanted` is true, when it is above `after`: what a reader resuming
    /// after `after` may have lost.
    pub fn lost_after(&self, after: u64, wanted: impl Fn(&str) -> bool) -> Option<u64> {
        let trimmed = self.trimmed.lock().unwrap_or_else(|e| e.into_inner());
        trimmed
            .iter()
            .filter(|(keep, through)| **through > after && wanted(keep))
            .map(|(_, through)| *through)
            .max()
    }

    /// Waits until every message given an id up to `id` is written (or
    /// its write has failed).
    pub async fn settled_through(&self, id: u64) -> Result<(), HistoryError> {
        let mut settled = self.settled.clone();
        settled
            .wait_for(|s| *s >= id)
            .await
            .map(|_| ())
            .map_err(|_| HistoryError::Closed)
    }

    /// Answers `query` over what is written, once every message published
    /// before the call is (reads never miss an answered publish). The page
    /// holds its payload's place in the read-back budget ([`READ_BUDGET`])
    /// until it is dropped; a read waits for room first.
    pub async fn read(self: &Arc<Self>, mut query: Query) -> Result<Page, HistoryError> {
        self.settled_through(self.last_id()).await?;
        // Room for the whole page in the budget first; what the page does
        // not use is given back once it is read.
        query.max_bytes = query.max_bytes.clamp(1, MAX_PAGE_BYTES);
        let room = query.max_bytes.div_ceil(1024) as u32;
        let mut held = self
            .budget
            .clone()
            .acquire_many_owned(room)
            .await
            .map_err(|_| HistoryError::Closed)?;
        let _turn = self
            .reading
            .acquire()
            .await
            .map_err(|_| HistoryError::Closed)?;
        let me = self.clone();
        let mut page = tokio::task::spawn_blocking(move || {
            let conn = me.reader()?;
            let page = query::run(&conn, &query);
            me.give_back(conn);
            page
        })
        .await
        .map_err(|_| HistoryError::Closed)??;
        // A single message past the page's bytes is answered alone: its
        // size is taken from the budget instead (what was held is given
        // back first, so that reads waiting for more never hold each other).
        let kib = page.bytes().div_ceil(1024).min(READ_BUDGET >> 10);
        if kib > held.num_permits() {
            drop(held);
            held = self
                .budget
                .clone()
                .acquire_many_owned(kib as u32)
                .await
                .map_err(|_| HistoryError::Closed)?;
        } else if let Some(unused) = held.split(held.num_permits() - kib) {
            drop(unused);
        }
        page.hold = Hold((held.num_permits() > 0).then_some(held));
        Ok(page)
    }

    fn send(&self, op: Op) -> Result<(), HistoryError> {
        let tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.tx.send(op).map_err(|_| HistoryError::Closed)
    }

    fn reader(&self) -> Result<Connection, HistoryError> {
        let pooled = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if let Some(conn) = pooled {
            return Ok(conn);
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags).map_err(db)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(db)?;
        Ok(conn)
    }

    fn give_back(&self, conn: Connection) {
        let mut idle = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_READERS {
            idle.push(conn);
        }
    }
}

impl Drop for History {
    /// Closes the queue and waits for the writer to commit what it holds.
    fn drop(&mut self) {
        let (closed, _) = mpsc::channel();
        let tail = self.tail.get_mut().unwrap_or_else(|e| e.into_inner());
        drop(std::mem::replace(&mut tail.tx, closed));
        if let Some(handle) = self.writer.take() {
            let _ = handle.join();
        }
    }
}

pub(crate) fn now_ms() -> i64 {
    crate::store::now_ms()
}

fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as u64)
}

#[cfg(test)]
mod tests;
