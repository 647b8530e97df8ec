//! The shared task store: PostgreSQL, for Wharf nodes that serve as one
//! cluster. Every node reads and writes the same tables; each task row
//! names the node that saved it last (the node running its turn), so a
//! node that starts fails only the turns it left running itself. Writes go
//! through one writer per node that commits whatever is queued in one
//! transaction ([`crate::pg_writer`]); reads use a shared connection that
//! pipelines concurrent queries. The store runs its own small runtime, so
//! its blocking calls are safe from any thread.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

use crate::pg_writer::{Connector, Op, PgWriter, PushWrite, TaskWrite, pg};
use crate::store::{
    Durability, ListQuery, Retention, StoreError, TaskPage, TaskStore, Written, decode,
    decode_push, decode_token, enqueue, key, page,
};
use crate::store::{Live, now_ms};
use wharf_a2a_model::Task;
use wharf_a2a_model::TaskPushNotificationConfig;

/// Tables, made once by whichever node comes first (under an advisory
/// lock, so that nodes starting together do not race).
const SCHEMA: &str = "
SELECT pg_advisory_xact_lock(7361011);
CREATE TABLE IF NOT EXISTS wharf_tasks (
    agent      TEXT     NOT NULL,
    id         TEXT     NOT NULL,
    context_id TEXT     NOT NULL,
    state      SMALLINT NOT NULL,
    updated_ms BIGINT   NOT NULL,
    node       TEXT     NOT NULL,
    seq        BIGINT   GENERATED ALWAYS AS IDENTITY,
    body       BYTEA    NOT NULL,
    PRIMARY KEY (agent, id)
);
ALTER TABLE wharf_tasks ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS wharf_tasks_by_time ON wharf_tasks (agent, updated_ms, seq);
CREATE INDEX IF NOT EXISTS wharf_tasks_by_owner ON wharf_tasks (agent, owner, updated_ms, seq);
CREATE INDEX IF NOT EXISTS wharf_tasks_by_context ON wharf_tasks (agent, context_id, updated_ms);
CREATE INDEX IF NOT EXISTS wharf_tasks_unfinished ON wharf_tasks (node)
    WHERE state NOT IN (3, 4, 5, 7);
CREATE INDEX IF NOT EXISTS wharf_tasks_finished_by_time ON wharf_tasks (updated_ms, seq)
    WHERE state IN (3, 4, 5, 7);
CREATE INDEX IF NOT EXISTS wharf_tasks_waiting_by_time ON wharf_tasks (updated_ms)
    WHERE state IN (6, 8);
CREATE TABLE IF NOT EXISTS wharf_push_configs (
    agent   TEXT   NOT NULL,
    task_id TEXT   NOT NULL,
    id      TEXT   NOT NULL,
    seq     BIGINT GENERATED ALWAYS AS IDENTITY,
    body    BYTEA  NOT NULL,
    PRIMARY KEY (agent, task_id, id)
);
";

/// How a PostgreSQL store runs.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// `postgres://user@host:port/database` (key=value strings work too).
    pub url: String,
    /// This node's name: recorded on every task it saves.
    pub node: String,
    /// When a save is answered.
    pub durability: Durability,
    /// Which tasks are deleted.
    pub retention: Retention,
    /// Most writes committed in one transaction.
    pub batch_max: usize,
}

/// A task store in a PostgreSQL database shared by the nodes of a cluster.
pub struct PgStore {
    node: String,
    durability: Durability,
    runtime: Option<tokio::runtime::Runtime>,
    connector: Connector,
    /// The connection reads share; replaced when it is lost.
    reader: Arc<Mutex<Arc<Client>>>,
    /// The writer's queue, and the sequence that orders saves of a task.
    queue: Mutex<(u64, mpsc::UnboundedSender<Op>)>,
    /// Tasks saved here and not yet committed.
    live: Arc<Live>,
    pending: Arc<AtomicU64>,
    writer: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    /// Saves whose commit failed (each is also logged).
    pub failed_writes: Arc<AtomicU64>,
}

/// `url` without its password, for messages.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or("");
            format!("{scheme}://{name}:***@{host}")
        }
        _ => url.to_string(),
    }
}

impl PgStore {
    /// Connects, makes the tables when they are not there, and starts the
    /// writer. Blocks: call it where blocking is allowed.
    pub fn open(options: PgOptions) -> Result<PgStore, StoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("wharf-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Database(e.to_string()))?;
        let connector = Connector {
            url: options.url.clone(),
        };
        let opened = runtime.block_on(async {
            let writer = connector.connect().await?;
            writer
                .batch_execute(&format!("BEGIN; {SCHEMA} COMMIT;"))
                .await
                .map_err(pg)?;
            let reader = connector.connect().await?;
            Ok::<_, StoreError>((writer, reader))
        });
        let (writer_client, reader) = opened.map_err(|e| StoreError::Open {
            path: redacted(&options.url).into(),
            reason: e.to_string(),
        })?;
        let (tx, rx) = mpsc::unbounded_channel();
        let (stopped_tx, stopped) = std::sync::mpsc::sync_channel(1);
        let live = Arc::new(Live::new());
        let pending = Arc::new(AtomicU64::new(0));
        let failed_writes = Arc::new(AtomicU64::new(0));
        let writer = PgWriter {
            client: writer_client,
            connector: connector.clone(),
            live: live.clone(),
            pending: pending.clone(),
            retention: options.retention,
            batch_max: options.batch_max.max(1),
            failed: failed_writes.clone(),
            upsert: None,
        };
        runtime.spawn(async move {
            writer.run(rx).await;
            let _ = stopped_tx.send(());
        });
        Ok(PgStore {
            node: options.node,
            durability: options.durability,
            runtime: Some(runtime),
            connector,
            reader: Arc::new(Mutex::new(Arc::new(reader))),
            queue: Mutex::new((0, tx)),
            live,
            pending,
            writer: Mutex::new(Some(stopped)),
            failed_writes,
        })
    }

    /// This node's name, written with each task it runs.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Runs `f` with the shared read connection on the store's runtime and
    /// waits for it (reconnecting first when the connection was lost).
    fn read<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Client>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send,
    {
        let runtime = self.runtime.as_ref().ok_or(StoreError::Closed)?;
        let (reader, connector) = (self.reader.clone(), self.connector.clone());
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let current = reader.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let client = if current.is_closed() {
                match connector.connect().await {
                    Ok(fresh) => {
                        let fresh = Arc::new(fresh);
                        *reader.lock().unwrap_or_else(|e| e.into_inner()) = fresh.clone();
                        fresh
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            } else {
                current
            };
            let _ = tx.send(f(client).await);
        });
        rx.recv().unwrap_or(Err(StoreError::Closed))
    }

    fn send(&self, op: Op) -> Result<(), StoreError> {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue.1.send(op).map_err(|_| StoreError::Closed)
    }

    /// Waits until every write queued before this call is committed (or
    /// has failed). Blocks: call it where blocking is allowed.
    pub fn sync(&self) -> Result<(), StoreError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.send(Op::Sync(tx))?;
        rx.recv().map_err(|_| StoreError::Closed)
    }

    /// Applies retention now; answers how many tasks it deleted.
    pub fn retain_now(&self) -> Result<u64, StoreError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.send(Op::Retain(tx))?;
        rx.recv().map_err(|_| StoreError::Closed)?
    }

    /// Queues a push config write (`body`) or deletion (`None`).
    fn push_op(&self, agent: &str, task_id: &str, id: &str, body: Option<Vec<u8>>) -> Written {
        let (done, written) = crate::store::settled(self.durability);
        let write = PushWrite {
            agent: agent.to_string(),
            task_id: task_id.to_string(),
            id: id.to_string(),
            body,
            done,
        };
        enqueue(&self.pending, written, || self.send(Op::Push(write)))
    }

    fn settle_reads(&self) -> Result<(), StoreError> {
        if self.pending.load(Ordering::Acquire) > 0 {
            self.sync()?;
        }
        Ok(())
    }
}

impl Drop for PgStore {
    /// Closes the queue, waits (a bounded time) for the writer to commit
    /// what it holds, then stops the store's runtime.
    fn drop(&mut self) {
        let (closed, _) = mpsc::unbounded_channel();
        let queue = self.queue.get_mut().unwrap_or_else(|e| e.into_inner());
        drop(std::mem::replace(&mut queue.1, closed));
        let writer = self.writer.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(stopped) = writer.take() {
            let _ = stopped.recv_timeout(Duration::from_secs(10));
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Rows of tasks as (sequence, updated, id, body).
type Rows = Vec<(i64, i64, String, Vec<u8>)>;

impl TaskStore for PgStore {
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
        let write = TaskWrite {
            key,
            seq,
            agent: agent.to_string(),
            id: task.id.clone(),
            owner: task.owner.clone(),
            context_id: task.context_id.clone(),
            state: task.status.state.number() as i16,
            updated_ms: now_ms(),
            node: self.node.clone(),
            body,
            done,
        };
        enqueue(&self.pending, written, || {
            queue
                .1
                .send(Op::Task(write))
                .map_err(|_| StoreError::Closed)
        })
    }

    fn get(&self, agent: &str, id: &str) -> Result<Option<Task>, StoreError> {
        if let Some(entry) = self.live.get(&key(agent, id)) {
            return Ok(Some(Task::clone(&entry.1)));
        }
        let (agent, id) = (agent.to_string(), id.to_string());
        let row = self.read(move |c| async move {
            let row = c
                .query_opt(
                    "SELECT body, owner FROM wharf_tasks WHERE agent = $1 AND id = $2",
                    &[&agent, &id],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|r| (id, r.get::<_, Vec<u8>>(0), r.get::<_, String>(1))))
        })?;
        row.map(|(id, body, owner)| {
            decode(&id, &body).map(|mut task| {
                task.owner = owner;
                task
            })
        })
        .transpose()
    }

    fn list(&self, agent: &str, query: &ListQuery) -> Result<TaskPage, StoreError> {
        self.settle_reads()?;
        let mut filter = String::from("agent = $1");
        let mut args: Vec<Box<dyn ToSql + Send + Sync>> = vec![Box::new(agent.to_string())];
        let mut arg = |filter: &mut String, sql: &str, value: Box<dyn ToSql + Send + Sync>| {
            args.push(value);
            filter.push_str(&sql.replace('?', &format!("${}", args.len())));
        };
        if let Some(owner) = &query.owner {
            arg(&mut filter, " AND owner = ?", Box::new(owner.clone()));
        }
        if let Some(context) = &query.context_id {
            arg(
                &mut filter,
                " AND context_id = ?",
                Box::new(context.clone()),
            );
        }
        if let Some(state) = query.state {
            arg(
                &mut filter,
                " AND state = ?",
                Box::new(state.number() as i16),
            );
        }
        if let Some(after) = query.updated_after_ms {
            arg(&mut filter, " AND updated_ms >= ?", Box::new(after));
        }
        let counted = filter.clone();
        if let Some(token) = &query.page_token {
            let (ms, seq) = decode_token(token)?;
            arg(&mut filter, " AND (updated_ms, seq) < (?", Box::new(ms));
            arg(&mut filter, ", ?)", Box::new(seq));
        }
        let page_size = query.page_size.clamp(1, 100);
        let count_args = args.len() - if query.page_token.is_some() { 2 } else { 0 };
        let sql = format!(
            "SELECT seq, updated_ms, id, body FROM wharf_tasks WHERE {filter} \
             ORDER BY updated_ms DESC, seq DESC LIMIT {}",
            page_size + 1
        );
        let count = format!("SELECT COUNT(*) FROM wharf_tasks WHERE {counted}");
        let (total, rows) = self.read(move |c| async move {
            let params: Vec<&(dyn ToSql + Sync)> = args
                .iter()
                .map(|a| a.as_ref() as &(dyn ToSql + Sync))
                .collect();
            let counting = c.query_one(&count, &params[..count_args]);
            let listing = c.query(&sql, &params);
            let (total, rows) = tokio::join!(counting, listing);
            let total: i64 = total.map_err(pg)?.get(0);
            let rows: Rows = rows
                .map_err(pg)?
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect();
            Ok((total as u64, rows))
        })?;
        page(rows, page_size, query, total)
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
        self.settle_reads()?;
        let (agent, task) = (agent.to_string(), task_id.to_string());
        let rows = self.read(move |c| async move {
            let rows = c
                .query(
                    "SELECT id, body FROM wharf_push_configs \
                     WHERE agent = $1 AND task_id = $2 ORDER BY seq",
                    &[&agent, &task],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, String>(0), r.get::<_, Vec<u8>>(1)))
                .collect::<Vec<_>>())
        })?;
        decode_push(task_id, rows)
    }

    /// The unfinished tasks this node saved last: the turns it would have
    /// been running. Other nodes' tasks are theirs.
    fn unfinished(&self) -> Result<Vec<(String, Task)>, StoreError> {
        self.unfinished_of(&self.node)
    }

    fn unfinished_of(&self, node: &str) -> Result<Vec<(String, Task)>, StoreError> {
        self.settle_reads()?;
        let node = node.to_string();
        let rows = self.read(move |c| async move {
            let rows = c
                .query(
                    "SELECT agent, id, body, owner FROM wharf_tasks \
                     WHERE node = $1 AND state NOT IN (3, 4, 5, 7)",
                    &[&node],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect::<Vec<(String, String, Vec<u8>, String)>>())
        })?;
        let mut tasks = Vec::with_capacity(rows.len());
        for (agent, id, body, owner) in rows {
            match decode(&id, &body) {
                Ok(mut task) => {
                    task.owner = owner;
                    tasks.push((agent, task));
                }
                Err(e) => tracing::warn!(error = %e, "skipping a damaged task"),
            }
        }
        Ok(tasks)
    }

    /// One count, without waiting for this node's writer (a batch still
    /// being committed is not counted yet).
    fn open_tasks(&self, agent: &str, owner: &str) -> Result<u64, StoreError> {
        let (agent, owner) = (agent.to_string(), owner.to_string());
        self.read(move |c| async move {
            let row = c
                .query_one(
                    "SELECT COUNT(*) FROM wharf_tasks \
                     WHERE agent = $1 AND owner = $2 AND state NOT IN (3, 4, 5, 7)",
                    &[&agent, &owner],
                )
                .await
                .map_err(pg)?;
            Ok(row.get::<_, i64>(0) as u64)
        })
    }

    fn node_of(&self, agent: &str, id: &str) -> Result<Option<String>, StoreError> {
        if self.live.contains_key(&key(agent, id)) {
            return Ok(Some(self.node.clone()));
        }
        let (agent, id) = (agent.to_string(), id.to_string());
        self.read(move |c| async move {
            let row = c
                .query_opt(
                    "SELECT node FROM wharf_tasks WHERE agent = $1 AND id = $2",
                    &[&agent, &id],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|r| r.get::<_, String>(0)))
        })
    }
}
