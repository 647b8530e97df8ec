//! Typed configuration: what `wharf.kdl` may say, its defaults, and loading it.
//!
//! Parsing lives in `parse`, units in `units`, diagnostics in `diag`.
//! Nothing here touches the network or the runtime.

#![deny(missing_docs)]

mod a2a;
mod binary;
mod blocks;
mod bounds;
mod card;
pub mod check;
mod cluster;
mod compose;
mod diag;
mod filter;
mod keep;
mod names;
mod nesting;
mod outbound;
mod parse;
mod policy;
mod push;
pub mod republish;
mod setting;
mod tasks;
mod telemetry;
mod tls;
pub mod topic;
mod trust;
mod units;
mod walker;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use a2a::A2aSettings;
pub use binary::{Binary, Owner, UnixSocket};
pub use bounds::extremes;
pub use card::{CARD_MAX_AGE, CardSettings};
pub use cluster::Cluster;
pub use compose::{
    Composition, Condition, DEFAULT_ATTEMPTS, DEFAULT_BACKOFF, DEFAULT_CALL_DEPTH, Delivery,
    FailOn, Flow, Merge, Overflow, Redelivery, Step, Subscription,
};
pub use diag::{ConfigError, Problem};
pub use filter::{AuditSink, BodyLimit, Failure, FilterMode, FilterPolicy, PastLimit};
pub use keep::{DEFAULT_KEEP, TopicKeep, keep_for};
pub use names::{MAX_NAME_LEN, valid_agent_name};
pub use outbound::Outbound;
pub use policy::{
    Affinity, AffinitySource, Breaker, Health, Instances, Limits, Mode, Policy, RateKey, RateLimit,
    TaskOwner,
};
pub use push::{Push, Target};
pub use setting::SettingError;
pub use tasks::Tasks;
pub use telemetry::Telemetry;
pub use tls::{ListenTls, TlsFileError, read_certificates, read_private_key};
pub use topic::Pattern;
pub use trust::{KeyError, Trust, TrustedKey, key_id};
pub use units::format_size;

/// The configuration used when no file is given and `./wharf.kdl` does not exist.
pub const EMBEDDED_DEFAULT: &str = include_str!("default.kdl");

/// Everything Wharf needs to start serving.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Address the HTTP listener binds.
    pub listen: SocketAddr,
    /// The listener's certificate and key: it speaks HTTPS only when set.
    pub tls: Option<ListenTls>,
    /// Directory scanned for `*.wasm` agents.
    pub agents_dir: PathBuf,
    /// Listener-wide settings.
    pub server: Server,
    /// The binary transport's listeners; none when `None`.
    pub binary: Option<Binary>,
    /// What applies to every agent without an `agent` block.
    pub defaults: Policy,
    /// Agents with an `agent` block: the defaults with that block applied.
    pub agents: BTreeMap<String, Policy>,
    /// Where compiled components are kept between starts.
    pub cache: Cache,
    /// Filters with a `filter` block; others get [`FilterPolicy::default`].
    pub filters: BTreeMap<String, FilterPolicy>,
    /// Where audit records of flagged requests go.
    pub audit: AuditSink,
    /// Where A2A tasks are kept.
    pub tasks: Tasks,
    /// A2A push notifications; off when `None`.
    pub push: Option<Push>,
    /// Host-wide A2A settings (the host's own agent card).
    pub a2a: A2aSettings,
    /// Which keys sign the components served, and whether they must.
    pub trust: Trust,
    /// Watch the agents directory and the configuration file, and reload
    /// what changes while serving (`watch #false`: only on SIGHUP).
    pub watch: bool,
    /// `pipeline "name" { … }` blocks: virtual agents built from others.
    pub pipelines: BTreeMap<String, Composition>,
    /// The longest chain of calls between agents (`call-depth`).
    pub call_depth: usize,
    /// `topics { … }`: the bus's limits.
    pub topics: Topics,
    /// `topic "pattern" { keep …; for … }` blocks: whose messages are
    /// kept, in the order written.
    pub keeps: Vec<TopicKeep>,
    /// The nodes this one serves with as one service; none when `None`.
    pub cluster: Option<Cluster>,
    /// Where traces go over OTLP; nothing is traced when `None`.
    pub telemetry: Option<Telemetry>,
}

/// The compiled-artifact cache setting (`cache "dir"` or `cache #false`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Cache {
    /// `$XDG_CACHE_HOME/wharf`, else `$HOME/.cache/wharf`.
    #[default]
    Default,
    /// This directory.
    Dir(PathBuf),
    /// Compile every start.
    Off,
}

impl Cache {
    /// The directory to use, if any. Refuses one inside the agents directory:
    /// compiled code must never come from where users drop components.
    pub fn dir(&self, agents_dir: &Path) -> Result<Option<PathBuf>, SettingError> {
        let dir = match self {
            Cache::Off => return Ok(None),
            Cache::Dir(dir) => dir.clone(),
            Cache::Default => match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
                Some(base) => PathBuf::from(base).join("wharf"),
                None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
                    Some(home) => PathBuf::from(home).join(".cache").join("wharf"),
                    None => return Ok(None),
                },
            },
        };
        let absolute = |p: &Path| {
            std::path::absolute(p)
                .map(|p| p.canonicalize().unwrap_or(p))
                .unwrap_or_else(|_| p.to_path_buf())
        };
        if absolute(&dir).starts_with(absolute(agents_dir)) {
            return Err(SettingError::CacheInAgents {
                cache: dir,
                agents: agents_dir.to_path_buf(),
            });
        }
        Ok(Some(dir))
    }
}

/// Listener and loader settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Server {
    /// Connections served at once; further ones wait in the accept backlog.
    pub connections: usize,
    /// Time a client has to send a complete request head (HTTP/1.1).
    pub header_timeout: Duration,
    /// Largest request head (request line and headers) accepted, in
    /// bytes; past it the answer is 431.
    pub max_head: usize,
    /// Time a whole request may take, body upload and agent call included
    /// (longer: 408).
    pub request_timeout: Duration,
    /// Time in-flight requests get to finish on shutdown.
    pub shutdown_grace: Duration,
    /// Time a write to a client may wait without progress before the
    /// connection is closed (a client that stopped reading).
    pub write_timeout: Duration,
    /// Largest `.wasm` file the loader reads, in bytes.
    pub component_size: u64,
    /// Long-lived streams (topic watches, A2A streams, streamed answers)
    /// open at once; `None`: half the connections. Held to fewer than the
    /// connections, so streams cannot hold every slot.
    pub streams: Option<usize>,
    /// Of those, the most one client address may hold.
    pub streams_per_client: usize,
    /// What freed instance slots may keep resident in all, in bytes, so
    /// that the next instance of the same component reuses its pages
    /// instead of faulting them in again (fixed at start).
    pub idle_memory: u64,
    /// Instances that may be live at once on the node: the pooling
    /// allocator's capacity, reserved at start (two memory slots each, so
    /// traffic spread over up to about twice as many agents finds each
    /// one's memory image still mapped; fixed at start).
    pub instance_slots: u32,
    /// When the agents directory is loaded: all of it before listening,
    /// or its filters first and its agents while serving.
    pub load: Load,
}

/// `server { load }`: when a start loads the agents directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Load {
    /// Every component before the first request is taken (the default):
    /// what is served, and what was refused, is known once Wharf says it
    /// is ready.
    #[default]
    BeforeServing,
    /// The filters that chains name before the first request; the agents
    /// after, on every core, while serving. A request for an agent not
    /// loaded yet waits for it (which is loaded next), never a 404.
    WhileServing,
}

impl Server {
    /// The streams budget in all: as configured, but always at least one
    /// connection short of `connections` (with one connection, none).
    pub fn stream_limit(&self) -> usize {
        self.streams
            .unwrap_or(self.connections / 2)
            .min(self.connections.saturating_sub(1))
    }
}

impl Default for Server {
    fn default() -> Self {
        Server {
            connections: 1024,
            header_timeout: Duration::from_secs(10),
            max_head: 64 << 10,
            request_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
            write_timeout: Duration::from_secs(30),
            component_size: 64 << 20,
            streams: None,
            streams_per_client: 32,
            idle_memory: 512 << 20,
            instance_slots: 1000,
            load: Load::BeforeServing,
        }
    }
}

/// `topics { max-payload "1MiB"; max-hops 8 }`: the largest message a
/// client or an agent may publish, and how many republishes in a row an
/// event may go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topics {
    /// Largest payload a topic accepts, in bytes.
    pub max_payload: usize,
    /// The most republishes in a row an event may go through (an agent
    /// publishing while it serves a delivered event, or a call that
    /// delivery made): one more is refused, which ends a loop of agents
    /// republishing each other's events.
    pub max_hops: usize,
}

/// `topics { max-hops }` when not set.
pub const DEFAULT_MAX_HOPS: usize = 8;

impl Default for Topics {
    fn default() -> Self {
        Topics {
            max_payload: 1 << 20,
            max_hops: DEFAULT_MAX_HOPS,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            tls: None,
            agents_dir: PathBuf::from("agents"),
            server: Server::default(),
            binary: None,
            defaults: Policy::default(),
            agents: BTreeMap::new(),
            cache: Cache::Default,
            filters: BTreeMap::new(),
            audit: AuditSink::default(),
            tasks: Tasks::default(),
            push: None,
            a2a: A2aSettings::default(),
            trust: Trust::default(),
            watch: true,
            pipelines: BTreeMap::new(),
            call_depth: DEFAULT_CALL_DEPTH,
            topics: Topics::default(),
            keeps: Vec::new(),
            cluster: None,
            telemetry: None,
        }
    }
}

impl Config {
    /// Parses KDL text. `name` is used in diagnostics; relative paths are
    /// resolved against `base_dir`.
    pub fn parse(name: &str, text: &str, base_dir: &Path) -> Result<Config, ConfigError> {
        let mut config = parse::parse(name, text, base_dir)?;
        if config.agents_dir.is_relative() {
            config.agents_dir = base_dir.join(&config.agents_dir);
        }
        if let Some(path) = &config.tasks.path
            && path.is_relative()
        {
            config.tasks.path = Some(base_dir.join(path));
        }
        if let Some(socket) = config.binary.as_mut().and_then(|b| b.unix.as_mut())
            && socket.path.is_relative()
        {
            socket.path = base_dir.join(&socket.path);
        }
        if let Cache::Dir(dir) = &config.cache
            && dir.is_relative()
        {
            config.cache = Cache::Dir(base_dir.join(dir));
        }
        for filter in config.filters.values_mut() {
            if let Some(dir) = &filter.files
                && dir.is_relative()
            {
                filter.files = Some(base_dir.join(dir));
            }
        }
        if let AuditSink::File(file) = &config.audit
            && file.is_relative()
        {
            config.audit = AuditSink::File(base_dir.join(file));
        }
        Ok(config)
    }

    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, &e))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Config::parse(&path.display().to_string(), &text, base)
    }

    /// The embedded default, with paths relative to the working directory.
    pub fn embedded() -> Config {
        Config::parse("<embedded default>", EMBEDDED_DEFAULT, Path::new(""))
            .expect("the embedded default configuration is valid")
    }

    /// What applies to the agent called `name`.
    pub fn policy_for(&self, name: &str) -> Policy {
        self.agents.get(name).unwrap_or(&self.defaults).clone()
    }

    /// What applies to the filter called `name`.
    pub fn filter_policy(&self, name: &str) -> FilterPolicy {
        self.filters.get(name).cloned().unwrap_or_default()
    }

    /// The largest memory limit any agent or filter has (sizes the
    /// instance pool).
    pub fn max_memory(&self) -> u64 {
        self.agents
            .values()
            .map(|p| p.limits.memory)
            .chain(self.filters.values().map(|f| f.limits.memory))
            .chain([
                self.defaults.limits.memory,
                FilterPolicy::default().limits.memory,
            ])
            .max()
            .unwrap_or(self.defaults.limits.memory)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_parses_and_configures_hello() {
        let config = Config::embedded();
        assert_eq!(config.listen, SocketAddr::from(([127, 0, 0, 1], 8080)));
        assert_eq!(config.agents_dir, PathBuf::from("agents"));
        let hello = config.policy_for("hello");
        assert!(hello.values.contains_key("greeting"));
    }

    #[test]
    fn the_cache_is_a_directory_or_off() {
        let base = Path::new("/etc/wharf");
        let off = Config::parse("t.kdl", "cache #false", base).unwrap();
        assert_eq!(off.cache, Cache::Off);
        assert_eq!(off.cache.dir(&off.agents_dir).unwrap(), None);
        let dir = Config::parse("t.kdl", "cache \"compiled\"", base).unwrap();
        assert_eq!(dir.cache, Cache::Dir(PathBuf::from("/etc/wharf/compiled")));
        let inside = Config::parse("t.kdl", "cache \"agents/c\"", base).unwrap();
        assert!(inside.cache.dir(&inside.agents_dir).is_err());
    }

    #[test]
    fn agent_overrides_fall_back_to_defaults() {
        // The agent block comes first: defaults apply wherever they stand.
        let text =
            "agent \"a\" { deadline \"250ms\" }\nlimits { memory \"32MiB\"; deadline \"1s\" }\n";
        let config = Config::parse("t.kdl", text, Path::new("/etc/wharf")).unwrap();
        let a = config.policy_for("a");
        assert_eq!(a.limits.deadline, Duration::from_millis(250));
        assert_eq!(a.limits.memory, 32 << 20);
        let b = config.policy_for("b");
        assert_eq!(b.limits.deadline, Duration::from_secs(1));
        assert_eq!(config.agents_dir, PathBuf::from("/etc/wharf/agents"));
    }

    #[test]
    fn task_owners_are_metadata_keys_written_unambiguously() {
        let text = "task-owner \"auth.sub\"\nagent \"a\" { task-owner \"tenant\" \"auth.key\" }\n";
        let config = Config::parse("t.kdl", text, Path::new("/")).unwrap();
        let meta = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let b = config.policy_for("b").task_owner;
        assert_eq!(
            b.of(&meta(&[("auth.sub", "alice")])),
            r#"[["auth.sub","alice"]]"#
        );
        assert_eq!(b.of(&meta(&[("auth.key", "alice")])), "", "anonymous");
        let a = config.policy_for("a").task_owner;
        assert_eq!(
            a.of(&meta(&[("auth.key", "k"), ("tenant", "t\"1")])),
            r#"[["tenant","t\"1"],["auth.key","k"]]"#
        );
        // By default: a JWT's issuer and subject, or an API key's name.
        let d = Config::parse("t.kdl", "", Path::new("/"))
            .unwrap()
            .policy_for("x")
            .task_owner;
        let jwt = d.of(&meta(&[("auth.iss", "i"), ("auth.sub", "s")]));
        let key = d.of(&meta(&[("auth.key", "s")]));
        assert!(!jwt.is_empty() && !key.is_empty() && jwt != key);
        for bad in ["task-owner", "task-owner 3", "task-owner \"has space\""] {
            assert!(
                Config::parse("t.kdl", bad, Path::new("/")).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn policy_blocks_merge_field_by_field() {
        let text = r#"
            instances { mode "warm"; max 8; max-uses 100 }
            breaker { failures 3 }
            affinity { header "x-session-id"; ttl "1m" }
            agent "a" {
                instances { max 2 }
                affinity { capacity 50 }
                rate-limit { requests 10; per "1s"; by "affinity" }
                retries 0
            }
        "#;
        let config = Config::parse("t.kdl", text, Path::new("/")).unwrap();
        let a = config.policy_for("a");
        assert_eq!(a.instances.mode, Mode::Warm);
        assert_eq!((a.instances.max, a.instances.max_uses), (2, 100));
        assert_eq!(a.breaker.failures, 3);
        let affinity = a.affinity.unwrap();
        assert_eq!(affinity.ttl, Duration::from_secs(60));
        assert_eq!(affinity.capacity, 50);
        assert_eq!(
            affinity.source,
            AffinitySource::Header(http::HeaderName::from_static("x-session-id"))
        );
        let rate = a.rate_limit.unwrap();
        assert_eq!(
            (rate.requests, rate.burst, rate.by),
            (10, 10, RateKey::Affinity)
        );
        assert_eq!(a.limits.retries, 0);
        let b = config.policy_for("b");
        assert_eq!(b.instances.max, 8);
        assert!(b.rate_limit.is_none());
        assert_eq!(b.limits.retries, 1);
    }

    #[test]
    fn an_idle_agent_is_unloaded_after_ten_minutes_unless_told_otherwise() {
        let text = r#"
            instances { unload-after "30s" }
            agent "kept" { instances { unload-after #false } }
        "#;
        let config = Config::parse("t.kdl", text, Path::new("/")).unwrap();
        let after = |name: &str| config.policy_for(name).instances.unload_after;
        assert_eq!(after("any"), Some(Duration::from_secs(30)));
        assert_eq!(after("kept"), None);
        let default = Config::parse("t.kdl", "", Path::new("/")).unwrap();
        assert_eq!(
            default.policy_for("any").instances.unload_after,
            Some(Duration::from_secs(600))
        );
        for (bad, says) in [
            (r#"instances { unload-after "0s" }"#, "longer than zero"),
            (r#"instances { unload-after "10ms" }"#, "at least"),
            (r#"instances { unload-after #true }"#, "or #false"),
            (r#"instances { unload-after 5 }"#, "or #false"),
        ] {
            let err = Config::parse("t.kdl", bad, Path::new("/")).unwrap_err();
            let text = format!("{err:?}");
            assert!(text.contains(says), "{bad}: {text}");
        }
    }

    #[test]
    fn the_instance_pool_is_sized_by_server_instance_slots() {
        let default = Config::parse("t.kdl", "", Path::new("/")).unwrap();
        assert_eq!(default.server.instance_slots, 1000);
        let text = "server { instance-slots 5000 }";
        let config = Config::parse("t.kdl", text, Path::new("/")).unwrap();
        assert_eq!(config.server.instance_slots, 5000);
        for bad in [
            "server { instance-slots 8 }",
            "server { instance-slots 20000 }",
        ] {
            let err = Config::parse("t.kdl", bad, Path::new("/")).unwrap_err();
            assert!(format!("{err:?}").contains("instance-slots"), "{bad}");
        }
    }
}
