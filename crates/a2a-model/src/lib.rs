//! The A2A v1.0 protocol's types for Wharf: tasks, messages and artifacts,
//! the agent card, errors in each binding's form, method parameters, push
//! configs, and the settings a task store keeps tasks with. Plain data with
//! serde; no I/O.

#![deny(missing_docs)]

pub mod bounds;
mod card;
mod error;
mod keeping;
mod lifecycle;
mod model;
mod params;
mod push;

pub use card::{
    AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill, PROTOCOL_VERSION,
};
pub use error::{A2aError, A2aErrorKind, ERROR_DOMAIN};
pub use keeping::{Durability, Retention};
pub use lifecycle::{StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent};
pub use model::{Artifact, Message, Part, Role, Task, TaskState, TaskStatus};
pub use params::{
    GetTaskParams, ListQuery, ListTasksParams, SendMessageConfiguration, SendMessageParams,
    TaskIdParams, history_limit, now_timestamp, parse_params, parse_timestamp_ms,
};
pub use push::{
    AuthenticationInfo, ListPushConfigsParams, PushConfigParams, TaskPushNotificationConfig,
};
