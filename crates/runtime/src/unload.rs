//! An agent's loaded code, which an idle agent gives back: its component
//! and instance-pres dropped on [`Code::unload`], and loaded again from
//! the compile cache (or, when the cache lost it, from its file, checked
//! against the digest it was loaded with) by its next instance.

use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwapOption;
use sha2::Digest;
use wasmtime::Engine;
use wasmtime::component::Component;

use super::bindings::{AgentPre, ProxyPre};
use super::cache::ArtifactCache;
use super::call::{CallError, Kind};
use super::{Linkers, memory_images};

/// The file an agent was loaded from: where its code comes back from
/// once unloaded.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The component file.
    pub path: PathBuf,
    /// The SHA-256 of the bytes that were loaded (and checked: digest
    /// pin, signature); the cache's key, and what the file must still
    /// hash to if it is read again.
    pub sha256: [u8; 32],
    /// The most bytes read from it.
    pub max_bytes: u64,
}

/// What loading an unloaded agent again needs.
pub(crate) struct Source {
    pub(crate) cache: Arc<ArtifactCache>,
    pub(crate) linkers: Arc<Linkers>,
    pub(crate) file: SourceFile,
}

impl Source {
    /// The component again: from the cache, else compiled from the file
    /// if it still holds the bytes that were loaded.
    fn component(&self, engine: &Engine) -> Result<Component, String> {
        if let Some(component) = self.cache.cached(engine, &self.file.sha256) {
            return Ok(component);
        }
        let mut bytes = Vec::new();
        std::fs::File::open(&self.file.path)
            .and_then(|f| f.take(self.file.max_bytes).read_to_end(&mut bytes))
            .map_err(|e| format!("reading `{}`: {e}", self.file.path.display()))?;
        if <[u8; 32]>::from(sha2::Sha256::digest(&bytes)) != self.file.sha256 {
            return Err(format!(
                "`{}` changed since it was loaded (a reload will load the new file)",
                self.file.path.display()
            ));
        }
        let (component, _) = self
            .cache
            .compile(engine, &bytes, &self.file.sha256)
            .map_err(|e| format!("{e:#}"))?;
        Ok(component)
    }

    /// The agent's [`Kind`] again: a `wasi:http` one when `http`, else a
    /// Wharf agent.
    fn load(&self, engine: &Engine, http: bool) -> Result<Kind, String> {
        let component = self.component(engine)?;
        memory_images(&component);
        let asynchronous = self.linkers.asynchronous.instantiate_pre(&component);
        let asynchronous = asynchronous.map_err(|e| format!("{e:#}"))?;
        if http {
            return ProxyPre::new(asynchronous)
                .map(Kind::Http)
                .map_err(|e| format!("{e:#}"));
        }
        let sync = self.linkers.sync.instantiate_pre(&component);
        let sync = sync.and_then(AgentPre::new).map_err(|e| format!("{e:#}"))?;
        let asynchronous = AgentPre::new(asynchronous).map_err(|e| format!("{e:#}"))?;
        Ok(Kind::agent(engine, sync, asynchronous))
    }
}

/// The code an unload took away: freed (unmapped, its pool slots'
/// images dropped, wasmtime's metadata of it freed) when this is dropped,
/// which is work for a blocking thread rather than an async worker.
pub struct UnloadedCode(#[allow(dead_code)] Arc<Kind>);

impl UnloadedCode {
    pub(crate) fn new(kind: Arc<Kind>) -> UnloadedCode {
        UnloadedCode(kind)
    }
}

/// An agent's code: loaded, or unloaded with where it comes back from.
pub(crate) struct Code {
    pub(crate) engine: Engine,
    kind: ArcSwapOption<Kind>,
    /// None: never unloaded (no compile cache, or a WASIp3 component).
    source: Option<Source>,
    /// Whether it is a `wasi:http` component (what [`Source::load`] makes).
    http: bool,
    /// One load at a time: requests that find it unloaded together wait
    /// for one load instead of each making their own.
    loading: Mutex<()>,
    /// Counts loads after an unload, once its route exists.
    pub(crate) reloads: OnceLock<metrics::Counter>,
}

impl Code {
    pub(crate) fn new(engine: Engine, kind: Kind, source: Option<Source>) -> Code {
        let http = matches!(kind, Kind::Http(_));
        let source = source.filter(|_| !matches!(kind, Kind::HttpP3(_)));
        Code {
            engine,
            kind: ArcSwapOption::from_pointee(kind),
            source,
            http,
            loading: Mutex::new(()),
            reloads: OnceLock::new(),
        }
    }

    /// The loaded code, loading it again on this thread if it was unloaded.
    pub(crate) fn get(&self) -> Result<Arc<Kind>, CallError> {
        if let Some(kind) = self.kind.load_full() {
            return Ok(kind);
        }
        let _one = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kind) = self.kind.load_full() {
            return Ok(kind);
        }
        let source = self.source.as_ref().ok_or_else(|| {
            CallError::Instantiate("its code was unloaded and has no source".into())
        })?;
        let began = std::time::Instant::now();
        let kind = source
            .load(&self.engine, self.http)
            .map_err(|why| CallError::Instantiate(format!("loading it again: {why}")))?;
        let kind = Arc::new(kind);
        self.kind.store(Some(kind.clone()));
        if let Some(reloads) = self.reloads.get() {
            reloads.increment(1);
        }
        tracing::debug!(
            path = %source.file.path.display(),
            load_us = began.elapsed().as_micros() as u64,
            "an unloaded agent loaded again"
        );
        Ok(kind)
    }

    /// [`Code::get`] for the async request path: a load runs on the
    /// blocking pool, not on the worker.
    pub(crate) async fn get_async(self: &Arc<Self>) -> Result<Arc<Kind>, CallError> {
        if let Some(kind) = self.kind.load_full() {
            return Ok(kind);
        }
        let code = self.clone();
        tokio::task::spawn_blocking(move || code.get())
            .await
            .map_err(|e| CallError::Instantiate(format!("loading it again: {e}")))?
    }

    /// Takes the loaded code away if it can be loaded again and is not
    /// being loaded now; instances alive now keep what they use until they
    /// end. The code is freed when what this answers is dropped.
    pub(crate) fn unload(&self) -> Option<Arc<Kind>> {
        self.source.as_ref()?;
        let _one = self.loading.try_lock().ok()?;
        self.kind.swap(None)
    }

    /// Whether the code is loaded now.
    pub(crate) fn is_loaded(&self) -> bool {
        self.kind.load().is_some()
    }

    /// Whether [`Code::unload`] can unload it.
    pub(crate) fn unloadable(&self) -> bool {
        self.source.is_some()
    }
}
