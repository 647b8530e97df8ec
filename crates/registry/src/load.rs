//! Loading a directory of components: regular files only, each checked
//! (name, size, kind, digest pin, signature, compile, imports, world,
//! `describe()`), refused with one clear reason without stopping the
//! others. A reload reuses what has not changed and keeps the previous
//! version of a component whose new file is refused.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::entry::{Loaded, load_one};
use super::{AgentEntry, Snapshot, Stamp};
use wharf_config::valid_agent_name;
use wharf_config::{Config, format_size};
use wharf_runtime::Runtime;

/// A file the loader did not load, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The agent, filter or pipeline it would have served, when known.
    pub name: Option<String>,
    /// The file (for a pipeline, its place in the configuration).
    pub path: PathBuf,
    /// Why it was not loaded.
    pub reason: String,
    /// The file's metadata when it was refused (none: not a candidate).
    pub stamp: Option<Stamp>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused `{}`: {}", self.path.display(), self.reason)
    }
}

/// Scans `dir` and loads every component in it. Refusals are logged (one
/// line each) and kept in the snapshot; an unreadable directory is an error.
pub fn load_dir(runtime: &Runtime, config: &Config, dir: &Path) -> std::io::Result<Snapshot> {
    reload_dir(runtime, config, dir, &Snapshot::default())
}

/// The first half of a start that loads agents while serving: only the
/// filters that a chain names (a request must never reach an agent
/// around one). Every other component, and every `pipeline` block, is
/// left in [`Snapshot::pending`] for [`load_pending`].
pub fn load_filters_first(
    runtime: &Runtime,
    config: &Config,
    dir: &Path,
) -> std::io::Result<Snapshot> {
    let mut named: BTreeSet<String> = config.defaults.filters.iter().cloned().collect();
    named.extend(config.filters.keys().cloned());
    for policy in config.agents.values() {
        named.extend(policy.filters.iter().cloned());
    }
    let pass = Pass {
        only: Some(&named),
        ..Pass::default()
    };
    scan_dir(runtime, config, dir, &Snapshot::default(), pass)
}

/// The second half: everything [`load_filters_first`] left pending, on
/// every core, the names in `wanted` first (requests are waiting for
/// them). `report` hears of each component as it is loaded, with the
/// agent when it is one, so that it can be served before the others are.
pub fn load_pending(
    runtime: &Runtime,
    config: &Config,
    dir: &Path,
    first: &Snapshot,
    report: &(dyn Fn(Progress<'_>) + Sync),
    wanted: &Wanted,
) -> std::io::Result<Snapshot> {
    let pass = Pass {
        report: Some(report),
        wanted: Some(wanted),
        ..Pass::default()
    };
    scan_dir(runtime, config, dir, first, pass)
}

/// Names that requests are waiting for while a directory loads: the
/// loader takes them before the rest.
#[derive(Debug, Default)]
pub struct Wanted {
    /// In the order asked, and the same names for looking up.
    names: Mutex<(VecDeque<String>, HashSet<String>)>,
}

impl Wanted {
    /// Asks for `name` to be loaded next (once: a name already asked
    /// for is not added again, so waiting requests cannot grow the list
    /// past the names pending).
    pub fn want(&self, name: &str) {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        let (order, set) = &mut *names;
        if set.insert(name.to_string()) {
            order.push_back(name.to_string());
        }
    }

    /// Forgets every name asked for (the load they waited for is over).
    pub fn clear(&self) {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        *names = Default::default();
    }

    /// The name asked for longest ago, taken off the list.
    fn take(&self) -> Option<String> {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        let (order, set) = &mut *names;
        let name = order.pop_front()?;
        set.remove(&name);
        Some(name)
    }
}

/// What one scan loads and whom it tells.
#[derive(Default, Clone, Copy)]
struct Pass<'a> {
    /// Only these names; the rest go to [`Snapshot::pending`].
    only: Option<&'a BTreeSet<String>>,
    /// Told of each component looked at.
    report: Option<&'a (dyn Fn(Progress<'_>) + Sync)>,
    /// Names to load before the others.
    wanted: Option<&'a Wanted>,
}

/// One component loaded (or refused) during a scan, for progress reports.
#[derive(Clone, Copy)]
pub struct Progress<'a> {
    /// Its name.
    pub name: &'a str,
    /// Components looked at so far, this one included.
    pub done: usize,
    /// Components in the directory.
    pub total: usize,
    /// How long it took (compiling, pre-initializing, `describe()`).
    pub took: std::time::Duration,
    /// The agent it loaded as, when it is one and was loaded now.
    pub agent: Option<&'a Arc<AgentEntry>>,
}

/// [`load_dir`], calling `report` after each component.
pub fn load_dir_reporting(
    runtime: &Runtime,
    config: &Config,
    dir: &Path,
    report: &(dyn Fn(Progress<'_>) + Sync),
) -> std::io::Result<Snapshot> {
    let pass = Pass {
        report: Some(report),
        ..Pass::default()
    };
    scan_dir(runtime, config, dir, &Snapshot::default(), pass)
}

/// Scans `dir` again after `previous` was loaded from it:
/// - a file whose metadata and configuration are unchanged keeps its
///   loaded entry (the same `Arc`, so its route, pool and pins stay), or
///   its refusal (logged once, not loaded again);
/// - a changed or new file is loaded again; when that fails, or the file
///   changes while it loads, the previous version (if any) keeps serving;
/// - an unchanged file refused now (its configuration changed: a new pin,
///   new trusted keys) is not served;
/// - a file that is gone is gone.
pub fn reload_dir(
    runtime: &Runtime,
    config: &Config,
    dir: &Path,
    previous: &Snapshot,
) -> std::io::Result<Snapshot> {
    scan_dir(runtime, config, dir, previous, Pass::default())
}

fn scan_dir(
    runtime: &Runtime,
    config: &Config,
    dir: &Path,
    previous: &Snapshot,
    pass: Pass<'_>,
) -> std::io::Result<Snapshot> {
    let root = dir.canonicalize().map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("agents directory `{}`: {e}", dir.display()),
        )
    })?;
    let mut paths: Vec<PathBuf> = fs::read_dir(&root)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    paths.sort();

    let mut scan = Scan {
        runtime,
        config,
        root,
        previous,
        same_config: previous.config.as_deref() == Some(config),
        same_trust: previous
            .config
            .as_deref()
            .is_none_or(|c| c.trust == config.trust),
        snapshot: Snapshot {
            config: Some(Arc::new(config.clone())),
            ..Snapshot::default()
        },
    };
    let mut by_name: BTreeMap<String, Vec<(PathBuf, Stamp)>> = BTreeMap::new();
    for path in &paths {
        match candidate(&scan.root, path, config.server.component_size) {
            Ok(Some((name, stamp))) => by_name.entry(name).or_default().push((path.clone(), stamp)),
            Ok(None) => {}
            Err(reason) => {
                scan.refuse(None, path, None, reason);
            }
        }
    }
    if let Some(only) = pass.only {
        let (now, later) = std::mem::take(&mut by_name)
            .into_iter()
            .partition(|(name, _)| only.contains(name));
        by_name = now;
        let later: BTreeMap<String, _> = later;
        scan.snapshot.pending = later.into_keys().collect();
        scan.snapshot
            .pending
            .extend(config.pipelines.keys().cloned());
    }
    let total = by_name.len();
    let done = AtomicUsize::new(0);
    let tell = |name: &str, started: Instant, agent: Option<&Arc<AgentEntry>>| {
        let done = done.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(report) = pass.report {
            report(Progress {
                name,
                done,
                total,
                took: started.elapsed(),
                agent,
            });
        }
    };
    let mut to_load = Vec::new();
    for (name, files) in by_name {
        let started = Instant::now();
        if files.len() > 1 {
            let list: Vec<String> = files
                .iter()
                .map(|(p, _)| format!("`{}`", p.display()))
                .collect();
            let mut new = false;
            for (path, stamp) in &files {
                let reason = format!("agent name `{name}` is used by {}", list.join(" and "));
                new |= scan.refuse(Some(&name), path, Some(*stamp), reason);
            }
            scan.keep_previous(&name, new);
            tell(&name, started, None);
            continue;
        }
        let (path, stamp) = files.into_iter().next().expect("one file");
        if scan.reuse(&name, &path, stamp) {
            tell(&name, started, None);
        } else {
            to_load.push((name, path, stamp));
        }
    }
    // Loading (compile or cache read, pre-initialization, the first call)
    // is independent per component: it runs on every core, and what it
    // made is settled in name order, so the snapshot and its log do not
    // depend on which finished first.
    let first = pass.wanted.map(|wanted| {
        let at: BTreeMap<&str, usize> = to_load
            .iter()
            .enumerate()
            .map(|(i, (name, _, _))| (name.as_str(), i))
            .collect();
        move || loop {
            let name = wanted.take()?;
            if let Some(i) = at.get(name.as_str()) {
                return Some(*i);
            }
        }
    });
    let loaded = load_parallel(&to_load, cores(), first, |(name, path, stamp)| {
        let started = Instant::now();
        let result = scan.load_file(name, path, *stamp);
        let agent = match &result {
            Ok(Loaded::Agent(entry)) => Some(entry),
            _ => None,
        };
        tell(name, started, agent);
        result
    });
    for ((name, path, stamp), result) in to_load.into_iter().zip(loaded) {
        scan.settle(name, &path, stamp, result);
    }
    scan.check_chains();
    if pass.only.is_none() {
        scan.check_compositions();
    }
    Ok(scan.snapshot)
}

/// One scan of the agents directory against the previous snapshot.
struct Scan<'a> {
    runtime: &'a Runtime,
    config: &'a Config,
    root: PathBuf,
    previous: &'a Snapshot,
    /// The previous snapshot was loaded with this same configuration.
    same_config: bool,
    /// ... or at least with the same keys and `require-signature`: when
    /// these change, every component is verified again, and one that no
    /// longer passes stops serving.
    same_trust: bool,
    snapshot: Snapshot,
}

impl Scan<'_> {
    /// Takes what the previous snapshot made of `name` when nothing about
    /// it changed: the same file with the same metadata, the same
    /// configuration.
    fn reuse(&mut self, name: &str, path: &Path, stamp: Stamp) -> bool {
        if !self.same_trust {
            return false;
        }
        let same = |origin: &super::Origin| origin.path == path && origin.stamp == stamp;
        if let Some(entry) = self.previous.agents.get(name)
            && same(&entry.origin)
            && entry.policy == self.config.policy_for(name)
        {
            self.snapshot.agents.insert(name.to_string(), entry.clone());
            return true;
        }
        if let Some(entry) = self.previous.filters.get(name)
            && same(&entry.origin)
            && entry.policy == self.config.filter_policy(name)
        {
            self.snapshot
                .filters
                .insert(name.to_string(), entry.clone());
            return true;
        }
        let refused = self
            .previous
            .refused
            .iter()
            .find(|r| self.same_config && r.path == path && r.stamp == Some(stamp));
        if let Some(refusal) = refused {
            self.snapshot.refused.push(refusal.clone());
            // A version kept serving when this file was refused stays.
            self.keep_previous(name, false);
            return true;
        }
        false
    }

    /// Loads `name` from `path`, checking that the file did not change
    /// meanwhile (any thread).
    fn load_file(&self, name: &str, path: &Path, stamp: Stamp) -> Result<Loaded, String> {
        let max = self.config.server.component_size;
        load_one(self.runtime, self.config, name, path, stamp).and_then(|loaded| {
            match candidate(&self.root, path, max) {
                Ok(Some((_, now))) if now == stamp => Ok(loaded),
                _ => Err("it changed while it was being loaded; it is loaded again once it stops changing".into()),
            }
        })
    }

    /// Takes what loading `name` made; on failure, keeps its previous
    /// version when the file changed since that version was loaded.
    fn settle(&mut self, name: String, path: &Path, stamp: Stamp, result: Result<Loaded, String>) {
        match result {
            Ok(Loaded::Agent(entry)) => {
                self.snapshot.agents.insert(name, entry);
            }
            Ok(Loaded::Filter(entry)) => {
                self.snapshot.filters.insert(name, entry);
            }
            Err(reason) => {
                let new = self.refuse(Some(&name), path, Some(stamp), reason);
                let changed = self
                    .previous
                    .origin(&name)
                    .is_some_and(|o| o.path != path || o.stamp != stamp);
                if changed {
                    self.keep_previous(&name, new);
                }
            }
        }
    }

    /// Keeps serving the previous version of `name`, whose new file was
    /// refused (saying so in the log when `log`).
    fn keep_previous(&mut self, name: &str, log: bool) {
        if !self.same_trust {
            // Verified under other keys: it may not pass these.
            return;
        }
        let previous = self.previous;
        let kept = match (previous.agents.get(name), previous.filters.get(name)) {
            (Some(agent), _) => {
                self.snapshot.agents.insert(name.to_string(), agent.clone());
                &agent.origin
            }
            (None, Some(filter)) => {
                self.snapshot
                    .filters
                    .insert(name.to_string(), filter.clone());
                &filter.origin
            }
            (None, None) => return,
        };
        // Kept only while it still matches what the configuration pins.
        if let Err(why) = super::entry::check_pin(self.config, name, &kept.digest) {
            self.snapshot.agents.remove(name);
            self.snapshot.filters.remove(name);
            tracing::warn!(name, "the previous version stops serving: {why}");
            return;
        }
        if log {
            tracing::warn!(name, digest = %kept.digest, "the previous version keeps serving");
        }
    }

    /// Refuses agents whose filter chain names a filter that did not load:
    /// a request must never reach an agent around a filter it was meant to pass.
    fn check_chains(&mut self) {
        let snapshot = &self.snapshot;
        let missing: Vec<(String, String)> = snapshot
            .agents
            .iter()
            .filter_map(|(name, entry)| {
                let absent: Vec<&str> = entry
                    .policy
                    .filters
                    .iter()
                    .filter(|f| !snapshot.filters.contains_key(*f))
                    .map(String::as_str)
                    .collect();
                (!absent.is_empty()).then(|| (name.clone(), absent.join("`, `")))
            })
            .collect();
        for (name, absent) in missing {
            let entry = self.snapshot.agents.remove(&name).expect("listed above");
            let reason = format!(
                "agent `{name}` is not served: its filter chain names `{absent}`, which did not load \
             (put the filter components in the agents directory, or give the agent `filters #false`)"
            );
            // No stamp: the refusal is about the chain, not the file, and is
            // looked at again on every scan.
            self.refuse(Some(&name), &entry.origin.path, None, reason);
        }
    }

    /// Serves the `pipeline` blocks whose every step names a loaded agent
    /// or a served pipeline, and whose filters loaded; refuses the others,
    /// naming the step by its place in the configuration.
    fn check_compositions(&mut self) {
        let config = self.config;
        let top_missing: Vec<&str> = config
            .defaults
            .filters
            .iter()
            .filter(|f| !self.snapshot.filters.contains_key(*f))
            .map(String::as_str)
            .collect();
        let mut served: BTreeMap<&str, &wharf_config::Composition> = BTreeMap::new();
        let mut why: BTreeMap<&str, (String, String)> = BTreeMap::new();
        for (name, composition) in &config.pipelines {
            if self.snapshot.agents.contains_key(name) {
                let reason =
                    format!("an agent component is also called `{name}`: the agent is served");
                why.insert(name, (composition.at.clone(), reason));
            } else if !top_missing.is_empty() {
                let reason = format!(
                    "the top-level filter chain names `{}`, which did not load",
                    top_missing.join("`, `")
                );
                why.insert(name, (composition.at.clone(), reason));
            } else {
                served.insert(name, composition);
            }
        }
        // A pipeline whose step is a refused pipeline is refused in turn.
        loop {
            let mut refused = None;
            for (name, composition) in &served {
                let bad = composition.flow.steps().into_iter().find_map(|step| {
                    let n = step.name.as_str();
                    if self.snapshot.agents.contains_key(n) || served.contains_key(n) {
                        None
                    } else if self.snapshot.filters.contains_key(n) {
                        Some((step, format!("`{n}` is a filter, not an agent")))
                    } else if why.contains_key(n) {
                        Some((step, format!("pipeline `{n}` is not served")))
                    } else {
                        Some((step, format!("no agent or pipeline named `{n}` is loaded")))
                    }
                });
                if let Some((step, reason)) = bad {
                    refused = Some((*name, step.at.clone(), reason));
                    break;
                }
            }
            let Some((name, at, reason)) = refused else {
                break;
            };
            served.remove(name);
            why.insert(name, (at, reason));
        }
        for (name, (at, reason)) in why {
            let reason = format!("pipeline `{name}` is not served: {reason}");
            self.refuse(Some(name), Path::new(&at), None, reason);
        }
        self.snapshot.compositions = served
            .into_iter()
            .map(|(name, c)| (name.to_string(), Arc::new(c.clone())))
            .collect();
    }

    /// Records a refusal; logs it unless the previous scan logged the same.
    /// Returns whether it was logged.
    fn refuse(
        &mut self,
        name: Option<&str>,
        path: &Path,
        stamp: Option<Stamp>,
        reason: String,
    ) -> bool {
        let refusal = Refusal {
            name: name.map(str::to_string),
            path: path.to_path_buf(),
            reason,
            stamp,
        };
        let new = !self.previous.refused.contains(&refusal);
        if new {
            tracing::warn!("{refusal}");
        }
        self.snapshot.refused.push(refusal);
        new
    }
}

/// Runs `load` over `items` on up to one thread per core, returning the
/// results in the items' order; each worker takes the item `first` names
/// (when it names one) before the next in order. Threads of its own
/// rather than rayon's global pool: wasmtime compiles on that pool, whose
/// threads run at the lowered compile priority
/// (`wharf_runtime::compile_in_background`), and the loads themselves
/// (cached code, `describe()`) should not.
fn load_parallel<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    first: Option<impl Fn() -> Option<usize> + Sync>,
    load: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let workers = workers.min(items.len()).max(1);
    let next = AtomicUsize::new(0);
    let taken: Vec<AtomicBool> = items.iter().map(|_| AtomicBool::new(false)).collect();
    // The next item no worker has taken: a wanted one, else the next in order.
    let claim = || {
        if let Some(i) = first.as_ref().and_then(|f| f())
            && !taken[i].swap(true, Ordering::Relaxed)
        {
            return Some(i);
        }
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= items.len() {
                return None;
            }
            if !taken[i].swap(true, Ordering::Relaxed) {
                return Some(i);
            }
        }
    };
    let work = || {
        let mut mine = Vec::new();
        while let Some(i) = claim() {
            mine.push((i, load(&items[i])));
        }
        mine
    };
    let mut results: Vec<(usize, R)> = if workers == 1 {
        work()
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    std::thread::Builder::new()
                        .name("wharf-load".into())
                        .spawn_scoped(scope, work)
                        .expect("a thread to load components on")
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    results.sort_unstable_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// The cores this process may run on.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Decides whether a directory entry is a component to load: its name and
/// metadata. `Ok(None)` skips the entry silently (directories, and hidden
/// files such as the temporary files editors and `wharf sign` write).
fn candidate(root: &Path, path: &Path, max_size: u64) -> Result<Option<(String, Stamp)>, String> {
    let hidden = path
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().starts_with(b"."));
    if hidden {
        return Ok(None);
    }
    let meta = fs::symlink_metadata(path).map_err(|e| format!("cannot stat: {e}"))?;
    let meta = if meta.file_type().is_symlink() {
        let target = path
            .canonicalize()
            .map_err(|e| format!("broken symlink: {e}"))?;
        if !target.starts_with(root) {
            return Err(format!(
                "symlink leaves the agents directory (points to `{}`)",
                target.display()
            ));
        }
        fs::metadata(&target).map_err(|e| format!("cannot stat symlink target: {e}"))?
    } else {
        meta
    };
    if meta.is_dir() {
        return Ok(None);
    }
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let is_wasm = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("wasm"));
    if !is_wasm {
        return Err("not a `.wasm` file".into());
    }
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if !valid_agent_name(stem) {
        return Err(format!(
            "`{stem}` is not a valid agent name (use letters, digits, `-`, `_` and `.`)"
        ));
    }
    if meta.len() > max_size {
        return Err(format!(
            "file is {} bytes, over the limit of {}",
            meta.len(),
            format_size(max_size)
        ));
    }
    Ok(Some((stem.to_string(), Stamp::of(&meta))))
}

/// Reads at most `max` bytes; a file that grew past it is refused.
pub(crate) fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    let file = fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("file is over the limit of {}", format_size(max)));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loads 0..10 on `workers` threads, 7 and then 3 wanted once each
    /// (7 asked for again once taken); returns the order loads began.
    fn run(workers: usize) -> Vec<usize> {
        let items: Vec<usize> = (0..10).collect();
        let wanted = Mutex::new(vec![7, 3, 7]);
        let first = || {
            let mut wanted = wanted.lock().unwrap();
            (!wanted.is_empty()).then(|| wanted.remove(0))
        };
        let started = Mutex::new(Vec::new());
        let results = load_parallel(&items, workers, Some(first), |i| {
            started.lock().unwrap().push(*i);
            i * 2
        });
        // Results in the items' order, each computed once.
        assert_eq!(results, (0..10).map(|i| i * 2).collect::<Vec<_>>());
        let started = started.into_inner().unwrap();
        let mut sorted = started.clone();
        sorted.sort();
        assert_eq!(sorted, items, "each once: {started:?}");
        started
    }

    #[test]
    fn wanted_items_are_taken_before_those_in_order_and_each_runs_once() {
        assert_eq!(run(1), [7, 3, 0, 1, 2, 4, 5, 6, 8, 9]);
        for workers in [2, 4, 16] {
            run(workers);
        }
    }
}
