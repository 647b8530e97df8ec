//! Calls into guests: instantiating a prepared agent into a fresh store,
//! bounding each call (epoch deadline, memory limiter), and classifying
//! every way a call can fail.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::{Engine, Store, Trap, UpdateDeadline};

use super::bindings::{
    A2aAgent, A2aAgentIndices, Agent, AgentIndices, AgentPre, Card, GuestError, GuestResponse,
    Health,
};
use super::convert::{guest_request, response_from_guest};
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
    #[error("the filter returned an invalid verdict: {0}")]
    InvalidVerdict(String),
    #[error("the agent refused the request as malformed: {0}")]
    BadRequest(String),
    #[error("the agent has nothing here: {0}")]
    NotFound(String),
    #[error("the agent is unavailable: {0}")]
    Unavailable(String),
    #[error("the agent reported an internal error: {0}")]
    Internal(String),
    #[error("the call was canceled")]
    Canceled,
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
    pre_async: AgentPre<GuestState>,
    identity: Arc<GuestIdentity>,
    limits: Limits,
    /// For an agent that serves A2A: where its exports are, so that one
    /// instantiation yields both the agent's and `on-message`.
    a2a: Option<(AgentIndices, A2aAgentIndices)>,
    /// Whether it imports `streaming`: only then may its answers stream.
    streams: bool,
}

impl AgentImage {
    pub(crate) fn new(
        engine: Engine,
        pre: AgentPre<GuestState>,
        pre_async: AgentPre<GuestState>,
        identity: GuestIdentity,
        limits: Limits,
    ) -> Self {
        let a2a = A2aAgentIndices::new(pre.instance_pre())
            .ok()
            .and_then(|a2a| Some((AgentIndices::new(pre.instance_pre()).ok()?, a2a)));
        let component = pre.instance_pre().component();
        let streams = component
            .component_type()
            .imports(&engine)
            .any(|(name, _)| name.starts_with("wharf:plugin/streaming"));
        AgentImage {
            engine,
            pre,
            pre_async,
            identity: Arc::new(identity),
            limits,
            a2a,
            streams,
        }
    }

    /// Whether `handle` may stream its answer (the agent imports `streaming`).
    pub fn streams(&self) -> bool {
        self.streams
    }

    /// Whether the agent serves A2A (exports `on-message`).
    pub fn serves_a2a(&self) -> bool {
        self.a2a.is_some()
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.identity.name
    }

    fn store(&self, may_yield: bool) -> Store<GuestState> {
        new_store(&self.engine, &self.identity, &self.limits, may_yield)
    }

    fn live(
        &self,
        mut store: Store<GuestState>,
        instance: Result<wasmtime::component::Instance, wasmtime::Error>,
    ) -> Result<Live, CallError> {
        let exports = instance.and_then(|instance| match &self.a2a {
            None => Ok((Agent::new(&mut store, &instance)?, None)),
            Some((agent, a2a)) => Ok((
                agent.load(&mut store, &instance)?,
                Some(Box::new(a2a.load(&mut store, &instance)?)),
            )),
        });
        let (agent, a2a) = match exports {
            Ok((agent, a2a)) => (Ok(agent), a2a),
            Err(err) => (Err(err), None),
        };
        let mut live = Live::new(store, agent, self.limits)?;
        live.a2a = a2a;
        Ok(live)
    }

    /// A new instance in a new store, on this thread. Its WASI calls block,
    /// so it must not be used on an async worker: see [`Self::instantiate_async`].
    pub fn instantiate(&self) -> Result<Live, CallError> {
        let mut store = self.store(false);
        if self.a2a.is_none() {
            let agent = self.pre.instantiate(&mut store);
            return Live::new(store, agent, self.limits);
        }
        let instance = self.pre.instance_pre().instantiate(&mut store);
        self.live(store, instance)
    }

    /// A new instance in a new store, on a fiber that yields to the async
    /// executor at every epoch tick.
    pub async fn instantiate_async(&self) -> Result<Live, CallError> {
        let mut store = self.store(true);
        if self.a2a.is_none() {
            let agent = self.pre_async.instantiate_async(&mut store).await;
            return Live::new(store, agent, self.limits);
        }
        let instance = self
            .pre_async
            .instance_pre()
            .instantiate_async(&mut store)
            .await;
        self.live(store, instance)
    }

    /// One request on a fresh instance that is dropped afterwards.
    pub fn handle_fresh(&self, req: &Request) -> Result<Response, CallError> {
        self.instantiate()?.handle(req)
    }
}

/// A live instance of an agent (or, with the filter world's exports, of a
/// filter). After any error it must be dropped: a trapped store cannot be
/// entered again.
pub struct Live<E = Agent> {
    pub(super) store: Store<GuestState>,
    pub(super) exports: E,
    pub(super) limits: Limits,
    /// True until the first call: the deadline set at instantiation applies.
    pub(super) fresh: bool,
    /// True while a call runs; still true if an async call was abandoned
    /// half-way, which makes the instance unusable.
    pub(super) in_call: bool,
    /// Buffer for the encoded head and headers, reused across calls.
    pub(super) scratch: Vec<u8>,
    /// `on-message`, for an agent that serves A2A.
    pub(super) a2a: Option<Box<A2aAgent>>,
}

impl Live<Agent> {
    /// Calls `handle` on this thread.
    pub fn handle(&mut self, req: &Request) -> Result<Response, CallError> {
        self.begin(req, false);
        let guest_req = guest_request(req, &mut self.scratch);
        let result = self.exports.call_handle(&mut self.store, guest_req);
        self.in_call = false;
        self.finish(result)
    }

    /// Calls what the request asks for (`handle`, or a turn of an A2A task)
    /// on a fiber; a turn's answer is an empty 200, its outcome having gone
    /// to the turn's event channel.
    pub async fn call_async(&mut self, req: &Request) -> Result<Response, CallError> {
        match &req.call {
            crate::request::Call::Handle => self.handle_async(req).await,
            crate::request::Call::Streamed(sink) => {
                self.store.data_mut().sink = Some(sink.clone());
                let result = self.handle_async(req).await;
                self.store.data_mut().sink = None;
                result
            }
            crate::request::Call::Turn(turn) => {
                let turn = turn.clone();
                self.turn_async(req, &turn).await?;
                Ok(Response::new(
                    http::StatusCode::OK,
                    http::HeaderMap::new(),
                    bytes::Bytes::new(),
                ))
            }
        }
    }

    /// Calls `handle` on a fiber that yields to the executor at every epoch
    /// tick, so a long call never holds an async worker for more than a tick.
    pub async fn handle_async(&mut self, req: &Request) -> Result<Response, CallError> {
        self.begin(req, true);
        let guest_req = guest_request(req, &mut self.scratch);
        let func = self.exports.func_handle();
        let result = func
            .call_async(&mut self.store, (guest_req,))
            .await
            .map(|(r,)| r);
        self.in_call = false;
        self.finish(result)
    }

    fn finish(
        &mut self,
        result: wasmtime::Result<Result<GuestResponse, GuestError>>,
    ) -> Result<Response, CallError> {
        match result {
            Ok(Ok(resp)) => response_from_guest(resp, self.limits.response_body)
                .map_err(CallError::InvalidResponse),
            Ok(Err(guest)) => Err(guest.into()),
            Err(err) => Err(classify(&self.store, err)),
        }
    }

    pub fn describe(&mut self) -> Result<Card, CallError> {
        self.store.data_mut().may_yield = false;
        self.arm_deadline();
        self.exports
            .call_describe(&mut self.store)
            .map_err(|e| classify(&self.store, e))
    }

    pub fn health(&mut self) -> Result<Health, CallError> {
        self.store.data_mut().may_yield = false;
        self.arm_deadline();
        self.exports
            .call_health(&mut self.store)
            .map_err(|e| classify(&self.store, e))
    }

    /// Calls `health` on a fiber (for instances made by `instantiate_async`).
    pub async fn health_async(&mut self) -> Result<Health, CallError> {
        self.store.data_mut().may_yield = true;
        self.arm_deadline();
        self.in_call = true;
        let result = self
            .exports
            .func_health()
            .call_async(&mut self.store, ())
            .await;
        self.in_call = false;
        result.map(|(h,)| h).map_err(|e| classify(&self.store, e))
    }
}

impl<E> Live<E> {
    /// A live instance from a finished instantiation, or what went wrong.
    pub(super) fn new(
        store: Store<GuestState>,
        exports: Result<E, wasmtime::Error>,
        limits: Limits,
    ) -> Result<Self, CallError> {
        match exports {
            Ok(exports) => Ok(Live {
                store,
                exports,
                limits,
                fresh: true,
                in_call: false,
                scratch: Vec::new(),
                a2a: None,
            }),
            Err(err) => Err(match classify(&store, err) {
                CallError::Trap(msg) => CallError::Instantiate(msg),
                other => other,
            }),
        }
    }

    pub(super) fn begin(&mut self, req: &Request, may_yield: bool) {
        self.in_call = true;
        let data = self.store.data_mut();
        data.request_id = Some(req.id.clone());
        data.may_yield = may_yield;
        self.arm_deadline();
    }

    /// Bytes of linear memory this instance holds now.
    pub fn memory_bytes(&self) -> u64 {
        self.store.data().limiter.current
    }

    /// Whether an async call on this instance was abandoned half-way (its
    /// future dropped): such an instance must not be used again.
    pub fn abandoned(&self) -> bool {
        self.in_call
    }

    pub(super) fn arm_deadline(&mut self) {
        if !std::mem::take(&mut self.fresh) {
            self.store.data_mut().deadline_at = Instant::now() + self.limits.deadline;
            self.store.set_epoch_deadline(1);
        }
    }
}

/// A store whose deadline starts now and covers instantiation and the
/// first call. Every epoch tick checks the deadline: past it the guest
/// traps; before it an async call yields to the executor.
pub(super) fn new_store(
    engine: &Engine,
    identity: &Arc<GuestIdentity>,
    limits: &Limits,
    may_yield: bool,
) -> Store<GuestState> {
    let mut state = GuestState::new(identity.clone(), limits.memory);
    state.deadline_at = Instant::now() + limits.deadline;
    state.may_yield = may_yield;
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    store.epoch_deadline_callback(|ctx| {
        let state = ctx.data();
        let canceled = state
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed));
        Ok(if canceled || Instant::now() >= state.deadline_at {
            UpdateDeadline::Interrupt
        } else if state.may_yield {
            UpdateDeadline::Yield(1)
        } else {
            UpdateDeadline::Continue(1)
        })
    });
    store.set_epoch_deadline(1);
    store
}

/// Turns a wasmtime error into what happened, in the guest's terms.
pub(super) fn classify(store: &Store<GuestState>, err: wasmtime::Error) -> CallError {
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
