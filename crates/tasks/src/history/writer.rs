//! The history's one writing thread: it commits whatever appends are
//! queued in one transaction, tells readers how far it has written, and
//! applies each kept pattern's limits (messages and age), remembering the
//! highest id it deleted per pattern so a resuming reader can be told what
//! it lost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension, params};

use super::{HistoryError, TopicKeep, db, now_ms};

/// How often retention runs, busy or idle.
const RETENTION_EVERY: Duration = Duration::from_secs(1);

/// Appends committed in one transaction at most.
const BATCH_MAX: usize = 1024;

pub(crate) enum Op {
    Append(Row),
    /// A durable subscription's cursor: subscriber, pattern, id.
    Ack(String, String, u64),
    Keeps(Vec<TopicKeep>),
    Retain(SyncSender<Result<u64, HistoryError>>),
    /// Every message and trim forgotten; the copy now holds the log named.
    StartOver(String, SyncSender<Result<(), HistoryError>>),
}

/// One message to write.
pub(crate) struct Row {
    pub id: u64,
    pub keep: Arc<str>,
    pub topic: Box<str>,
    pub published_ms: i64,
    pub hops: u32,
    pub payload: Bytes,
}

/// What an opened file already holds.
pub(crate) struct State {
    pub last_id: u64,
    pub last_ms: i64,
    pub counts: HashMap<String, u64>,
    pub trimmed: HashMap<String, u64>,
    pub cursors: HashMap<(String, String), u64>,
    pub origin: Option<String>,
}

impl State {
    pub fn load(conn: &Connection) -> rusqlite::Result<State> {
        let last: Option<(i64, i64)> = conn
            .query_row(
                "SELECT id, published_ms FROM messages ORDER BY id DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let mut counts = HashMap::new();
        let mut stmt = conn.prepare("SELECT keep, COUNT(*) FROM messages GROUP BY keep")?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (keep, n) = row?;
            counts.insert(keep, n as u64);
        }
        let mut trimmed = HashMap::new();
        let mut stmt = conn.prepare("SELECT keep, through FROM trimmed")?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (keep, through) = row?;
            trimmed.insert(keep, through as u64);
        }
        let mut cursors = HashMap::new();
        let mut stmt = conn.prepare("SELECT subscriber, pattern, acked FROM cursors")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })?;
        for row in rows {
            let (subscriber, pattern, acked) = row?;
            cursors.insert((subscriber, pattern), acked as u64);
        }
        let origin = conn
            .query_row("SELECT value FROM meta WHERE key = 'origin'", [], |r| {
                r.get(0)
            })
            .optional()?;
        let (last_id, last_ms) = last.unwrap_or((0, 0));
        let last_trimmed = trimmed.values().copied().max().unwrap_or(0);
        Ok(State {
            last_id: (last_id as u64).max(last_trimmed),
            last_ms,
            counts,
            trimmed,
            cursors,
            origin,
        })
    }
}

pub(crate) struct Writer {
    pub conn: Connection,
    pub keeps: Vec<TopicKeep>,
    /// Messages written per kept pattern.
    pub counts: HashMap<String, u64>,
    pub trimmed: Arc<Mutex<HashMap<String, u64>>>,
    pub settled: tokio::sync::watch::Sender<u64>,
    pub backlog: Arc<AtomicUsize>,
    pub failed: Arc<AtomicU64>,
}

impl Writer {
    pub fn run(mut self, rx: Receiver<Op>) {
        let mut last_retention = Instant::now();
        loop {
            // No linger: a kept message is committed as soon as it comes.
            let batch =
                crate::dbfile::next_batch(&rx, RETENTION_EVERY, BATCH_MAX, Duration::ZERO, |_| {
                    true
                });
            let ops = match batch {
                crate::dbfile::Batch::Ops(ops) => ops,
                crate::dbfile::Batch::Idle => {
                    self.retain_logged();
                    last_retention = Instant::now();
                    continue;
                }
                crate::dbfile::Batch::Closed => break,
            };
            let mut rows = Vec::new();
            let mut acks = HashMap::new();
            let mut asked = Vec::new();
            for op in ops {
                match op {
                    Op::Append(row) => rows.push(row),
                    Op::Ack(subscriber, pattern, id) => {
                        let at = acks.entry((subscriber, pattern)).or_insert(id);
                        *at = (*at).max(id);
                    }
                    Op::Keeps(keeps) => self.keeps = keeps,
                    Op::Retain(tx) => asked.push(tx),
                    Op::StartOver(origin, tx) => {
                        // What came before it is written first.
                        self.write(&std::mem::take(&mut rows), &std::mem::take(&mut acks));
                        let _ = tx.send(self.start_over(&origin));
                    }
                }
            }
            if !rows.is_empty() || !acks.is_empty() {
                self.write(&rows, &acks);
            }
            let over = self
                .keeps
                .iter()
                .any(|k| self.counts.get(&k.pattern).copied().unwrap_or(0) > k.keep);
            if !asked.is_empty() {
                let result = self.retain();
                for tx in asked {
                    let _ = tx.send(result.clone());
                }
                last_retention = Instant::now();
            } else if over || last_retention.elapsed() >= RETENTION_EVERY {
                self.retain_logged();
                last_retention = Instant::now();
            }
        }
    }

    /// Writes `rows` in one transaction; readers learn how far it got
    /// whether or not it committed (a failed batch is logged and counted).
    fn write(&mut self, rows: &[Row], acks: &HashMap<(String, String), u64>) {
        let result = (|| -> rusqlite::Result<()> {
            let tx = self.conn.transaction()?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO messages (id, keep, topic, published_ms, hops, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                for row in rows {
                    insert.execute(params![
                        row.id as i64,
                        &*row.keep,
                        &*row.topic,
                        row.published_ms,
                        row.hops,
                        &row.payload[..]
                    ])?;
                }
                let mut ack = tx.prepare_cached(
                    "INSERT INTO cursors (subscriber, pattern, acked) VALUES (?1, ?2, ?3)
                     ON CONFLICT (subscriber, pattern) DO UPDATE SET acked = max(acked, excluded.acked)",
                )?;
                for ((subscriber, pattern), id) in acks {
                    ack.execute(params![subscriber, pattern, *id as i64])?;
                }
            }
            tx.commit()
        })();
        match result {
            Ok(()) => {
                for row in rows {
                    *self.counts.entry(row.keep.to_string()).or_default() += 1;
                }
            }
            Err(e) => {
                self.failed.fetch_add(rows.len() as u64, Ordering::Relaxed);
                tracing::error!(error = %e, messages = rows.len(), cursors = acks.len(), "topic history: a batch failed to commit; its messages were delivered but are not kept");
            }
        }
        let bytes: usize = rows.iter().map(|r| r.payload.len()).sum();
        self.backlog.fetch_sub(bytes, Ordering::Relaxed);
        if let Some(last) = rows.last() {
            self.settled.send_replace(last.id);
        }
    }

    fn start_over(&mut self, origin: &str) -> Result<(), HistoryError> {
        let tx = self.conn.transaction().map_err(db)?;
        tx.execute_batch("DELETE FROM messages; DELETE FROM trimmed;")
            .map_err(db)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('origin', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [origin],
        )
        .map_err(db)?;
        tx.commit().map_err(db)?;
        self.counts.clear();
        self.trimmed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.settled.send_replace(0);
        Ok(())
    }

    fn retain_logged(&mut self) {
        if let Err(e) = self.retain() {
            tracing::warn!(error = %e, "topic history: retention failed");
        }
    }

    /// Deletes, per kept pattern, the oldest messages past its `keep` and
    /// those older than its `for`; and every message kept under a pattern
    /// no longer listed. Answers how many it deleted.
    fn retain(&mut self) -> Result<u64, HistoryError> {
        let mut cuts: Vec<(String, u64)> = Vec::new();
        for (keep, count) in &self.counts {
            let Some(rule) = self.keeps.iter().find(|k| &k.pattern == keep) else {
                if *count > 0 {
                    cuts.push((keep.clone(), u64::MAX));
                }
                continue;
            };
            let mut cut = None;
            if *count > rule.keep {
                cut = self
                    .conn
                    .prepare_cached(
                        "SELECT id FROM messages WHERE keep = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2",
                    )
                    .and_then(|mut s| {
                        s.query_row(params![keep, rule.keep as i64], |r| r.get::<_, i64>(0))
                            .optional()
                    })
                    .map_err(db)?
                    .map(|id| id as u64);
            }
            if let Some(age) = rule.age {
                let before = now_ms() - age.as_millis() as i64;
                // Times only grow with ids: the first id at or after
                // `before` bounds the old ones.
                let first_young: Option<i64> = self
                    .conn
                    .prepare_cached(
                        "SELECT id FROM messages WHERE published_ms >= ?1 ORDER BY published_ms, id LIMIT 1",
                    )
                    .and_then(|mut s| s.query_row([before], |r| r.get(0)).optional())
                    .map_err(db)?;
                let old = first_young.map_or(u64::MAX, |id| (id as u64).saturating_sub(1));
                let oldest: Option<i64> = self
                    .conn
                    .prepare_cached("SELECT min(id) FROM messages WHERE keep = ?1")
                    .and_then(|mut s| s.query_row([keep], |r| r.get(0)))
                    .map_err(db)?;
                if oldest.is_some_and(|o| (o as u64) <= old) {
                    cut = Some(cut.unwrap_or(0).max(old));
                }
            }
            if let Some(cut) = cut {
                cuts.push((keep.clone(), cut));
            }
        }
        let mut deleted = 0;
        if cuts.is_empty() {
            return Ok(0);
        }
        let tx = self.conn.transaction().map_err(db)?;
        let mut done = Vec::new();
        for (keep, cut) in cuts {
            // The id deleted last, as the highest lost for this pattern.
            let through: Option<i64> = tx
                .query_row(
                    "SELECT max(id) FROM messages WHERE keep = ?1 AND id <= ?2",
                    params![keep, cut.min(i64::MAX as u64) as i64],
                    |r| r.get(0),
                )
                .map_err(db)?;
            let Some(through) = through else { continue };
            let n = tx
                .execute(
                    "DELETE FROM messages WHERE keep = ?1 AND id <= ?2",
                    params![keep, through],
                )
                .map_err(db)?;
            tx.execute(
                "INSERT INTO trimmed (keep, through) VALUES (?1, ?2)
                 ON CONFLICT (keep) DO UPDATE SET through = max(through, excluded.through)",
                params![keep, through],
            )
            .map_err(db)?;
            deleted += n as u64;
            done.push((keep, through as u64, n as u64));
        }
        tx.commit().map_err(db)?;
        let mut trimmed = self.trimmed.lock().unwrap_or_else(|e| e.into_inner());
        for (keep, through, n) in done {
            let count = self.counts.entry(keep.clone()).or_default();
            *count = count.saturating_sub(n);
            if *count == 0 && !self.keeps.iter().any(|k| k.pattern == keep) {
                self.counts.remove(&keep);
            }
            let was = trimmed.entry(keep).or_default();
            *was = (*was).max(through);
        }
        Ok(deleted)
    }
}
