//! A2A tasks: the protocol's task model, agent card and lifecycle, its
//! errors in each binding's form, and where tasks are kept. The
//! [`TaskStore`] trait is what the host's A2A transport uses;
//! [`SqliteStore`] keeps tasks, their history, artifacts and push configs in an embedded
//! SQLite database, so a restart keeps every task; [`PgStore`] keeps them in
//! PostgreSQL, shared by the nodes of a cluster.

mod card;
mod error;
mod lifecycle;
mod model;
mod params;
mod pg_writer;
mod postgres;
mod push;
mod sqlite;
mod store;
mod writer;

pub use card::{
    AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill, PROTOCOL_VERSION,
};
pub use error::{A2aError, A2aErrorKind, ERROR_DOMAIN};
pub use lifecycle::{StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent};
pub use model::{Artifact, Message, Part, Role, Task, TaskState, TaskStatus};
pub use params::{
    GetTaskParams, ListTasksParams, SendMessageConfiguration, SendMessageParams, TaskIdParams,
    history_limit, now_timestamp, parse_params, parse_timestamp_ms,
};
pub use postgres::{PgOptions, PgStore};
pub use push::{
    AuthenticationInfo, ListPushConfigsParams, PushConfigParams, TaskPushNotificationConfig,
};
pub use sqlite::SqliteStore;
pub use store::{
    Durability, ListQuery, Retention, StoreError, StoreOptions, TaskPage, TaskStore, Written,
    trimmed,
};
