//! Hot reload: one task that takes triggers (a settled file in the agents
//! directory, a changed configuration file, SIGHUP), loads a new snapshot
//! off the request path (on a thread of its own at a low scheduling
//! priority) and publishes it through the pipeline. Reloads run
//! one at a time; triggers that arrive during one are merged into the next.
//! Watching lives in [`watch`], the configuration's rules in `config`.

mod config;
mod pending;
mod watch;

use std::sync::Arc;
use std::time::Instant;

use metrics::{Counter, Histogram, Label};
use tokio::sync::mpsc;

pub use config::{ConfigSource, Overrides, check_memory, keep_fixed, warn_topic_loops};
pub use watch::{QUIET, Watch, watch};

use crate::config::Config;
use crate::metrics::{Metrics, counter, histogram};
use crate::registry::{Snapshot, reload_dir};
use crate::runtime::Runtime;
use crate::transport::AppState;

/// What asked for a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// Something in the agents directory changed.
    Files,
    /// The configuration file changed, or SIGHUP.
    Config,
}

/// Asks the reloader for a reload; cheap to clone, never blocks.
#[derive(Debug, Clone)]
pub struct ReloadHandle {
    tx: mpsc::UnboundedSender<Trigger>,
}

impl ReloadHandle {
    /// Scan the agents directory again.
    pub fn files(&self) {
        let _ = self.tx.send(Trigger::Files);
    }

    /// Read the configuration file again, then scan the agents directory.
    pub fn config(&self) {
        let _ = self.tx.send(Trigger::Config);
    }
}

/// The reload counters and timings.
struct ReloadMetrics {
    applied: [Counter; 2],
    rejected: Counter,
    refused: Counter,
    seconds: Histogram,
}

impl ReloadMetrics {
    fn new(metrics: &Metrics) -> Self {
        let r = metrics.recorder();
        let with = |trigger: &'static str, outcome: &'static str| {
            counter(
                r,
                "wharf_reloads_total",
                vec![
                    Label::new("trigger", trigger),
                    Label::new("outcome", outcome),
                ],
            )
        };
        ReloadMetrics {
            applied: [with("files", "applied"), with("config", "applied")],
            rejected: with("config", "rejected"),
            refused: counter(r, "wharf_reload_refusals_total", vec![]),
            seconds: histogram(r, "wharf_reload_duration_seconds", vec![]),
        }
    }
}

/// The reloader's state: the configuration in force and what it needs to
/// load and publish.
pub struct Reloader {
    runtime: Arc<Runtime>,
    state: Arc<AppState>,
    config: Config,
    source: Option<ConfigSource>,
    engine_max_memory: u64,
    metrics: ReloadMetrics,
    rx: mpsc::UnboundedReceiver<Trigger>,
}

impl Reloader {
    /// A reloader of what `state` serves over `runtime`, starting from `config`, and the handle that triggers it.
    pub fn new(
        runtime: Arc<Runtime>,
        state: Arc<AppState>,
        config: Config,
        engine_max_memory: u64,
    ) -> (Reloader, ReloadHandle) {
        let (tx, rx) = mpsc::unbounded_channel();
        let metrics = ReloadMetrics::new(state.pipeline.metrics());
        let reloader = Reloader {
            runtime,
            state,
            config,
            source: None,
            engine_max_memory,
            metrics,
            rx,
        };
        (reloader, ReloadHandle { tx })
    }

    /// Reloads the configuration from `source` on a config trigger.
    pub fn set_source(&mut self, source: ConfigSource) {
        self.source = Some(source);
    }

    /// The configuration file and overrides, when Wharf was started from a file.
    pub fn source(&self) -> Option<&ConfigSource> {
        self.source.as_ref()
    }

    /// Finishes a start that loads agents while serving, then takes
    /// triggers until every handle is dropped.
    pub async fn run(mut self) {
        self.load_pending().await;
        while let Some(first) = self.rx.recv().await {
            let mut trigger = first;
            while let Ok(next) = self.rx.try_recv() {
                if next == Trigger::Config {
                    trigger = Trigger::Config;
                }
            }
            match trigger {
                Trigger::Files => self.reload(None).await,
                Trigger::Config => match self.next_config() {
                    Some(config) => self.reload(Some(config)).await,
                    None => self.metrics.rejected.increment(1),
                },
            }
        }
    }

    /// The configuration file, read and validated; None (logged) when it
    /// cannot be applied.
    fn next_config(&self) -> Option<Config> {
        let Some(source) = &self.source else {
            tracing::warn!(
                "no configuration file to reload (serving the embedded default or a configuration given in code); scanning the agents directory"
            );
            return Some(self.config.clone());
        };
        let mut config = match source.load() {
            Ok(config) => config,
            Err(problems) => {
                for problem in &problems {
                    tracing::error!("{problem}");
                }
                tracing::error!(
                    file = %source.path.display(),
                    problems = problems.len(),
                    "the configuration was not reloaded: the running one stays"
                );
                return None;
            }
        };
        if let Err(reason) = check_memory(&config, self.engine_max_memory) {
            tracing::error!(file = %source.path.display(), "the configuration was not reloaded: {reason}");
            return None;
        }
        warn_topic_loops(&config);
        let kept = keep_fixed(&self.config, &mut config);
        if !kept.is_empty() {
            tracing::warn!(
                settings = ?kept,
                "these settings changed but take effect only at the next start; their running values stay"
            );
        }
        Some(config)
    }

    /// Scans the agents directory with `config` (or the one in force),
    /// publishes the result, and logs what changed.
    async fn reload(&mut self, config: Option<Config>) {
        let started = Instant::now();
        let is_config = config.is_some();
        let config = config.unwrap_or_else(|| self.config.clone());
        let previous = self.state.pipeline.registry().snapshot();
        let (runtime, cfg, prev) = (self.runtime.clone(), config.clone(), previous.clone());
        let (done, scanned) = tokio::sync::oneshot::channel();
        // Its own thread at a low priority, as the compile pool's: a
        // reload yields to requests.
        let spawned = std::thread::Builder::new()
            .name("wharf-reload".into())
            .spawn(move || {
                crate::runtime::background_priority();
                let _ = done.send(reload_dir(&runtime, &cfg, &cfg.agents_dir, &prev));
            });
        if let Err(err) = spawned {
            tracing::error!(error = %err, "reload failed: no thread to run it; the running set stays");
            return;
        }
        let snapshot = match scanned.await {
            Ok(Ok(snapshot)) => snapshot,
            Ok(Err(err)) => {
                tracing::error!(error = %err, "reload failed: cannot read the agents directory; the running set stays");
                return;
            }
            Err(_) => {
                tracing::error!("reload failed: the loader stopped; the running set stays");
                return;
            }
        };
        let changes = Changes::between(&previous, &snapshot);
        let new_refusals = snapshot
            .refused
            .iter()
            .filter(|r| !previous.refused.contains(r))
            .count();
        self.metrics.refused.increment(new_refusals as u64);
        let bus = self.state.pipeline.bus();
        if !config.keeps.is_empty() && !bus.has_history() {
            match crate::app::open_history(&config).await {
                Ok(Some(history)) => self.state.pipeline.attach_history(history),
                Ok(None) => {}
                Err(err) => {
                    tracing::error!(error = %err, "the topic history cannot be opened: nothing is kept")
                }
            }
        }
        self.state.pipeline.publish(snapshot);
        self.config = config;
        self.metrics.applied[usize::from(is_config)].increment(1);
        let elapsed = started.elapsed();
        self.metrics.seconds.record(elapsed.as_secs_f64());
        if changes.is_empty() && !is_config && new_refusals == 0 {
            tracing::debug!("reload: nothing changed");
            return;
        }
        tracing::info!(
            added = ?changes.added,
            replaced = ?changes.replaced,
            removed = ?changes.removed,
            refused = new_refusals,
            config = is_config,
            ms = elapsed.as_millis() as u64,
            "reloaded"
        );
    }
}

/// Which agents and filters a reload added, replaced and removed.
#[derive(Debug, Default)]
struct Changes {
    added: Vec<String>,
    replaced: Vec<String>,
    removed: Vec<String>,
}

impl Changes {
    fn between(old: &Snapshot, new: &Snapshot) -> Changes {
        let mut changes = Changes::default();
        let entries = |s: &Snapshot| {
            let agents = s
                .agents
                .iter()
                .map(|(n, e)| (n.clone(), Arc::as_ptr(e) as usize));
            let filters = s
                .filters
                .iter()
                .map(|(n, e)| (n.clone(), Arc::as_ptr(e) as usize));
            agents
                .chain(filters)
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let (before, after) = (entries(old), entries(new));
        for (name, entry) in &after {
            match before.get(name) {
                None => changes.added.push(name.clone()),
                Some(old) if old != entry => changes.replaced.push(name.clone()),
                Some(_) => {}
            }
        }
        changes.removed = before
            .keys()
            .filter(|n| !after.contains_key(*n))
            .cloned()
            .collect();
        changes
    }

    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.replaced.is_empty() && self.removed.is_empty()
    }
}
