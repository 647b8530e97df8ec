//! `SubscribeToTask`: a subscriber follows its task until the task ends,
//! across turns (A2A section 3.1.6: the stream terminates when the task
//! reaches a terminal state, not when it stops for input). While a turn
//! runs, here or on another node, its events are forwarded as they come
//! (the turn's snapshot first, so nothing it did before the subscriber
//! joined is lost); between turns the subscriber waits, woken when a turn
//! of its task starts here or the task is canceled here (a change it did
//! not see as events, such as a cancel or a turn too quick to join,
//! arrives as the whole task), and in a cluster
//! also looking at the shared store once a heartbeat (a turn may start on
//! another node). A task whose turn no node runs any more (its node is
//! gone) ends the stream as the store has it. A subscriber that goes away
//! stops following at once.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::{Notify, mpsc};
use wharf_tasks::{
    A2aError, A2aErrorKind, StreamResponse, Task, TaskIdParams, TaskState, TaskStatus,
};

use super::{A2a, Reply, Scope, ends_task, status_of};

/// Events a subscriber may have waiting before the turn's fan-out waits
/// for it (and, past its ring, sends it a snapshot instead).
const FOLLOW_BUFFER: usize = 64;

type Key = (String, String);

impl A2a {
    /// `SubscribeToTask`: the task now, then its events until it ends,
    /// wherever in the cluster its turns run.
    pub async fn subscribe(
        self: &Arc<Self>,
        scope: &Scope,
        params: TaskIdParams,
    ) -> Result<Reply, A2aError> {
        let task = self.task(scope, &params.id)?;
        if task.status.state.is_terminal() {
            return Err(A2aError::new(A2aErrorKind::UnsupportedOperation)
                .message(format!(
                    "task `{}` is finished: there is nothing to subscribe to",
                    task.id
                ))
                .with("taskId", task.id.clone())
                .with("state", task.status.state.as_str()));
        }
        let agent = scope.agent.as_str();
        // The first turn is joined here, so that a node that cannot be
        // reached is the caller's error, not a stream that ends at once.
        let turn = self.turn_events(agent, &task).await?;
        let (tx, rx) = mpsc::channel(FOLLOW_BUFFER);
        let follower = Follower {
            a2a: self.clone(),
            key: (agent.to_string(), params.id),
            tx,
        };
        tokio::spawn(follower.run(task, turn));
        Ok(Reply::Stream(rx))
    }

    /// The events of `task`'s turn, its snapshot first, when one runs on
    /// this node or on another that answers.
    async fn turn_events(
        self: &Arc<Self>,
        agent: &str,
        task: &Task,
    ) -> Result<Option<mpsc::Receiver<StreamResponse>>, A2aError> {
        if let Some(events) = self.subscribe_here(agent, &task.id) {
            return Ok(Some(events));
        }
        if let Some(cluster) = self.running_elsewhere(agent, task)
            && let Some(Reply::Stream(events)) =
                self.subscribe_elsewhere(&cluster, agent, &task.id).await?
        {
            return Ok(Some(events));
        }
        Ok(None)
    }

    /// Wakes the subscribers waiting for `agent`'s task `id` to change: a
    /// turn of it started, or it was canceled between turns.
    pub(super) fn wake_followers(&self, agent: &str, id: &str) {
        // One load on every turn's start while nobody waits.
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Some(notify) = self.followers.get(&(agent.to_string(), id.to_string())) {
            notify.notify_waiters();
        }
    }
}

/// One subscriber following one task.
struct Follower {
    a2a: Arc<A2a>,
    key: Key,
    tx: mpsc::Sender<StreamResponse>,
}

impl Follower {
    async fn run(self, task: Task, turn: Option<mpsc::Receiver<StreamResponse>>) {
        let notify = self.register();
        self.a2a.waiting.fetch_add(1, Ordering::Relaxed);
        self.follow(&notify, task, turn).await;
        self.a2a.waiting.fetch_sub(1, Ordering::Relaxed);
        drop(notify);
        // The wake-up goes once its last subscriber is gone.
        self.a2a
            .followers
            .remove_if(&self.key, |_, n| Arc::strong_count(n) == 1);
    }

    /// Forwards the task's events until it ends or the subscriber leaves.
    async fn follow(
        &self,
        notify: &Notify,
        task: Task,
        mut turn: Option<mpsc::Receiver<StreamResponse>>,
    ) {
        // The task status the subscriber was last told of.
        let mut told: Option<TaskStatus> = None;
        if turn.is_none() {
            told = Some(task.status.clone());
            if self.tx.send(StreamResponse::Task(task)).await.is_err() {
                return;
            }
        }
        let heartbeat = self.a2a.cluster.get().map(|c| c.settings.heartbeat);
        loop {
            // Armed before anything is looked at: a turn that starts from
            // here on wakes this subscriber.
            let woken = notify.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if let Some(mut events) = turn.take() {
                loop {
                    let event = tokio::select! {
                        event = events.recv() => event,
                        _ = self.tx.closed() => return,
                    };
                    let Some(event) = event else { break };
                    if let Some(status) = status_of(&event) {
                        told = Some(status.clone());
                    }
                    let end = ends_task(&event);
                    if self.tx.send(event).await.is_err() || end {
                        return;
                    }
                }
                // The turn stopped for input (or its node went away).
                continue;
            }
            let Ok(task) = self.a2a.find(&self.key.0, &self.key.1) else {
                return;
            };
            match self.a2a.turn_events(&self.key.0, &task).await {
                Ok(Some(events)) => {
                    turn = Some(events);
                    continue;
                }
                Ok(None) => {}
                Err(err) => {
                    tracing::debug!(task = %self.key.1, error = %err, "a subscriber could not join a turn on another node");
                }
            }
            let state = task.status.state;
            let is_new = told.as_ref() != Some(&task.status);
            if matches!(state, TaskState::Submitted | TaskState::Working) {
                // No node runs its turn: the turn ended just now (the task
                // has moved on: look again), or the node running it is
                // gone, and the task as kept ends the stream.
                match self.a2a.find(&self.key.0, &self.key.1) {
                    Ok(again) if again.status.state != state => continue,
                    Ok(again) if is_new => {
                        let _ = self.tx.send(StreamResponse::Task(again)).await;
                    }
                    _ => {}
                }
                return;
            }
            if is_new {
                // Changed since the subscriber last heard (a cancel between
                // turns, or a turn too quick to join): the whole task, so
                // a missed turn's artifacts arrive too.
                told = Some(task.status.clone());
                if self.tx.send(StreamResponse::Task(task)).await.is_err() || state.is_terminal() {
                    return;
                }
            }
            let tick = async {
                match heartbeat {
                    Some(every) => tokio::time::sleep(every).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut woken => {}
                _ = tick => {}
                _ = self.tx.closed() => return,
            }
        }
    }

    /// The task's wake-up, shared by all its subscribers.
    fn register(&self) -> Arc<Notify> {
        self.a2a
            .followers
            .entry(self.key.clone())
            .or_insert_with(|| Arc::new(Notify::new()))
            .clone()
    }
}
