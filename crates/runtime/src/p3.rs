//! WASIp3 `wasi:http` components (`wasi:http/handler@0.3.x`): their own
//! engine, which has the component model's concurrency support that every
//! other call leaves off for speed, their linker, and one request to them.
//!
//! The engine is made when the first such component is loaded, so a host
//! without one pays nothing for it: no reservation, no second epoch ticker.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use wasmtime::Engine;
use wasmtime::component::Linker;
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p3::bindings::{Service, ServicePre};

use super::cache::ArtifactCache;
use super::call::{CallError, Exports, Live, by_deadline, classify};
use super::engine::{self, EngineSettings};
use super::http::{OverLimit, gather, incoming, without_host_owned};
use super::state::GuestState;
use wharf_core::request::{Request, Response, Sink};

/// A live WASIp3 component's one export, shared with the call's event loop.
pub(crate) type P3Service = Arc<Service>;

/// The interface a WASIp3 HTTP component exports, at any 0.3 version.
const HANDLER: &str = "wasi:http/handler@0.3";

/// Whether `bytes` are a component that exports `wasi:http/handler@0.3.x`,
/// read without compiling it.
pub fn exports_p3_handler(bytes: &[u8]) -> bool {
    top_level_items(bytes).is_some_and(|(_, exports)| exports.iter().any(|e| is_handler(e)))
}

/// Whether an export's name is `wasi:http/handler@0.3.x`.
pub fn is_handler(name: &str) -> bool {
    name.strip_prefix(HANDLER)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('-'))
}

/// The names a component imports and exports at its top level, read
/// without compiling it; none when it cannot be parsed.
pub fn top_level_items(bytes: &[u8]) -> Option<(Vec<String>, Vec<String>)> {
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.ok()? {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(reader) if depth == 1 => {
                imports.extend(
                    reader
                        .into_iter()
                        .flatten()
                        .map(|i| i.name.name.to_string()),
                );
            }
            wasmparser::Payload::ComponentExportSection(reader) if depth == 1 => {
                exports.extend(
                    reader
                        .into_iter()
                        .flatten()
                        .map(|e| e.name.name.to_string()),
                );
            }
            _ => {}
        }
    }
    Some((imports, exports))
}

/// The engine, linker and compile cache for WASIp3 components.
pub(crate) struct P3Runtime {
    pub(crate) engine: Engine,
    linker: Linker<GuestState>,
    pub(crate) cache: Option<ArtifactCache>,
}

impl P3Runtime {
    /// An engine like the main one (a pool of its own when the main one
    /// has one) but with concurrency support and the component model's
    /// async types, with its own epoch ticker; its linker
    /// has WASI 0.2 (what the standard library's adapter imports) and 0.3
    /// and `wasi:http@0.3`, all under the same sandbox and outbound hooks.
    pub(crate) fn build(
        settings: &EngineSettings,
        cache_dir: Option<&std::path::Path>,
    ) -> wasmtime::Result<P3Runtime> {
        let settings = EngineSettings {
            concurrency: true,
            ..*settings
        };
        let (engine, allocation) = engine::build_with(&settings, |config| {
            config.wasm_component_model_async(true);
        })?;
        tracing::info!(
            allocation = allocation.as_str(),
            "made the WASIp3 engine (component-model concurrency on)"
        );
        engine::start_ticker(&engine);
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi::p3::add_to_linker(&mut linker)?;
        wasmtime_wasi_http::p3::add_to_linker(&mut linker)?;
        let cache = match cache_dir {
            Some(dir) => Some(ArtifactCache::open(dir, &engine)?),
            None => None,
        };
        Ok(P3Runtime {
            engine,
            linker,
            cache,
        })
    }

    /// Type-checks a component compiled on this engine against the linker
    /// and the `wasi:http/service` world.
    pub(crate) fn prepare(
        &self,
        component: &wasmtime::component::Component,
    ) -> wasmtime::Result<ServicePre<GuestState>> {
        ServicePre::new(self.linker.instantiate_pre(component)?)
    }
}

/// What `handle` and the body gave, or the trap that ended them.
type Outcome = wasmtime::Result<Result<Response, CallError>>;

impl Live<Exports> {
    /// Calls `wasi:http/handler.handle` with `req` inside the store's
    /// event loop, which also runs the tasks the guest spawns (writing its
    /// body, say), and takes the body as `answer` says. Past the deadline
    /// the call is dropped and the instance abandoned.
    pub(super) async fn http_p3_async(
        &mut self,
        req: &Request,
        sink: Option<&Sink>,
    ) -> Result<Response, CallError> {
        let Exports::HttpP3(service) = &self.exports else {
            return Err(CallError::Internal(
                "not a WASIp3 wasi:http component".into(),
            ));
        };
        let service = Arc::clone(service);
        self.begin(req, true);
        let deadline = self.store.data().deadline_at;
        let over = OverLimit::default();
        let request = incoming(req, &over);
        let (request, _errors) = {
            let view = self.store.data_mut().http();
            wasmtime_wasi_http::p3::Request::from_http(view.hooks, request)
        };
        let limit = self.limits.response_body;
        let run = self.store.run_concurrent(async |store| -> Outcome {
            let res = match service.handle(store, request).await? {
                Ok(res) => res,
                Err(code) => {
                    let why = format!("the component answered with an error: {code:?}");
                    return Ok(Err(CallError::Internal(why)));
                }
            };
            let res = match store.with(|s| res.into_http(s, async { Ok(()) })) {
                Ok(res) => res,
                Err(err) => return Ok(Err(CallError::InvalidResponse(format!("{err:#}")))),
            };
            Ok(answer(res, sink, limit).await)
        });
        let ran = by_deadline(deadline, run)
            .await
            .ok_or(CallError::Deadline)?;
        self.in_call = false;
        let result = match ran.and_then(|outcome| outcome) {
            Ok(answer) => answer,
            Err(err) => Err(classify(&self.store, err)),
        };
        match (result, over.get()) {
            (Err(_), Some(limit)) => Err(CallError::BodyTooLarge(*limit)),
            (result, _) => result,
        }
    }
}

/// The response as Wharf's: host-owned headers dropped, the body gathered
/// while the guest writes it without waiting (for a few rounds of the
/// store's event loop, which runs the task writing it), then, when there
/// is a sink, sent to it with the rest as it comes. So a quick answer
/// leaves whole, with its length, and a slow one starts at once; a
/// streamed one keeps the length the guest declared (the transport frames
/// by it). Gathered, it stays within `limit`.
async fn answer(
    res: http::Response<
        http_body_util::combinators::UnsyncBoxBody<Bytes, wasmtime_wasi_http::Error>,
    >,
    sink: Option<&Sink>,
    limit: usize,
) -> Result<Response, CallError> {
    let (parts, mut body) = res.into_parts();
    let (headers, mut declared) = without_host_owned(parts.headers);
    let mut gathered = BytesMut::new();
    let mut streaming = None;
    let mut patience = Rounds(SETTLE_ROUNDS);
    loop {
        let frame = tokio::select! {
            biased;
            frame = body.frame() => frame,
            () = &mut patience, if streaming.is_none() && sink.is_some() => {
                let sink = sink.expect("checked by the branch");
                let mut head = headers.clone();
                if let Some(length) = declared.take() {
                    head.insert(http::header::CONTENT_LENGTH, length);
                }
                sink.start(parts.status, head)
                    .and_then(|()| sink.write(gathered.split().freeze()))
                    .map_err(|e| CallError::InvalidResponse(e.to_string()))?;
                streaming = Some(sink);
                continue;
            }
        };
        let Some(frame) = frame else {
            break;
        };
        let frame = frame
            .map_err(|e| CallError::InvalidResponse(format!("the response body failed: {e}")))?;
        // Trailers are not passed on.
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        match streaming {
            Some(sink) => sink.write(chunk).map_err(|e| e.to_string()),
            None => gather(&mut gathered, chunk, limit),
        }
        .map_err(CallError::InvalidResponse)?;
    }
    Ok(Response::new(parts.status, headers, gathered.freeze()))
}

/// Rounds of the event loop a body is gathered for before it streams.
const SETTLE_ROUNDS: u8 = 8;

/// Ready once polled `.0` more times, waking itself each time: lets the
/// store's event loop run the guest's tasks a few rounds first.
struct Rounds(u8);

impl Future for Rounds {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 == 0 {
            return std::task::Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::is_handler;

    #[test]
    fn the_handler_is_recognised_at_any_0_3_version_and_no_other() {
        for name in [
            "wasi:http/handler@0.3.0",
            "wasi:http/handler@0.3.2",
            "wasi:http/handler@0.3.0-rc-2025-09-16",
        ] {
            assert!(is_handler(name), "{name}");
        }
        for name in [
            "wasi:http/handler@0.30.0",
            "wasi:http/handler@0.2.0",
            "wasi:http/incoming-handler@0.2.6",
            "wasi:http/handlers@0.3.0",
            "wasi:cli/run@0.3.2",
        ] {
            assert!(!is_handler(name), "{name}");
        }
    }
}
