//! Runtime: the wasmtime engine, the linker with Wharf's host imports and
//! sandboxed WASI, and preparing components (compile, type-check, world).
//! Nothing above this module sees a wasmtime type except through
//! [`AgentImage`] and [`Live`].

mod bindings;
mod call;
mod convert;
mod engine;
mod state;

use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

pub use bindings::{Card, Health, Skill};
pub use call::{AgentImage, CallError, Live};
pub use convert::{decode_headers, encode_headers};
pub use engine::{Allocation, EPOCH_TICK, EngineSettings};
pub use state::{GuestIdentity, GuestState};

use crate::config::Limits;

/// Which world a component fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum World {
    Agent,
    Filter,
}

impl World {
    pub fn as_str(self) -> &'static str {
        match self {
            World::Agent => "agent",
            World::Filter => "filter",
        }
    }
}

/// A component that compiled and type-checked against one of Wharf's worlds.
pub enum Prepared {
    Agent(bindings::AgentPre<GuestState>),
    Filter(bindings::FilterPre<GuestState>),
}

impl Prepared {
    pub fn world(&self) -> World {
        match self {
            Prepared::Agent(_) => World::Agent,
            Prepared::Filter(_) => World::Filter,
        }
    }
}

/// Engine, linker and allocator choice, shared by every agent.
pub struct Runtime {
    engine: Engine,
    linker: Linker<GuestState>,
    allocation: Allocation,
}

impl Runtime {
    /// Builds the engine (pooling when it can), starts the epoch ticker and
    /// links the host imports and WASI.
    pub fn new(settings: &EngineSettings) -> wasmtime::Result<Runtime> {
        let (engine, allocation) = engine::build(settings)?;
        engine::start_ticker(&engine);
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        bindings::add_host_to_linker(&mut linker)?;
        Ok(Runtime {
            engine,
            linker,
            allocation,
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The linker with WASI and the host imports; for benchmarks that
    /// measure raw wasmtime calls beside Wharf's dispatch.
    #[doc(hidden)]
    pub fn linker(&self) -> &Linker<GuestState> {
        &self.linker
    }

    pub fn allocation(&self) -> Allocation {
        self.allocation
    }

    /// Compiles a component (Cranelift). Slow for large guests: call once.
    pub fn compile(&self, bytes: &[u8]) -> Result<Component, String> {
        Component::new(&self.engine, bytes).map_err(|e| format!("{e:#}"))
    }

    /// Type-checks imports against the linker and exports against the worlds.
    pub fn prepare(&self, component: &Component) -> Result<Prepared, String> {
        let pre = self
            .linker
            .instantiate_pre(component)
            .map_err(|e| format!("it needs imports Wharf does not provide: {e:#}"))?;
        let as_agent = match bindings::AgentPre::new(pre.clone()) {
            Ok(agent) => return Ok(Prepared::Agent(agent)),
            Err(e) => e,
        };
        let as_filter = match bindings::FilterPre::new(pre) {
            Ok(filter) => return Ok(Prepared::Filter(filter)),
            Err(e) => e,
        };
        Err(format!(
            "it fits neither the agent world ({as_agent:#}) nor the filter world ({as_filter:#})"
        ))
    }

    /// An agent ready to serve, with its identity and limits.
    pub fn agent_image(
        &self,
        pre: bindings::AgentPre<GuestState>,
        identity: GuestIdentity,
        limits: Limits,
    ) -> AgentImage {
        AgentImage::new(self.engine.clone(), pre, identity, limits)
    }
}

/// Imports and exports of a component, by name, for `wharf inspect`.
pub fn component_items(engine: &Engine, component: &Component) -> (Vec<String>, Vec<String>) {
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
