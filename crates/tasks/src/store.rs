//! The task store's interface, whatever keeps the tasks: saving with a
//! stated durability, reading one task, listing with filters and keyset
//! pagination, and the options (durability, retention) a store runs with.
//! [`crate::SqliteStore`] is the embedded implementation;
//! [`crate::PgStore`] the one several nodes share.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dashmap::DashMap;
use tokio::sync::oneshot;

use wharf_a2a_model::TaskPushNotificationConfig;
pub(crate) use wharf_a2a_model::{Durability, ListQuery, Retention, Task, TaskState};

/// What can go wrong with a store.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    /// The database could not be opened or is not one Wharf can use.
    #[error("cannot open the task store `{path}`: {reason}")]
    Open {
        /// The database.
        path: PathBuf,
        /// What the database said.
        reason: String,
    },
    /// Another process has the database open.
    #[error(
        "the task store `{}` is in use by another Wharf process{}: give this one its own (`tasks {{ path \"…\" }}`) or stop the other",
        path.display(),
        holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Held {
        /// The database.
        path: PathBuf,
        /// The process holding it, when it said.
        holder: Option<u32>,
    },
    /// A read or write failed.
    #[error("task store: {0}")]
    Database(String),
    /// A stored task could not be read back.
    #[error("task store: task `{id}` is damaged: {reason}")]
    Damaged {
        /// The task.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `pageToken` this store did not issue.
    #[error("invalid page token")]
    InvalidPageToken,
    /// The store has shut down.
    #[error("task store is closed")]
    Closed,
}

/// How a queued write tells its writer it is settled.
pub(crate) type Settle = Option<oneshot::Sender<Result<(), StoreError>>>;

/// What a write answers through: after its commit (the writer settles
/// it), or at once when the store answers as soon as writes are queued.
pub(crate) fn settled(durability: Durability) -> (Settle, Written) {
    match durability {
        Durability::Commit => {
            let (tx, rx) = oneshot::channel();
            (Some(tx), Written(WrittenInner::Pending(rx)))
        }
        Durability::Queued => (None, Written::done(Ok(()))),
    }
}

/// Queues a write with `send`, counted in `pending` until its writer
/// settles it; a write the queue refused (the writer has stopped) is
/// uncounted and answers `Closed`.
pub(crate) fn enqueue(
    pending: &AtomicU64,
    written: Written,
    send: impl FnOnce() -> Result<(), StoreError>,
) -> Written {
    pending.fetch_add(1, Ordering::AcqRel);
    if send().is_err() {
        pending.fetch_sub(1, Ordering::AcqRel);
        return Written::done(Err(StoreError::Closed));
    }
    written
}

/// [`StoreOptions::linger`] unless set: at a few thousand queued saves a
/// second, a transaction of a dozen or more instead of a few, and a
/// `queued` save on disk within a few milliseconds as before.
const DEFAULT_LINGER: Duration = Duration::from_millis(5);

/// How a store runs.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// The database file.
    pub path: PathBuf,
    /// When a save is answered.
    pub durability: Durability,
    /// Which tasks are deleted.
    pub retention: Retention,
    /// Most writes committed in one transaction.
    pub batch_max: usize,
    /// How long the SQLite writer keeps gathering saves no caller waits
    /// for (`queued`) into the transaction of the first one, for fewer,
    /// larger commits; a save or sync someone waits for ends it at once.
    pub linger: Duration,
}

impl StoreOptions {
    /// Options for a store at `path`, with the defaults.
    pub fn new(path: impl Into<PathBuf>) -> StoreOptions {
        StoreOptions {
            path: path.into(),
            durability: Durability::default(),
            retention: Retention::default(),
            batch_max: 1024,
            linger: DEFAULT_LINGER,
        }
    }
}

/// One page of tasks, most recently updated first.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    /// The tasks on this page.
    pub tasks: Vec<Task>,
    /// Empty when this is the last page.
    pub next_page_token: String,
    /// Tasks per page, as asked (capped).
    pub page_size: usize,
    /// Tasks matching the filters, on all pages.
    pub total_size: u64,
}

/// A save in flight: resolves when it is as durable as the store promises.
#[must_use = "a save is only known to be durable once awaited"]
pub struct Written(pub(crate) WrittenInner);

pub(crate) enum WrittenInner {
    Done(Result<(), StoreError>),
    Pending(oneshot::Receiver<Result<(), StoreError>>),
}

impl Written {
    pub(crate) fn done(result: Result<(), StoreError>) -> Written {
        Written(WrittenInner::Done(result))
    }

    /// Waits for the write.
    pub async fn wait(self) -> Result<(), StoreError> {
        match self.0 {
            WrittenInner::Done(result) => result,
            WrittenInner::Pending(rx) => rx.await.unwrap_or(Err(StoreError::Closed)),
        }
    }

    /// Waits for the write on a thread that may block (not a runtime worker).
    pub fn wait_blocking(self) -> Result<(), StoreError> {
        match self.0 {
            WrittenInner::Done(result) => result,
            WrittenInner::Pending(rx) => rx.blocking_recv().unwrap_or(Err(StoreError::Closed)),
        }
    }
}

/// Where A2A tasks live. Tasks are kept per agent: the same task id under
/// two agents names two tasks. Each task also keeps its [`Task::owner`]:
/// a save records it (the first save's owner stays for good), a read gives
/// it back, and a list filtered by owner shows only that owner's tasks.
pub trait TaskStore: Send + Sync {
    /// Records `task` for `agent`, new or changed.
    fn save(&self, agent: &str, task: &Task) -> Written;
    /// The task, or `None` when `agent` has no task `id`.
    fn get(&self, agent: &str, id: &str) -> Result<Option<Task>, StoreError>;
    /// One page of `agent`'s tasks matching `query`, with every earlier
    /// save visible.
    fn list(&self, agent: &str, query: &ListQuery) -> Result<TaskPage, StoreError>;
    /// Records a push config of `agent`'s task `config.task_id`, replacing
    /// one with the same id.
    fn put_push_config(&self, agent: &str, config: &TaskPushNotificationConfig) -> Written;
    /// Removes a push config; removing one that is not there is no error.
    fn delete_push_config(&self, agent: &str, task_id: &str, id: &str) -> Written;
    /// The push configs of `agent`'s task `task_id`, oldest first, with
    /// every earlier write visible.
    fn push_configs(
        &self,
        agent: &str,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError>;
    /// The tasks not in a terminal state whose turns this host would have
    /// been running, with their agents: what a host looks at when it
    /// starts (a turn that was running has stopped).
    fn unfinished(&self) -> Result<Vec<(String, Task)>, StoreError>;
    /// The unfinished tasks node `node` saved last, in a store several
    /// nodes share: the turns a node that went away was running.
    fn unfinished_of(&self, _node: &str) -> Result<Vec<(String, Task)>, StoreError> {
        Ok(Vec::new())
    }
    /// The node that saved `agent`'s task `id` last, in a store several
    /// nodes share (`None`: not shared, or no such task).
    fn node_of(&self, _agent: &str, _id: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
    /// How many of `agent`'s tasks owned by `owner` are not finished.
    fn open_tasks(&self, agent: &str, owner: &str) -> Result<u64, StoreError> {
        let mut open = 0;
        for state in [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::InputRequired,
            TaskState::AuthRequired,
        ] {
            let query = ListQuery {
                owner: Some(owner.to_string()),
                state: Some(state),
                page_size: 1,
                ..ListQuery::default()
            };
            open += self.list(agent, &query)?.total_size;
        }
        Ok(open)
    }
}

/// The states of a task waiting for its client: what `max_waiting`
/// evicts.
pub(crate) const WAITING: &str = "state IN (6, 8)";

/// `task` as a list or get answers it: at most `history` recent messages,
/// artifacts only when asked.
pub fn trimmed(mut task: Task, history: Option<usize>, artifacts: bool) -> Task {
    if let Some(n) = history {
        let drop = task.history.len().saturating_sub(n);
        task.history.drain(..drop);
    }
    if !artifacts {
        task.artifacts.clear();
    }
    task
}

/// The key under which a store holds `agent`'s task `id` in memory (also
/// `agent`'s tasks of one owner in the per-scope counts).
pub(crate) fn key(agent: &str, id: &str) -> String {
    format!("{agent}\u{0}{id}")
}

/// A stored task's body read back.
pub(crate) fn decode(id: &str, body: &[u8]) -> Result<Task, StoreError> {
    serde_json::from_slice(body).map_err(|e| StoreError::Damaged {
        id: id.to_string(),
        reason: e.to_string(),
    })
}

/// Stored push configs `(id, body)` of task `task_id` read back.
pub(crate) fn decode_push(
    task_id: &str,
    rows: Vec<(String, Vec<u8>)>,
) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
    rows.into_iter()
        .map(|(id, body)| {
            serde_json::from_slice(&body).map_err(|e| StoreError::Damaged {
                id: format!("{task_id}/{id}"),
                reason: e.to_string(),
            })
        })
        .collect()
}

/// A list's page from up to `page_size + 1` rows `(position, updated_ms,
/// id, body)`, newest first: the tasks trimmed as asked, and the token of
/// the next page (an extra row says there is one).
pub(crate) fn page(
    rows: Vec<(i64, i64, String, Vec<u8>)>,
    page_size: usize,
    query: &ListQuery,
    total_size: u64,
) -> Result<TaskPage, StoreError> {
    use base64::Engine as _;
    let more = rows.len() > page_size;
    let mut tasks = Vec::with_capacity(page_size.min(rows.len()));
    let mut last = None;
    for (position, ms, id, body) in rows.into_iter().take(page_size) {
        let mut task = decode(&id, &body)?;
        if let Some(owner) = &query.owner {
            task.owner.clone_from(owner);
        }
        tasks.push(trimmed(task, query.history_length, query.include_artifacts));
        last = Some((ms, position));
    }
    let next_page_token = match (more, last) {
        (true, Some((ms, position))) => {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{ms}.{position}"))
        }
        _ => String::new(),
    };
    Ok(TaskPage {
        tasks,
        next_page_token,
        page_size,
        total_size,
    })
}

/// The `(updated_ms, position)` a page token of [`page`] carries.
pub(crate) fn decode_token(token: &str) -> Result<(i64, i64), StoreError> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| StoreError::InvalidPageToken)?;
    let text = String::from_utf8(bytes).map_err(|_| StoreError::InvalidPageToken)?;
    let (ms, position) = text.split_once('.').ok_or(StoreError::InvalidPageToken)?;
    match (ms.parse(), position.parse()) {
        (Ok(ms), Ok(position)) => Ok((ms, position)),
        _ => Err(StoreError::InvalidPageToken),
    }
}

/// States a task leaves no more: the only ones retention deletes.
pub(crate) const TERMINAL: &str = "state IN (3, 4, 5, 7)";

/// Tasks in memory by key: saved and not yet known committed, or unfinished.
pub(crate) type Live = DashMap<String, (u64, Arc<Task>)>;

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
