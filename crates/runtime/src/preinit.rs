//! Pre-initializing filters at load time: a component of the
//! `filter-preinit` world has its `preinit` export run once, with the
//! filter's own identity (config, files), and its memory and globals
//! snapshotted into a new component (`wasmtime-wizer`). Every instance of
//! the filter then starts from that snapshot: a WAF's compiled rule set is
//! in memory before the first request, copy-on-write, instead of being
//! parsed by each fresh instance.
//!
//! The compiled snapshot is cached under a digest of everything `preinit`
//! can see (the component, the filter's config, every file it is granted),
//! so a start with unchanged inputs skips `preinit` altogether, and the
//! cache holds one snapshot per set of inputs however often Wharf starts.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::Store;
use wasmtime::component::{Component, Instance, Lift, WasmList};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

use super::call::{classify, new_store, watched};
use super::state::{GuestIdentity, GuestState};
use super::{CacheOutcome, Runtime};
use wharf_config::Limits;

/// The export a pre-initializable filter provides.
const PREINIT: &str = "preinit";

/// The shortest time `preinit` is given, whatever the filter's per-request
/// deadline: it may compile a whole rule set.
const MIN_PREINIT_DEADLINE: Duration = Duration::from_secs(30);

/// Whether `component` exports `preinit`.
pub fn wants_preinit(component: &Component) -> bool {
    component.get_export_index(None, PREINIT).is_some()
}

/// Bumped when what a snapshot holds changes for the same inputs.
const SNAPSHOT_FORMAT: &[u8] = b"wharf preinit 1\0";

impl Runtime {
    /// The pre-initialized form of the filter in `bytes` (SHA-256 `sha256`),
    /// compiled: from the cache when its inputs are unchanged, else by
    /// running `preinit` and snapshotting. Fails when the component cannot
    /// be instrumented, `preinit` traps or runs out of time or memory, or
    /// its granted files cannot be read.
    pub fn preinitialize(
        &self,
        bytes: &[u8],
        sha256: &[u8; 32],
        identity: GuestIdentity,
        limits: &Limits,
    ) -> Result<(Component, CacheOutcome), String> {
        let build = || {
            let snapshot = self
                .snapshot(bytes, identity.clone(), limits)
                .map_err(|e| wasmtime::format_err!("{e}"))?;
            Component::new(self.engine(), &snapshot)
                .map_err(|e| e.context("its pre-initialized snapshot failed to compile"))
        };
        let built = match &self.cache {
            Some(cache) => {
                let key = inputs_digest(sha256, &identity)?;
                cache.get_or_build(self.engine(), &key, build)
            }
            None => build().map(|c| (c, CacheOutcome::Compiled)),
        };
        let built = built.map_err(|e| format!("{e:#}"))?;
        super::memory_images(&built.0);
        Ok(built)
    }

    /// Runs `preinit` of the component in `bytes` and answers the snapshot:
    /// a component to load in its place.
    fn snapshot(
        &self,
        bytes: &[u8],
        identity: GuestIdentity,
        limits: &Limits,
    ) -> Result<Vec<u8>, String> {
        let mut wizer = Wizer::new();
        wizer.init_func(PREINIT).keep_init_func(true);
        let (cx, instrumented) = wizer
            .instrument_component(bytes)
            .map_err(|e| format!("cannot be instrumented for pre-initialization: {e:#}"))?;
        // Not cached: it is only needed when the snapshot is not.
        let component = Component::new(self.engine(), &instrumented)
            .map_err(|e| format!("its instrumented form failed to compile: {e:#}"))?;
        let mut limits = *limits;
        limits.deadline = limits.deadline.max(MIN_PREINIT_DEADLINE);
        let mut store = new_store(self.engine(), &Arc::new(identity), &limits, false);
        let instance = self
            .linkers
            .sync
            .instantiate(&mut store, &component)
            .map_err(|e| format!("cannot be instantiated for pre-initialization: {e:#}"))?;
        let init = instance
            .get_typed_func::<(), ()>(&mut store, PREINIT)
            .map_err(|e| format!("its `preinit` export is not `func()`: {e:#}"))?;
        // On a watched thread: a `preinit` blocked in a host call (a sleep)
        // is given up at its deadline like one spinning in wasm code.
        let called = watched(limits.deadline, move || {
            Ok(match init.call(&mut store, ()) {
                Ok(()) => Ok(store),
                Err(e) => Err(classify(&store, e)),
            })
        });
        let mut store = called
            .and_then(|r| r)
            .map_err(|e| format!("preinit() failed: {e}"))?;
        let mut state = Snapshotting {
            store: &mut store,
            instance,
        };
        ready(wizer.snapshot_component(&cx, &mut state))
            .map_err(|e| format!("cannot be snapshotted: {e:#}"))
    }
}

/// What a snapshot depends on: the component, the config values and
/// every file below the granted directory (names and contents).
fn inputs_digest(sha256: &[u8; 32], identity: &GuestIdentity) -> Result<[u8; 32], String> {
    let mut h = Sha256::new();
    h.update(SNAPSHOT_FORMAT);
    h.update(sha256);
    for (key, value) in identity.values.iter() {
        for part in [key, value] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
    }
    if let Some(dir) = &identity.files {
        digest_dir(&mut h, dir, Path::new(""))
            .map_err(|e| format!("cannot read its files `{}`: {e}", dir.display()))?;
    }
    Ok(h.finalize().into())
}

/// Feeds the files below `root/rel` into `h`, in name order.
fn digest_dir(h: &mut Sha256, root: &Path, rel: &Path) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(root.join(rel))?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let rel = rel.join(entry.file_name());
        let path = root.join(&rel);
        let name = rel.to_string_lossy();
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        if path.is_dir() {
            h.update(b"d");
            digest_dir(h, root, &rel)?;
        } else {
            let data = std::fs::read(&path)?;
            h.update(b"f");
            h.update((data.len() as u64).to_le_bytes());
            h.update(&data);
        }
    }
    Ok(())
}

/// Answers what wizer asks of the initialized instance: the values of its
/// memories and globals, through the accessors instrumentation exported.
struct Snapshotting<'a> {
    store: &'a mut Store<GuestState>,
    instance: Instance,
}

impl Snapshotting<'_> {
    fn call<R: Lift + 'static, O>(
        &mut self,
        instance: &str,
        func: &str,
        then: impl FnOnce(&Store<GuestState>, R) -> O,
    ) -> O {
        let store = &mut *self.store;
        let (_, inst) = self
            .instance
            .get_export(&mut *store, None, instance)
            .expect("instrumentation exports the accessor instance");
        let (_, index) = self
            .instance
            .get_export(&mut *store, Some(&inst), func)
            .expect("instrumentation exports each accessor");
        let f = self
            .instance
            .get_typed_func::<(), (R,)>(&mut *store, index)
            .expect("accessors have the types instrumentation gave them");
        let (value,) = f.call(&mut *store, ()).expect("accessors do not trap");
        then(store, value)
    }
}

impl ComponentInstanceState for Snapshotting<'_> {
    fn call_func_ret_list_u8(
        &mut self,
        instance: &str,
        func: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) -> impl Future<Output = ()> + Send {
        self.call(instance, func, |store, list: WasmList<u8>| {
            contents(list.as_le_slice(store))
        });
        std::future::ready(())
    }

    fn call_func_ret_s32(
        &mut self,
        instance: &str,
        func: &str,
    ) -> impl Future<Output = i32> + Send {
        std::future::ready(self.call(instance, func, |_, v: i32| v))
    }

    fn call_func_ret_s64(
        &mut self,
        instance: &str,
        func: &str,
    ) -> impl Future<Output = i64> + Send {
        std::future::ready(self.call(instance, func, |_, v: i64| v))
    }

    fn call_func_ret_f32(
        &mut self,
        instance: &str,
        func: &str,
    ) -> impl Future<Output = u32> + Send {
        std::future::ready(self.call(instance, func, |_, v: f32| v.to_bits()))
    }

    fn call_func_ret_f64(
        &mut self,
        instance: &str,
        func: &str,
    ) -> impl Future<Output = u64> + Send {
        std::future::ready(self.call(instance, func, |_, v: f64| v.to_bits()))
    }
}

/// The output of a future that never waits: every call above answers at
/// once, so wizer's snapshot completes on its first poll.
fn ready<T>(future: impl Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("snapshot accessors answer synchronously"),
    }
}
