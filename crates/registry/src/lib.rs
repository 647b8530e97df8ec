//! Registry: the set of loaded agents as one immutable [`Snapshot`] behind
//! an [`ArcSwap`], so readers never lock and a reload can publish a whole
//! new set at once. Scanning a directory lives in `load`, loading one
//! file in `entry`.

#![deny(missing_docs)]

mod component;
mod entry;
pub mod inspect;
mod load;
pub mod trust;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use arc_swap::ArcSwap;
use serde::Serialize;

pub use component::{NotAComponent, check_component, world_of, world_of_file};
pub(crate) use entry::digest;
pub(crate) use load::read_capped;
pub use load::{
    Progress, Refusal, Wanted, load_dir, load_dir_reporting, load_filters_first, load_pending,
    reload_dir,
};

use wharf_config::{Config, FilterPolicy, Policy};
use wharf_core::effects::Effects;
use wharf_core::verdict::Phases;
use wharf_runtime::{AgentImage, Card, FilterImage};

/// Where a component came from and what it is.
#[derive(Debug, Clone, Serialize)]
pub struct Origin {
    /// The agent's name: the file's stem.
    pub name: String,
    #[serde(skip)]
    /// The file.
    pub path: PathBuf,
    /// `sha256:` and the hex digest of the file's bytes.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// The world it fits.
    pub world: &'static str,
    /// When this version was loaded (RFC 3339, UTC).
    pub loaded: String,
    /// The same instant, for HTTP dates (an agent card's `Last-Modified`).
    #[serde(skip)]
    pub loaded_at: std::time::SystemTime,
    /// The id of the trusted key that signed it, when one did.
    pub signed_by: Option<String>,
    /// The file's metadata when it was read: a reload reuses the entry
    /// while it is unchanged.
    #[serde(skip)]
    pub stamp: Stamp,
}

/// What a file's metadata says about its contents without reading them:
/// size, modification and change times, inode. Writing in place or
/// renaming another file into place changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    len: u64,
    modified_ns: i128,
    changed_ns: i128,
    inode: u64,
}

impl Stamp {
    /// The stamp of a file with `meta`.
    pub fn of(meta: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Stamp {
                len: meta.len(),
                modified_ns: i128::from(meta.mtime()) * 1_000_000_000
                    + i128::from(meta.mtime_nsec()),
                changed_ns: i128::from(meta.ctime()) * 1_000_000_000
                    + i128::from(meta.ctime_nsec()),
                inode: meta.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let modified_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128);
            Stamp {
                len: meta.len(),
                modified_ns,
                changed_ns: 0,
                inode: 0,
            }
        }
    }
}

/// What `describe()` said, in a form that serializes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CardInfo {
    /// The agent's name as it describes itself.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What it does.
    pub description: String,
    /// What it can do.
    pub skills: Vec<SkillInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
/// One skill of an agent's card.
pub struct SkillInfo {
    /// The skill's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Keywords.
    pub tags: Vec<String>,
}

impl CardInfo {
    /// What a `wasi:http` component, which has no `describe`, is shown as:
    /// its name and the WASI version it was written for (`wasi`: "0.2"
    /// for `wasi:http/proxy`, "0.3" for `wasi:http/handler@0.3`).
    pub fn for_http(name: &str, wasi: &str) -> CardInfo {
        let description = match wasi {
            "0.2" => "a wasi:http/proxy component".to_string(),
            other => format!("a wasi:http component (WASI {other})"),
        };
        CardInfo {
            name: name.to_string(),
            version: String::new(),
            description,
            skills: Vec::new(),
        }
    }
}

impl From<Card> for CardInfo {
    fn from(card: Card) -> Self {
        CardInfo {
            name: card.name,
            version: card.version,
            description: card.description,
            skills: card
                .skills
                .into_iter()
                .map(|s| SkillInfo {
                    id: s.id,
                    name: s.name,
                    description: s.description,
                    tags: s.tags,
                })
                .collect(),
        }
    }
}

/// A loaded agent, ready to serve.
pub struct AgentEntry {
    /// Where it came from.
    pub origin: Origin,
    /// What its `describe` said.
    pub card: CardInfo,
    /// The compiled agent, ready to instantiate.
    pub image: AgentImage,
    /// What the configuration says applies to this agent.
    pub policy: Policy,
}

/// A loaded filter, ready to run in chains.
pub struct FilterEntry {
    /// Where it came from.
    pub origin: Origin,
    /// The compiled filter, ready to instantiate.
    pub image: FilterImage,
    /// What `phases()` said at load time.
    pub phases: Phases,
    /// What `effects()` declared at load time, for a filter that has it.
    pub effects: Option<Arc<Effects>>,
    /// Its settings.
    pub policy: FilterPolicy,
}

/// Everything loaded from one scan of the agents directory.
#[derive(Default)]
pub struct Snapshot {
    /// Components that fit the agent world (and wasi:http ones).
    pub agents: BTreeMap<String, Arc<AgentEntry>>,
    /// Components that fit the filter world.
    pub filters: BTreeMap<String, Arc<FilterEntry>>,
    /// Files that were not loaded, with the reason.
    pub refused: Vec<Refusal>,
    /// The configuration this snapshot was loaded with.
    pub config: Option<Arc<Config>>,
    /// The `pipeline` blocks served: those whose every step loaded.
    pub compositions: BTreeMap<String, Arc<wharf_config::Composition>>,
    /// Components and `pipeline` blocks not loaded yet, while a start
    /// loads agents as it serves (`server { load "while-serving" }`): a
    /// request for one of these waits for it instead of a 404.
    pub pending: BTreeSet<String>,
}

impl Snapshot {
    /// Why nothing called `name` is served, when a component or pipeline
    /// of that name was refused.
    pub fn refusal(&self, name: &str) -> Option<&Refusal> {
        self.refused
            .iter()
            .find(|r| r.name.as_deref() == Some(name))
    }

    /// While agents load as Wharf serves: this snapshot with `agents`
    /// (just loaded) served too and no longer pending. An agent whose
    /// chain names a filter that did not load stays pending; the scan's
    /// own snapshot refuses it when the load ends, as a start that loads
    /// before serving would.
    pub fn and_loaded(&self, agents: &[Arc<AgentEntry>]) -> Snapshot {
        let mut next = Snapshot {
            agents: self.agents.clone(),
            filters: self.filters.clone(),
            refused: self.refused.clone(),
            config: self.config.clone(),
            compositions: self.compositions.clone(),
            pending: self.pending.clone(),
        };
        for entry in agents {
            let name = &entry.origin.name;
            let chained = entry
                .policy
                .filters
                .iter()
                .all(|f| self.filters.contains_key(f));
            if chained && next.pending.remove(name) {
                next.agents.insert(name.clone(), entry.clone());
            }
        }
        next
    }

    /// The agent called `name`.
    pub fn agent(&self, name: &str) -> Option<&Arc<AgentEntry>> {
        self.agents.get(name)
    }

    /// Where the agent or filter called `name` came from.
    pub fn origin(&self, name: &str) -> Option<&Origin> {
        match self.agents.get(name) {
            Some(agent) => Some(&agent.origin),
            None => self.filters.get(name).map(|f| &f.origin),
        }
    }
}

/// The current snapshot; swapped whole, read without locks.
pub struct Registry {
    current: ArcSwap<Snapshot>,
}

impl Registry {
    /// A registry holding `snapshot`.
    pub fn new(snapshot: Snapshot) -> Self {
        Registry {
            current: ArcSwap::from_pointee(snapshot),
        }
    }

    /// The snapshot in force now; cheap, lock-free.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Whether `name` is pending in the snapshot in force (cheap: no
    /// reference count is taken).
    pub fn is_pending(&self, name: &str) -> bool {
        let current = self.current.load();
        !current.pending.is_empty() && current.pending.contains(name)
    }

    /// Publishes a new snapshot; requests in flight keep the old one.
    pub fn publish(&self, snapshot: Snapshot) {
        self.current.store(Arc::new(snapshot));
    }
}
