//! Reloading the configuration file: where it comes from (the file and the
//! command line's overrides), validating it in full, and sorting what a
//! running Wharf applies from what waits for the next start.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::config::Config;

/// What `wharf serve` was told on its command line, applied over the
/// configuration file at start and at every reload.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--agents`: the agents directory, over the file's.
    pub agents_dir: Option<PathBuf>,
    /// `--listen`: the address, over the file's.
    pub listen: Option<SocketAddr>,
    /// A Unix socket for the binary transport (its other settings as the
    /// configuration has them, else the defaults).
    pub unix: Option<PathBuf>,
}

impl Overrides {
    /// Applies the overrides to `config`.
    pub fn apply(&self, config: &mut Config) {
        if let Some(dir) = &self.agents_dir {
            config.agents_dir = dir.clone();
        }
        if let Some(addr) = self.listen {
            config.listen = addr;
        }
        if let Some(path) = &self.unix {
            let binary = config.binary.get_or_insert_with(Default::default);
            binary.unix = Some(crate::config::UnixSocket {
                path: path.clone(),
                mode: None,
                owner: None,
            });
        }
    }
}

/// The configuration file a running Wharf reloads.
#[derive(Debug, Clone)]
pub struct ConfigSource {
    /// The configuration file.
    pub path: PathBuf,
    /// What the command line sets over it.
    pub overrides: Overrides,
}

impl ConfigSource {
    /// Reads, validates and overrides the file; every problem, one line
    /// each, when it is not valid.
    pub fn load(&self) -> Result<Config, Vec<String>> {
        match Config::load(&self.path) {
            Ok(mut config) => {
                self.overrides.apply(&mut config);
                Ok(config)
            }
            Err(err) => Err(err.plain().lines().map(str::to_string).collect()),
        }
    }
}

/// Logs each loop of agents that may republish each other's events (as
/// `wharf check` reports them) with the limit that cuts it at run time.
pub fn warn_topic_loops(config: &Config) {
    for found in wharf_config::republish::topic_loops(config) {
        tracing::warn!(
            max_hops = config.topics.max_hops,
            "{found}; an event stops after `topics {{ max-hops {} }}` republishes in a row",
            config.topics.max_hops
        );
    }
}

/// Settings fixed at start: the listener, the directories and stores
/// opened then, and the request timeout built into the HTTP stack. When a
/// new configuration changes one, the running value stays and the name is
/// returned for the log.
pub fn keep_fixed(running: &Config, new: &mut Config) -> Vec<&'static str> {
    let mut kept = Vec::new();
    macro_rules! fixed {
        ($($field:ident => $name:literal),* $(,)?) => {$(
            if new.$field != running.$field {
                new.$field = running.$field.clone();
                kept.push($name);
            }
        )*};
    }
    fixed! {
        listen => "listen",
        tls => "tls",
        agents_dir => "agents",
        server => "server",
        binary => "binary",
        cache => "cache",
        audit => "audit",
        tasks => "tasks",
        push => "push",
        a2a => "a2a",
        watch => "watch",
        cluster => "cluster",
        telemetry => "telemetry",
    }
    kept
}

/// Refuses a configuration whose memory limits exceed the instance slots
/// the engine was built with at start.
pub fn check_memory(new: &Config, engine_max: u64) -> Result<(), String> {
    let wanted = new.max_memory();
    if wanted > engine_max {
        return Err(format!(
            "a memory limit of {} exceeds the {} each instance slot was given at start; restart Wharf to apply it",
            crate::config::format_size(wanted),
            crate::config::format_size(engine_max)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn fixed_settings_keep_their_running_values() {
        let running = Config::parse("a.kdl", "listen \"127.0.0.1:1\"", Path::new("/")).unwrap();
        let mut new = Config::parse(
            "b.kdl",
            "listen \"127.0.0.1:2\"\nlimits { deadline \"1s\" }",
            Path::new("/"),
        )
        .unwrap();
        assert_eq!(keep_fixed(&running, &mut new), ["listen"]);
        assert_eq!(new.listen, running.listen);
        assert_eq!(new.defaults.limits.deadline.as_secs(), 1);
    }

    #[test]
    fn memory_past_the_slot_size_is_refused() {
        let new = Config::parse("b.kdl", "limits { memory \"512MiB\" }", Path::new("/")).unwrap();
        assert!(
            check_memory(&new, 64 << 20)
                .unwrap_err()
                .contains("restart")
        );
        assert!(check_memory(&new, 1 << 30).is_ok());
    }
}
