//! The PostgreSQL store's one writer per node: it commits whatever writes
//! are queued in one transaction (group commit), settles each after its
//! commit, reconnects when its connection is lost, and applies retention.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio_postgres::{Client, NoTls, Statement};

use crate::store::{Live, now_ms};
use crate::store::{Retention, StoreError, WAITING};

/// How often a node applies retention, writing or idle. Every node
/// does; the deletes agree, so a second node's finds nothing.
const RETENTION_EVERY: Duration = Duration::from_secs(10);

const UPSERT: &str = "
INSERT INTO wharf_tasks (agent, id, context_id, state, updated_ms, node, body, owner)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (agent, id) DO UPDATE SET
    context_id = excluded.context_id, state = excluded.state,
    updated_ms = excluded.updated_ms, node = excluded.node, body = excluded.body";

const PUT_PUSH: &str = "
INSERT INTO wharf_push_configs (agent, task_id, id, body) VALUES ($1, $2, $3, $4)
ON CONFLICT (agent, task_id, id) DO UPDATE SET body = excluded.body";

const DELETE_PUSH: &str =
    "DELETE FROM wharf_push_configs WHERE agent = $1 AND task_id = $2 AND id = $3";

const TERMINAL: &str = "state IN (3, 4, 5, 7)";

pub(crate) enum Op {
    Task(TaskWrite),
    Push(PushWrite),
    Sync(SyncSender<()>),
    Retain(SyncSender<Result<u64, StoreError>>),
}

pub(crate) struct TaskWrite {
    pub key: String,
    pub seq: u64,
    pub agent: String,
    pub id: String,
    pub owner: String,
    pub context_id: String,
    pub state: i16,
    pub updated_ms: i64,
    pub node: String,
    pub body: Vec<u8>,
    pub done: Option<oneshot::Sender<Result<(), StoreError>>>,
}

/// A push config written (`body`) or deleted (`None`).
pub(crate) struct PushWrite {
    pub agent: String,
    pub task_id: String,
    pub id: String,
    pub body: Option<Vec<u8>>,
    pub done: Option<oneshot::Sender<Result<(), StoreError>>>,
}

pub(crate) struct PgWriter {
    pub client: Client,
    pub connector: Connector,
    pub live: Arc<Live>,
    pub pending: Arc<AtomicU64>,
    pub retention: Retention,
    pub batch_max: usize,
    pub failed: Arc<AtomicU64>,
    /// The upsert, prepared on the current connection.
    pub upsert: Option<Statement>,
}

impl PgWriter {
    pub async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Op>) {
        let mut last_retention = Instant::now();
        let mut ops = Vec::new();
        loop {
            // Idle, it still wakes to apply retention.
            let received =
                tokio::time::timeout(RETENTION_EVERY, rx.recv_many(&mut ops, self.batch_max)).await;
            match received {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) => {
                    if self.retention.any() {
                        if let Err(e) = self.retain().await {
                            tracing::warn!(error = %e, "task store: retention failed");
                        }
                        last_retention = Instant::now();
                    }
                    continue;
                }
            }
            let result = self.commit(&ops).await;
            if let Err(e) = &result {
                tracing::error!(error = %e, writes = ops.len(), "task store: a batch failed to commit");
            }
            for op in ops.drain(..) {
                match op {
                    Op::Task(write) => {
                        // Committed, reads find it in the database; failed,
                        // it is not there (its caller is told).
                        self.live
                            .remove_if(&write.key, |_, (seq, _)| *seq == write.seq);
                        if result.is_err() {
                            self.failed.fetch_add(1, Ordering::Relaxed);
                        }
                        self.settle(write.done, &result);
                    }
                    Op::Push(write) => self.settle(write.done, &result),
                    Op::Sync(tx) => {
                        let _ = tx.send(());
                    }
                    Op::Retain(tx) => {
                        let _ = tx.send(self.retain().await);
                        last_retention = Instant::now();
                    }
                }
            }
            let wanted = self.retention.any();
            if wanted && last_retention.elapsed() >= RETENTION_EVERY {
                if let Err(e) = self.retain().await {
                    tracing::warn!(error = %e, "task store: retention failed");
                }
                last_retention = Instant::now();
            }
        }
    }

    fn settle(
        &self,
        done: Option<oneshot::Sender<Result<(), StoreError>>>,
        result: &Result<(), StoreError>,
    ) {
        self.pending.fetch_sub(1, Ordering::AcqRel);
        if let Some(done) = done {
            let _ = done.send(result.clone());
        }
    }

    /// A fresh connection when the last one was lost.
    async fn reconnect(&mut self) -> Result<(), StoreError> {
        if self.client.is_closed() {
            self.client = self.connector.connect().await?;
            self.upsert = None;
        }
        Ok(())
    }

    /// Writes every write of `ops` in one transaction, on a fresh
    /// connection when the last one was lost.
    async fn commit(&mut self, ops: &[Op]) -> Result<(), StoreError> {
        if !ops.iter().any(|op| matches!(op, Op::Task(_) | Op::Push(_))) {
            return Ok(());
        }
        self.reconnect().await?;
        let upsert = match &self.upsert {
            Some(statement) => statement.clone(),
            None => {
                let statement = self.client.prepare(UPSERT).await.map_err(pg)?;
                self.upsert.insert(statement).clone()
            }
        };
        let tx = self.client.transaction().await.map_err(pg)?;
        for op in ops {
            match op {
                Op::Task(t) => {
                    tx.execute(
                        &upsert,
                        &[
                            &t.agent,
                            &t.id,
                            &t.context_id,
                            &t.state,
                            &t.updated_ms,
                            &t.node,
                            &t.body,
                            &t.owner,
                        ],
                    )
                    .await
                    .map_err(pg)?;
                }
                Op::Push(p) => {
                    let done = match &p.body {
                        Some(body) => {
                            tx.execute(PUT_PUSH, &[&p.agent, &p.task_id, &p.id, body])
                                .await
                        }
                        None => {
                            tx.execute(DELETE_PUSH, &[&p.agent, &p.task_id, &p.id])
                                .await
                        }
                    };
                    done.map_err(pg)?;
                }
                Op::Sync(_) | Op::Retain(_) => {}
            }
        }
        tx.commit().await.map_err(pg)
    }

    /// Deletes finished tasks past the retention limits (and their push
    /// configs); answers how many.
    async fn retain(&mut self) -> Result<u64, StoreError> {
        self.reconnect().await?;
        let mut deleted = 0;
        if let Some(idle) = self.retention.max_waiting {
            let before = now_ms() - idle.as_millis() as i64;
            let sql = format!("DELETE FROM wharf_tasks WHERE {WAITING} AND updated_ms < $1");
            deleted += self.client.execute(&sql, &[&before]).await.map_err(pg)?;
        }
        if let Some(age) = self.retention.max_age {
            let before = now_ms() - age.as_millis() as i64;
            let sql = format!("DELETE FROM wharf_tasks WHERE {TERMINAL} AND updated_ms < $1");
            deleted += self.client.execute(&sql, &[&before]).await.map_err(pg)?;
        }
        if let Some(max) = self.retention.max_tasks {
            let max = i64::try_from(max).unwrap_or(i64::MAX);
            let sql = format!(
                "DELETE FROM wharf_tasks WHERE (agent, id) IN (SELECT agent, id FROM wharf_tasks \
                 WHERE {TERMINAL} ORDER BY updated_ms, seq \
                 LIMIT GREATEST((SELECT COUNT(*) FROM wharf_tasks) - $1, 0))"
            );
            deleted += self.client.execute(&sql, &[&max]).await.map_err(pg)?;
        }
        if deleted > 0 {
            self.client
                .execute(
                    "DELETE FROM wharf_push_configs p WHERE NOT EXISTS (SELECT 1 FROM wharf_tasks t \
                     WHERE t.agent = p.agent AND t.id = p.task_id)",
                    &[],
                )
                .await
                .map_err(pg)?;
        }
        Ok(deleted)
    }
}

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens connections to one database, again when one is lost.
#[derive(Clone)]
pub(crate) struct Connector {
    pub(crate) url: String,
}

impl Connector {
    pub(crate) async fn connect(&self) -> Result<Client, StoreError> {
        let connecting = tokio_postgres::connect(&self.url, NoTls);
        let (client, connection) = tokio::time::timeout(CONNECT_TIMEOUT, connecting)
            .await
            .map_err(|_| StoreError::Database("PostgreSQL did not answer in time".into()))?
            .map_err(pg)?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "a PostgreSQL connection closed");
            }
        });
        Ok(client)
    }
}

pub(crate) fn pg(e: tokio_postgres::Error) -> StoreError {
    StoreError::Database(match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => e.to_string(),
    })
}
