//! Calls into guests: instantiating a prepared agent into a fresh store,
//! bounding each call (epoch deadline, memory limiter), and classifying
//! every way a call can fail.

use std::sync::Arc;

use wasmtime::{Engine, Store, Trap};

use super::bindings::{Agent, AgentPre, Card, GuestError, Health};
use super::convert::{guest_request, response_from_guest};
use super::engine::deadline_ticks;
use super::state::{GuestIdentity, GuestState};
use crate::config::Limits;
use crate::request::{Request, Response};

/// Why a call into a guest did not produce a response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("the agent did not finish within its deadline")]
    Deadline,
    #[error("the agent exceeded its memory limit")]
    MemoryLimit,
    #[error("the agent trapped: {0}")]
    Trap(String),
    #[error("the agent could not be instantiated: {0}")]
    Instantiate(String),
    #[error("the agent returned an invalid response: {0}")]
    InvalidResponse(String),
    #[error("the agent refused the request as malformed: {0}")]
    BadRequest(String),
    #[error("the agent has nothing here: {0}")]
    NotFound(String),
    #[error("the agent is unavailable: {0}")]
    Unavailable(String),
    #[error("the agent reported an internal error: {0}")]
    Internal(String),
}

impl From<GuestError> for CallError {
    fn from(err: GuestError) -> Self {
        match err {
            GuestError::BadRequest(m) => CallError::BadRequest(m),
            GuestError::NotFound(m) => CallError::NotFound(m),
            GuestError::Unavailable(m) => CallError::Unavailable(m),
            GuestError::Internal(m) => CallError::Internal(m),
        }
    }
}

/// A compiled, type-checked agent ready to be instantiated.
pub struct AgentImage {
    engine: Engine,
    pre: AgentPre<GuestState>,
    identity: Arc<GuestIdentity>,
    limits: Limits,
}

impl AgentImage {
    pub(crate) fn new(
        engine: Engine,
        pre: AgentPre<GuestState>,
        identity: GuestIdentity,
        limits: Limits,
    ) -> Self {
        AgentImage {
            engine,
            pre,
            identity: Arc::new(identity),
            limits,
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.identity.name
    }

    /// A new instance in a new store. The deadline starts now: it covers
    /// instantiation and the first call.
    pub fn instantiate(&self) -> Result<Live, CallError> {
        let state = GuestState::new(self.identity.clone(), self.limits.memory);
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(deadline_ticks(self.limits.deadline));
        match self.pre.instantiate(&mut store) {
            Ok(agent) => Ok(Live {
                store,
                agent,
                limits: self.limits,
                fresh: true,
                scratch: Vec::new(),
            }),
            Err(err) => Err(match classify(&store, err) {
                CallError::Trap(msg) => CallError::Instantiate(msg),
                other => other,
            }),
        }
    }

    /// One request on a fresh instance that is dropped afterwards.
    pub fn handle_fresh(&self, req: &Request) -> Result<Response, CallError> {
        self.instantiate()?.handle(req)
    }
}

/// A live instance. After any error it must be dropped: a trapped store
/// cannot be entered again.
pub struct Live {
    store: Store<GuestState>,
    agent: Agent,
    limits: Limits,
    /// True until the first call: the deadline set at instantiation applies.
    fresh: bool,
    /// Buffer for the encoded head and headers, reused across calls.
    scratch: Vec<u8>,
}

impl Live {
    pub fn handle(&mut self, req: &Request) -> Result<Response, CallError> {
        self.store.data_mut().request_id = Some(req.id.clone());
        self.arm_deadline();
        let guest_req = guest_request(req, &mut self.scratch);
        let result = self.agent.call_handle(&mut self.store, guest_req);
        match result {
            Ok(Ok(resp)) => response_from_guest(resp, self.limits.response_body)
                .map_err(CallError::InvalidResponse),
            Ok(Err(guest)) => Err(guest.into()),
            Err(err) => Err(classify(&self.store, err)),
        }
    }

    pub fn describe(&mut self) -> Result<Card, CallError> {
        self.arm_deadline();
        self.agent
            .call_describe(&mut self.store)
            .map_err(|e| classify(&self.store, e))
    }

    pub fn health(&mut self) -> Result<Health, CallError> {
        self.arm_deadline();
        self.agent
            .call_health(&mut self.store)
            .map_err(|e| classify(&self.store, e))
    }

    /// Bytes of linear memory this instance holds now.
    pub fn memory_bytes(&self) -> u64 {
        self.store.data().limiter.current
    }

    fn arm_deadline(&mut self) {
        if !std::mem::take(&mut self.fresh) {
            self.store
                .set_epoch_deadline(deadline_ticks(self.limits.deadline));
        }
    }
}

/// Turns a wasmtime error into what happened, in the guest's terms.
fn classify(store: &Store<GuestState>, err: wasmtime::Error) -> CallError {
    if store.data().limiter.exceeded {
        return CallError::MemoryLimit;
    }
    match err.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => CallError::Deadline,
        Some(Trap::StackOverflow) => CallError::Trap("stack overflow".into()),
        Some(trap) => CallError::Trap(trap.to_string()),
        None => CallError::Trap(format!("{err:#}")),
    }
}
