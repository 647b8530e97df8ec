//! The one place `bindgen!` runs: host-side bindings for the `agent`,
//! `a2a-agent` and `filter` worlds of `wit/`, re-exported by name so nothing else depends on
//! the generated module layout.

#[allow(unsafe_code)]
mod generated {
    pub mod agent {
        wasmtime::component::bindgen!({
            path: "../wit",
            world: "agent",
            // Export parameters borrow: a request's body is lowered straight
            // from the transport's buffer into guest memory.
            ownership: Borrowing { duplicate_if_necessary: true },
        });
    }

    pub mod a2a {
        wasmtime::component::bindgen!({
            path: "../wit",
            world: "a2a-agent",
            // As for agents (its `handle` shares their borrowed types).
            ownership: Borrowing { duplicate_if_necessary: true },
            with: {
                "wharf:plugin/host": super::agent::wharf::plugin::host,
                "wharf:plugin/types": super::agent::wharf::plugin::types,
                "wharf:plugin/streaming": super::agent::wharf::plugin::streaming,
            },
        });
    }

    pub mod filter {
        wasmtime::component::bindgen!({
            path: "../wit",
            world: "filter",
            // Request and response parameters borrow, as for agents.
            ownership: Borrowing { duplicate_if_necessary: true },
            with: {
                "wharf:plugin/host": super::agent::wharf::plugin::host,
                "wharf:plugin/types": super::agent::wharf::plugin::types,
            },
        });
    }
}

pub use generated::a2a::A2aAgent;
pub use generated::a2a::A2aAgentIndices;
pub use generated::a2a::wharf::plugin::a2a::{
    Artifact as GuestArtifact, ContentParam, ContentResult, Host as A2aHost, MessageParam,
    MessageResult, Outcome as GuestOutcome, PartParam, PartResult, Role as GuestRole,
    Turn as GuestTurn, TurnState as GuestTurnState,
};
pub use generated::agent::wharf::plugin::host::{Host, Level};
pub use generated::agent::wharf::plugin::streaming::Host as StreamingHost;
pub use generated::agent::wharf::plugin::types::Host as TypesHost;
pub use generated::agent::wharf::plugin::types::{
    Card, Error as GuestError, Health, Request as GuestRequest, Response as GuestResponse, Skill,
};
pub use generated::agent::{Agent, AgentIndices, AgentPre};
#[cfg(feature = "fuzzing")]
pub use generated::filter::wharf::plugin::filtering::{
    Audit as GuestAudit, Redirect as GuestRedirect,
};
pub use generated::filter::wharf::plugin::filtering::{
    Decision as GuestDecision, HeaderOp as GuestHeaderOp, Host as FilteringHost,
    Phases as GuestPhases, Verdict as GuestVerdict,
};
pub use generated::filter::{Filter, FilterPre};
pub use wasmtime_wasi_http::p2::bindings::{Proxy, ProxyPre};

use wasmtime::component::{HasSelf, Linker};

use super::state::GuestState;

/// Links `wharf:plugin/host` (and the type-only interfaces both worlds
/// import) into the linker.
pub(super) fn add_host_to_linker(linker: &mut Linker<GuestState>) -> wasmtime::Result<()> {
    generated::agent::Agent::add_to_linker::<GuestState, HasSelf<GuestState>>(linker, |s| s)?;
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
