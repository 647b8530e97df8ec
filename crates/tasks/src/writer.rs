//! The task store's one writing thread: it commits whatever saves are
//! queued in one transaction (group commit), settles each save after its
//! commit, applies retention, and keeps the per-agent, per-state task
//! counts (per agent and owner) that answer a list's `totalSize` without
//! counting rows.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use crate::store::{Live, now_ms};
use crate::store::{Retention, StoreError, key};
use wharf_a2a_model::TaskState;

/// How often the writer applies retention, busy or idle.
const RETENTION_EVERY: Duration = Duration::from_secs(1);

const UPSERT: &str = "
INSERT INTO tasks (agent, id, context_id, state, updated_ms, body, owner)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (agent, id) DO UPDATE SET
    context_id = excluded.context_id, state = excluded.state,
    updated_ms = excluded.updated_ms, body = excluded.body";

/// Committed tasks per scope (`key(agent, owner)`), by state number.
pub(crate) type Counts = DashMap<String, [u64; TaskState::ALL.len()]>;

pub(crate) enum Op {
    Put(Put),
    Push(PushOp),
    Sync(SyncSender<()>),
    Retain(SyncSender<Result<u64, StoreError>>),
}

pub(crate) struct Put {
    pub key: String,
    pub seq: u64,
    pub agent: String,
    pub id: String,
    pub owner: String,
    pub context_id: String,
    pub state: i64,
    pub terminal: bool,
    pub updated_ms: i64,
    pub body: Vec<u8>,
    pub done: Option<oneshot::Sender<Result<(), StoreError>>>,
}

impl Op {
    /// Whether someone waits for this op to be committed or done.
    pub(crate) fn waited(&self) -> bool {
        match self {
            Op::Put(put) => put.done.is_some(),
            Op::Push(push) => push.done.is_some(),
            Op::Sync(_) | Op::Retain(_) => true,
        }
    }
}

/// A push config written (`body`) or deleted (`None`).
pub(crate) struct PushOp {
    pub agent: String,
    pub task_id: String,
    pub id: String,
    pub body: Option<Vec<u8>>,
    pub done: Option<oneshot::Sender<Result<(), StoreError>>>,
}

const PUT_PUSH: &str = "
INSERT INTO push_configs (agent, task_id, id, body) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (agent, task_id, id) DO UPDATE SET body = excluded.body";

const DELETE_PUSH: &str = "DELETE FROM push_configs WHERE agent = ?1 AND task_id = ?2 AND id = ?3";

/// Push configs whose task is gone (deleted by retention).
const ORPHAN_PUSH: &str = "DELETE FROM push_configs WHERE NOT EXISTS \
    (SELECT 1 FROM tasks t WHERE t.agent = push_configs.agent AND t.id = push_configs.task_id)";

/// Retention's deletes. Each reads one of the partial indexes of the
/// finished and the waiting tasks by age (`SCHEMA`), so a pass costs what
/// it deletes, not the table's size; their conditions must stay the
/// indexes' own (`store::WAITING`, `store::TERMINAL`), which
/// `tests::retention_reads_its_indexes` checks.
const RETAIN_WAITING: &str = "DELETE FROM tasks WHERE state IN (6, 8) AND updated_ms < ?1 \
    RETURNING agent, owner, state, id";
const RETAIN_AGE: &str = "DELETE FROM tasks WHERE state IN (3, 4, 5, 7) AND updated_ms < ?1 \
    RETURNING agent, owner, state, id";
const RETAIN_COUNT: &str = "DELETE FROM tasks WHERE rowid IN (SELECT rowid FROM tasks \
    WHERE state IN (3, 4, 5, 7) ORDER BY updated_ms, rowid LIMIT ?1) \
    RETURNING agent, owner, state, id";

/// Counts of the tasks in `conn`, as [`Counts`].
pub(crate) fn count_tasks(conn: &Connection) -> rusqlite::Result<Counts> {
    let counts = Counts::new();
    let mut stmt = conn
        .prepare("SELECT agent, owner, state, COUNT(*) FROM tasks GROUP BY agent, owner, state")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })?;
    for row in rows {
        let (agent, owner, state, n) = row?;
        if let Some(slot) = usize::try_from(state)
            .ok()
            .filter(|s| *s < TaskState::ALL.len())
        {
            counts.entry(key(&agent, &owner)).or_default()[slot] += n as u64;
        }
    }
    Ok(counts)
}

fn adjust(counts: &Counts, scope: &str, state: i64, up: bool) {
    let Some(slot) = usize::try_from(state)
        .ok()
        .filter(|s| *s < TaskState::ALL.len())
    else {
        return;
    };
    let mut entry = counts.entry(scope.to_string()).or_default();
    entry[slot] = if up {
        entry[slot] + 1
    } else {
        entry[slot].saturating_sub(1)
    };
}

pub(crate) struct Writer {
    pub conn: Connection,
    pub live: Arc<Live>,
    pub counts: Arc<Counts>,
    pub pending: Arc<AtomicU64>,
    pub retention: Retention,
    pub batch_max: usize,
    pub linger: Duration,
    pub failed: Arc<AtomicU64>,
    /// Transactions committed.
    pub commits: Arc<AtomicU64>,
}

impl Writer {
    pub fn run(mut self, rx: Receiver<Op>) {
        let mut last_retention = Instant::now();
        loop {
            // Idle, it still wakes to apply retention.
            let batch = crate::dbfile::next_batch(
                &rx,
                RETENTION_EVERY,
                self.batch_max,
                self.linger,
                Op::waited,
            );
            let ops = match batch {
                crate::dbfile::Batch::Ops(ops) => ops,
                crate::dbfile::Batch::Idle => {
                    if self.retention.any() {
                        if let Err(e) = self.retain() {
                            tracing::warn!(error = %e, "task store: retention failed");
                        }
                        last_retention = Instant::now();
                    }
                    continue;
                }
                crate::dbfile::Batch::Closed => break,
            };
            let result = self.commit(&ops);
            if let Err(e) = &result {
                tracing::error!(error = %e, writes = ops.len(), "task store: a batch failed to commit");
            }
            for op in ops {
                match op {
                    Op::Put(put) => self.settle(put, &result),
                    Op::Push(push) => {
                        self.pending.fetch_sub(1, Ordering::AcqRel);
                        if let Some(done) = push.done {
                            let _ = done.send(result.clone());
                        }
                    }
                    Op::Sync(tx) => {
                        let _ = tx.send(());
                    }
                    Op::Retain(tx) => {
                        let _ = tx.send(self.retain());
                        last_retention = Instant::now();
                    }
                }
            }
            let wanted = self.retention.any();
            if wanted && last_retention.elapsed() >= RETENTION_EVERY {
                if let Err(e) = self.retain() {
                    tracing::warn!(error = %e, "task store: retention failed");
                }
                last_retention = Instant::now();
            }
        }
    }

    /// Writes every save of `ops` in one transaction; the counts change
    /// only once it is committed.
    fn commit(&mut self, ops: &[Op]) -> Result<(), StoreError> {
        if !ops.iter().any(|op| matches!(op, Op::Put(_) | Op::Push(_))) {
            return Ok(());
        }
        let mut moves = Vec::new();
        let tx = self.conn.transaction().map_err(db)?;
        {
            let mut before = tx
                .prepare_cached("SELECT state, owner FROM tasks WHERE agent = ?1 AND id = ?2")
                .map_err(db)?;
            let mut upsert = tx.prepare_cached(UPSERT).map_err(db)?;
            for op in ops {
                if let Op::Push(p) = op {
                    let done = match &p.body {
                        Some(body) => tx
                            .prepare_cached(PUT_PUSH)
                            .and_then(|mut s| s.execute(params![p.agent, p.task_id, p.id, body])),
                        None => tx
                            .prepare_cached(DELETE_PUSH)
                            .and_then(|mut s| s.execute(params![p.agent, p.task_id, p.id])),
                    };
                    done.map_err(db)?;
                }
                if let Op::Put(p) = op {
                    let old: Option<(i64, String)> = before
                        .query_row(params![p.agent, p.id], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                        .map_err(db)?;
                    upsert
                        .execute(params![
                            p.agent,
                            p.id,
                            p.context_id,
                            p.state,
                            p.updated_ms,
                            p.body,
                            p.owner
                        ])
                        .map_err(db)?;
                    // A task keeps the owner its first save gave it.
                    let (old, owner) = match old {
                        Some((state, owner)) => (Some(state), owner),
                        None => (None, p.owner.clone()),
                    };
                    moves.push((key(&p.agent, &owner), old, p.state));
                }
            }
        }
        tx.commit().map_err(db)?;
        self.commits.fetch_add(1, Ordering::Relaxed);
        for (scope, old, new) in moves {
            if let Some(old) = old {
                adjust(&self.counts, &scope, old, false);
            }
            adjust(&self.counts, &scope, new, true);
        }
        Ok(())
    }

    /// Answers a save; a finished task committed leaves memory unless a
    /// later save of it is still queued.
    fn settle(&self, put: Put, result: &Result<(), StoreError>) {
        match result {
            Ok(()) if put.terminal => {
                self.live.remove_if(&put.key, |_, (seq, _)| *seq == put.seq);
            }
            Ok(()) => {}
            Err(_) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.pending.fetch_sub(1, Ordering::AcqRel);
        if let Some(done) = put.done {
            let _ = done.send(result.clone());
        }
    }

    /// Deletes finished tasks past the retention limits, and tasks left
    /// waiting for input too long; answers how many.
    fn retain(&mut self) -> Result<u64, StoreError> {
        let mut deleted = 0;
        if let Some(idle) = self.retention.max_waiting {
            let before = now_ms() - idle.as_millis() as i64;
            deleted += self.delete(RETAIN_WAITING, before)?;
        }
        if let Some(age) = self.retention.max_age {
            let before = now_ms() - age.as_millis() as i64;
            deleted += self.delete(RETAIN_AGE, before)?;
        }
        if let Some(max) = self.retention.max_tasks {
            let total: u64 = self
                .counts
                .iter()
                .map(|e| e.value().iter().sum::<u64>())
                .sum();
            let excess = total.saturating_sub(max);
            if excess > 0 {
                deleted += self.delete(RETAIN_COUNT, excess as i64)?;
            }
        }
        if deleted > 0 {
            self.conn.execute(ORPHAN_PUSH, []).map_err(db)?;
        }
        Ok(deleted)
    }

    /// Runs a `DELETE … RETURNING agent, owner, state, id`, counts what it
    /// removed, and lets go of what memory held of it.
    fn delete(&mut self, sql: &str, arg: i64) -> Result<u64, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(db)?;
        let removed = stmt
            .query_map([arg], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(db)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db)?;
        for (agent, owner, state, id) in &removed {
            adjust(&self.counts, &key(agent, owner), *state, false);
            self.live.remove(&key(agent, id));
        }
        Ok(removed.len() as u64)
    }
}

/// A SQLite error as the store reports it.
pub(crate) fn db(e: rusqlite::Error) -> StoreError {
    StoreError::Database(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every retention delete finds its rows through an index: a plan
    /// that scans `tasks` costs each pass the whole table.
    #[test]
    fn retention_reads_its_indexes() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::sqlite::SCHEMA).unwrap();
        let (waiting, finished) = (crate::store::WAITING, crate::store::TERMINAL);
        for (sql, states, index) in [
            (RETAIN_WAITING, waiting, "tasks_waiting_by_time"),
            (RETAIN_AGE, finished, "tasks_finished_by_time"),
            (RETAIN_COUNT, finished, "tasks_finished_by_time"),
        ] {
            assert!(
                sql.contains(states),
                "{sql} reads other states than {states}"
            );
            let mut plan = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let steps: Vec<String> = plan
                .query_map([0i64], |r| r.get::<_, String>(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(
                steps
                    .iter()
                    .filter(|s| s.contains("tasks"))
                    .all(|s| s.contains(index) || s.contains("USING INTEGER PRIMARY KEY")),
                "{sql}: {steps:?}"
            );
        }
    }
}
