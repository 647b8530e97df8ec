//! The compiled-artifact cache: native code for components Wharf has compiled
//! before, keyed by the component's digest and the engine's settings, kept in
//! a directory Wharf owns (never the agents directory).
//!
//! Loading native code is trusted: a file is only used when it carries
//! Wharf's header and its own checksum matches, and it is deserialized from
//! memory after that check (no mapping of a file that could change later).
//! The checksum (XXH3-128) catches a damaged or truncated file; it is not
//! a defence against someone who can write the directory (they could
//! write a matching sum too), which is why the directory is private.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The header of an entry: the format, then its checksum.
const MAGIC: &[u8; 8] = b"WHARFC2\n";
/// The header of the earlier format (a SHA-256 checksum): taken as a miss,
/// compiled again and replaced, so no start keeps paying the slower check.
const EARLIER: &[u8; 8] = b"WHARFC1\n";
/// XXH3-128, little-endian.
const SUM: usize = 16;

fn checksum(payload: &[u8]) -> [u8; SUM] {
    xxhash_rust::xxh3::xxh3_128(payload).to_le_bytes()
}

/// How a compile went through the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from the cache: no compilation.
    Hit,
    /// Compiled, then stored.
    Stored,
    /// Compiled; storing failed (logged) or there is no cache.
    Compiled,
}

/// Counts of cache outcomes since start.
#[derive(Debug, Default)]
pub struct CacheStats {
    /// Compiled code loaded from the cache.
    pub hits: AtomicU64,
    /// Compiled code stored in it.
    pub stores: AtomicU64,
    /// Entries found damaged or unusable and replaced.
    pub rejected: AtomicU64,
}

/// A directory of compiled components.
#[derive(Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    /// SHA-256 of everything about the engine that compiled code depends on.
    engine_key: [u8; 32],
    /// What it has done since start.
    pub stats: CacheStats,
}

/// Feeds `Hash` output into SHA-256, so the engine key is stable across runs
/// (unlike `DefaultHasher`, whose output Rust does not promise to keep).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        0
    }
}

impl ArtifactCache {
    /// Opens (creating, mode 0700) a cache directory for this engine. Fails
    /// when the directory cannot be made private to this user.
    pub fn open(dir: &Path, engine: &Engine) -> std::io::Result<ArtifactCache> {
        std::fs::create_dir_all(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let meta = std::fs::metadata(dir)?;
            if meta.permissions().mode() & 0o077 != 0 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            }
        }
        let mut hasher = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        hasher.0.update(env!("CARGO_PKG_VERSION").as_bytes());
        Ok(ArtifactCache {
            dir: dir.to_path_buf(),
            engine_key: hasher.0.finalize().into(),
            stats: CacheStats::default(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file for a component (by its SHA-256) under this engine.
    fn entry(&self, sha256: &[u8; 32]) -> PathBuf {
        let mut key = Sha256::new();
        key.update(sha256);
        key.update(self.engine_key);
        self.dir
            .join(format!("{}.cwasm", hex::encode(&key.finalize()[..20])))
    }

    /// The component whose bytes have SHA-256 `sha256`, from the cache when
    /// it holds a sound entry, else compiled and stored.
    pub fn compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
        sha256: &[u8; 32],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        self.get_or_build(engine, sha256, || Component::new(engine, bytes))
    }

    /// The component stored under `key`, or else the one `build` makes,
    /// stored under `key`: for components derived from inputs that `key`
    /// digests (a pre-initialized snapshot), so a hit skips the deriving.
    pub fn get_or_build(
        &self,
        engine: &Engine,
        key: &[u8; 32],
        build: impl FnOnce() -> wasmtime::Result<Component>,
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let path = self.entry(key);
        if let Some(component) = self.load(engine, &path) {
            self.stats.hits.fetch_add(1, Ordering::Relaxed);
            return Ok((component, CacheOutcome::Hit));
        }
        let component = build()?;
        match self.store(&path, &component) {
            Ok(()) => {
                self.stats.stores.fetch_add(1, Ordering::Relaxed);
                Ok((component, CacheOutcome::Stored))
            }
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "cannot store a compiled component");
                Ok((component, CacheOutcome::Compiled))
            }
        }
    }

    fn load(&self, engine: &Engine, path: &Path) -> Option<Component> {
        // A missing entry is the ordinary miss.
        let data = std::fs::read(path).ok()?;
        if data.starts_with(EARLIER) {
            tracing::debug!(path = %path.display(), "compiled code in an earlier format; compiling again");
            return None;
        }
        let payload = data
            .strip_prefix(MAGIC)
            .filter(|rest| rest.len() > SUM)
            .map(|rest| rest.split_at(SUM))
            .filter(|(sum, payload)| checksum(payload) == **sum)
            .map(|(_, payload)| payload);
        // SAFETY: the payload was written by `store` below into a directory
        // private to this user, and its checksum matches, so it is exactly
        // what `Component::serialize` produced with an engine of the same
        // settings (the file name covers them, and wasmtime checks its own
        // version and settings again before using it).
        #[allow(unsafe_code)]
        let loaded =
            payload.and_then(|payload| unsafe { Component::deserialize(engine, payload) }.ok());
        if loaded.is_none() {
            self.stats.rejected.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(path = %path.display(), "discarding a damaged or stale compiled component");
            let _ = std::fs::remove_file(path);
        }
        loaded
    }

    fn store(&self, path: &Path, component: &Component) -> wasmtime::Result<()> {
        let payload = component.serialize()?;
        // Unique per process and call: loads may run on several threads.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_extension(format!("tmp.{}.{n}", std::process::id()));
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(MAGIC)?;
        file.write_all(&checksum(&payload))?;
        file.write_all(&payload)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        Ok(())
    }
}
