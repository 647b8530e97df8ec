//! Typed configuration: what `wharf.kdl` may say, its defaults, and loading it.
//!
//! Parsing lives in [`parse`], units in [`units`], diagnostics in [`diag`].
//! Nothing here touches the network or the runtime.

mod diag;
mod parse;
mod units;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use diag::{ConfigError, Problem};
pub use units::{format_size, parse_duration, parse_size};

/// The configuration used when no file is given and `./wharf.kdl` does not exist.
pub const EMBEDDED_DEFAULT: &str = include_str!("default.kdl");

/// Everything Wharf needs to start serving.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Address the HTTP listener binds.
    pub listen: SocketAddr,
    /// Directory scanned for `*.wasm` agents.
    pub agents_dir: PathBuf,
    /// Limits applied to every agent unless the agent overrides them.
    pub limits: Limits,
    /// Listener-wide settings.
    pub server: Server,
    /// Per-agent settings, keyed by agent name.
    pub agents: BTreeMap<String, AgentSettings>,
}

/// Per-call resource limits for an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest linear memory a guest may grow to, in bytes.
    pub memory: u64,
    /// Wall-clock budget for one call, instantiation included.
    pub deadline: Duration,
    /// Largest request body accepted, in bytes (larger: 413).
    pub request_body: usize,
    /// Largest response body a guest may return, in bytes (larger: 502).
    pub response_body: usize,
}

/// Listener and loader settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Server {
    /// Connections served at once; further ones wait in the accept backlog.
    pub connections: usize,
    /// Time a client has to send a complete request head (HTTP/1.1).
    pub header_timeout: Duration,
    /// Time in-flight requests get to finish on shutdown.
    pub shutdown_grace: Duration,
    /// Largest `.wasm` file the loader reads, in bytes.
    pub component_size: u64,
}

/// What the configuration says about one agent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentSettings {
    pub memory: Option<u64>,
    pub deadline: Option<Duration>,
    pub request_body: Option<usize>,
    pub response_body: Option<usize>,
    /// Values the guest reads with the `config` host import.
    pub values: BTreeMap<String, String>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory: 64 << 20,
            deadline: Duration::from_secs(2),
            request_body: 16 << 20,
            response_body: 16 << 20,
        }
    }
}

impl Default for Server {
    fn default() -> Self {
        Server {
            connections: 1024,
            header_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(10),
            component_size: 64 << 20,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            agents_dir: PathBuf::from("agents"),
            limits: Limits::default(),
            server: Server::default(),
            agents: BTreeMap::new(),
        }
    }
}

/// An agent's effective limits and config values, resolved once at load time.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPolicy {
    pub limits: Limits,
    pub values: Arc<BTreeMap<String, String>>,
}

impl Config {
    /// Parses KDL text. `name` is used in diagnostics; relative paths are
    /// resolved against `base_dir`.
    pub fn parse(name: &str, text: &str, base_dir: &Path) -> Result<Config, ConfigError> {
        let mut config = parse::parse(name, text)?;
        if config.agents_dir.is_relative() {
            config.agents_dir = base_dir.join(&config.agents_dir);
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

    /// The limits and values that apply to the agent called `name`.
    pub fn policy_for(&self, name: &str) -> AgentPolicy {
        let defaults = self.limits;
        match self.agents.get(name) {
            None => AgentPolicy {
                limits: defaults,
                values: Arc::default(),
            },
            Some(a) => AgentPolicy {
                limits: Limits {
                    memory: a.memory.unwrap_or(defaults.memory),
                    deadline: a.deadline.unwrap_or(defaults.deadline),
                    request_body: a.request_body.unwrap_or(defaults.request_body),
                    response_body: a.response_body.unwrap_or(defaults.response_body),
                },
                values: Arc::new(a.values.clone()),
            },
        }
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
    fn agent_overrides_fall_back_to_defaults() {
        let text =
            "limits { memory \"32MiB\"; deadline \"1s\" }\nagent \"a\" { deadline \"250ms\" }\n";
        let config = Config::parse("t.kdl", text, Path::new("/etc/wharf")).unwrap();
        let a = config.policy_for("a");
        assert_eq!(a.limits.deadline, Duration::from_millis(250));
        assert_eq!(a.limits.memory, 32 << 20);
        let b = config.policy_for("b");
        assert_eq!(b.limits.deadline, Duration::from_secs(1));
        assert_eq!(config.agents_dir, PathBuf::from("/etc/wharf/agents"));
    }
}
