//! The one place `bindgen!` runs: host-side bindings for the `agent`,
//! `a2a-agent` and `filter` worlds of `wit/`, re-exported by name so nothing else depends on
//! the generated module layout. `peers.call` is bound twice: synchronously
//! for the load-time linker (where it refuses) and as an async host
//! function for the request path (where it awaits the callee).

#[allow(unsafe_code)]
pub(crate) mod generated {
    pub mod agent {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "agent",
            // Export parameters borrow: a request's body is lowered straight
            // from the transport's buffer into guest memory.
            ownership: Borrowing { duplicate_if_necessary: true },
        });
    }

    /// The agent world again, with `peers.call` async: only its `peers`
    /// interface is used, on the async linker.
    pub mod peers_async {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "agent",
            ownership: Borrowing { duplicate_if_necessary: true },
            imports: { "wharf:plugin/peers.call": async },
            with: {
                "wharf:plugin/host": super::agent::wharf::plugin::host,
                "wharf:plugin/types": super::agent::wharf::plugin::types,
                "wharf:plugin/streaming": super::agent::wharf::plugin::streaming,
            },
        });
    }

    pub mod a2a {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "a2a-agent",
            // As for agents (its `handle` shares their borrowed types).
            ownership: Borrowing { duplicate_if_necessary: true },
            with: {
                "wharf:plugin/host": super::agent::wharf::plugin::host,
                "wharf:plugin/types": super::agent::wharf::plugin::types,
                "wharf:plugin/streaming": super::agent::wharf::plugin::streaming,
                "wharf:plugin/peers": super::agent::wharf::plugin::peers,
            },
        });
    }

    pub mod filter {
        wasmtime::component::bindgen!({
            path: "../../wit",
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
pub use generated::agent::wharf::plugin::peers::{CallError as GuestCallError, Host as PeersHost};
pub use generated::agent::wharf::plugin::streaming::Host as StreamingHost;
pub use generated::agent::wharf::plugin::types::Host as TypesHost;
pub use generated::agent::wharf::plugin::types::{
    Card, Error as GuestError, Health, RequestParam as GuestRequest,
    RequestResult as OwnedGuestRequest, Response as GuestResponse, Skill,
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
pub use generated::peers_async::wharf::plugin::peers::{
    CallError as AsyncCallError, Host as PeersAsyncHost,
};
pub use wasmtime_wasi_http::p2::bindings::{Proxy, ProxyPre};
