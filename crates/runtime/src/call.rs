//! Calls into guests: instantiating a prepared agent into a fresh store,
//! bounding each call (epoch deadline, memory limiter, and an outer clock
//! for a guest blocked in a host call), and classifying every way a call
//! can fail.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::{Engine, Store, Trap, UpdateDeadline};

use super::bindings::{
    A2aAgent, A2aAgentIndices, Agent, AgentIndices, AgentPre, Card, GuestError, GuestResponse,
    Health, Proxy, ProxyPre,
};
use super::convert::{guest_request, response_from_guest};
use super::state::{GuestIdentity, GuestState};
use super::unload::{Code, Source, UnloadedCode};
use wharf_config::Limits;
use wharf_core::request::{Request, Response};

/// Why a call into a guest did not produce a response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("the agent did not finish within its deadline")]
    /// Cut off at its deadline.
    Deadline,
    #[error("the agent exceeded its memory limit")]
    /// Past its memory limit.
    MemoryLimit,
    #[error("the agent trapped: {0}")]
    /// The guest trapped (the details are for the log).
    Trap(String),
    #[error("the agent could not be instantiated: {0}")]
    /// No instance could be made.
    Instantiate(String),
    #[error("the agent returned an invalid response: {0}")]
    /// Its response broke the contract.
    InvalidResponse(String),
    #[error("the filter returned an invalid verdict: {0}")]
    /// A filter's verdict broke the phase's contract.
    InvalidVerdict(String),
    #[error("the agent refused the request as malformed: {0}")]
    /// The guest refused the request as malformed.
    BadRequest(String),
    #[error("the agent has nothing here: {0}")]
    /// The guest has nothing at this path.
    NotFound(String),
    #[error("the agent is unavailable: {0}")]
    /// The guest is unavailable.
    Unavailable(String),
    #[error("the agent reported an internal error: {0}")]
    /// The guest reported an internal error (the text is for the log).
    Internal(String),
    #[error("the call was canceled")]
    /// The client went away.
    Canceled,
    #[error("the request body is over the limit of {0} bytes")]
    /// The request body is past the limit (in bytes).
    BodyTooLarge(usize),
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

/// Runs an async guest call until `deadline`. The epoch stops a guest
/// running wasm code, but not one blocked in a host call (a sleep, a poll):
/// past the deadline the call's future is dropped and `None` answered. The
/// caller leaves its instance marked in a call, so it is never used again.
///
/// The timer is made only once the call has had to wait: a call that
/// finishes on its first poll (most do) costs no timer at all.
pub(super) fn by_deadline<F: Future>(deadline: Instant, call: F) -> ByDeadline<F> {
    ByDeadline {
        call,
        deadline,
        timer: None,
    }
}

pin_project_lite::pin_project! {
    /// [`by_deadline`]'s future. A named type, not an `async fn`: an
    /// `async fn` keeps its argument beside the pinned copy it polls, so
    /// the guest call's state (the largest part of a request's future)
    /// would be held, and copied with every boxed future around it, twice.
    pub(super) struct ByDeadline<F> {
        #[pin]
        call: F,
        deadline: Instant,
        // Made at the first poll that leaves the call pending: a call that
        // ends without yielding arms no timer.
        timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    }
}

impl<F: Future> Future for ByDeadline<F> {
    type Output = Option<F::Output>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        if let std::task::Poll::Ready(out) = this.call.poll(cx) {
            return std::task::Poll::Ready(Some(out));
        }
        let deadline = *this.deadline;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
        timer.as_mut().poll(cx).map(|()| None)
    }
}

/// Runs a synchronous (load-time) guest call on a thread of its own and
/// waits at most `limit`: a guest blocked in a host call cannot be
/// interrupted, so past the limit the call is given up as past its
/// deadline, and its thread, with the instance it holds, ends when the
/// host call does.
pub fn watched<T: Send + 'static>(
    limit: Duration,
    call: impl FnOnce() -> Result<T, CallError> + Send + 'static,
) -> Result<T, CallError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("wharf-load-call".into())
        .spawn(move || {
            let _ = tx.send(call());
        })
        .map_err(|e| CallError::Internal(format!("cannot start the call: {e}")))?;
    match rx.recv_timeout(limit) {
        Ok(result) => result,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(CallError::Deadline),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(CallError::Internal(
            "the call's thread ended without an answer".into(),
        )),
    }
}

/// The shortest time a component's load-time call is given, whatever
/// its per-request deadline (see [`Live::for_load`]).
pub const LOAD_DEADLINE: Duration = Duration::from_secs(10);

/// A compiled, type-checked agent ready to be instantiated: a Wharf agent
/// or a `wasi:http/proxy` component served like one. Its code may be
/// unloaded while it is idle ([`AgentImage::unload`]); the next instance
/// loads it again.
pub struct AgentImage {
    code: Arc<Code>,
    shape: Shape,
    identity: Arc<GuestIdentity>,
    limits: Limits,
}

/// What the component is, known from load whether its code is loaded or not.
#[derive(Debug, Clone, Copy)]
struct Shape {
    streams: bool,
    a2a: bool,
    http: bool,
}

/// What the component exports. One per loaded agent: the variants' sizes
/// do not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Kind {
    Agent {
        pre: AgentPre<GuestState>,
        pre_async: AgentPre<GuestState>,
        /// For an agent that serves A2A: where its exports are, so that
        /// one instantiation yields both the agent's and `on-message`.
        a2a: Option<(AgentIndices, A2aAgentIndices)>,
        /// Whether it imports `streaming`: only then may its answers stream.
        streams: bool,
    },
    /// `wasi:http/incoming-handler`: instantiated on the request path only.
    Http(ProxyPre<GuestState>),
    /// `wasi:http/handler@0.3` (WASIp3), on its own engine: likewise.
    HttpP3(wasmtime_wasi_http::p3::bindings::ServicePre<GuestState>),
}

impl Kind {
    /// A Wharf agent, with what its component says about A2A and streaming.
    pub(crate) fn agent(
        engine: &Engine,
        pre: AgentPre<GuestState>,
        pre_async: AgentPre<GuestState>,
    ) -> Kind {
        let a2a = A2aAgentIndices::new(pre.instance_pre())
            .ok()
            .and_then(|a2a| Some((AgentIndices::new(pre.instance_pre()).ok()?, a2a)));
        let component = pre.instance_pre().component();
        let streams = component
            .component_type()
            .imports(engine)
            .any(|(name, _)| name.starts_with("wharf:plugin/streaming"));
        Kind::Agent {
            pre,
            pre_async,
            a2a,
            streams,
        }
    }

    fn shape(&self) -> Shape {
        match self {
            Kind::Agent { a2a, streams, .. } => Shape {
                streams: *streams,
                a2a: a2a.is_some(),
                http: false,
            },
            Kind::Http(_) | Kind::HttpP3(_) => Shape {
                streams: true,
                a2a: false,
                http: true,
            },
        }
    }
}

/// The exports of a live agent instance.
pub enum Exports {
    /// Wharf's agent world.
    Agent(Agent),
    /// `wasi:http/proxy`.
    Http(Proxy),
    /// `wasi:http/handler@0.3` (WASIp3).
    HttpP3(super::p3::P3Service),
}

impl AgentImage {
    pub(crate) fn new(
        engine: Engine,
        kind: Kind,
        source: Option<Source>,
        identity: GuestIdentity,
        limits: Limits,
    ) -> Self {
        AgentImage {
            shape: kind.shape(),
            code: Arc::new(Code::new(engine, kind, source)),
            identity: Arc::new(identity),
            limits,
        }
    }

    /// Whether answers may stream: the agent imports `streaming`, or it is
    /// a `wasi:http` component (whose body always leaves as it is written).
    pub fn streams(&self) -> bool {
        self.shape.streams
    }

    /// Whether the agent serves A2A (exports `on-message`).
    pub fn serves_a2a(&self) -> bool {
        self.shape.a2a
    }

    /// Whether it is a `wasi:http/proxy` component.
    pub fn is_http(&self) -> bool {
        self.shape.http
    }

    /// Takes its loaded code (component, instance-pres) away when it can
    /// be loaded again (a compile cache is in use); instances alive now
    /// keep what they use until they end, and the next one loads it again.
    /// The code is freed when the answer is dropped; none when it was not
    /// unloaded now.
    pub fn unload(&self) -> Option<UnloadedCode> {
        self.code.unload().map(UnloadedCode::new)
    }

    /// Whether its code is loaded now.
    pub fn is_loaded(&self) -> bool {
        self.code.is_loaded()
    }

    /// Whether [`AgentImage::unload`] can unload it.
    pub fn unloadable(&self) -> bool {
        self.code.unloadable()
    }

    /// Where loads after an unload are counted, once its route exists.
    pub fn reload_counter(&self) -> &std::sync::OnceLock<metrics::Counter> {
        &self.code.reloads
    }

    /// The limits it runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.identity.name
    }

    /// Where its outbound requests are counted, once its route exists.
    pub fn outbound_counters(&self) -> &std::sync::OnceLock<super::OutboundCounters> {
        &self.identity.outbound.counters
    }

    fn store(&self, may_yield: bool) -> Store<GuestState> {
        new_store(&self.code.engine, &self.identity, &self.limits, may_yield)
    }

    fn live(
        &self,
        mut store: Store<GuestState>,
        instance: Result<wasmtime::component::Instance, wasmtime::Error>,
        a2a: &Option<(AgentIndices, A2aAgentIndices)>,
    ) -> Result<Live, CallError> {
        let exports = instance.and_then(|instance| match a2a {
            None => Ok((Agent::new(&mut store, &instance)?, None)),
            Some((agent, a2a)) => Ok((
                agent.load(&mut store, &instance)?,
                Some(Box::new(a2a.load(&mut store, &instance)?)),
            )),
        });
        let (agent, a2a) = match exports {
            Ok((agent, a2a)) => (Ok(Exports::Agent(agent)), a2a),
            Err(err) => (Err(err), None),
        };
        let mut live = Live::new(store, agent, self.limits)?;
        live.a2a = a2a;
        Ok(live)
    }

    /// A new instance in a new store, on this thread. Its WASI calls block,
    /// so it must not be used on an async worker: see [`Self::instantiate_async`].
    /// A `wasi:http` component is only instantiated on the request path.
    pub fn instantiate(&self) -> Result<Live, CallError> {
        let kind = self.code.get()?;
        let mut store = self.store(false);
        match &*kind {
            Kind::Agent { pre, a2a: None, .. } => {
                let agent = pre.instantiate(&mut store).map(Exports::Agent);
                Live::new(store, agent, self.limits)
            }
            Kind::Agent { pre, a2a, .. } => {
                let instance = pre.instance_pre().instantiate(&mut store);
                self.live(store, instance, a2a)
            }
            Kind::Http(_) | Kind::HttpP3(_) => Err(CallError::Instantiate(
                "a wasi:http component runs on the request path only".into(),
            )),
        }
    }

    /// A new instance in a new store, on a fiber that yields to the async
    /// executor at every epoch tick.
    pub async fn instantiate_async(&self) -> Result<Live, CallError> {
        let kind = self.code.get_async().await?;
        let mut store = self.store(true);
        match &*kind {
            Kind::Agent {
                pre_async,
                a2a: None,
                ..
            } => {
                let deadline = store.data().deadline_at;
                let agent = by_deadline(deadline, pre_async.instantiate_async(&mut store)).await;
                let agent = agent.ok_or(CallError::Deadline)?;
                Live::new(store, agent.map(Exports::Agent), self.limits)
            }
            Kind::Agent { pre_async, a2a, .. } => {
                let deadline = store.data().deadline_at;
                let made = pre_async.instance_pre().instantiate_async(&mut store);
                let instance = by_deadline(deadline, made)
                    .await
                    .ok_or(CallError::Deadline)?;
                self.live(store, instance, a2a)
            }
            Kind::Http(pre) => {
                let deadline = store.data().deadline_at;
                let proxy = by_deadline(deadline, pre.instantiate_async(&mut store)).await;
                let proxy = proxy.ok_or(CallError::Deadline)?;
                Live::new(store, proxy.map(Exports::Http), self.limits)
            }
            Kind::HttpP3(pre) => {
                let deadline = store.data().deadline_at;
                let service = by_deadline(deadline, pre.instantiate_async(&mut store)).await;
                let service = service.ok_or(CallError::Deadline)?;
                let exports = service.map(|s| Exports::HttpP3(Arc::new(s)));
                Live::new(store, exports, self.limits)
            }
        }
    }

    /// A new instance made ahead of the request it will serve: the deadline
    /// set now covers only its instantiation, and its first call arms its
    /// own, as a warm instance's calls do.
    pub async fn instantiate_ahead(&self) -> Result<Live, CallError> {
        let mut live = self.instantiate_async().await?;
        live.fresh = false;
        Ok(live)
    }

    /// One request on a fresh instance that is dropped afterwards.
    pub fn handle_fresh(&self, req: &Request) -> Result<Response, CallError> {
        self.instantiate()?.handle(req)
    }
}

/// A live instance of an agent (or, with the filter world's exports, of a
/// filter). After any error it must be dropped: a trapped store cannot be
/// entered again.
pub struct Live<E = Exports> {
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

impl Live<Exports> {
    /// Calls `handle` on this thread (a Wharf agent only).
    pub fn handle(&mut self, req: &Request) -> Result<Response, CallError> {
        agent(&self.exports)?;
        self.begin(req, false);
        let func = agent(&self.exports)?.func_handle();
        let guest_req = guest_request(req, &mut self.scratch);
        let result = func.call(&mut self.store, (guest_req,)).map(|(r,)| r);
        self.in_call = false;
        self.finish(result)
    }

    /// Calls what the request asks for (`handle`, or a turn of an A2A task)
    /// on a fiber; a turn's answer is an empty 200, its outcome having gone
    /// to the turn's event channel.
    ///
    /// The `wasi:http` calls and turns are boxed: their futures are
    /// larger than `handle`'s, and the routing stack boxes a request's
    /// whole call, so every `handle` request copied their size (its
    /// boxed call: 9.2 KB, 5.2 KB with these boxed).
    pub async fn call_async(&mut self, req: &Request) -> Result<Response, CallError> {
        if let Exports::Http(_) | Exports::HttpP3(_) = &self.exports {
            let sink = match &req.call {
                wharf_core::request::Call::Streamed(sink) => Some(sink),
                _ => None,
            };
            return match &self.exports {
                Exports::HttpP3(_) => Box::pin(self.http_p3_async(req, sink)).await,
                _ => Box::pin(self.http_async(req, sink)).await,
            };
        }
        match &req.call {
            wharf_core::request::Call::Handle => self.handle_async(req).await,
            wharf_core::request::Call::Streamed(sink) => {
                self.store.data_mut().sink = Some(sink.clone());
                let result = self.handle_async(req).await;
                self.store.data_mut().sink = None;
                result
            }
            wharf_core::request::Call::Turn(turn) => {
                let turn = turn.clone();
                Box::pin(self.turn_async(req, &turn)).await?;
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
        agent(&self.exports)?;
        self.begin(req, true);
        let func = agent(&self.exports)?.func_handle();
        let guest_req = guest_request(req, &mut self.scratch);
        let deadline = self.store.data().deadline_at;
        let called = by_deadline(deadline, func.call_async(&mut self.store, (guest_req,))).await;
        // Past the deadline `in_call` stays set: the instance is abandoned.
        let result = called.ok_or(CallError::Deadline)?.map(|(r,)| r);
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

    /// Asks the agent for its card.
    pub fn describe(&mut self) -> Result<Card, CallError> {
        let func = agent(&self.exports)?.func_describe();
        self.store.data_mut().may_yield = false;
        self.arm_deadline();
        func.call(&mut self.store, ())
            .map(|(card,)| card)
            .map_err(|e| classify(&self.store, e))
    }

    /// The agent's `health`; a `wasi:http` component, which has none, is
    /// healthy while its instance lives.
    pub fn health(&mut self) -> Result<Health, CallError> {
        let Exports::Agent(agent) = &self.exports else {
            return Ok(Health::Ok);
        };
        let func = agent.func_health();
        self.store.data_mut().may_yield = false;
        self.arm_deadline();
        func.call(&mut self.store, ())
            .map(|(health,)| health)
            .map_err(|e| classify(&self.store, e))
    }

    /// Calls `health` on a fiber (for instances made by `instantiate_async`).
    pub async fn health_async(&mut self) -> Result<Health, CallError> {
        let Exports::Agent(agent) = &self.exports else {
            return Ok(Health::Ok);
        };
        let func = agent.func_health();
        self.store.data_mut().may_yield = true;
        self.arm_deadline();
        self.in_call = true;
        let deadline = self.store.data().deadline_at;
        let result = by_deadline(deadline, func.call_async(&mut self.store, ()))
            .await
            .ok_or(CallError::Deadline)?;
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
        data.reach.clone_from(&req.hop.reach);
        data.set_trace(&req.trace);
        self.arm_deadline();
        // A call from another agent ends when its caller must.
        if let Some(outer) = req.hop.deadline {
            let data = self.store.data_mut();
            data.deadline_at = data.deadline_at.min(outer);
        }
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

    /// Gives this instance's calls at least [`LOAD_DEADLINE`], counted
    /// from now: for the one call a component answers when it is loaded
    /// (`describe`, `phases`). That first call runs beside compiles and
    /// pays one-off costs (the first touch of a large memory image) that a
    /// request's deadline does not budget; a guest that hangs is still
    /// refused, only later. Returns the instance and the time each of its
    /// calls is now given.
    pub fn for_load(mut self) -> (Self, Duration) {
        self.limits.deadline = self.limits.deadline.max(LOAD_DEADLINE);
        self.fresh = false;
        let deadline = self.limits.deadline;
        (self, deadline)
    }

    pub(super) fn arm_deadline(&mut self) {
        if !std::mem::take(&mut self.fresh) {
            self.store.data_mut().deadline_at = Instant::now() + self.limits.deadline;
            self.store.set_epoch_deadline(1);
        }
    }
}

/// The Wharf agent's exports; a `wasi:http` component has none.
fn agent(exports: &Exports) -> Result<&Agent, CallError> {
    match exports {
        Exports::Agent(agent) => Ok(agent),
        Exports::Http(_) | Exports::HttpP3(_) => Err(CallError::Internal(
            "a wasi:http component has no Wharf agent exports".into(),
        )),
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
