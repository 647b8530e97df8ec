//! A2A tasks across the nodes of a cluster: canceling and subscribing to
//! a task whose turn runs on another node. The node that asks sends the
//! running node a call on that node's task subject (MessagePack); a
//! subscriber gets the task's events on an inbox of its own, the running
//! node's snapshot first, exactly as a local subscriber would. A running
//! node that is gone (no responders, or it left the membership) answers
//! nothing: the asker falls back to the shared store.

use std::sync::Arc;
use std::time::Duration;

use async_nats::RequestErrorKind;
use futures_util::StreamExt;
use metrics::Label;
use tokio::sync::mpsc;
use wharf_tasks::{A2aError, A2aErrorKind, StreamResponse, Task, TaskIdParams};

use super::{A2a, Reply, ends_stream, store_error};
use wharf_cluster::Cluster;
use wharf_cluster::wire::{self, TaskAnswer, TaskCall, TaskOp};

/// How long an asker waits for the running node to take a call. A cancel
/// waits for the turn to stop too (up to `CANCEL_WAIT`), so it gets more.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

fn error_answer(err: &A2aError) -> TaskAnswer {
    TaskAnswer::Error {
        code: err.kind.jsonrpc_code(),
        message: err.message.clone(),
        metadata: serde_json::Value::Object(err.metadata.clone()).to_string(),
    }
}

fn error_from(code: i64, message: String, metadata: &str) -> A2aError {
    let kind = A2aErrorKind::ALL
        .into_iter()
        .find(|k| k.jsonrpc_code() == code)
        .unwrap_or(A2aErrorKind::Internal);
    let mut err = A2aError::new(kind).message(message);
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str(metadata) {
        err.metadata = map;
    }
    err
}

fn unreachable(why: impl std::fmt::Display) -> A2aError {
    tracing::warn!(error = %why, "a task call to another node failed");
    A2aError::new(A2aErrorKind::Internal)
        .message("Internal error: the node running this task did not answer")
}

fn params(id: &str) -> TaskIdParams {
    TaskIdParams {
        tenant: String::new(),
        id: id.to_string(),
        metadata: None,
    }
}

/// Sends `call` to `node` and waits for its answer; `None` when nothing
/// answers on its subject (the node is gone).
async fn ask(
    cluster: &Cluster,
    node: &str,
    call: &TaskCall,
) -> Result<Option<TaskAnswer>, A2aError> {
    let ask = async_nats::Request::new()
        .payload(wire::encode_task_call(call))
        .timeout(Some(CALL_TIMEOUT));
    let answer = match cluster
        .client()
        .send_request(wire::tasks_subject(node), ask)
        .await
    {
        Ok(msg) => wire::decode_task_answer(&msg.payload)
            .map(Some)
            .map_err(unreachable),
        Err(e) if e.kind() == RequestErrorKind::NoResponders => Ok(None),
        Err(e) => Err(unreachable(e)),
    };
    let outcome = match &answer {
        Ok(Some(_)) => "ok",
        Ok(None) => "no_responders",
        Err(_) => "failed",
    };
    let op = match call.op {
        TaskOp::Cancel => "cancel",
        TaskOp::Subscribe => "subscribe",
        TaskOp::Status => "status",
    };
    let labels = vec![Label::new("op", op), Label::new("outcome", outcome)];
    cluster.count_by("wharf_cluster_task_calls_total", labels, 1);
    answer
}

impl A2a {
    /// The node running `task`'s turn, when that is another node of the
    /// cluster this host is in.
    pub(super) fn running_elsewhere(&self, agent: &str, task: &Task) -> Option<Arc<Cluster>> {
        use wharf_tasks::TaskState::{Submitted, Working};
        let cluster = self.cluster.get()?;
        if !matches!(task.status.state, Submitted | Working) {
            return None;
        }
        match self.store.node_of(agent, &task.id) {
            Ok(Some(node)) if node != cluster.node() => Some(cluster.clone()),
            _ => None,
        }
    }

    /// Asks the node running `task`'s turn to cancel it. `None`: that node
    /// is gone or runs it no more; the caller cancels in the store.
    pub(super) async fn cancel_elsewhere(
        &self,
        cluster: &Cluster,
        agent: &str,
        task_id: &str,
    ) -> Result<Option<Task>, A2aError> {
        let answer = self
            .call(cluster, TaskOp::Cancel, agent, task_id, None)
            .await?;
        match answer.map(|(_, a)| a) {
            Some(TaskAnswer::Task(json)) => {
                serde_json::from_slice(&json).map(Some).map_err(unreachable)
            }
            Some(TaskAnswer::Error {
                code,
                message,
                metadata,
            }) => Err(error_from(code, message, &metadata)),
            Some(TaskAnswer::NotRunning | TaskAnswer::Running) | None => Ok(None),
        }
    }

    /// Subscribes to the events of `task`'s turn on the node running it.
    /// `None`: that node is gone or runs it no more.
    pub(super) async fn subscribe_elsewhere(
        self: &Arc<Self>,
        cluster: &Arc<Cluster>,
        agent: &str,
        task_id: &str,
    ) -> Result<Option<Reply>, A2aError> {
        let client = cluster.client();
        let inbox = client.new_inbox();
        let mut events = client.subscribe(inbox.clone()).await.map_err(unreachable)?;
        let answer = self
            .call(cluster, TaskOp::Subscribe, agent, task_id, Some(inbox))
            .await?;
        let node = match answer {
            Some((node, TaskAnswer::Running)) => node,
            Some((
                _,
                TaskAnswer::Error {
                    code,
                    message,
                    metadata,
                },
            )) => return Err(error_from(code, message, &metadata)),
            _ => return Ok(None),
        };
        let (tx, rx) = mpsc::channel(64);
        let (a2a, cluster) = (self.clone(), cluster.clone());
        let (agent, task_id) = (agent.to_string(), task_id.to_string());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(cluster.settings.heartbeat);
            loop {
                let event = tokio::select! {
                    msg = events.next() => match msg.map(|m| serde_json::from_slice(&m.payload)) {
                        Some(Ok(event)) => event,
                        Some(Err(e)) => {
                            tracing::warn!(error = %e, "an unreadable task event from another node");
                            continue;
                        }
                        None => return,
                    },
                    _ = tick.tick() => {
                        if a2a.still_running(&cluster, &node, &agent, &task_id).await {
                            continue;
                        }
                        // The running node went away: the task as the
                        // store has it ends the stream.
                        if let Ok(Some(task)) = a2a.store.get(&agent, &task_id) {
                            let _ = tx.send(StreamResponse::Task(task)).await;
                        }
                        return;
                    }
                    _ = tx.closed() => return,
                };
                let last = ends_stream(&event);
                if tx.send(event).await.is_err() || last {
                    return;
                }
            }
        });
        Ok(Some(Reply::Stream(rx)))
    }

    /// Whether `node` is still running `task_id`'s turn: it is heard from,
    /// or (missed heartbeats are no proof) it does not say otherwise when
    /// asked.
    async fn still_running(
        &self,
        cluster: &Cluster,
        node: &str,
        agent: &str,
        task_id: &str,
    ) -> bool {
        if cluster.members().iter().any(|m| m.node == node) {
            return true;
        }
        let call = TaskCall {
            op: TaskOp::Status,
            agent: agent.to_string(),
            task_id: task_id.to_string(),
            inbox: None,
        };
        matches!(
            ask(cluster, node, &call).await,
            Ok(Some(TaskAnswer::Running))
        )
    }

    /// Sends a task call to the node that saved the task last and waits
    /// for its answer, with that node's name; `None` when no node answers
    /// on that subject.
    async fn call(
        &self,
        cluster: &Cluster,
        op: TaskOp,
        agent: &str,
        task_id: &str,
        inbox: Option<String>,
    ) -> Result<Option<(String, TaskAnswer)>, A2aError> {
        let node = match self.store.node_of(agent, task_id).map_err(store_error)? {
            Some(node) => node,
            None => return Ok(None),
        };
        let call = TaskCall {
            op,
            agent: agent.to_string(),
            task_id: task_id.to_string(),
            inbox,
        };
        Ok(ask(cluster, &node, &call)
            .await?
            .map(|answer| (node, answer)))
    }

    /// Fails the turns `node` was running, once it is truly gone: it left
    /// the membership and nothing answers on its task subject any more
    /// (missed heartbeats alone are no proof). Answers how many.
    pub async fn sweep(self: &Arc<Self>, cluster: &Cluster, node: &str) -> usize {
        let probe = TaskCall {
            op: TaskOp::Status,
            agent: String::new(),
            task_id: String::new(),
            inbox: None,
        };
        if !matches!(ask(cluster, node, &probe).await, Ok(None)) {
            return 0;
        }
        let (a2a, node) = (self.clone(), node.to_string());
        let failed = tokio::task::spawn_blocking(move || a2a.fail_left(Some(&node)));
        match failed.await {
            Ok(Ok(n)) => {
                cluster.count_by("wharf_cluster_orphaned_tasks_total", vec![], n as u64);
                n
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the tasks of a node that went away were not failed");
                0
            }
            Err(_) => 0,
        }
    }

    /// Answers another node's call about a task whose turn runs here.
    pub async fn answer_call(self: &Arc<Self>, cluster: &Cluster, msg: async_nats::Message) {
        let Some(reply) = msg.reply else {
            return;
        };
        let answer = match wire::decode_task_call(&msg.payload) {
            Err(e) => error_answer(
                &A2aError::new(A2aErrorKind::InvalidRequest)
                    .message(format!("a task call could not be read: {e}")),
            ),
            Ok(call) => self.answer(cluster, call).await,
        };
        if let Err(e) = cluster
            .client()
            .publish(reply, wire::encode_task_answer(&answer))
            .await
        {
            tracing::warn!(error = %e, "a task call's answer was not sent");
        }
    }

    async fn answer(self: &Arc<Self>, cluster: &Cluster, call: TaskCall) -> TaskAnswer {
        let key = (call.agent.clone(), call.task_id.clone());
        if !self.running.contains_key(&key) {
            return TaskAnswer::NotRunning;
        }
        match call.op {
            TaskOp::Status => TaskAnswer::Running,
            TaskOp::Cancel => match self.cancel_task(&call.agent, params(&call.task_id)).await {
                Ok(task) => TaskAnswer::Task(serde_json::to_vec(&task).unwrap_or_default()),
                Err(err) => error_answer(&err),
            },
            TaskOp::Subscribe => {
                let Some(inbox) = call.inbox else {
                    return error_answer(
                        &A2aError::new(A2aErrorKind::InvalidRequest).message("no inbox"),
                    );
                };
                let Some(mut events) = self.subscribe_here(&call.agent, &call.task_id) else {
                    return TaskAnswer::NotRunning;
                };
                let client = cluster.client().clone();
                tokio::spawn(async move {
                    while let Some(event) = events.recv().await {
                        let Ok(json) = serde_json::to_vec(&event) else {
                            continue;
                        };
                        if client.publish(inbox.clone(), json.into()).await.is_err() {
                            return;
                        }
                    }
                });
                TaskAnswer::Running
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_crosses_with_its_kind_message_and_metadata() {
        let err = A2aError::new(A2aErrorKind::TaskNotCancelable)
            .message("no")
            .with("taskId", "t1");
        let bytes = wire::encode_task_answer(&error_answer(&err));
        let Ok(TaskAnswer::Error {
            code,
            message,
            metadata,
        }) = wire::decode_task_answer(&bytes)
        else {
            panic!("an error answer decodes");
        };
        assert_eq!(error_from(code, message, &metadata), err);
    }

    #[test]
    fn an_unknown_code_reads_as_internal() {
        assert_eq!(
            error_from(-1, "x".into(), "not json").kind,
            A2aErrorKind::Internal
        );
    }
}
