//! Runtime: the wasmtime engine, the linker with Wharf's host imports,
//! sandboxed WASI and `wasi:http`, and preparing components (compile,
//! type-check, world: agent, filter or `wasi:http/proxy`).
//! Nothing above this module sees a wasmtime type except through
//! [`AgentImage`] and [`Live`].

#![deny(missing_docs)]

mod bindings;
mod cache;
mod call;
mod convert;
mod effects;
mod engine;
mod filter;
mod http;
mod outbound;
mod p3;
mod peers;
mod preinit;
mod state;
mod streaming;
mod tls;
mod turn;
mod unload;

use std::sync::Arc;

use sha2::Digest;
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

pub use bindings::{Card, Health, Skill};
pub use cache::{ArtifactCache, CacheOutcome, CacheStats};
pub use call::{AgentImage, CallError, Exports, LOAD_DEADLINE, Live, watched};
pub use convert::{HeaderBlobError, decode_headers, encode_headers};
pub use engine::{Allocation, EPOCH_TICK, EngineSettings, background_priority};
#[cfg(feature = "fuzzing")]
pub use filter::fuzz_verdict;
pub use filter::{FilterExports, FilterImage, FilterLive};
pub use outbound::OutboundAccess;
pub use p3::{exports_p3_handler, is_handler as is_p3_handler, top_level_items};
pub use preinit::wants_preinit;
pub use state::{GuestIdentity, GuestState};
pub use tls::{ClientTls, TlsError};
pub use unload::{SourceFile, UnloadedCode};
pub use wharf_core::metrics::OutboundCounters;

use wharf_config::Limits;

/// Which world a component fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum World {
    /// Wharf's agent world (and `a2a-agent`).
    Agent,
    /// Wharf's filter world.
    Filter,
    /// `wasi:http/proxy`: a standard HTTP component, served like an agent.
    Http,
}

impl World {
    /// The world's name in listings.
    pub fn as_str(self) -> &'static str {
        match self {
            World::Agent => "agent",
            World::Filter => "filter",
            World::Http => "wasi-http",
        }
    }
}

/// A component that compiled and type-checked against one of Wharf's worlds.
pub enum Prepared {
    /// An agent.
    Agent(AgentPres),
    /// A filter.
    Filter(FilterPres),
    /// A `wasi:http/proxy` component (WASIp2) or a `wasi:http/handler@0.3`
    /// one (WASIp3).
    Http(HttpPre),
}

/// A `wasi:http` component pre-instantiated against the async linker (it
/// runs on the request path only).
pub enum HttpPre {
    /// `wasi:http/incoming-handler@0.2`, on the main engine.
    P2(bindings::ProxyPre<GuestState>),
    /// `wasi:http/handler@0.3`, on the WASIp3 engine.
    P3(wasmtime_wasi_http::p3::bindings::ServicePre<GuestState>),
}

impl HttpPre {
    /// The WASI version it was written for: `"0.2"` or `"0.3"`.
    pub fn wasi(&self) -> &'static str {
        match self {
            HttpPre::P2(_) => "0.2",
            HttpPre::P3(_) => "0.3",
        }
    }
}

/// A filter pre-instantiated against both linkers, as for agents.
pub struct FilterPres {
    sync: bindings::FilterPre<GuestState>,
    asynchronous: bindings::FilterPre<GuestState>,
}

/// An agent pre-instantiated against both linkers: the synchronous one (load
/// time, probes, tests, benchmarks) and the async one (the request path).
pub struct AgentPres {
    sync: bindings::AgentPre<GuestState>,
    asynchronous: bindings::AgentPre<GuestState>,
}

impl Prepared {
    /// The world it fits.
    pub fn world(&self) -> World {
        match self {
            Prepared::Agent(_) => World::Agent,
            Prepared::Filter(_) => World::Filter,
            Prepared::Http(_) => World::Http,
        }
    }
}

/// The two linkings of WASI and Wharf's imports (see [`Runtime`]).
pub(crate) struct Linkers {
    pub(crate) sync: Linker<GuestState>,
    pub(crate) asynchronous: Linker<GuestState>,
}

/// Engine, linkers and allocator choice, shared by every agent.
///
/// WASI p2 comes in two linkings: synchronous host functions (which block
/// on an internal runtime and so must not run on a tokio worker) for calls
/// made on a plain thread, and async host functions for calls made with
/// `call_async` on the request path.
pub struct Runtime {
    engine: Engine,
    linkers: Arc<Linkers>,
    allocation: Allocation,
    cache: Option<Arc<ArtifactCache>>,
    settings: EngineSettings,
    /// The WASIp3 engine, made when the first WASIp3 component is compiled
    /// (or why it could not be).
    p3: std::sync::OnceLock<Result<p3::P3Runtime, String>>,
}

/// Why the WebAssembly engine could not be made (the settings, or the
/// memory the pooling allocator reserves).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EngineError(String);

/// Why a component cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ComponentError {
    /// Cranelift, or the compile cache, refused it.
    #[error("{0}")]
    Compile(String),
    /// It imports what Wharf does not provide.
    #[error("it needs imports Wharf does not provide: {0}")]
    Imports(String),
    /// It links for synchronous calls but not for async ones.
    #[error("it cannot be linked for async calls: {0}")]
    AsyncLink(String),
    /// Its exports fit none of the worlds Wharf serves.
    #[error(
        "it fits none of the agent world ({agent}), the filter world ({filter}) or wasi:http/proxy ({http})"
    )]
    NoWorld {
        /// Why it is not an agent.
        agent: String,
        /// Why it is not a filter.
        filter: String,
        /// Why it is not a wasi:http/proxy component.
        http: String,
    },
}

impl Runtime {
    /// Builds the engine (pooling when it can), starts the epoch ticker and
    /// links the host imports and WASI.
    pub fn new(settings: &EngineSettings) -> Result<Runtime, EngineError> {
        Self::build(settings).map_err(|e| EngineError(format!("{e:#}")))
    }

    fn build(settings: &EngineSettings) -> wasmtime::Result<Runtime> {
        engine::compile_in_background();
        let (engine, allocation) = engine::build(settings)?;
        engine::start_ticker(&engine);
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
        add_host_to_linker(&mut linker, false)?;
        let mut linker_async = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker_async)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker_async)?;
        add_host_to_linker(&mut linker_async, true)?;
        Ok(Runtime {
            engine,
            linkers: Arc::new(Linkers {
                sync: linker,
                asynchronous: linker_async,
            }),
            allocation,
            cache: None,
            settings: *settings,
            p3: std::sync::OnceLock::new(),
        })
    }

    /// The WASIp3 engine, made on first use with the same settings and
    /// cache directory.
    fn p3(&self) -> Result<&p3::P3Runtime, ComponentError> {
        self.p3
            .get_or_init(|| {
                let dir = self.cache.as_ref().map(|c| c.dir());
                p3::P3Runtime::build(&self.settings, dir).map_err(|e| format!("{e:#}"))
            })
            .as_ref()
            .map_err(|why| ComponentError::Compile(format!("the WASIp3 engine: {why}")))
    }

    /// The WASIp3 engine if one was made and `engine` is it.
    fn p3_owns(&self, engine: &Engine) -> Option<&p3::P3Runtime> {
        let p3 = self.p3.get()?.as_ref().ok()?;
        Engine::same(&p3.engine, engine).then_some(p3)
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The linker with WASI and the host imports; for benchmarks that
    /// measure raw wasmtime calls beside Wharf's dispatch.
    #[doc(hidden)]
    pub fn linker(&self) -> &Linker<GuestState> {
        &self.linkers.sync
    }

    /// The allocator the engine runs on.
    pub fn allocation(&self) -> Allocation {
        self.allocation
    }

    /// What reads the bytes freed pool slots (memories and tables) keep
    /// resident now for their next instance: `None` on the on-demand
    /// allocator or once the engine is gone (it does not keep it alive).
    pub fn idle_resident(&self) -> impl Fn() -> Option<usize> + Send + Sync + 'static {
        let engine = self.engine.weak();
        move || {
            let pool = engine.upgrade()?.pooling_allocator_metrics()?;
            Some(pool.unused_memory_bytes_resident() + pool.unused_table_bytes_resident())
        }
    }

    /// Keeps compiled components in `dir` from now on. Fails when the
    /// directory cannot be created or made private.
    pub fn use_cache(&mut self, dir: &std::path::Path) -> std::io::Result<()> {
        self.cache = Some(Arc::new(ArtifactCache::open(dir, &self.engine)?));
        Ok(())
    }

    /// The compiled-artifact cache, when one is in use.
    pub fn cache(&self) -> Option<&ArtifactCache> {
        self.cache.as_deref()
    }

    /// Compiles a component (Cranelift), or loads it from the cache. Slow
    /// for large guests when not cached: call once.
    pub fn compile(&self, bytes: &[u8]) -> Result<(Component, CacheOutcome), ComponentError> {
        let sha256 = match &self.cache {
            Some(_) => sha2::Sha256::digest(bytes).into(),
            None => [0; 32],
        };
        self.compile_hashed(bytes, &sha256)
    }

    /// [`Runtime::compile`] for bytes whose SHA-256 the caller already has
    /// (the loader does: it is the component's digest).
    pub fn compile_hashed(
        &self,
        bytes: &[u8],
        sha256: &[u8; 32],
    ) -> Result<(Component, CacheOutcome), ComponentError> {
        let compile = |engine: &Engine, cache: Option<&ArtifactCache>| match cache {
            Some(cache) => cache.compile(engine, bytes, sha256),
            None => Component::new(engine, bytes).map(|c| (c, CacheOutcome::Compiled)),
        };
        let compiled = match compile(&self.engine, self.cache.as_deref()) {
            Ok(compiled) => Ok(compiled),
            // The main engine refuses the async types WASIp3 uses: a
            // component that exports its HTTP handler goes to the WASIp3
            // engine (anything else is refused with the main one's reason).
            Err(err) if !p3::exports_p3_handler(bytes) => {
                Err(ComponentError::Compile(format!("{err:#}")))
            }
            Err(_) => {
                let p3 = self.p3()?;
                compile(&p3.engine, p3.cache.as_ref())
                    .map_err(|e| ComponentError::Compile(format!("{e:#}")))
            }
        }?;
        memory_images(&compiled.0);
        Ok(compiled)
    }

    /// Type-checks imports against the linker and exports against the worlds.
    pub fn prepare(&self, component: &Component) -> Result<Prepared, ComponentError> {
        if let Some(p3) = self.p3_owns(component.engine()) {
            return p3
                .prepare(component)
                .map(|pre| Prepared::Http(HttpPre::P3(pre)))
                .map_err(|e| ComponentError::Imports(format!("{e:#}")));
        }
        let pre = self
            .linkers
            .sync
            .instantiate_pre(component)
            .map_err(|e| ComponentError::Imports(format!("{e:#}")))?;
        let as_agent = match bindings::AgentPre::new(pre.clone()) {
            Ok(sync) => {
                let asynchronous = self
                    .linkers
                    .asynchronous
                    .instantiate_pre(component)
                    .and_then(bindings::AgentPre::new)
                    .map_err(|e| ComponentError::AsyncLink(format!("{e:#}")))?;
                return Ok(Prepared::Agent(AgentPres { sync, asynchronous }));
            }
            Err(e) => e,
        };
        let as_filter = match bindings::FilterPre::new(pre.clone()) {
            Ok(sync) => {
                let asynchronous = self
                    .linkers
                    .asynchronous
                    .instantiate_pre(component)
                    .and_then(bindings::FilterPre::new)
                    .map_err(|e| ComponentError::AsyncLink(format!("{e:#}")))?;
                return Ok(Prepared::Filter(FilterPres { sync, asynchronous }));
            }
            Err(e) => e,
        };
        let as_http = match bindings::ProxyPre::new(pre) {
            Ok(_) => {
                let asynchronous = self
                    .linkers
                    .asynchronous
                    .instantiate_pre(component)
                    .and_then(bindings::ProxyPre::new)
                    .map_err(|e| ComponentError::AsyncLink(format!("{e:#}")))?;
                return Ok(Prepared::Http(HttpPre::P2(asynchronous)));
            }
            Err(e) => e,
        };
        Err(ComponentError::NoWorld {
            agent: format!("{as_agent:#}"),
            filter: format!("{as_filter:#}"),
            http: format!("{as_http:#}"),
        })
    }

    /// An agent ready to serve, with its identity and limits; loaded from
    /// `file`, where its code comes back from if it is unloaded.
    pub fn agent_image(
        &self,
        pres: AgentPres,
        identity: GuestIdentity,
        limits: Limits,
        file: SourceFile,
    ) -> AgentImage {
        let kind = call::Kind::agent(&self.engine, pres.sync, pres.asynchronous);
        AgentImage::new(
            self.engine.clone(),
            kind,
            self.source(file),
            identity,
            limits,
        )
    }

    /// Where an unloaded agent's code comes back from: none without a
    /// compile cache (it would be compiled again), so it stays loaded.
    fn source(&self, file: SourceFile) -> Option<unload::Source> {
        Some(unload::Source {
            cache: self.cache.clone()?,
            linkers: self.linkers.clone(),
            file,
        })
    }
}

impl Runtime {
    /// A `wasi:http` component ready to serve like an agent (see
    /// [`Runtime::agent_image`]).
    pub fn http_image(
        &self,
        pre: HttpPre,
        identity: GuestIdentity,
        limits: Limits,
        file: SourceFile,
    ) -> AgentImage {
        let (engine, kind) = match pre {
            HttpPre::P2(pre) => (self.engine.clone(), call::Kind::Http(pre)),
            HttpPre::P3(pre) => {
                let engine = pre.instance_pre().component().engine().clone();
                (engine, call::Kind::HttpP3(pre))
            }
        };
        AgentImage::new(engine, kind, self.source(file), identity, limits)
    }

    /// A filter ready to run, with its identity and limits; refused when
    /// an export it has beside the filter world's is of the wrong type.
    pub fn filter_image(
        &self,
        pres: FilterPres,
        identity: GuestIdentity,
        limits: Limits,
    ) -> Result<FilterImage, String> {
        FilterImage::new(
            self.engine.clone(),
            pres.sync,
            pres.asynchronous,
            identity,
            limits,
        )
    }
}

/// Makes the component's initial memory images now, where wasmtime would
/// at its first instance. On Linux each is a sealed memfd, and the kernel
/// may refuse the seal for a moment (EBUSY: pages just written still held
/// by another CPU, seen under a busy test run), which would fail that
/// instance, and at load the component with it. Tried up to four times
/// here; if it still fails, the first instance tries again.
fn memory_images(component: &Component) {
    let mut wait = std::time::Duration::from_millis(1);
    for _ in 0..3 {
        match component.initialize_copy_on_write_image() {
            Ok(()) => return,
            Err(err) if busy(&err) => std::thread::sleep(wait),
            Err(_) => return,
        }
        wait *= 10;
    }
    if let Err(err) = component.initialize_copy_on_write_image() {
        tracing::warn!(error = %format!("{err:#}"), "a component's memory image could not be made yet");
    }
}

/// Whether `err` comes from an OS call that found something busy (EBUSY).
fn busy(err: &wasmtime::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ResourceBusy)
    })
}

/// Imports and exports of a component, by name, for `wharf inspect`.
pub fn component_items(component: &Component) -> (Vec<String>, Vec<String>) {
    let engine = component.engine();
    let ty = component.component_type();
    let imports = ty
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let exports = ty
        .exports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    (imports, exports)
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("allocation", &self.allocation)
            .finish_non_exhaustive()
    }
}

/// Links Wharf's host imports into the linker: `peers` as the async
/// linker (`asynchronous`) or the load-time one needs it.
fn add_host_to_linker(linker: &mut Linker<GuestState>, asynchronous: bool) -> wasmtime::Result<()> {
    use bindings::generated;
    use generated::agent::wharf::plugin as agent;
    use wasmtime::component::HasSelf;
    agent::host::add_to_linker::<GuestState, HasSelf<GuestState>>(linker, |s| s)?;
    agent::types::add_to_linker::<GuestState, HasSelf<GuestState>>(linker, |s| s)?;
    agent::streaming::add_to_linker::<GuestState, HasSelf<GuestState>>(linker, |s| s)?;
    if asynchronous {
        generated::peers_async::wharf::plugin::peers::add_to_linker::<
            GuestState,
            HasSelf<GuestState>,
        >(linker, |s| s)?;
    } else {
        agent::peers::add_to_linker::<GuestState, HasSelf<GuestState>>(linker, |s| s)?;
    }
    generated::a2a::wharf::plugin::a2a::add_to_linker::<GuestState, HasSelf<GuestState>>(
        linker,
        |s| s,
    )?;
    generated::filter::wharf::plugin::filtering::add_to_linker::<GuestState, HasSelf<GuestState>>(
        linker,
        |s| s,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::busy;
    use wasmtime::error::Context as _;

    #[test]
    fn a_busy_os_call_is_told_apart_through_the_error_chain() {
        let ebusy = || std::io::Error::from_raw_os_error(16);
        assert!(busy(&wasmtime::Error::new(ebusy())));
        let wrapped: wasmtime::Result<()> = Err(ebusy()).context("making a memory image");
        assert!(busy(&wrapped.unwrap_err()));
        let other = std::io::Error::from_raw_os_error(12);
        assert!(!busy(&wasmtime::Error::new(other)));
        assert!(!busy(&wasmtime::format_err!("cannot add seals")));
    }
}
