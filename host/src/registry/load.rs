//! Loading a directory of components: regular files only, each checked
//! (name, size, kind, compile, imports, world, `describe()`), refused with
//! one clear reason without stopping the others.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::{AgentEntry, CardInfo, FilterEntry, Origin, Snapshot, valid_agent_name};
use crate::config::{Config, FilterPolicy, format_size};
use crate::runtime::{CacheOutcome, FilterPres, GuestIdentity, Prepared, Runtime, wants_preinit};

/// A file the loader did not load, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub path: PathBuf,
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused `{}`: {}", self.path.display(), self.reason)
    }
}

/// Scans `dir` and loads every component in it. Refusals are logged (one
/// line each) and kept in the snapshot; an unreadable directory is an error.
pub fn load_dir(runtime: &Runtime, config: &Config, dir: &Path) -> std::io::Result<Snapshot> {
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

    let mut snapshot = Snapshot::default();
    let mut by_name: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for path in &paths {
        match candidate(&root, path, config.server.component_size) {
            Ok(Some(name)) => by_name.entry(name).or_default().push(path.clone()),
            Ok(None) => {}
            Err(reason) => refuse(&mut snapshot, path, reason),
        }
    }
    for (name, paths) in by_name {
        if paths.len() > 1 {
            let list: Vec<String> = paths.iter().map(|p| format!("`{}`", p.display())).collect();
            for path in &paths {
                let reason = format!("agent name `{name}` is used by {}", list.join(" and "));
                refuse(&mut snapshot, path, reason);
            }
            continue;
        }
        let path = &paths[0];
        if let Err(reason) = load_one(runtime, config, &name, path, &mut snapshot) {
            refuse(&mut snapshot, path, reason);
        }
    }
    check_chains(&mut snapshot);
    Ok(snapshot)
}

fn refuse(snapshot: &mut Snapshot, path: &Path, reason: String) {
    let refusal = Refusal {
        path: path.to_path_buf(),
        reason,
    };
    tracing::warn!("{refusal}");
    snapshot.refused.push(refusal);
}

/// Decides whether a directory entry is a component to load, and its name.
/// `Ok(None)` skips the entry silently (directories).
fn candidate(root: &Path, path: &Path, max_size: u64) -> Result<Option<String>, String> {
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
    Ok(Some(stem.to_string()))
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

/// What kind of WebAssembly a byte string is, as a refusal when not a component.
pub(crate) fn check_component(bytes: &[u8]) -> Result<(), String> {
    if wasmparser::Parser::is_component(bytes) {
        Ok(())
    } else if wasmparser::Parser::is_core_wasm(bytes) {
        Err(
            "a core WebAssembly module, not a component (build it for wasm32-wasip2, \
             or wrap it with `wasm-tools component new`)"
                .into(),
        )
    } else {
        Err("not a WebAssembly file".into())
    }
}

pub(crate) fn digest(bytes: &[u8]) -> String {
    format_digest(&Sha256::digest(bytes).into())
}

fn format_digest(sha256: &[u8; 32]) -> String {
    format!("sha256:{}", hex::encode(sha256))
}

fn outcome_str(outcome: CacheOutcome) -> &'static str {
    match outcome {
        CacheOutcome::Hit => "cached",
        _ => "now",
    }
}

/// Refuses agents whose filter chain names a filter that did not load:
/// a request must never reach an agent around a filter it was meant to pass.
fn check_chains(snapshot: &mut Snapshot) {
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
        let entry = snapshot.agents.remove(&name).expect("listed above");
        let reason = format!(
            "agent `{name}` is not served: its filter chain names `{absent}`, which did not load \
             (put the filter components in the agents directory, or give the agent `filters #false`)"
        );
        refuse(snapshot, &entry.origin.path, reason);
    }
}

/// The filter in `bytes` after its `preinit` ran, snapshotted, compiled
/// and type-checked again.
fn preinitialized(
    runtime: &Runtime,
    bytes: &[u8],
    sha256: &[u8; 32],
    identity: GuestIdentity,
    policy: &FilterPolicy,
) -> Result<FilterPres, String> {
    let (component, _) = runtime.preinitialize(bytes, sha256, identity, &policy.limits)?;
    match runtime.prepare(&component)? {
        Prepared::Filter(pres) => Ok(pres),
        Prepared::Agent(_) => Err("its pre-initialized snapshot is no longer a filter".into()),
    }
}

/// A filter's identity: its name, config and files.
fn filter_identity(name: &str, policy: &FilterPolicy) -> GuestIdentity {
    GuestIdentity {
        name: name.to_string(),
        values: policy.values.clone(),
        files: policy.files.clone(),
    }
}

fn load_one(
    runtime: &Runtime,
    config: &Config,
    name: &str,
    path: &Path,
    snapshot: &mut Snapshot,
) -> Result<(), String> {
    let bytes = read_capped(path, config.server.component_size)?;
    check_component(&bytes)?;
    let started = std::time::Instant::now();
    // Hashed once: the digest shown for the agent is the cache's key too.
    let sha256: [u8; 32] = Sha256::digest(&bytes).into();
    let (component, outcome) = runtime
        .compile_hashed(&bytes, &sha256)
        .map_err(|e| format!("failed to compile: {e}"))?;
    let prepared = runtime.prepare(&component)?;
    let origin = Origin {
        name: name.to_string(),
        path: path.to_path_buf(),
        digest: format_digest(&sha256),
        size: bytes.len() as u64,
        world: prepared.world().as_str(),
    };
    match prepared {
        Prepared::Filter(pres) => {
            let policy = config.filter_policy(name);
            if let Some(dir) = &policy.files
                && !dir.is_dir()
            {
                return Err(format!(
                    "its `files` directory `{}` is not a directory",
                    dir.display()
                ));
            }
            let identity = filter_identity(name, &policy);
            let (pres, preinit_ms) = if policy.preinit && wants_preinit(&component) {
                let began = std::time::Instant::now();
                let pres = preinitialized(runtime, &bytes, &sha256, identity.clone(), &policy)?;
                (pres, Some(began.elapsed().as_millis() as u64))
            } else {
                (pres, None)
            };
            let image = runtime.filter_image(pres, identity, policy.limits);
            let phases = image
                .instantiate()
                .and_then(|mut live| live.phases())
                .map_err(|e| format!("phases() failed: {e}"))?;
            if phases.is_empty() {
                return Err("the filter registers for no phase".into());
            }
            tracing::info!(
                filter = name,
                digest = %origin.digest,
                phases = ?phases.names(),
                compiled = outcome_str(outcome),
                preinit_ms,
                load_ms = started.elapsed().as_millis() as u64,
                "loaded filter from `{}`",
                path.display()
            );
            let entry = FilterEntry {
                origin,
                image,
                phases,
                policy,
            };
            snapshot.filters.insert(name.to_string(), Arc::new(entry));
        }
        Prepared::Agent(pre) => {
            let mut origin = origin;
            let policy = config.policy_for(name);
            let identity = GuestIdentity {
                name: name.to_string(),
                values: policy.values.clone(),
                files: None,
            };
            let image = runtime.agent_image(pre, identity, policy.limits);
            let card = image
                .instantiate()
                .and_then(|mut live| live.describe())
                .map_err(|e| format!("describe() failed: {e}"))?;
            if image.serves_a2a() {
                origin.world = "a2a-agent";
            }
            tracing::info!(
                agent = name,
                world = origin.world,
                digest = %origin.digest,
                compiled = outcome_str(outcome),
                load_ms = started.elapsed().as_millis() as u64,
                "loaded agent from `{}`",
                path.display()
            );
            let entry = AgentEntry {
                origin,
                card: CardInfo::from(card),
                image,
                policy,
            };
            snapshot.agents.insert(name.to_string(), Arc::new(entry));
        }
    }
    Ok(())
}
