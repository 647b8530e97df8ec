//! The compiled-artifact cache: native code for components Wharf has compiled
//! before, keyed by the component's digest and the engine's settings, kept in
//! a directory Wharf owns (never the agents directory).
//!
//! An entry is two files: `KEY.cwasm`, exactly what wasmtime serialized,
//! and `KEY.sum`, Wharf's header with the code's length and checksum.
//! Loading native code is trusted: the code is only used when its checksum
//! matches, and it is then mapped from the file (not copied), so an idle
//! agent's code and memory image are page cache (clean, shared between
//! processes, given back under memory pressure), not anonymous memory.
//! The checksum (XXH3-128) catches
//! a damaged or truncated file; it is not a defence against someone who can
//! write the directory (they could write a matching sum too, or change the
//! mapped file), which is why the directory is private. Wharf itself never
//! writes an entry in place: each is written aside and renamed over, so a
//! mapped file is never changed under a running agent.

use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The header of an entry's `.sum` file: the format, then the code's
/// length (u64) and checksum (XXH3-128), little-endian. Entries of the
/// earlier formats (a header before the code in the `.cwasm` file, no
/// `.sum`) are taken as misses, compiled again and replaced.
const MAGIC: &[u8; 8] = b"WHARFC3\n";
/// The `.sum` file's length.
const SUM_FILE: usize = MAGIC.len() + 8 + 16;

/// The `.sum` file's contents for code of `len` bytes with XXH3-128 `sum`.
fn sum_file(len: u64, sum: u128) -> [u8; SUM_FILE] {
    let mut out = [0; SUM_FILE];
    out[..8].copy_from_slice(MAGIC);
    out[8..16].copy_from_slice(&len.to_le_bytes());
    out[16..].copy_from_slice(&sum.to_le_bytes());
    out
}

/// The `.sum` contents of what `file` holds, read through a buffer (the
/// code is not kept: it is mapped afterwards).
fn sum_of(file: &mut std::fs::File) -> std::io::Result<[u8; SUM_FILE]> {
    let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
    let mut buf = vec![0; 64 * 1024];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok(sum_file(len, hasher.digest128()))
}

/// Whether `a` and `b` are the same file (device and inode).
#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    true
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
    /// Entries found damaged (their checksum does not match) and
    /// replaced. An entry that is sound but cannot be loaded (out of
    /// memory or mappings) is kept and not counted here.
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

    /// The code file for a component (by its SHA-256) under this engine;
    /// its checksum is beside it, with the extension `sum`.
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
        if let Some(component) = self.cached(engine, key) {
            return Ok((component, CacheOutcome::Hit));
        }
        let path = self.entry(key);
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

    /// The component stored under `key`, when the cache holds a sound
    /// entry for it.
    pub fn cached(&self, engine: &Engine, key: &[u8; 32]) -> Option<Component> {
        let component = self.load(engine, &self.entry(key))?;
        self.stats.hits.fetch_add(1, Ordering::Relaxed);
        Some(component)
    }

    fn load(&self, engine: &Engine, path: &Path) -> Option<Component> {
        // A missing entry, or one of an earlier format (no `.sum`), is a
        // miss; storing replaces it.
        let sum = std::fs::read(path.with_extension("sum")).ok()?;
        let mut file = std::fs::File::open(path).ok()?;
        let checked = file.metadata().ok()?;
        let sound = sum == sum_of(&mut file).ok()?;
        // SAFETY: the file was written by `store` below into a directory
        // private to this user and its checksum matches, so it is exactly
        // what `Component::serialize` produced with an engine of the same
        // settings (the file name covers them, and wasmtime checks its own
        // version and settings again before using it). Wharf never changes
        // an entry in place (it renames a new file over it), and the file
        // mapped is checked below to be the one whose sum was read.
        if sound {
            #[allow(unsafe_code)]
            let loaded = unsafe { Component::deserialize_file(engine, path) };
            return match loaded {
                Ok(loaded) => {
                    // Replaced (by another process storing the same entry)
                    // between the check and the mapping: not the file
                    // checked, so not used.
                    let mapped = std::fs::metadata(path).ok()?;
                    same_file(&checked, &mapped).then_some(loaded)
                }
                Err(err) => {
                    // The code is what Wharf wrote for this engine, so what
                    // failed is the loading (out of memory or of mappings,
                    // `vm.max_map_count`), not the entry: it is kept for
                    // when there is room again, and a compile that succeeds
                    // meanwhile replaces it.
                    tracing::warn!(path = %path.display(), error = format!("{err:#}"), "cannot load a compiled component; the entry is kept");
                    None
                }
            };
        }
        self.stats.rejected.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(path = %path.display(), "discarding a damaged compiled component");
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(path.with_extension("sum"));
        None
    }

    fn store(&self, path: &Path, component: &Component) -> wasmtime::Result<()> {
        let code = component.serialize()?;
        // The code first, then its sum: an entry whose sum is missing or
        // does not match its code is a miss, whatever a crash left.
        write_aside(path, &code)?;
        let sum = sum_file(code.len() as u64, xxhash_rust::xxh3::xxh3_128(&code));
        write_aside(&path.with_extension("sum"), &sum)?;
        Ok(())
    }
}

/// Writes `bytes` to a new file beside `path`, syncs it and renames it over
/// `path`: a reader sees the old file or the new one whole, and a mapping of
/// the old one is never changed.
fn write_aside(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Unique per process and call: loads may run on several threads.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let tmp = path.with_extension(format!("{ext}.tmp.{}.{n}", std::process::id()));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)
}
