//! Running one turn of a task: the agent is called through its route (rate
//! limit, breaker, pool, affinity, deadline, metrics, as any call), each
//! event it reports is applied to the task and fanned out as it arrives,
//! and how the turn ended decides the task's next state, saved before the
//! last event goes out. A new task its client has not seen yet is saved
//! before a stream's first event, or (a blocking send) only as it ends; a
//! direct reply to it goes out alone and keeps no task.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc;
use wharf_tasks::{Message, StreamResponse, Task, TaskState};

use super::{A2a, Running, agent_message};
use wharf_core::request::{Call, Request, TurnEvent};
use wharf_core::trace::{self, Attribute, Kind};
use wharf_routing::{AgentRoute, RouteError};
use wharf_runtime::CallError;

/// One turn, ready to run.
pub(super) struct TurnRun {
    pub a2a: Arc<A2a>,
    pub agent: String,
    pub route: Arc<AgentRoute>,
    pub running: Arc<Running>,
    /// What the guest is called with.
    pub call: Arc<wharf_core::request::Turn>,
    /// Where the guest's events arrive.
    pub events: mpsc::UnboundedReceiver<TurnEvent>,
    /// The task is not saved nor shown yet (a new task whose client
    /// learns of it only from this turn).
    pub unshown: bool,
    /// The sender streams: the turn's first event shows it the task.
    pub streamed: bool,
}

/// How the guest ended its turn.
enum Ending {
    /// The task's new state and status message.
    Task(TaskState, Option<Message>),
    /// A direct reply in place of the task.
    Reply(Message),
}

/// What a turn carries into the guest, and the channel its events come
/// back on.
pub(super) fn turn_call(
    task: &Task,
    message: Message,
    history: Vec<Message>,
    metadata: Option<String>,
    running: &Running,
) -> (
    Arc<wharf_core::request::Turn>,
    mpsc::UnboundedReceiver<TurnEvent>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let call = wharf_core::request::Turn {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        message,
        history,
        metadata: metadata.unwrap_or_default(),
        events: tx,
        cancel: running.cancel.clone(),
    };
    (Arc::new(call), rx)
}

/// The request the agent's route runs: the client's request head (id,
/// client, headers, filter metadata) with the turn to call. The context id
/// is the affinity key when the client's request names none, so a
/// conversation stays with its warm instance.
pub(super) fn turn_request(req: &Request, call: &Arc<wharf_core::request::Turn>) -> Request {
    Request {
        body: bytes::Bytes::new(),
        affinity: req
            .affinity
            .clone()
            .or_else(|| Some(call.context_id.clone())),
        call: Call::Turn(call.clone()),
        incoming: None,
        ..req.clone()
    }
}

impl TurnRun {
    pub async fn run(mut self, mut req: Request) {
        let task_id = self.call.task_id.clone();
        let route = self.route.clone();
        let span = trace::child(req.trace.as_ref(), "wharf.a2a.turn", Kind::Internal, || {
            vec![
                Attribute::new("wharf.agent", self.agent.to_string()),
                Attribute::new("a2a.task.id", task_id.clone()),
                Attribute::new("a2a.context.id", self.call.context_id.clone()),
            ]
        });
        if let Some(span) = &span {
            req.trace = Some(span.trace().clone());
        }
        let call = route.dispatch(req);
        tokio::pin!(call);
        let mut finished = None;
        let result = loop {
            tokio::select! {
                biased;
                Some(event) = self.events.recv() => {
                    self.show(&event).await;
                    self.apply(event, &mut finished);
                }
                result = &mut call => break result,
            }
        };
        while let Ok(event) = self.events.try_recv() {
            self.show(&event).await;
            self.apply(event, &mut finished);
        }
        if let (Some(span), Err(err)) = (&span, &result) {
            span.fail(err.to_string());
        }
        let (state, message) = match (result, finished) {
            (Ok(_), Some(Ending::Reply(reply))) if self.unshown => return self.reply(reply),
            // Shown already: the reply ends the task as its answer.
            (Ok(_), Some(Ending::Reply(reply))) => (TaskState::Completed, Some(reply)),
            (Ok(_), Some(Ending::Task(state, message))) => (state, message),
            (Ok(_), None) => (
                TaskState::Failed,
                Some(agent_message("the agent ended its turn without an outcome")),
            ),
            (Err(err), _) => self.failure(&err),
        };
        if let Some(span) = span {
            span.set(Attribute::new("a2a.task.state", state.as_str()));
        }
        let (task, update) = {
            let mut task = self.lock();
            let update = task.set_status(state, message).ok();
            (task.clone(), update)
        };
        if let Err(err) = self.a2a.store.save(&self.agent, &task).wait().await {
            tracing::error!(agent = %self.agent, task = %task_id, error = %err, "the task's last state was not saved");
        }
        if let Some(update) = update {
            let event = StreamResponse::StatusUpdate(update);
            self.a2a.publish(&self.agent, Some(&self.running), event);
        }
        self.a2a.finish(&self.agent, &task_id);
    }

    /// Saves a task not shown yet before the first event a stream gets,
    /// so that the client finds the task whose id the event tells (a
    /// blocking sender learns nothing before the end: its task is saved
    /// once, as it ends). A task that cannot be saved is not run on: its
    /// turn is canceled.
    async fn show(&mut self, event: &TurnEvent) {
        let progress = matches!(event, TurnEvent::Working(_) | TurnEvent::Artifact { .. });
        if !self.unshown || !self.streamed || !progress {
            return;
        }
        self.unshown = false;
        let task = self.lock().clone();
        if let Err(err) = self.a2a.store.save(&self.agent, &task).wait().await {
            tracing::error!(agent = %self.agent, task = %task.id, error = %err, "a new task was not saved; its turn is canceled");
            self.running.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// The agent replied without a task: the reply goes to the sender (its
    /// stream, or its blocking call) and nothing is saved.
    fn reply(self, reply: Message) {
        let (task_id, context_id) = {
            let task = self.lock();
            (task.id.clone(), task.context_id.clone())
        };
        let reply = Message {
            context_id: Some(context_id),
            task_id: None,
            ..reply
        };
        let _ = self.running.reply.set(reply.clone());
        self.running.send(StreamResponse::Message(reply));
        self.a2a.finish(&self.agent, &task_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Task> {
        self.running.task.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies one reported event to the task and fans it out, under the
    /// task's lock so that a subscriber's snapshot and its events agree.
    fn apply(&self, event: TurnEvent, finished: &mut Option<Ending>) {
        let mut task = self.lock();
        let out = match event {
            TurnEvent::Working(message) => task
                .set_status(TaskState::Working, message.map(with_id))
                .ok()
                .map(StreamResponse::StatusUpdate),
            TurnEvent::Artifact {
                artifact,
                append,
                last_chunk,
            } => Some(StreamResponse::ArtifactUpdate(
                task.add_artifact(artifact, append, last_chunk),
            )),
            TurnEvent::Finished { state, message } => {
                *finished = Some(Ending::Task(state, message.map(with_id)));
                None
            }
            TurnEvent::Replied(message) => {
                *finished = Some(Ending::Reply(with_id(message)));
                None
            }
        };
        if let Some(out) = out {
            self.a2a.publish(&self.agent, Some(&self.running), out);
        }
    }

    /// The task's end when the call failed, with a message that says why
    /// and leaks nothing of the guest's internals.
    fn failure(&self, err: &RouteError) -> (TaskState, Option<Message>) {
        if self.running.cancel.load(Ordering::Relaxed) {
            return (TaskState::Canceled, None);
        }
        let text = match err {
            RouteError::Call(CallError::BadRequest(text)) => {
                return (TaskState::Rejected, Some(agent_message(text)));
            }
            RouteError::Call(CallError::Unavailable(text)) => text.clone(),
            RouteError::Call(CallError::Deadline) => {
                "the agent did not finish within its deadline".into()
            }
            RouteError::Call(CallError::MemoryLimit) => {
                "the agent exceeded its memory limit".into()
            }
            RouteError::Call(CallError::InvalidResponse(why)) => {
                format!("the agent's turn was invalid: {why}")
            }
            RouteError::Overloaded => "the agent is at its concurrency limit".into(),
            RouteError::BreakerOpen { .. } => "the agent is failing and switched off".into(),
            RouteError::RateLimited { .. } => "rate limit exceeded".into(),
            other => {
                tracing::warn!(agent = %self.agent, error = %other, "a turn failed");
                "the agent failed".into()
            }
        };
        (TaskState::Failed, Some(agent_message(&text)))
    }
}

/// An agent message without an id gets one.
fn with_id(mut message: Message) -> Message {
    if message.message_id.is_empty() {
        message.message_id = uuid::Uuid::new_v4().to_string();
    }
    message
}
