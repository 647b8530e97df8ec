//! How a task store keeps tasks: when a save is answered, and which
//! tasks it deletes. Plain settings, read from the configuration.

use std::time::Duration;

/// When a save is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// After the write is committed to disk (fsync): nothing answered is
    /// ever lost. The writer commits queued writes together, so many
    /// concurrent saves share one fsync.
    #[default]
    Commit,
    /// As soon as the write is queued: faster answers, and a crash can lose
    /// the writes of the last batch not yet committed (milliseconds).
    Queued,
}

/// Which tasks are deleted (with their push configs): finished ones, and
/// ones left waiting for input. Tasks whose turn is running (submitted,
/// working) are never evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retention {
    /// Finished tasks not updated for this long are deleted.
    pub max_age: Option<Duration>,
    /// Beyond this many tasks in all, the oldest finished ones are deleted.
    pub max_tasks: Option<u64>,
    /// Tasks waiting for input (input-required, auth-required) that nobody
    /// answered for this long are deleted.
    pub max_waiting: Option<Duration>,
}

impl Retention {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.max_age.is_some() || self.max_tasks.is_some() || self.max_waiting.is_some()
    }
}
