//! One component file → one loaded agent or filter: read (capped), checked
//! against its digest pin and the trusted keys, compiled (through the
//! cache, only after those checks), type-checked against a world, and
//! asked what it is (`describe()`, `phases()`).

use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::{AgentEntry, CardInfo, FilterEntry, Origin, Stamp};
use wharf_config::{Config, FilterPolicy};
use wharf_core::verdict::Phase;
use wharf_runtime::{
    CacheOutcome, FilterPres, GuestIdentity, Prepared, Runtime, SourceFile, wants_preinit, watched,
};

/// What one file loaded as.
pub(super) enum Loaded {
    Agent(Arc<AgentEntry>),
    Filter(Arc<FilterEntry>),
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

/// Refuses contents other than what an `agent` or `filter` block pins
/// `name` to.
pub(super) fn check_pin(config: &Config, name: &str, digest: &str) -> Result<(), String> {
    let pins = [
        config.agents.get(name).and_then(|p| p.digest.as_ref()),
        config.filters.get(name).and_then(|p| p.digest.as_ref()),
    ];
    match pins.into_iter().flatten().find(|pin| *pin != digest) {
        Some(pin) => Err(format!(
            "digest mismatch: the file is {digest}, but the configuration pins `{name}` to {pin}"
        )),
        None => Ok(()),
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
    match runtime.prepare(&component).map_err(|e| e.to_string())? {
        Prepared::Filter(pres) => Ok(pres),
        Prepared::Agent(_) | Prepared::Http(_) => {
            Err("its pre-initialized snapshot is no longer a filter".into())
        }
    }
}

/// A filter's identity: its name, config and files.
fn filter_identity(name: &str, policy: &FilterPolicy) -> GuestIdentity {
    GuestIdentity {
        name: name.to_string(),
        values: policy.values.clone(),
        files: policy.files.clone(),
        outbound: Default::default(),
    }
}

/// An agent's identity: its name, config values and outbound access.
fn agent_identity(name: &str, policy: &wharf_config::Policy) -> GuestIdentity {
    GuestIdentity {
        name: name.to_string(),
        values: policy.values.clone(),
        files: None,
        outbound: wharf_runtime::OutboundAccess::new(policy.outbound.clone()),
    }
}

/// Loads the component at `path` (whose metadata said `stamp`) as `name`.
pub(super) fn load_one(
    runtime: &Runtime,
    config: &Config,
    name: &str,
    path: &Path,
    stamp: Stamp,
) -> Result<Loaded, String> {
    let bytes = super::read_capped(path, config.server.component_size)?;
    super::check_component(&bytes).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    // Hashed once: the digest shown for the agent is the cache's key too.
    let sha256: [u8; 32] = Sha256::digest(&bytes).into();
    let digest = format_digest(&sha256);
    check_pin(config, name, &digest)?;
    // Before compiling: a compiled artifact is found in the cache by the
    // digest of a source that passed these checks, never trusted on its own.
    let signed_by = crate::trust::check(&config.trust, &bytes).map_err(|e| e.to_string())?;
    // A WASIp3 component fails to compile (or to fit a world) for
    // reasons that do not say what it is: it is told by name.
    let refused = |why: String| super::component::wasip3_refusal(&bytes).unwrap_or(why);
    let (component, outcome) = runtime
        .compile_hashed(&bytes, &sha256)
        .map_err(|e| refused(format!("failed to compile: {e}")))?;
    let prepared = runtime
        .prepare(&component)
        .map_err(|e| refused(e.to_string()))?;
    let loaded_at = std::time::SystemTime::now();
    let mut origin = Origin {
        name: name.to_string(),
        path: path.to_path_buf(),
        digest,
        size: bytes.len() as u64,
        world: prepared.world().as_str(),
        loaded: wharf_core::time::rfc3339(loaded_at),
        loaded_at,
        signed_by,
        stamp,
    };
    // Where an agent's code comes back from, should it be unloaded.
    let source = SourceFile {
        path: path.to_path_buf(),
        sha256,
        max_bytes: config.server.component_size,
    };
    let loaded = match prepared {
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
            let image = runtime.filter_image(pres, identity, policy.limits)?;
            let phases = image
                .instantiate()
                .and_then(|live| {
                    let (mut live, deadline) = live.for_load();
                    watched(deadline, move || live.phases())
                })
                .map_err(|e| format!("phases() failed: {e}"))?;
            if phases.is_empty() {
                return Err("the filter registers for no phase".into());
            }
            let effects = image.declared_effects()?;
            if let Some(fx) = &effects
                && let Some(extra) = Phase::ALL
                    .into_iter()
                    .find(|p| fx.phases.has(*p) && !phases.has(*p))
            {
                return Err(format!(
                    "effects() keeps the {} phase, which phases() does not register",
                    extra.as_str()
                ));
            }
            tracing::info!(
                filter = name,
                digest = %origin.digest,
                signed_by = origin.signed_by,
                phases = ?phases.names(),
                declares = effects.is_some(),
                streams_body = image.streams_request_body(),
                compiled = outcome_str(outcome),
                preinit_ms,
                load_ms = started.elapsed().as_millis() as u64,
                "loaded filter from `{}`",
                path.display()
            );
            Loaded::Filter(Arc::new(FilterEntry {
                origin,
                image,
                phases,
                effects: effects.map(Arc::new),
                policy,
            }))
        }
        Prepared::Agent(pre) => {
            let policy = config.policy_for(name);
            let identity = agent_identity(name, &policy);
            let image = runtime.agent_image(pre, identity, policy.limits, source);
            let card = image
                .instantiate()
                .and_then(|live| {
                    let (mut live, deadline) = live.for_load();
                    watched(deadline, move || live.describe())
                })
                .map_err(|e| format!("describe() failed: {e}"))?;
            if image.serves_a2a() {
                origin.world = "a2a-agent";
            }
            let entry = AgentEntry {
                origin,
                card: CardInfo::from(card),
                image,
                policy,
            };
            loaded_agent(entry, outcome, started)
        }
        Prepared::Http(pre) => {
            let policy = config.policy_for(name);
            let card = CardInfo::for_http(name, pre.wasi());
            let identity = agent_identity(name, &policy);
            let image = runtime.http_image(pre, identity, policy.limits, source);
            let entry = AgentEntry {
                origin,
                card,
                image,
                policy,
            };
            loaded_agent(entry, outcome, started)
        }
    };
    Ok(loaded)
}

/// Logs a loaded agent.
fn loaded_agent(entry: AgentEntry, outcome: CacheOutcome, started: std::time::Instant) -> Loaded {
    let origin = &entry.origin;
    tracing::info!(
        agent = origin.name,
        world = origin.world,
        digest = %origin.digest,
        signed_by = origin.signed_by,
        compiled = outcome_str(outcome),
        load_ms = started.elapsed().as_millis() as u64,
        "loaded agent from `{}`",
        origin.path.display()
    );
    Loaded::Agent(Arc::new(entry))
}
