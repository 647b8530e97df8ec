//! The task lifecycle the host owns: creating a task from a client's first
//! message, follow-up messages (only to tasks not in a terminal state),
//! status changes (a finished task changes no more), cancellation, and
//! artifacts built up from chunks; and the stream events each change
//! becomes (`statusUpdate`, `artifactUpdate`, as `StreamResponse` carries
//! them).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{A2aError, A2aErrorKind};
use crate::model::{Artifact, Message, Task, TaskState, TaskStatus};
use crate::params::now_timestamp;

/// A change of a task's status, as streamed and pushed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(alias = "task_id")]
    /// The task.
    pub task_id: String,
    #[serde(alias = "context_id")]
    /// The task's context.
    pub context_id: String,
    /// Its new status.
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Extension data.
    pub metadata: Option<Map<String, Value>>,
}

/// A new artifact, or a chunk of one, as streamed and pushed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(alias = "task_id")]
    /// The task.
    pub task_id: String,
    #[serde(alias = "context_id")]
    /// The task's context.
    pub context_id: String,
    /// The artifact, or the chunk of it.
    pub artifact: Artifact,
    /// The parts extend the artifact of the same id sent before.
    #[serde(default)]
    pub append: bool,
    #[serde(default, alias = "last_chunk")]
    /// Whether this is the artifact's last chunk.
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Extension data.
    pub metadata: Option<Map<String, Value>>,
}

/// One item of a stream (or a `SendMessage` answer: a task or a message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The task as it stands.
    Task(Task),
    /// A message from the agent.
    Message(Message),
    /// A change of the task's status.
    StatusUpdate(TaskStatusUpdateEvent),
    /// A new artifact, or a chunk of one.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

fn unsupported(why: String, task: &Task) -> A2aError {
    A2aError::new(A2aErrorKind::UnsupportedOperation)
        .message(why)
        .with("taskId", task.id.clone())
        .with("state", task.status.state.as_str())
}

impl Task {
    /// A new task for a client's first message, `submitted`. The message
    /// is stamped with the task's ids and opens the history.
    pub fn submitted(id: String, context_id: String, mut message: Message) -> Task {
        message.task_id = Some(id.clone());
        message.context_id = Some(context_id.clone());
        Task {
            id,
            context_id,
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(now_timestamp()),
            },
            artifacts: Vec::new(),
            history: vec![message],
            metadata: None,
            owner: String::new(),
        }
    }

    /// A client's follow-up message (multi-turn): accepted while the task
    /// is not finished; its context must be the task's.
    pub fn follow_up(&mut self, mut message: Message) -> Result<(), A2aError> {
        if self.status.state.is_terminal() {
            return Err(unsupported(
                format!(
                    "task `{}` is {} and accepts no more messages",
                    self.id,
                    state_word(self.status.state)
                ),
                self,
            ));
        }
        if let Some(context) = &message.context_id
            && *context != self.context_id
        {
            return Err(A2aError::new(A2aErrorKind::InvalidParams)
                .message(format!(
                    "Invalid parameters: message contextId `{context}` is not task `{}`'s context `{}`",
                    self.id, self.context_id
                ))
                .with("taskId", self.id.clone()));
        }
        message.task_id = Some(self.id.clone());
        message.context_id = Some(self.context_id.clone());
        self.history.push(message);
        Ok(())
    }

    /// Moves the task to `state`; an agent's status message joins the
    /// history. A finished task changes no more.
    pub fn set_status(
        &mut self,
        state: TaskState,
        message: Option<Message>,
    ) -> Result<TaskStatusUpdateEvent, A2aError> {
        if self.status.state.is_terminal() {
            return Err(unsupported(
                format!(
                    "task `{}` is already {}",
                    self.id,
                    state_word(self.status.state)
                ),
                self,
            ));
        }
        let message = message.map(|mut m| {
            m.task_id = Some(self.id.clone());
            m.context_id = Some(self.context_id.clone());
            m
        });
        if let Some(m) = &message {
            self.history.push(m.clone());
        }
        self.status = TaskStatus {
            state,
            message,
            timestamp: Some(now_timestamp()),
        };
        Ok(TaskStatusUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            status: self.status.clone(),
            metadata: None,
        })
    }

    /// Cancels the task: `TaskNotCancelable` once it is finished.
    pub fn cancel(&mut self) -> Result<TaskStatusUpdateEvent, A2aError> {
        if self.status.state.is_terminal() {
            return Err(A2aError::new(A2aErrorKind::TaskNotCancelable)
                .message(format!(
                    "task `{}` is {} and cannot be canceled",
                    self.id,
                    state_word(self.status.state)
                ))
                .with("taskId", self.id.clone())
                .with("state", self.status.state.as_str()));
        }
        self.set_status(TaskState::Canceled, None)
    }

    /// Adds an artifact, or with `append` extends the one of the same id
    /// (a new one when there is none yet).
    pub fn add_artifact(
        &mut self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> TaskArtifactUpdateEvent {
        let existing = self
            .artifacts
            .iter_mut()
            .find(|a| a.artifact_id == artifact.artifact_id);
        match existing {
            Some(a) if append => a.parts.extend(artifact.parts.iter().cloned()),
            Some(a) => *a = artifact.clone(),
            None => self.artifacts.push(artifact.clone()),
        }
        TaskArtifactUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            artifact,
            append,
            last_chunk,
            metadata: None,
        }
    }
}

/// `completed`, `input-required`, … for messages.
fn state_word(state: TaskState) -> String {
    state
        .as_str()
        .trim_start_matches("TASK_STATE_")
        .to_ascii_lowercase()
        .replace('_', "-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Part, Role};

    fn message(id: &str, role: Role) -> Message {
        Message {
            message_id: id.into(),
            context_id: None,
            task_id: None,
            role,
            parts: vec![Part::text(id)],
            metadata: None,
            extensions: vec![],
            reference_task_ids: vec![],
        }
    }

    #[test]
    fn a_multi_turn_task_runs_to_completion_and_then_refuses_changes() {
        let mut task = Task::submitted("t1".into(), "c1".into(), message("m1", Role::User));
        assert_eq!(task.status.state, TaskState::Submitted);
        assert_eq!(task.history[0].task_id.as_deref(), Some("t1"));
        task.set_status(TaskState::Working, None).unwrap();
        let ev = task
            .set_status(TaskState::InputRequired, Some(message("m2", Role::Agent)))
            .unwrap();
        assert_eq!(ev.status.state, TaskState::InputRequired);
        assert_eq!(
            ev.status.message.as_ref().unwrap().context_id.as_deref(),
            Some("c1")
        );
        task.follow_up(message("m3", Role::User)).unwrap();
        task.set_status(TaskState::Working, None).unwrap();
        task.add_artifact(
            Artifact {
                artifact_id: "a".into(),
                name: None,
                description: None,
                parts: vec![Part::text("one ")],
                metadata: None,
                extensions: vec![],
            },
            false,
            false,
        );
        let chunk = Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![Part::text("two")],
            metadata: None,
            extensions: vec![],
        };
        let ev = task.add_artifact(chunk, true, true);
        assert!(ev.append && ev.last_chunk);
        assert_eq!(task.artifacts.len(), 1);
        assert_eq!(task.artifacts[0].parts.len(), 2);
        task.set_status(TaskState::Completed, None).unwrap();
        let ids: Vec<&str> = task.history.iter().map(|m| m.message_id.as_str()).collect();
        assert_eq!(ids, ["m1", "m2", "m3"]);

        let err = task.follow_up(message("m4", Role::User)).unwrap_err();
        assert_eq!(err.kind, A2aErrorKind::UnsupportedOperation);
        assert!(
            err.message
                .contains("is completed and accepts no more messages")
        );
        let err = task.set_status(TaskState::Working, None).unwrap_err();
        assert_eq!(err.kind, A2aErrorKind::UnsupportedOperation);
        let err = task.cancel().unwrap_err();
        assert_eq!(err.kind, A2aErrorKind::TaskNotCancelable);
        assert_eq!(err.metadata["state"], "TASK_STATE_COMPLETED");
    }

    #[test]
    fn a_follow_up_in_another_context_is_refused_and_cancel_ends_a_live_task() {
        let mut task = Task::submitted("t1".into(), "c1".into(), message("m1", Role::User));
        let mut other = message("m2", Role::User);
        other.context_id = Some("c2".into());
        let err = task.follow_up(other).unwrap_err();
        assert_eq!(err.kind, A2aErrorKind::InvalidParams);
        assert_eq!(task.history.len(), 1, "nothing was added");
        let ev = task.cancel().unwrap();
        assert_eq!(ev.status.state, TaskState::Canceled);
    }

    #[test]
    fn stream_items_carry_their_kind_as_the_key() {
        let task = Task::submitted("t1".into(), "c1".into(), message("m1", Role::User));
        let ev = TaskStatusUpdateEvent {
            task_id: "t1".into(),
            context_id: "c1".into(),
            status: task.status.clone(),
            metadata: None,
        };
        let json = serde_json::to_value(StreamResponse::StatusUpdate(ev)).unwrap();
        assert_eq!(json["statusUpdate"]["taskId"], "t1");
        assert_eq!(
            json["statusUpdate"]["status"]["state"],
            "TASK_STATE_SUBMITTED"
        );
        let json = serde_json::to_value(StreamResponse::Task(task)).unwrap();
        assert_eq!(json["task"]["id"], "t1");
    }
}
