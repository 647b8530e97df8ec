//! Per-store state: the memory limiter, lazily built sandboxed WASI, and the
//! host imports (`log`, `config`) every guest gets, and the filters'
//! `remember-verdict`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::{Host, Level};
use super::outbound::Hooks;
use wharf_core::verdict::{MAX_REMEMBER_HEADERS, Remember};

/// Longest guest log message kept; longer ones are cut at a char boundary.
const MAX_LOG_MESSAGE: usize = 4096;

/// What a guest may know about itself: its name and its config values;
/// and the one capability a filter may be granted: a directory it reads.
#[derive(Debug, Default, Clone)]
pub struct GuestIdentity {
    /// The guest's name.
    pub name: String,
    /// Its configuration values.
    pub values: Arc<BTreeMap<String, String>>,
    /// A host directory the guest sees read-only at `/files` (a filter's
    /// rule files, say); none for every other guest.
    pub files: Option<std::path::PathBuf>,
    /// The outbound HTTP it may make (`wasi:http`); none by default.
    pub outbound: super::outbound::OutboundAccess,
}

/// The data of one [`wasmtime::Store`].
pub struct GuestState {
    identity: Arc<GuestIdentity>,
    /// Request id the current call serves, for log attribution.
    pub(crate) request_id: Option<Arc<str>>,
    /// Config values for the current call's route, consulted before the
    /// guest's own (a filter configured per agent).
    pub(crate) route_values: Option<Arc<BTreeMap<String, String>>>,
    pub(crate) limiter: MemoryLimiter,
    /// When the current call must end; checked at every epoch tick.
    pub(crate) deadline_at: Instant,
    /// Whether the current call may yield to the async executor at a tick.
    pub(crate) may_yield: bool,
    /// The A2A turn the current call runs, when it runs one.
    pub(crate) turn: Option<TurnScope>,
    /// Set when the current call is canceled: checked at every epoch tick.
    pub(crate) cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Where the current `handle` call may stream its answer.
    pub(crate) sink: Option<wharf_core::request::Sink>,
    /// What the current call may reach through the host (other agents,
    /// topics); none when its agent's block allows neither.
    pub(crate) reach: Option<wharf_core::request::Reach>,
    /// The span the current call's outbound requests and calls start
    /// under, when the host exports traces.
    pub(crate) trace: Option<wharf_core::trace::Trace>,
    /// Whether the current call is a filter's `on-request-headers`, the
    /// only one that may ask for its verdict to be remembered, and what it
    /// asked.
    pub(crate) remember: Remembering,
    wasi: Option<WasiCtx>,
    /// `wasi:http` state, for components that use it; built on first use.
    http: Option<(WasiHttpCtx, Hooks)>,
    table: ResourceTable,
}

impl GuestState {
    /// The state of a new store for `identity`, its memory bounded by `memory_limit`.
    pub fn new(identity: Arc<GuestIdentity>, memory_limit: u64) -> Self {
        GuestState {
            identity,
            request_id: None,
            route_values: None,
            limiter: MemoryLimiter::new(memory_limit),
            deadline_at: Instant::now(),
            may_yield: false,
            turn: None,
            cancel: None,
            sink: None,
            reach: None,
            trace: None,
            remember: Remembering::Closed,
            wasi: None,
            http: None,
            table: ResourceTable::new(),
        }
    }
}

/// The sandbox: no environment, no arguments, no sockets or name lookups,
/// stdio closed, and no preopened directory unless the configuration
/// granted this guest one (read-only, at `/files`). Only what WASI needs
/// for a component to instantiate (clocks, random) remains.
fn sandboxed_wasi(identity: &GuestIdentity) -> WasiCtx {
    let mut builder = WasiCtx::builder();
    builder
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    if let Some(dir) = &identity.files {
        let read_only = wasmtime_wasi::FsPerms::ReadOnly;
        if let Err(err) = builder.preopened_dir(dir, "/files", read_only) {
            // Checked at load time; a directory removed since is logged.
            tracing::warn!(guest = %identity.name, dir = %dir.display(), error = %err, "cannot open the granted directory");
        }
    }
    builder.build()
}

impl WasiView for GuestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        // Built on first use: most calls never touch WASI, and building a
        // context (random state, clocks) costs more than the call itself.
        WasiCtxView {
            ctx: self
                .wasi
                .get_or_insert_with(|| sandboxed_wasi(&self.identity)),
            table: &mut self.table,
        }
    }
}

impl GuestState {
    /// Traces what the current call reaches under `trace`.
    pub(crate) fn set_trace(&mut self, trace: &Option<wharf_core::trace::Trace>) {
        self.trace.clone_from(trace);
        if let Some((_, hooks)) = &mut self.http {
            hooks.trace.clone_from(trace);
        }
    }
}

impl WasiHttpView for GuestState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        let (identity, trace) = (&self.identity, &self.trace);
        let (ctx, hooks) = self.http.get_or_insert_with(|| {
            let hooks = Hooks {
                guest: identity.name.as_str().into(),
                access: identity.outbound.clone(),
                trace: trace.clone(),
            };
            (WasiHttpCtx::new(), hooks)
        });
        WasiHttpCtxView {
            ctx,
            table: &mut self.table,
            hooks,
        }
    }
}

impl Host for GuestState {
    fn log(&mut self, level: Level, message: String) {
        let message = truncate(&message, MAX_LOG_MESSAGE);
        let agent = self.identity.name.as_str();
        let request = self.request_id.as_deref().unwrap_or("-");
        match level {
            Level::Trace => tracing::trace!(target: "wharf::guest", agent, request, "{message}"),
            Level::Debug => tracing::debug!(target: "wharf::guest", agent, request, "{message}"),
            Level::Info => tracing::info!(target: "wharf::guest", agent, request, "{message}"),
            Level::Warn => tracing::warn!(target: "wharf::guest", agent, request, "{message}"),
            Level::Error => tracing::error!(target: "wharf::guest", agent, request, "{message}"),
        }
    }

    fn config(&mut self, key: String) -> Option<String> {
        self.route_values
            .as_ref()
            .and_then(|values| values.get(&key))
            .or_else(|| self.identity.values.get(&key))
            .cloned()
    }
}

/// Where the current call stands on `filtering.remember-verdict`.
#[derive(Debug, Default)]
pub(crate) enum Remembering {
    /// Not a filter's `on-request-headers` call: asking is an error.
    #[default]
    Closed,
    /// In `on-request-headers`, nothing asked yet.
    Open,
    /// Asked (the last ask of the call counts).
    Asked(Remember),
}

// The type-only interface has nothing to implement.
impl super::bindings::TypesHost for GuestState {}

impl super::bindings::FilteringHost for GuestState {
    fn remember_verdict(&mut self, headers: Vec<String>, until: u64) -> Result<(), String> {
        if matches!(self.remember, Remembering::Closed) {
            return Err("a verdict is remembered only from on-request-headers".into());
        }
        if headers.is_empty() || headers.len() > MAX_REMEMBER_HEADERS {
            return Err(format!(
                "{} headers named: a remembered verdict is keyed by 1 to {MAX_REMEMBER_HEADERS}",
                headers.len()
            ));
        }
        let headers = headers
            .iter()
            .map(|name| {
                http::HeaderName::from_bytes(name.as_bytes())
                    .ok()
                    .filter(|h| h.as_str() == name)
                    .ok_or_else(|| {
                        format!("`{}` is not a lower-case header name", truncate(name, 64))
                    })
            })
            .collect::<Result<Vec<_>, String>>()?;
        self.remember = Remembering::Asked(Remember { headers, until });
        Ok(())
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// wasmtime's [`StoreLimits`] (memory size, table elements, instance and
/// memory counts), remembering whether a memory growth was refused so a
/// guest that aborts after a failed allocation is reported as out of
/// memory rather than as a generic trap.
pub(crate) struct MemoryLimiter {
    limits: StoreLimits,
    pub(crate) exceeded: bool,
    /// Bytes of linear memory the store's memories hold now.
    pub(crate) current: u64,
}

/// Table elements a guest may grow to; generous for any real guest.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;
/// Core instances, tables and memories one component may create; covers
/// interpreted-language guests, which have several of each.
const MAX_INSTANCES: usize = 64;

impl MemoryLimiter {
    fn new(memory: u64) -> Self {
        let limits = StoreLimitsBuilder::new()
            .memory_size(usize::try_from(memory).unwrap_or(usize::MAX))
            .table_elements(MAX_TABLE_ELEMENTS)
            .instances(MAX_INSTANCES)
            .tables(MAX_INSTANCES)
            .memories(MAX_INSTANCES)
            .build();
        MemoryLimiter {
            limits,
            exceeded: false,
            current: 0,
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if allowed {
            self.current += desired.saturating_sub(current) as u64;
        } else {
            self.exceeded = true;
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

/// What the turn has reported so far, kept in the store while it runs.
pub(crate) struct TurnScope {
    pub(crate) events: tokio::sync::mpsc::UnboundedSender<wharf_core::request::TurnEvent>,
    pub(crate) reported: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("hello", 10), "hello");
    }

    #[test]
    fn limiter_records_refusals() {
        let mut limiter = MemoryLimiter::new(1024);
        assert!(limiter.memory_growing(0, 1024, None).unwrap());
        assert!(!limiter.exceeded);
        assert_eq!(limiter.current, 1024);
        assert!(!limiter.memory_growing(1024, 2048, None).unwrap());
        assert!(limiter.exceeded);
    }

    #[test]
    fn a_verdict_is_remembered_only_when_asked_rightly() {
        use super::super::bindings::FilteringHost;
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut state = GuestState::new(Arc::new(GuestIdentity::default()), 1 << 20);
        // Outside `on-request-headers`.
        let err = state
            .remember_verdict(names(&["authorization"]), 10)
            .unwrap_err();
        assert!(err.contains("only from on-request-headers"), "{err}");
        state.remember = Remembering::Open;
        for (bad, why) in [
            (names(&["Authorization"]), "lower-case header name"),
            (names(&["x y"]), "lower-case header name"),
            (names(&[]), "keyed by 1 to 8"),
            (names(&["a"; 9]), "keyed by 1 to 8"),
        ] {
            let err = state.remember_verdict(bad, 10).unwrap_err();
            assert!(err.contains(why), "{err}");
            assert!(matches!(state.remember, Remembering::Open));
        }
        state
            .remember_verdict(names(&["authorization", "x-api-key"]), 10)
            .unwrap();
        match &state.remember {
            Remembering::Asked(ask) => {
                assert_eq!(ask.until, 10);
                assert_eq!(
                    ask.headers,
                    [http::header::AUTHORIZATION, "x-api-key".parse().unwrap()]
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
