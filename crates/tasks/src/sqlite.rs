//! The embedded task store: SQLite (bundled) in WAL mode, one writer
//! thread ([`crate::writer`]: group commit, so concurrent saves share an
//! fsync), readers from a small connection pool, and unfinished tasks
//! served from memory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params, params_from_iter};

use crate::store::{
    Durability, ListQuery, StoreError, StoreOptions, TaskPage, TaskStore, Written, decode,
    decode_push, decode_token, enqueue, key, page,
};
use crate::store::{Live, TERMINAL, now_ms};
use crate::writer::{Counts, Op, PushOp, Put, Writer, count_tasks, db};
use wharf_a2a_model::TaskPushNotificationConfig;
use wharf_a2a_model::{Task, TaskState};

/// The schema this build writes; a database with a higher version is
/// refused rather than misread.
const SCHEMA_VERSION: i64 = 3;

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    agent      TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    context_id TEXT    NOT NULL,
    state      INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    body       BLOB    NOT NULL,
    owner      TEXT    NOT NULL DEFAULT '',
    UNIQUE (agent, id)
);
CREATE INDEX IF NOT EXISTS tasks_by_time ON tasks (agent, updated_ms);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (agent, owner, updated_ms);
CREATE INDEX IF NOT EXISTS tasks_by_context ON tasks (agent, context_id, updated_ms);
-- What retention reads, across agents: the finished tasks, and those
-- waiting for their client, by age. Without them each pass (every second
-- while busy) scanned the whole table.
CREATE INDEX IF NOT EXISTS tasks_finished_by_time ON tasks (updated_ms)
    WHERE state IN (3, 4, 5, 7);
CREATE INDEX IF NOT EXISTS tasks_waiting_by_time ON tasks (updated_ms)
    WHERE state IN (6, 8);
CREATE TABLE IF NOT EXISTS push_configs (
    agent   TEXT NOT NULL,
    task_id TEXT NOT NULL,
    id      TEXT NOT NULL,
    body    BLOB NOT NULL,
    UNIQUE (agent, task_id, id)
);
PRAGMA user_version = 3;
";

/// Most idle read connections kept.
const MAX_IDLE_READERS: usize = 8;

/// A task store in one SQLite file.
pub struct SqliteStore {
    path: PathBuf,
    durability: Durability,
    /// The writer's queue, and the sequence that orders saves of a task.
    queue: Mutex<(u64, Sender<Op>)>,
    /// Tasks saved but not yet known committed, and every unfinished task.
    live: Arc<Live>,
    /// Committed tasks per agent and state: a list's `totalSize` without
    /// counting rows, when it filters by state alone.
    counts: Arc<Counts>,
    readers: Mutex<Vec<Connection>>,
    /// Saves queued and not yet settled: a list with none skips waiting
    /// for the writer.
    pending: Arc<AtomicU64>,
    writer: Option<JoinHandle<()>>,
    /// The writer's thread, unparked after an op someone waits for
    /// ([`crate::dbfile::next_batch`]).
    writer_thread: std::thread::Thread,
    /// Saves whose commit failed (each is also logged).
    pub failed_writes: Arc<AtomicU64>,
    /// Transactions the writer has committed.
    commits: Arc<AtomicU64>,
    /// The lock on `PATH.lock`, held while the store is open (released
    /// last, after the writer has finished).
    _lock: std::fs::File,
}

/// Locks `PATH.lock` for this store: two processes writing one store
/// would each believe the other's running tasks were left behind by a
/// crash.
fn lock(path: &Path) -> Result<std::fs::File, StoreError> {
    crate::dbfile::lock(path).map_err(|e| match e {
        crate::dbfile::Locked::Held(holder) => StoreError::Held {
            path: path.to_path_buf(),
            holder,
        },
        crate::dbfile::Locked::Io(e) => StoreError::Open {
            path: path.to_path_buf(),
            reason: format!("cannot make its lock file: {e}"),
        },
    })
}

impl SqliteStore {
    /// Opens (creating when absent) the store at `options.path`, and loads
    /// its unfinished tasks into memory.
    pub fn open(options: StoreOptions) -> Result<SqliteStore, StoreError> {
        let path = options.path.clone();
        let open_err = |reason: String| StoreError::Open {
            path: path.clone(),
            reason,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| open_err(e.to_string()))?;
        }
        let lock = lock(&path)?;
        let conn = crate::dbfile::open_wal(&path, SCHEMA_VERSION, "FULL").map_err(open_err)?;
        add_owner(&conn)
            .and_then(|()| conn.execute_batch(SCHEMA))
            .map_err(|e| open_err(e.to_string()))?;
        let live = Arc::new(Live::new());
        load_unfinished(&conn, &live).map_err(|e| open_err(e.to_string()))?;
        let counts = Arc::new(count_tasks(&conn).map_err(|e| open_err(e.to_string()))?);
        let (tx, rx) = mpsc::channel();
        let failed_writes = Arc::new(AtomicU64::new(0));
        let commits = Arc::new(AtomicU64::new(0));
        let pending = Arc::new(AtomicU64::new(0));
        let writer = Writer {
            conn,
            live: live.clone(),
            counts: counts.clone(),
            pending: pending.clone(),
            retention: options.retention,
            batch_max: options.batch_max.max(1),
            linger: options.linger,
            failed: failed_writes.clone(),
            commits: commits.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("wharf-tasks-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| open_err(e.to_string()))?;
        let writer_thread = handle.thread().clone();
        Ok(SqliteStore {
            path,
            durability: options.durability,
            queue: Mutex::new((0, tx)),
            live,
            counts,
            readers: Mutex::new(Vec::new()),
            pending,
            writer: Some(handle),
            writer_thread,
            failed_writes,
            commits,
            _lock: lock,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Unfinished or not yet committed tasks held in memory.
    pub fn live_tasks(&self) -> usize {
        self.live.len()
    }

    fn send(&self, op: Op) -> Result<(), StoreError> {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        self.send_on(&queue.1, op)
    }

    /// Sends `op` to the writer on `tx`, and unparks the writer when
    /// someone waits for the op: while it gathers saves nobody waits for,
    /// it sleeps parked ([`crate::dbfile::next_batch`]).
    fn send_on(&self, tx: &Sender<Op>, op: Op) -> Result<(), StoreError> {
        let waited = op.waited();
        tx.send(op).map_err(|_| StoreError::Closed)?;
        if waited {
            self.writer_thread.unpark();
        }
        Ok(())
    }

    /// Queues a push config write (`body`) or deletion (`None`).
    fn push_op(&self, agent: &str, task_id: &str, id: &str, body: Option<Vec<u8>>) -> Written {
        let (done, written) = crate::store::settled(self.durability);
        let op = Op::Push(PushOp {
            agent: agent.to_string(),
            task_id: task_id.to_string(),
            id: id.to_string(),
            body,
            done,
        });
        enqueue(&self.pending, written, || self.send(op))
    }

    /// How many transactions the writer has committed (each one fsync).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Waits until every save queued before this call is committed (or
    /// has failed). Blocks: call it where blocking is allowed.
    pub fn sync(&self) -> Result<(), StoreError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send(Op::Sync(tx))?;
        rx.recv().map_err(|_| StoreError::Closed)
    }

    /// Applies retention now; answers how many tasks it deleted. The
    /// writer also applies it on its own, at most once a second.
    pub fn retain_now(&self) -> Result<u64, StoreError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send(Op::Retain(tx))?;
        rx.recv().map_err(|_| StoreError::Closed)?
    }

    fn reader(&self) -> Result<Reader<'_>, StoreError> {
        let pooled = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => {
                let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
                let conn = Connection::open_with_flags(&self.path, flags).map_err(db)?;
                conn.busy_timeout(Duration::from_secs(5)).map_err(db)?;
                conn
            }
        };
        Ok(Reader {
            store: self,
            conn: Some(conn),
        })
    }
}

impl Drop for SqliteStore {
    /// Closes the queue and waits for the writer to commit what it holds.
    fn drop(&mut self) {
        let (closed, _) = mpsc::channel();
        let queue = self.queue.get_mut().unwrap_or_else(|e| e.into_inner());
        drop(std::mem::replace(&mut queue.1, closed));
        self.writer_thread.unpark();
        if let Some(handle) = self.writer.take() {
            let _ = handle.join();
        }
    }
}

/// A pooled read connection, returned on drop.
struct Reader<'a> {
    store: &'a SqliteStore,
    conn: Option<Connection>,
}

impl std::ops::Deref for Reader<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("present until drop")
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        let mut idle = self.store.readers.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE_READERS {
            idle.extend(self.conn.take());
        }
    }
}

/// A store of schema 2 (before tasks had owners) gains the column: its
/// tasks fall in the anonymous scope.
fn add_owner(conn: &Connection) -> rusqlite::Result<()> {
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('tasks')")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if !columns.is_empty() && !columns.iter().any(|c| c == "owner") {
        conn.execute_batch("ALTER TABLE tasks ADD COLUMN owner TEXT NOT NULL DEFAULT ''")?;
    }
    Ok(())
}

fn load_unfinished(conn: &Connection, live: &Live) -> rusqlite::Result<()> {
    let sql = format!("SELECT agent, id, body, owner FROM tasks WHERE NOT {TERMINAL}");
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Vec<u8>>(2)?,
            r.get::<_, String>(3)?,
        ))
    })?;
    for row in rows {
        let (agent, id, body, owner) = row?;
        match decode(&id, &body) {
            Ok(mut task) => {
                task.owner = owner;
                live.insert(key(&agent, &id), (0, Arc::new(task)));
            }
            Err(e) => tracing::warn!(error = %e, "skipping a damaged task"),
        }
    }
    Ok(())
}

impl TaskStore for SqliteStore {
    /// Every task not in a terminal state (all of them were this host's).
    fn unfinished(&self) -> Result<Vec<(String, Task)>, StoreError> {
        Ok(self
            .live
            .iter()
            .filter(|e| !e.value().1.status.state.is_terminal())
            .map(|e| {
                let agent = e.key().split('\u{0}').next().unwrap_or("").to_string();
                (agent, Task::clone(&e.value().1))
            })
            .collect())
    }

    fn save(&self, agent: &str, task: &Task) -> Written {
        let body = match serde_json::to_vec(task) {
            Ok(body) => body,
            Err(e) => return Written::done(Err(StoreError::Database(e.to_string()))),
        };
        let (done, written) = crate::store::settled(self.durability);
        let key = key(agent, &task.id);
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue.0 += 1;
        let seq = queue.0;
        self.live.insert(key.clone(), (seq, Arc::new(task.clone())));
        let put = Put {
            key,
            seq,
            agent: agent.to_string(),
            id: task.id.clone(),
            owner: task.owner.clone(),
            context_id: task.context_id.clone(),
            state: task.status.state.number(),
            terminal: task.status.state.is_terminal(),
            updated_ms: now_ms(),
            body,
            done,
        };
        let sent = || self.send_on(&queue.1, Op::Put(put));
        enqueue(&self.pending, written, sent)
    }

    fn put_push_config(&self, agent: &str, config: &TaskPushNotificationConfig) -> Written {
        match serde_json::to_vec(config) {
            Ok(body) => self.push_op(agent, &config.task_id, &config.id, Some(body)),
            Err(e) => Written::done(Err(StoreError::Database(e.to_string()))),
        }
    }

    fn delete_push_config(&self, agent: &str, task_id: &str, id: &str) -> Written {
        self.push_op(agent, task_id, id, None)
    }

    fn push_configs(
        &self,
        agent: &str,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        if self.pending.load(Ordering::Acquire) > 0 {
            self.sync()?;
        }
        let conn = self.reader()?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, body FROM push_configs WHERE agent = ?1 AND task_id = ?2 ORDER BY rowid",
            )
            .map_err(db)?;
        let rows = stmt
            .query_map(params![agent, task_id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .map_err(db)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db)?;
        decode_push(task_id, rows)
    }

    fn get(&self, agent: &str, id: &str) -> Result<Option<Task>, StoreError> {
        if let Some(entry) = self.live.get(&key(agent, id)) {
            return Ok(Some(Task::clone(&entry.1)));
        }
        let conn = self.reader()?;
        let row: Option<(Vec<u8>, String)> = conn
            .prepare_cached("SELECT body, owner FROM tasks WHERE agent = ?1 AND id = ?2")
            .and_then(|mut s| {
                s.query_row(params![agent, id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(db)?;
        row.map(|(body, owner)| {
            decode(id, &body).map(|mut task| {
                task.owner = owner;
                task
            })
        })
        .transpose()
    }

    /// From the per-scope counts: no query, and no wait for the writer (a
    /// batch still being committed is not counted yet).
    fn open_tasks(&self, agent: &str, owner: &str) -> Result<u64, StoreError> {
        Ok(self.counts.get(&key(agent, owner)).map_or(0, |c| {
            TaskState::ALL
                .iter()
                .filter(|s| !s.is_terminal() && **s != TaskState::Unspecified)
                .map(|s| c[s.number() as usize])
                .sum()
        }))
    }

    fn list(&self, agent: &str, query: &ListQuery) -> Result<TaskPage, StoreError> {
        if self.pending.load(Ordering::Acquire) > 0 {
            self.sync()?;
        }
        let mut filter = String::from("agent = ?");
        let mut args = vec![Value::Text(agent.to_string())];
        if let Some(owner) = &query.owner {
            filter.push_str(" AND owner = ?");
            args.push(Value::Text(owner.clone()));
        }
        if let Some(context) = &query.context_id {
            filter.push_str(" AND context_id = ?");
            args.push(Value::Text(context.clone()));
        }
        if let Some(state) = query.state {
            filter.push_str(" AND state = ?");
            args.push(Value::Integer(state.number()));
        }
        if let Some(after) = query.updated_after_ms {
            filter.push_str(" AND updated_ms >= ?");
            args.push(Value::Integer(after));
        }
        let conn = self.reader()?;
        let total = match (&query.owner, &query.context_id, query.updated_after_ms) {
            (Some(owner), None, None) => {
                self.counts
                    .get(&key(agent, owner))
                    .map_or(0, |c| match query.state {
                        Some(state) => c[state.number() as usize],
                        None => c.iter().sum(),
                    })
            }
            _ => conn
                .prepare_cached(&format!("SELECT COUNT(*) FROM tasks WHERE {filter}"))
                .and_then(|mut s| s.query_row(params_from_iter(&args), |r| r.get::<_, i64>(0)))
                .map_err(db)? as u64,
        };
        if let Some(token) = &query.page_token {
            let (ms, rowid) = decode_token(token)?;
            filter.push_str(" AND (updated_ms < ? OR (updated_ms = ? AND rowid < ?))");
            args.extend([
                Value::Integer(ms),
                Value::Integer(ms),
                Value::Integer(rowid),
            ]);
        }
        let page_size = query.page_size.clamp(1, 100);
        args.push(Value::Integer(page_size as i64 + 1));
        let sql = format!(
            "SELECT rowid, updated_ms, id, body FROM tasks WHERE {filter} \
             ORDER BY updated_ms DESC, rowid DESC LIMIT ?"
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
        let rows = stmt
            .query_map(params_from_iter(&args), |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                ))
            })
            .map_err(db)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db)?;
        page(rows, page_size, query, total)
    }
}
