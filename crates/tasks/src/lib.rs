//! A2A tasks: the protocol's task model, agent card and lifecycle, its
//! errors in each binding's form, and where tasks are kept. The
//! [`TaskStore`] trait is what the host's A2A transport uses;
//! [`SqliteStore`] keeps tasks, their history, artifacts and push configs in an embedded
//! SQLite database, so a restart keeps every task; [`PgStore`] keeps them in
//! PostgreSQL, shared by the nodes of a cluster. [`history::History`]
//! keeps the messages of the topics a `topic` block names, in its own
//! SQLite file beside the tasks.

#![deny(missing_docs)]

mod dbfile;
pub mod history;
mod pg_writer;
mod postgres;
mod sqlite;
mod store;
mod writer;

pub use postgres::{PgOptions, PgStore};
pub use sqlite::SqliteStore;
pub use store::{StoreError, StoreOptions, TaskPage, TaskStore, Written, trimmed};
pub use wharf_a2a_model::*;
