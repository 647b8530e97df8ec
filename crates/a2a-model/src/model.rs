//! The A2A v1.0 task model (`Task`, `TaskStatus`, `Message`, `Part`,
//! `Artifact`) in its JSON form: camelCase out, enums as their proto names
//! (`TASK_STATE_COMPLETED`, `ROLE_USER`); tolerant in, as clients in the wild
//! send snake_case fields and the v0.3 enum spellings (`completed`, `user`).
//! Unknown fields are ignored, as the specification asks of receivers.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The unit of work an A2A agent runs: its status, outputs and history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id, made by the server.
    pub id: String,
    #[serde(default, alias = "context_id")]
    /// The context the task belongs to: related tasks and messages share it.
    pub context_id: String,
    /// Its current status.
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// What the agent produced.
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// The messages exchanged so far, oldest first.
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Extension data, as the agent gave it.
    pub metadata: Option<Map<String, Value>>,
    /// Whose task this is: the caller's identity as the host derived it
    /// (empty for the anonymous scope). Host-side only: never serialized,
    /// so no client sees or sets it; stores keep it in a column of its own.
    #[serde(skip)]
    pub owner: String,
}

/// A task's state and when it was recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// What the agent said with it (for example the question of `input-required`).
    pub message: Option<Message>,
    /// ISO 8601, UTC (`2026-11-22T10:00:00.000Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// The lifecycle states of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// No state given.
    Unspecified,
    /// Accepted, not started.
    Submitted,
    /// The agent is working on it.
    Working,
    /// Finished with success.
    Completed,
    /// Finished with an error.
    Failed,
    /// Canceled before it finished.
    Canceled,
    /// Waiting for the client's next message.
    InputRequired,
    /// Refused by the agent.
    Rejected,
    /// Waiting for the client to authenticate.
    AuthRequired,
}

impl TaskState {
    /// Every state, in proto enum order.
    pub const ALL: [TaskState; 9] = [
        TaskState::Unspecified,
        TaskState::Submitted,
        TaskState::Working,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::InputRequired,
        TaskState::Rejected,
        TaskState::AuthRequired,
    ];

    /// The proto name, as JSON carries it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Unspecified => "TASK_STATE_UNSPECIFIED",
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }

    /// The proto enum number (what the store indexes).
    pub fn number(self) -> i64 {
        match self {
            TaskState::Unspecified => 0,
            TaskState::Submitted => 1,
            TaskState::Working => 2,
            TaskState::Completed => 3,
            TaskState::Failed => 4,
            TaskState::Canceled => 5,
            TaskState::InputRequired => 6,
            TaskState::Rejected => 7,
            TaskState::AuthRequired => 8,
        }
    }

    /// The state with the proto enum number `n`, if any.
    pub fn from_number(n: i64) -> Option<TaskState> {
        TaskState::ALL.into_iter().find(|s| s.number() == n)
    }

    /// Completed, failed, canceled and rejected tasks change no more.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Reads the proto name or the v0.3 spelling (`input-required`).
    pub fn parse(text: &str) -> Option<TaskState> {
        let short = text
            .strip_prefix("TASK_STATE_")
            .map(str::to_ascii_lowercase)
            .unwrap_or_else(|| text.to_ascii_lowercase())
            .replace('_', "-");
        Some(match short.as_str() {
            "unspecified" | "unknown" => TaskState::Unspecified,
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "canceled" | "cancelled" => TaskState::Canceled,
            "input-required" => TaskState::InputRequired,
            "rejected" => TaskState::Rejected,
            "auth-required" => TaskState::AuthRequired,
            _ => return None,
        })
    }
}

impl Serialize for TaskState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        TaskState::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown task state `{text}`")))
    }
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// No role given.
    Unspecified,
    /// From the client.
    User,
    /// From the agent.
    Agent,
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            Role::Unspecified => "ROLE_UNSPECIFIED",
            Role::User => "ROLE_USER",
            Role::Agent => "ROLE_AGENT",
        })
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text
            .trim_start_matches("ROLE_")
            .to_ascii_lowercase()
            .as_str()
        {
            "user" => Ok(Role::User),
            "agent" => Ok(Role::Agent),
            "unspecified" => Ok(Role::Unspecified),
            _ => Err(serde::de::Error::custom(format!("unknown role `{text}`"))),
        }
    }
}

/// One unit of communication between a client and an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(alias = "message_id")]
    /// The message's id, made by its sender.
    pub message_id: String,
    #[serde(default, alias = "context_id", skip_serializing_if = "Option::is_none")]
    /// The context it belongs to, when known.
    pub context_id: Option<String>,
    #[serde(default, alias = "task_id", skip_serializing_if = "Option::is_none")]
    /// The task it belongs to, when known.
    pub task_id: Option<String>,
    /// Who sent it.
    pub role: Role,
    /// Its content.
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Extension data, as the sender gave it.
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// The URIs of the extensions it uses.
    pub extensions: Vec<String>,
    #[serde(
        default,
        alias = "reference_task_ids",
        skip_serializing_if = "Vec::is_empty"
    )]
    /// Tasks this message refers to.
    pub reference_task_ids: Vec<String>,
}

/// A piece of content: text, raw bytes (base64 in JSON), a URL or JSON data.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Text content.
    pub text: Option<String>,
    /// Base64, as the JSON form carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A URL to the content.
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Structured JSON content.
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Extension data, as the sender gave it.
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The file name the content has, if it is a file.
    pub filename: Option<String>,
    #[serde(default, alias = "media_type", skip_serializing_if = "Option::is_none")]
    /// The content's media type (`text/plain`, …).
    pub media_type: Option<String>,
}

impl Part {
    /// A part holding `text` alone.
    pub fn text(text: impl Into<String>) -> Part {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(alias = "artifact_id")]
    /// The artifact's id, unique within its task.
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A name for people.
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A description for people.
    pub description: Option<String>,
    /// Its content.
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Extension data, as the agent gave it.
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// The URIs of the extensions it uses.
    pub extensions: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_read_camel_and_snake_case_and_write_camel_case() {
        let snake = r#"{"id":"t1","context_id":"c1","status":{"state":"input-required"},
            "history":[{"message_id":"m1","role":"user","parts":[{"text":"hi"}],"task_id":"t1"}],
            "unknownField":1}"#;
        let task: Task = serde_json::from_str(snake).unwrap();
        assert_eq!(task.context_id, "c1");
        assert_eq!(task.status.state, TaskState::InputRequired);
        assert_eq!(task.history[0].role, Role::User);
        let out = serde_json::to_value(&task).unwrap();
        assert_eq!(out["contextId"], "c1");
        assert_eq!(out["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(out["history"][0]["messageId"], "m1");
        assert_eq!(out["history"][0]["taskId"], "t1");
        assert_eq!(out["history"][0]["role"], "ROLE_USER");
        assert!(out.get("artifacts").is_none());
        let back: Task = serde_json::from_value(out).unwrap();
        assert_eq!(back, task);
    }

    #[test]
    fn every_state_round_trips_and_unknown_ones_are_refused() {
        for state in TaskState::ALL {
            assert_eq!(TaskState::parse(state.as_str()), Some(state));
            assert_eq!(TaskState::from_number(state.number()), Some(state));
        }
        let err = serde_json::from_str::<TaskStatus>(r#"{"state":"TASK_STATE_DONE"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown task state `TASK_STATE_DONE`"),
            "{err}"
        );
        assert!(TaskState::Canceled.is_terminal());
        assert!(!TaskState::InputRequired.is_terminal());
    }
}
