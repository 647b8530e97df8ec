//! The `tasks { … }` block: where A2A tasks are kept (an SQLite file), when
//! a save counts as done, and which finished tasks are deleted.
//!
//! ```kdl
//! tasks {
//!     path "/var/lib/wharf/tasks.db"   // default: under Wharf's data directory
//!     durability "commit"              // or "queued"
//!     max-age "720h"                   // finished tasks older than this go (default 30 days)
//!     max-tasks 100000                 // past this many, the oldest finished go
//!     max-waiting "168h"               // tasks waiting for input this long go (default 7 days)
//!     max-open-per-owner 1000          // unfinished tasks one caller may have (default 1000)
//! }
//! ```

use std::path::{Path, PathBuf};

use kdl::{KdlNode, KdlValue};
use wharf_a2a_model::{Durability, Retention};

use super::SettingError;
use super::diag::Problem;
use super::walker::Walker;

const TASKS: &[&str] = &[
    "path",
    "durability",
    "max-age",
    "max-tasks",
    "max-waiting",
    "max-open-per-owner",
];

/// Where and how A2A tasks are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tasks {
    /// The database file; `None` is the default under the data directory.
    pub path: Option<PathBuf>,
    /// When a save is answered.
    pub durability: Durability,
    /// Which tasks are deleted.
    pub retention: Retention,
    /// Unfinished tasks one owner may have per agent; a new one past it is
    /// refused.
    pub max_open_per_owner: u64,
}

impl Default for Tasks {
    fn default() -> Self {
        const DAY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
        Tasks {
            path: None,
            durability: Durability::default(),
            retention: Retention {
                max_age: Some(30 * DAY),
                max_tasks: None,
                max_waiting: Some(7 * DAY),
            },
            max_open_per_owner: 1000,
        }
    }
}

impl Tasks {
    /// The database file: the configured one, else
    /// `$XDG_DATA_HOME/wharf/tasks.db`, else `$HOME/.local/share/wharf/tasks.db`.
    pub fn path(&self) -> Result<PathBuf, SettingError> {
        if let Some(path) = &self.path {
            return Ok(path.clone());
        }
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        match (var("XDG_DATA_HOME"), var("HOME")) {
            (Some(data), _) => Ok(PathBuf::from(data).join("wharf").join("tasks.db")),
            (None, Some(home)) => Ok(PathBuf::from(home).join(".local/share/wharf/tasks.db")),
            (None, None) => Err(SettingError::NoTaskStorePlace),
        }
    }

    /// The database file, its directory created when missing.
    pub fn prepared_path(&self) -> Result<PathBuf, SettingError> {
        let path = self.path()?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(|e| SettingError::TaskStoreDir {
                dir: dir.to_path_buf(),
                reason: e.to_string(),
            })?;
        }
        Ok(path)
    }
}

impl Tasks {
    /// Where kept topic messages go: beside the task database, as
    /// `NAME.topics.db` (`tasks.db` → `tasks.topics.db`), its directory
    /// created when missing.
    ///
    /// A node in a cluster keeps its copy of the cluster's history in a
    /// file of its own (`tasks.cluster-topics.db`): its ids are the
    /// cluster stream's, not this node's.
    pub fn topic_history_path(&self, in_cluster: bool) -> Result<PathBuf, SettingError> {
        let tasks = self.prepared_path()?;
        let stem = tasks
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "tasks".into());
        let kind = if in_cluster {
            "cluster-topics"
        } else {
            "topics"
        };
        Ok(tasks.with_file_name(format!("{stem}.{kind}.db")))
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

impl Walker {
    pub(super) fn tasks(&mut self, node: &KdlNode, tasks: &mut Tasks) {
        for child in self.block(node) {
            match child.name().value() {
                "path" => {
                    if let Some((path, span)) = self.string(child) {
                        if path.is_empty() {
                            self.problems
                                .push(Problem::new(span, "`path` must not be empty"));
                        } else {
                            tasks.path = Some(path.into());
                        }
                    }
                }
                "durability" => {
                    if let Some(d) = self.durability(child) {
                        tasks.durability = d;
                    }
                }
                "max-age" => tasks.retention.max_age = self.duration(child),
                "max-tasks" => {
                    tasks.retention.max_tasks = self.count(child).map(|n| n as u64);
                }
                "max-waiting" => tasks.retention.max_waiting = self.duration(child),
                "max-open-per-owner" => {
                    if let Some(n) = self.count(child) {
                        tasks.max_open_per_owner = n as u64;
                    }
                }
                _ => self.unknown(child, "in `tasks`", TASKS),
            }
        }
    }

    fn durability(&mut self, node: &KdlNode) -> Option<Durability> {
        let entry = self.sole_entry(node, false)?;
        match entry.value() {
            KdlValue::String(s) if s == "commit" => Some(Durability::Commit),
            KdlValue::String(s) if s == "queued" => Some(Durability::Queued),
            KdlValue::String(s) => {
                self.problems.push(Problem::new(
                    entry.span(),
                    format!("`durability` must be \"commit\" or \"queued\", not \"{s}\""),
                ));
                None
            }
            _ => {
                self.wrong_type(entry, "`durability` expects \"commit\" or \"queued\"");
                None
            }
        }
    }
}
