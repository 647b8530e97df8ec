//! A2A tasks as the host runs them, whatever binding the call came in on:
//! sending a message (a new task or a follow-up turn), reading and listing
//! tasks, canceling, and subscribing to a task's events. The task store
//! keeps every task; tasks with a turn running are also held here, with
//! the cancel flag and the channel their events fan out on. Bindings
//! (JSON-RPC, HTTP+JSON) decode into these operations and encode what they
//! return; nothing here knows which one called. Every operation runs in a
//! [`Scope`]: one agent's tasks of one owner (the caller's identity, from
//! its filters' metadata); a task of another owner is not found.

#![deny(missing_docs)]

mod follow;
mod push;
mod remote;
mod run;
mod validate;

pub use push::Push;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, watch};
use wharf_tasks::{
    A2aError, A2aErrorKind, GetTaskParams, ListPushConfigsParams, ListTasksParams, Message,
    PushConfigParams, Role, SendMessageParams, StoreError, StreamResponse, Task, TaskIdParams,
    TaskPushNotificationConfig, TaskState, TaskStore, history_limit, parse_params, trimmed,
};

use wharf_cluster::Cluster;
use wharf_core::request::Request;
use wharf_routing::AgentRoute;

/// Events a task's subscribers may fall behind by before they are sent a
/// fresh snapshot of the task instead.
const FANOUT_CAPACITY: usize = 1024;
/// How long a cancel waits for a running turn to stop.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// Whose tasks a call reaches: `agent`'s tasks owned by `owner` (the
/// anonymous scope when the owner is empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The agent.
    pub agent: String,
    /// The caller's identity (empty: the anonymous scope).
    pub owner: String,
}

impl Scope {
    /// The scope of a call to `route` whose filters left `req.metadata`:
    /// the owner is made of the metadata keys the agent's `task-owner`
    /// names.
    pub fn of(route: &AgentRoute, req: &Request) -> Scope {
        Scope {
            agent: route.name().to_string(),
            owner: route.core.policy.task_owner.of(&req.metadata),
        }
    }
}

/// What a send or subscribe answers: a task (or its events as they come),
/// or the agent's direct reply.
pub enum Reply {
    /// The task, when the call is answered whole.
    Task(Box<Task>),
    /// The agent's direct reply to a blocking send: a message, no task.
    Message(Box<Message>),
    /// The task's events, as they come.
    Stream(mpsc::Receiver<StreamResponse>),
}

/// The A2A tasks of every agent.
pub struct A2a {
    store: Arc<dyn TaskStore>,
    running: DashMap<(String, String), Arc<Running>>,
    /// Push notifications, when the configuration turns them on.
    push: Option<Push>,
    /// The cluster this host is a node of: turns running on other nodes
    /// are canceled and streamed through it.
    cluster: std::sync::OnceLock<Arc<Cluster>>,
    /// Unfinished tasks one owner may have per agent.
    max_open: u64,
    /// Subscribers waiting between turns of a task, woken when it changes.
    followers: DashMap<(String, String), Arc<tokio::sync::Notify>>,
    /// How many subscribers follow a task now (none: a turn's start looks
    /// nothing up).
    waiting: std::sync::atomic::AtomicUsize,
}

/// A task whose turn is running now.
pub(crate) struct Running {
    /// The task as it changes; locked only to apply or read a change.
    task: std::sync::Mutex<Task>,
    /// Made when the first subscriber comes (under the task's lock, as
    /// events are sent): a turn nobody streams allocates no fan-out ring.
    events: std::sync::OnceLock<broadcast::Sender<StreamResponse>>,
    cancel: Arc<AtomicBool>,
    /// Becomes true when the turn has ended and the task was saved.
    done: watch::Sender<bool>,
    /// The agent's direct reply, when it gave one in place of the task.
    reply: std::sync::OnceLock<Message>,
}

impl A2a {
    /// Tasks kept in `store`, with push notifications when `push` is
    /// given (the webhooks of unfinished tasks resume). Tasks a previous
    /// run left submitted or working had their turn stopped by the
    /// restart: they end failed. Call it on a runtime's blocking thread.
    pub fn new(
        store: Arc<dyn TaskStore>,
        push: Option<Push>,
        max_open: u64,
    ) -> Result<A2a, StoreError> {
        let a2a = A2a {
            store,
            running: DashMap::new(),
            push,
            cluster: std::sync::OnceLock::new(),
            max_open,
            followers: DashMap::new(),
            waiting: std::sync::atomic::AtomicUsize::new(0),
        };
        a2a.fail_left(None)?;
        Ok(a2a)
    }

    /// Fails the tasks whose turns stopped with the host that ran them:
    /// this host's from an earlier run (`None`; their webhooks resume), or
    /// those of another node that went away. Blocks: call it where
    /// blocking is allowed. Answers how many it failed.
    fn fail_left(&self, node: Option<&str>) -> Result<usize, StoreError> {
        let (left, why) = match node {
            None => (
                self.store.unfinished()?,
                "the host restarted while this task was running".to_string(),
            ),
            Some(node) => (
                self.store.unfinished_of(node)?,
                format!("the node running this task ({node}) went away"),
            ),
        };
        let mut failed = 0;
        for (agent, mut task) in left {
            if let (Some(push), None) = (&self.push, node) {
                push.restore(&agent, &task.id);
            }
            if !matches!(task.status.state, TaskState::Submitted | TaskState::Working) {
                continue;
            }
            if let Ok(update) = task.set_status(TaskState::Failed, Some(agent_message(&why))) {
                tracing::warn!(agent, task = %task.id, node, "a task whose turn stopped with its host is marked failed");
                if self.store.save(&agent, &task).wait_blocking().is_ok() {
                    failed += 1;
                }
                if let Some(push) = &self.push {
                    push.notify(&agent, &StreamResponse::StatusUpdate(update));
                }
            }
        }
        Ok(failed)
    }

    /// Makes this host's tasks reachable from the other nodes of `cluster`.
    pub fn join(&self, cluster: Arc<Cluster>) {
        let _ = self.cluster.set(cluster);
    }

    /// Whether push notifications are on (the agent card says so).
    pub fn pushes(&self) -> bool {
        self.push.is_some()
    }

    /// Sends an update of `agent`'s task to its subscribers and webhooks.
    fn publish(&self, agent: &str, running: Option<&Running>, event: StreamResponse) {
        if let Some(push) = &self.push {
            push.notify(agent, &event);
        }
        if let Some(running) = running {
            running.send(event);
        }
    }

    /// `SendMessage` and `SendStreamingMessage`: a new task, or the next
    /// turn of one waiting for input. The turn runs on its own: a client
    /// that goes away does not stop it.
    pub async fn send(
        self: &Arc<Self>,
        route: Arc<AgentRoute>,
        req: &Request,
        params: SendMessageParams,
        streaming: bool,
    ) -> Result<Reply, A2aError> {
        validate::message(&params.message)?;
        let scope = Scope::of(&route, req);
        let agent = scope.agent.clone();
        let config = params.configuration.clone().unwrap_or_default();
        let history = history_limit(config.history_length)?;
        let mut webhook = match config.task_push_notification_config.clone() {
            Some(v) if !v.is_null() => {
                let hook: TaskPushNotificationConfig = parse_params(v)?;
                Some(self.push()?.check(hook)?)
            }
            _ => None,
        };
        let mut message = params.message;
        message.role = Role::User;
        // An empty id is no id (some clients send proto defaults).
        message.task_id = message.task_id.filter(|id| !id.is_empty());
        let (mut task, earlier) = match message.task_id.clone() {
            Some(id) => {
                let mut task = self.task(&scope, &id)?;
                let earlier = task.history.clone();
                task.follow_up(message.clone())?;
                (task, earlier)
            }
            None => {
                self.check_open(&scope)?;
                // Ids that sort by creation time (UUIDv7: the millisecond,
                // then 74 random bits): the store's indexes keyed by task
                // and context grow at their end, so a group commit of new
                // tasks writes one page of each instead of one per task.
                let id = uuid::Uuid::now_v7().to_string();
                let context = message
                    .context_id
                    .clone()
                    .filter(|c| !c.is_empty())
                    .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
                let mut task = Task::submitted(id, context, message.clone());
                task.owner = scope.owner.clone();
                (task, Vec::new())
            }
        };
        if let Some(metadata) = &params.metadata {
            task.metadata = Some(metadata.clone());
        }
        task.set_status(TaskState::Working, None)?;
        // A new task the client cannot know of until the turn shows it
        // (no id returned at once, no webhook to register) is saved when
        // a stream first shows it, or when the turn ends (a blocking send
        // learns its id only then): the agent may still answer with a
        // direct reply, and then no task is kept.
        let unshown = message.task_id.is_none() && !config.return_immediately && webhook.is_none();
        let (running, done) = self.start(&agent, &task)?;
        let fanout = streaming.then(|| running.subscribe());
        let saved = (!unshown).then(|| self.store.save(&agent, &task));
        if let (Some(mut hook), Some(push)) = (webhook.take(), &self.push) {
            hook.config.task_id = task.id.clone();
            if let Err(err) = push.create(&agent, hook, true).await {
                self.finish(&agent, &task.id);
                return Err(err);
            }
        }
        if let Some(saved) = saved.filter(|_| streaming || config.return_immediately) {
            // The client learns the task's id now: it must be there to find.
            if let Err(err) = saved.wait().await {
                self.finish(&agent, &task.id);
                return Err(store_error(err));
            }
        }
        let metadata = params.metadata.map(|m| Value::Object(m).to_string());
        let (call, events) = run::turn_call(&task, message, earlier, metadata, &running);
        let turn = run::TurnRun {
            a2a: self.clone(),
            agent: agent.clone(),
            route,
            running: running.clone(),
            call,
            events,
            unshown,
            streamed: streaming,
        };
        let turn_req = run::turn_request(req, &turn.call);
        tokio::spawn(turn.run(turn_req));
        if let Some(fanout) = fanout {
            return Ok(Reply::Stream(stream(task, fanout, running, unshown)));
        }
        if !config.return_immediately {
            wait_done(done).await;
        }
        if let Some(reply) = running.reply.get() {
            return Ok(Reply::Message(Box::new(reply.clone())));
        }
        let task = running
            .task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        Ok(Reply::Task(Box::new(trimmed(task, history, true))))
    }

    /// `GetTask`.
    pub fn get(&self, scope: &Scope, params: GetTaskParams) -> Result<Task, A2aError> {
        let history = history_limit(params.history_length)?;
        Ok(trimmed(self.task(scope, &params.id)?, history, true))
    }

    /// `ListTasks`: the protocol's `ListTasksResponse`.
    pub fn list(&self, scope: &Scope, params: ListTasksParams) -> Result<Value, A2aError> {
        let mut query = params.query()?;
        query.owner = Some(scope.owner.clone());
        let page = self.store.list(&scope.agent, &query).map_err(store_error)?;
        let tasks: Vec<Value> = page
            .tasks
            .iter()
            .map(|t| {
                let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
                if query.include_artifacts && v.get("artifacts").is_none() {
                    v["artifacts"] = json!([]);
                }
                v
            })
            .collect();
        Ok(json!({
            "tasks": tasks,
            "nextPageToken": page.next_page_token,
            "pageSize": page.page_size,
            "totalSize": page.total_size,
        }))
    }

    /// `CancelTask`: a running turn is interrupted and the task ends
    /// canceled; a task waiting for input is canceled at once.
    pub async fn cancel(&self, scope: &Scope, params: TaskIdParams) -> Result<Task, A2aError> {
        self.task(scope, &params.id)?;
        self.cancel_task(&scope.agent, params).await
    }

    /// Cancels `agent`'s task, whoever owns it (the caller was checked,
    /// here or on the node that asked).
    async fn cancel_task(&self, agent: &str, params: TaskIdParams) -> Result<Task, A2aError> {
        let key = (agent.to_string(), params.id.clone());
        let running = self.running.get(&key).map(|r| r.clone());
        if let Some(running) = running {
            running.cancel.store(true, Ordering::Relaxed);
            let done = running.done.subscribe();
            if tokio::time::timeout(CANCEL_WAIT, wait_done(done))
                .await
                .is_err()
            {
                return Err(A2aError::new(A2aErrorKind::Internal)
                    .message("Internal error: the task's turn did not stop in time"));
            }
            let task = self.find(agent, &params.id)?;
            if task.status.state == TaskState::Canceled {
                return Ok(task);
            }
            // The turn ended on its own before it saw the cancel.
        } else {
            let task = self.find(agent, &params.id)?;
            if let Some(cluster) = self.running_elsewhere(agent, &task)
                && let Some(task) = self.cancel_elsewhere(&cluster, agent, &params.id).await?
            {
                return Ok(task);
            }
            // Not running anywhere (its node is gone): canceled in the store.
        }
        let mut task = self.find(agent, &params.id)?;
        let update = task.cancel()?;
        self.store
            .save(agent, &task)
            .wait()
            .await
            .map_err(store_error)?;
        self.publish(agent, None, StreamResponse::StatusUpdate(update));
        self.wake_followers(agent, &task.id);
        Ok(task)
    }

    /// The push notification service, or the protocol's refusal.
    fn push(&self) -> Result<&Push, A2aError> {
        self.push.as_ref().ok_or_else(|| {
            A2aError::new(A2aErrorKind::PushNotificationNotSupported)
                .message("Push notifications are not supported by this agent")
        })
    }

    /// `CreateTaskPushNotificationConfig`.
    pub async fn create_push_config(
        &self,
        scope: &Scope,
        params: Value,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let push = self.push()?;
        let config: TaskPushNotificationConfig = parse_params(params)?;
        let task = self.task(scope, &config.task_id)?;
        let checked = push.check(config)?;
        push.create(&scope.agent, checked, !task.status.state.is_terminal())
            .await
            .map(push::shown)
    }

    /// `GetTaskPushNotificationConfig`.
    pub fn get_push_config(
        &self,
        scope: &Scope,
        params: Value,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let push = self.push()?;
        let params: PushConfigParams = parse_params(params)?;
        self.task(scope, &params.task_id)?;
        push.get(&scope.agent, &params).map(push::shown)
    }

    /// `ListTaskPushNotificationConfigs`.
    pub fn list_push_configs(&self, scope: &Scope, params: Value) -> Result<Value, A2aError> {
        let push = self.push()?;
        let params: ListPushConfigsParams = parse_params(params)?;
        self.task(scope, &params.task_id)?;
        push.list(&scope.agent, &params)
    }

    /// `DeleteTaskPushNotificationConfig`: deleting one that is not there
    /// is no error.
    pub async fn delete_push_config(&self, scope: &Scope, params: Value) -> Result<(), A2aError> {
        let push = self.push()?;
        let params: PushConfigParams = parse_params(params)?;
        self.task(scope, &params.task_id)?;
        push.delete(&scope.agent, &params).await
    }

    /// The events of a turn running on this node, its snapshot first.
    fn subscribe_here(&self, agent: &str, id: &str) -> Option<mpsc::Receiver<StreamResponse>> {
        let key = (agent.to_string(), id.to_string());
        let running = self.running.get(&key).map(|r| r.clone())?;
        let task = running.task.lock().unwrap_or_else(|e| e.into_inner());
        let fanout = running.subscribe();
        Some(stream(task.clone(), fanout, running.clone(), false))
    }

    /// Refuses a new task to an owner who has `max_open` unfinished ones.
    fn check_open(&self, scope: &Scope) -> Result<(), A2aError> {
        let open = self
            .store
            .open_tasks(&scope.agent, &scope.owner)
            .map_err(store_error)?;
        if open >= self.max_open {
            return Err(A2aError::new(A2aErrorKind::UnsupportedOperation)
                .message(format!(
                    "this caller has {open} unfinished tasks with this agent, the most it may have: \
                     finish or cancel one first"
                ))
                .with("openTasks", open.to_string()));
        }
        Ok(())
    }

    /// The task if it is in the caller's scope, else `TaskNotFound` (a task
    /// of another owner is not told apart from one that does not exist).
    fn task(&self, scope: &Scope, id: &str) -> Result<Task, A2aError> {
        let task = self.find(&scope.agent, id)?;
        if task.owner != scope.owner {
            return Err(task_not_found(id));
        }
        Ok(task)
    }

    /// `agent`'s task, whoever owns it, or `TaskNotFound`.
    fn find(&self, agent: &str, id: &str) -> Result<Task, A2aError> {
        let key = (agent.to_string(), id.to_string());
        if let Some(running) = self.running.get(&key) {
            return Ok(running
                .task
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone());
        }
        self.store
            .get(agent, id)
            .map_err(store_error)?
            .ok_or_else(|| task_not_found(id))
    }

    /// Registers a turn for `task`; refused while one is running.
    fn start(
        &self,
        agent: &str,
        task: &Task,
    ) -> Result<(Arc<Running>, watch::Receiver<bool>), A2aError> {
        let (done, done_rx) = watch::channel(false);
        let running = Arc::new(Running {
            task: std::sync::Mutex::new(task.clone()),
            events: std::sync::OnceLock::new(),
            cancel: Arc::new(AtomicBool::new(false)),
            done,
            reply: std::sync::OnceLock::new(),
        });
        match self.running.entry((agent.to_string(), task.id.clone())) {
            Entry::Occupied(_) => Err(A2aError::new(A2aErrorKind::UnsupportedOperation)
                .message(format!(
                    "task `{}` is running a turn; send the next message when it asks for one",
                    task.id
                ))
                .with("taskId", task.id.clone())),
            Entry::Vacant(slot) => {
                slot.insert(running.clone());
                self.wake_followers(agent, &task.id);
                Ok((running, done_rx))
            }
        }
    }

    /// The turn of `task` has ended and its last state is saved.
    fn finish(&self, agent: &str, task_id: &str) {
        if let Some((_, running)) = self
            .running
            .remove(&(agent.to_string(), task_id.to_string()))
        {
            running.done.send_replace(true);
        }
    }
}

impl Running {
    /// A receiver of the task's events from now on. Call it holding the
    /// task's lock, so that what it receives follows what the task shows.
    fn subscribe(&self) -> broadcast::Receiver<StreamResponse> {
        self.events
            .get_or_init(|| broadcast::channel(FANOUT_CAPACITY).0)
            .subscribe()
    }

    /// Sends an event to the subscribers, if any (none is not an error:
    /// the task is still kept).
    fn send(&self, event: StreamResponse) {
        if let Some(events) = self.events.get() {
            let _ = events.send(event);
        }
    }
}

async fn wait_done(mut done: watch::Receiver<bool>) {
    let _ = done.wait_for(|d| *d).await;
}

/// The task's events as a stream: the task first, then each change, until
/// it finishes or waits for input. A subscriber that falls behind gets the
/// task as it is now in place of what it missed. With `unshown`, the task
/// goes out with the turn's first event, and a direct reply goes out alone.
fn stream(
    task: Task,
    mut fanout: broadcast::Receiver<StreamResponse>,
    running: Arc<Running>,
    unshown: bool,
) -> mpsc::Receiver<StreamResponse> {
    let (tx, rx) = mpsc::channel(64);
    let task_id = task.id.clone();
    let mut done = running.done.subscribe();
    tokio::spawn(async move {
        let mut first = Some(task);
        if !unshown
            && tx
                .send(StreamResponse::Task(first.take().expect("set")))
                .await
                .is_err()
        {
            return;
        }
        loop {
            let received = tokio::select! {
                biased;
                received = fanout.recv() => received,
                // A turn that ended without a last event (its state could
                // not change) ends its streams too, once they are drained.
                _ = done.wait_for(|d| *d) => match fanout.try_recv() {
                    Ok(event) => Ok(event),
                    Err(broadcast::error::TryRecvError::Lagged(n)) => Err(broadcast::error::RecvError::Lagged(n)),
                    // A held-back task still goes out, as it ended.
                    Err(_) if first.is_some() => Err(broadcast::error::RecvError::Lagged(0)),
                    Err(_) => return,
                },
            };
            let event = match received {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Closed) => return,
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    first = None;
                    tracing::debug!(task = %task_id, missed, "a subscriber fell behind; sending a snapshot");
                    let now = running
                        .task
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clone();
                    StreamResponse::Task(now)
                }
            };
            let last = ends_stream(&event);
            // Held back until the turn shows the task, or replies without one.
            if let Some(task) = first.take()
                && !matches!(event, StreamResponse::Message(_) | StreamResponse::Task(_))
                && tx.send(StreamResponse::Task(task)).await.is_err()
            {
                return;
            }
            if tx.send(event).await.is_err() || last {
                return;
            }
        }
    });
    rx
}

/// The task status an event tells of, if any.
fn status_of(event: &StreamResponse) -> Option<&wharf_tasks::TaskStatus> {
    match event {
        StreamResponse::StatusUpdate(e) => Some(&e.status),
        StreamResponse::Task(t) => Some(&t.status),
        StreamResponse::Message(_) | StreamResponse::ArtifactUpdate(_) => None,
    }
}

/// Whether `event` says its task has finished for good.
fn ends_task(event: &StreamResponse) -> bool {
    status_of(event).is_some_and(|s| s.state.is_terminal())
}

/// A stream closes when its task finishes or stops for input (or with
/// the one message a direct answer is).
fn ends_stream(event: &StreamResponse) -> bool {
    match status_of(event) {
        Some(status) => {
            let state = status.state;
            state.is_terminal()
                || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
        }
        None => matches!(event, StreamResponse::Message(_)),
    }
}

fn task_not_found(id: &str) -> A2aError {
    A2aError::new(A2aErrorKind::TaskNotFound)
        .message(format!("Task not found: no task `{id}`"))
        .with("taskId", id.to_string())
}

fn store_error(err: wharf_tasks::StoreError) -> A2aError {
    tracing::error!(error = %err, "task store");
    A2aError::new(A2aErrorKind::Internal).message("Internal error: the task store failed")
}

/// A message from the host in the agent's name (why a task failed).
fn agent_message(text: &str) -> Message {
    Message {
        message_id: uuid::Uuid::new_v4().to_string(),
        context_id: None,
        task_id: None,
        role: Role::Agent,
        parts: vec![wharf_tasks::Part::text(text)],
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    }
}
