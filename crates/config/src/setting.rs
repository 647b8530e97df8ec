//! Why a setting that was valid when the configuration was parsed cannot
//! be used when Wharf acts on it: a name to look up, a directory to make, a
//! place that is not allowed.

use std::path::PathBuf;

/// Why a setting cannot be used now.
#[derive(Debug, thiserror::Error)]
pub enum SettingError {
    /// An allow-list entry that is not a host, an address or a range.
    #[error("`{text}` is not a host, address or range: {why}")]
    Target {
        /// The entry as written.
        text: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A socket owner that names no user or group here.
    #[error("no {what} named `{name}`")]
    NoSuchId {
        /// `user` or `group`.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// The user or group database could not be read.
    #[error("cannot look up {what} `{name}`: {reason}")]
    IdLookup {
        /// `user` or `group`.
        what: &'static str,
        /// The name.
        name: String,
        /// What the system said.
        reason: String,
    },
    /// A compile cache inside the agents directory.
    #[error(
        "the cache directory {} is inside the agents directory {}; compiled code is never loaded from there",
        cache.display(),
        agents.display()
    )]
    CacheInAgents {
        /// The cache directory.
        cache: PathBuf,
        /// The agents directory.
        agents: PathBuf,
    },
    /// No place for the task store.
    #[error("no place for the task store: set `tasks {{ path … }}`, XDG_DATA_HOME or HOME")]
    NoTaskStorePlace,
    /// The task store's directory cannot be made.
    #[error("cannot create the task store's directory {}: {reason}", dir.display())]
    TaskStoreDir {
        /// The directory.
        dir: PathBuf,
        /// What the system said.
        reason: String,
    },
}
