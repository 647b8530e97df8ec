//! The application: builds the runtime and registry from a [`Config`],
//! binds the listener and serves until shut down. Used by `wharf serve`,
//! the integration tests and the benchmarks alike.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use wharf_tasks::{PgOptions, PgStore, SqliteStore, TaskStore};

use crate::a2a::{A2a, Push};
use crate::config::{Cache, Config, Load};
use crate::filter::AuditLog;
use crate::metrics::Metrics;
use crate::pipeline::Pipeline;
use crate::registry::{load_dir_reporting, load_filters_first};
use crate::reload::{ConfigSource, ReloadHandle, Reloader};
use crate::runtime::{EngineSettings, Runtime};
use crate::transport::slots::Slots;
use crate::transport::{self, AppState};

/// Why the configured compile cache cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Not a place compiled code may come from.
    #[error(transparent)]
    Place(crate::config::SettingError),
    /// The directory cannot be made or used.
    #[error("cannot use the cache directory {}: {source}", dir.display())]
    Unusable {
        /// The directory.
        dir: std::path::PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

/// Errors that stop Wharf from starting.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create the WebAssembly engine: {0}")]
    /// The engine could not be made.
    Engine(#[from] crate::runtime::EngineError),
    #[error("cannot load agents: {0}")]
    /// The agents directory could not be read.
    Agents(std::io::Error),
    #[error(transparent)]
    /// A setting cannot be used here (the task store's place, say).
    Setting(#[from] crate::config::SettingError),
    #[error(transparent)]
    /// The compile cache cannot be used.
    Cache(CacheError),
    #[error("cannot open the audit log: {0}")]
    /// The audit log cannot be opened.
    Audit(std::io::Error),
    #[error("the task store: {0}")]
    /// The task store cannot be opened.
    Tasks(#[from] wharf_tasks::StoreError),
    #[error(transparent)]
    /// The topic history cannot be opened.
    History(#[from] wharf_tasks::history::HistoryError),
    #[error("the task store could not be opened: {0}")]
    /// The thread opening the task store failed.
    TasksJoin(#[from] tokio::task::JoinError),
    #[error("binary transport: {0}")]
    /// The binary transport's listeners cannot be bound.
    Binary(#[from] crate::transport::binary::BindError),
    #[error("cluster: {0}")]
    /// The cluster cannot be joined.
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("the listener's TLS certificate: {0}")]
    /// The `tls` block's certificate and key cannot be used.
    Tls(#[from] transport::ServerTlsError),
    #[error(transparent)]
    /// The `telemetry` block's exporter cannot be made.
    Telemetry(#[from] crate::telemetry::TelemetryError),
    #[error("cannot listen on {addr}: {source}")]
    /// The HTTP listener cannot be bound.
    Listen {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
}

/// Engine settings that fit a configuration: pool slots sized for the
/// largest memory limit any agent has, and what freed slots keep resident
/// within `server { idle-memory }`.
pub fn engine_settings(config: &Config) -> EngineSettings {
    EngineSettings {
        max_memory: config.max_memory(),
        idle_resident: usize::try_from(config.server.idle_memory).unwrap_or(usize::MAX),
        max_instances: config.server.instance_slots,
        ..EngineSettings::default()
    }
}

/// Opens the compiled-artifact cache. A directory the configuration names
/// must work; the default one is skipped with a warning when it cannot be
/// used (a read-only home, say).
fn open_cache(runtime: &mut Runtime, config: &Config) -> Result<(), StartError> {
    let explicit = matches!(config.cache, Cache::Dir(_));
    let dir = match config.cache.dir(&config.agents_dir) {
        Ok(Some(dir)) => dir,
        Ok(None) => return Ok(()),
        Err(reason) => return Err(StartError::Cache(CacheError::Place(reason))),
    };
    match runtime.use_cache(&dir) {
        Ok(()) => {
            tracing::info!(dir = %dir.display(), "compiled components are cached");
            Ok(())
        }
        Err(source) if explicit => Err(StartError::Cache(CacheError::Unusable { dir, source })),
        Err(err) => {
            tracing::warn!(dir = %dir.display(), error = %err, "no compile cache: the default directory cannot be used");
            Ok(())
        }
    }
}

/// Opens the task store (on a blocking thread: it reads the database and
/// fails tasks a previous run left running), with push notifications when
/// the configuration has a `push` block. A cluster with `postgres` keeps
/// its tasks there, shared by every node; otherwise they stay in SQLite.
async fn open_tasks(config: &Config, metrics: &Metrics) -> Result<Arc<A2a>, StartError> {
    let path = config.tasks.prepared_path()?;
    let mut options = wharf_tasks::StoreOptions::new(path);
    options.durability = config.tasks.durability;
    options.retention = config.tasks.retention;
    let shared = config
        .cluster
        .as_ref()
        .and_then(|c| c.postgres.clone().map(|url| (url, c.node.clone())));
    let place = match &shared {
        Some((_, node)) => format!("PostgreSQL (shared, as node {node})"),
        None => options.path.display().to_string(),
    };
    let (policy, metrics) = (config.push.clone(), metrics.clone());
    let max_open = config.tasks.max_open_per_owner;
    let a2a = tokio::task::spawn_blocking(move || {
        let store: Arc<dyn TaskStore> = match shared {
            Some((url, node)) => Arc::new(PgStore::open(PgOptions {
                url,
                node,
                durability: options.durability,
                retention: options.retention,
                batch_max: options.batch_max,
            })?),
            None => Arc::new(SqliteStore::open(options)?),
        };
        let push = policy.map(|p| Push::new(p, store.clone(), &metrics));
        A2a::new(store, push, max_open)
    })
    .await??;
    tracing::info!(store = %place, "task store open");
    Ok(Arc::new(a2a))
}

/// Opens the topic history (on a blocking thread) when a `topic` block
/// keeps something; none otherwise, so a host keeping nothing has no
/// file and no writer.
pub async fn open_history(
    config: &Config,
) -> Result<Option<Arc<wharf_tasks::history::History>>, StartError> {
    use wharf_tasks::history::{DEFAULT_MAX_BACKLOG, History};
    if config.keeps.is_empty() {
        return Ok(None);
    }
    // In a cluster the node keeps a copy of the cluster's stream, whose
    // sequence numbers are the ids.
    let shared = config.cluster.is_some();
    let path = config.tasks.topic_history_path(shared)?;
    let keeps = config.keeps.clone();
    let history = tokio::task::spawn_blocking(move || match shared {
        true => History::open_copy(&path, keeps, DEFAULT_MAX_BACKLOG),
        false => History::open(&path, keeps, DEFAULT_MAX_BACKLOG),
    })
    .await??;
    tracing::info!(file = %history.path().display(), patterns = config.keeps.len(), "topic history open");
    Ok(Some(Arc::new(history)))
}

/// A loaded, bound, not-yet-serving Wharf.
pub struct App {
    /// The configuration it started with.
    pub config: Config,
    /// The WebAssembly runtime.
    pub runtime: Arc<Runtime>,
    /// What every transport shares.
    pub state: Arc<AppState>,
    listener: TcpListener,
    tls: Option<Arc<transport::ServerTls>>,
    binary: Option<transport::binary::Listeners>,
    reloader: Reloader,
    reload: ReloadHandle,
    /// Trace export, when a `telemetry` block asks for it.
    tracing: Option<crate::telemetry::Tracing>,
}

impl App {
    /// Binds the listeners and opens the task store first (a busy port or
    /// a store another process holds fails at once), then builds the
    /// runtime and loads the agents directory, saying so when that is slow.
    pub async fn start(config: Config, engine: EngineSettings) -> Result<App, StartError> {
        let tls = config
            .tls
            .clone()
            .map(transport::ServerTls::new)
            .transpose()?;
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| StartError::Listen {
                    addr: config.listen,
                    source,
                })?;
        let binary = match &config.binary {
            Some(binary) => Some(transport::binary::Listeners::bind(binary).await?),
            None => None,
        };
        let audit = AuditLog::open(&config.audit).map_err(StartError::Audit)?;
        crate::reload::warn_topic_loops(&config);
        let metrics = Metrics::new();
        metrics.build_info(crate::VERSION, crate::COMMIT);
        let a2a = open_tasks(&config, &metrics).await?;
        let history = open_history(&config).await?;
        let mut runtime = Runtime::new(&engine)?;
        tracing::info!(allocator = runtime.allocation().as_str(), "engine ready");
        open_cache(&mut runtime, &config)?;
        // Compiling is CPU-bound and `describe()` runs guests synchronously:
        // both belong on a blocking thread, not an async worker.
        let idle = runtime.idle_resident();
        metrics.sample("wharf_pool_idle_resident_bytes", move || {
            idle().map(|bytes| bytes as f64)
        });
        let runtime = Arc::new(runtime);
        let (rt, cfg) = (runtime.clone(), config.clone());
        let loading = tokio::task::spawn_blocking(move || {
            if cfg.server.load == Load::WhileServing {
                // The agents are loaded once serving (the reloader's first job).
                return load_filters_first(&rt, &cfg, &cfg.agents_dir);
            }
            let progress = crate::startup::LoadProgress::new();
            let loaded = load_dir_reporting(&rt, &cfg, &cfg.agents_dir, &|p| progress.loaded(p));
            progress.finish();
            loaded
        });
        let snapshot = crate::startup::step("loading the agents directory", loading)
            .await
            .map_err(|e| StartError::Agents(std::io::Error::other(e.to_string())))?
            .map_err(StartError::Agents)?;
        tracing::info!(
            agents = snapshot.agents.len(),
            filters = snapshot.filters.len(),
            refused = snapshot.refused.len(),
            pending = snapshot.pending.len(),
            dir = %config.agents_dir.display(),
            "agents loaded"
        );
        let streams = crate::streams::Streams::new(
            config.server.stream_limit(),
            config.server.streams_per_client,
        );
        let pipeline = Pipeline::new(snapshot, metrics.clone(), audit, streams);
        if let Some(history) = history {
            pipeline.attach_history(history);
        }
        if let Some(settings) = &config.cluster {
            let cluster = crate::cluster::Cluster::connect(settings.clone(), metrics).await?;
            tracing::info!(node = %settings.node, nats = %settings.nats, "joining the cluster");
            let cluster = Arc::new(cluster);
            a2a.join(cluster.clone());
            pipeline.join(cluster);
        }
        // Last of what can fail: a start that fails leaves no exporter to
        // flush.
        let tracing = match &config.telemetry {
            Some(settings) => {
                let tracing = crate::telemetry::Tracing::start(settings)?;
                tracing::info!(endpoint = %settings.endpoint, sampling = settings.sampling, "exporting traces");
                pipeline.trace_with(tracing.tracer().clone());
                Some(tracing)
            }
            None => None,
        };
        let a2a_default = config.a2a.default_agent.clone();
        if let Some(name) = &a2a_default
            && !pipeline.registry().is_pending(name)
            && !pipeline
                .lookup(name)
                .is_some_and(|r| r.core.entry.image.serves_a2a())
        {
            tracing::warn!(agent = %name, "the default A2A agent is not loaded or does not serve A2A: /.well-known/agent-card.json answers 404");
        }
        let state = Arc::new(AppState {
            pipeline,
            a2a,
            a2a_default,
        });
        let (reloader, reload) = Reloader::new(
            runtime.clone(),
            state.clone(),
            config.clone(),
            engine.max_memory,
        );
        Ok(App {
            config,
            runtime,
            state,
            listener,
            tls,
            binary,
            reloader,
            reload,
            tracing,
        })
    }

    /// What a person starting Wharf is told once it is ready: where it
    /// listens and what it serves there.
    pub fn ready(&self) -> crate::startup::Ready {
        crate::startup::Ready::of(self)
    }

    /// The binary transport's Unix socket, when it listens on one.
    pub fn binary_unix_path(&self) -> Option<std::path::PathBuf> {
        self.binary
            .as_ref()
            .and_then(|b| b.unix_path().map(|p| p.to_path_buf()))
    }

    /// Reloads the configuration from this file (with these command-line
    /// overrides) when it changes or on SIGHUP.
    pub fn reload_config_from(&mut self, source: ConfigSource) {
        self.reloader.set_source(source);
    }

    /// Asks for reloads while serving (SIGHUP, tests).
    pub fn reload_handle(&self) -> ReloadHandle {
        self.reload.clone()
    }

    /// `https` when the listener speaks TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// The address actually bound (the port is chosen when `listen` says 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The binary transport's TCP address, when it listens on TCP.
    pub fn binary_tcp_addr(&self) -> Option<SocketAddr> {
        self.binary.as_ref().and_then(|b| b.tcp_addr())
    }

    /// Serves until `shutdown` resolves and open connections have finished.
    /// Watches the agents directory and the configuration file while
    /// serving, unless the configuration says `watch #false`.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        tracing::info!(addr = %self.local_addr(), scheme = self.scheme(), "listening");
        let router = transport::router(self.state.clone(), self.config.server.request_timeout);
        let housekeeping = tokio::spawn(housekeeping(self.state.clone()));
        let watching = match self.config.watch {
            true => {
                let file = self.reloader.source().map(|s| s.path.clone());
                crate::reload::watch(
                    &self.config.agents_dir,
                    file.as_deref(),
                    self.reload.clone(),
                )
                .inspect_err(|reason| {
                    tracing::warn!("hot reload is off: {reason} (SIGHUP still reloads)")
                })
                .ok()
            }
            false => None,
        };
        let reloads = tokio::spawn(self.reloader.run());
        // One shutdown for every transport: HTTP's accept loop fires it.
        let (down, down_rx) = tokio::sync::watch::channel(false);
        let cluster_down = down_rx.clone();
        let metrics = self.state.pipeline.metrics();
        let slots = |limit: usize, listener: &'static str| {
            let label = vec![metrics::Label::new("listener", listener)];
            let r = metrics.recorder();
            let evicted =
                crate::metrics::counter(r, "wharf_connections_evicted_total", label.clone());
            let stalled =
                crate::metrics::counter(r, "wharf_connections_stalled_total", label.clone());
            let open = crate::metrics::gauge(r, "wharf_connections_open", label);
            Slots::new(limit, evicted, stalled, open)
        };
        let http_slots = slots(self.config.server.connections, "http");
        let binary = self.binary.map(|listeners| {
            if let Some(path) = listeners.unix_path() {
                tracing::info!(path = %path.display(), "binary transport listening");
            }
            if let Some(addr) = listeners.tcp_addr() {
                tracing::info!(%addr, "binary transport listening");
            }
            let server = self.config.server;
            let slots = slots(listeners.connections(), "binary");
            tokio::spawn(listeners.serve(
                self.state.clone(),
                slots,
                server.request_timeout,
                server.shutdown_grace,
                down_rx,
            ))
        });
        let cluster = self.state.pipeline.cluster().cloned().map(|cluster| {
            let pipeline = Arc::downgrade(&self.state.pipeline);
            let a2a = Arc::downgrade(&self.state.a2a);
            tokio::spawn(transport::nats::run(cluster, pipeline, a2a, cluster_down))
        });
        let streams = self.state.pipeline.streams().clone();
        let shutdown = async move {
            shutdown.await;
            let _ = down.send(true);
            // Open streams end now, each with its closing event, so the
            // grace period is not spent waiting on them.
            streams.close();
        };
        transport::serve(
            self.listener,
            self.tls,
            router,
            self.config.server,
            http_slots,
            self.state.pipeline.metrics().unnamed().clone(),
            shutdown,
        )
        .await;
        if let Some(binary) = binary {
            let _ = binary.await;
        }
        if let Some(cluster) = cluster {
            let _ = cluster.await;
        }
        drop(watching);
        reloads.abort();
        housekeeping.abort();
        if let Some(tracing) = self.tracing {
            tracing.shutdown().await;
        }
    }
}

/// How often pins are swept, probes checked for being due, and histograms
/// drained.
const HOUSEKEEPING_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Background upkeep for every route, until aborted at shutdown.
async fn housekeeping(state: Arc<AppState>) {
    let mut tick = tokio::time::interval(HOUSEKEEPING_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let routes = state.pipeline.routes();
        let mut unloaded = Vec::new();
        for route in routes.iter() {
            unloaded.extend(route.sweep());
            route.probe_if_due().await;
        }
        state.pipeline.metrics().upkeep();
        if !unloaded.is_empty() {
            // Unmapping code and freeing metadata is a blocking thread's
            // work; then the allocator gives what was freed back.
            tokio::task::spawn_blocking(move || {
                drop(unloaded);
                crate::memory::give_back_freed();
            });
        }
    }
}

/// Resolves on Ctrl-C or SIGTERM; a second one exits at once, without
/// waiting for the grace period.
pub async fn shutdown_signal() {
    // Both are listened for from here on, so a second signal that comes
    // right after the first is not missed.
    let mut signals = Signals::listen();
    signals.next().await;
    tracing::info!("shutting down (a second Ctrl-C exits at once)");
    tokio::spawn(async move {
        signals.next().await;
        tracing::warn!("second signal: exiting without waiting for open connections");
        std::process::exit(130);
    });
}

/// Ctrl-C (SIGINT) and SIGTERM, each received from when this is made.
struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn listen() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next signal of either kind.
    #[cfg(unix)]
    async fn next(&mut self) {
        async fn one(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => drop(signal.recv().await),
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = one(&mut self.interrupt) => {},
            () = one(&mut self.terminate) => {},
        }
    }

    #[cfg(not(unix))]
    async fn next(&mut self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}
