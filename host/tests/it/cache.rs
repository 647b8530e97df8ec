//! The compiled-artifact cache: a second start loads instead of compiling,
//! a damaged entry is discarded and rebuilt, a sound one that does not
//! load is kept, and a cache inside the agents directory or one that
//! cannot be created is refused.

use std::sync::atomic::Ordering;

use wharf::app::{App, StartError};
use wharf::config::Cache;
use wharf::runtime::{CacheOutcome, Runtime};

use crate::common::*;

const NAMES: [&str; 3] = ["echo", "echo-c", "classify"];

fn load_with_cache(agents: &std::path::Path, cache: &std::path::Path) -> Runtime {
    let mut runtime = Runtime::new(&test_engine()).unwrap();
    runtime.use_cache(cache).unwrap();
    let cfg = config(agents, "");
    let snapshot = wharf::registry::load_dir(&runtime, &cfg, agents).unwrap();
    assert!(snapshot.refused.is_empty(), "{:?}", snapshot.refused);
    for name in NAMES {
        let mut live = snapshot.agent(name).unwrap().image.instantiate().unwrap();
        live.describe().unwrap();
    }
    runtime
}

/// A task store of the test's own: `App::start` opens it before the cache,
/// and two tests on the default path would find it in use.
fn own_task_store(cfg: &mut wharf::config::Config) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    cfg.tasks.path = Some(home.path().join("tasks.db"));
    home
}

fn entries(cache: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn a_second_start_loads_compiled_components_from_the_cache() {
    let agents = agents_dir(&NAMES);
    let cache = tempfile::tempdir().unwrap();
    let first = load_with_cache(agents.path(), cache.path());
    let stats = &first.cache().unwrap().stats;
    assert_eq!(stats.stores.load(Ordering::Relaxed), 3);
    assert_eq!(stats.hits.load(Ordering::Relaxed), 0);
    let files = entries(cache.path());
    assert_eq!(files.len(), 6, "{files:?}");
    for pair in files.chunks(2) {
        // Each entry: the code as wasmtime serialized it, and its sum.
        assert_eq!(pair[0].extension().unwrap(), "cwasm", "{files:?}");
        assert_eq!(pair[1], pair[0].with_extension("sum"), "{files:?}");
        assert!(std::fs::read(&pair[0]).unwrap().starts_with(b"\x7fELF"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(cache.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the cache directory is private");
    }

    let second = load_with_cache(agents.path(), cache.path());
    let stats = &second.cache().unwrap().stats;
    assert_eq!(stats.hits.load(Ordering::Relaxed), 3);
    assert_eq!(stats.stores.load(Ordering::Relaxed), 0);
    assert_eq!(entries(cache.path()), files);

    // A loaded entry's code is mapped from its file, not copied.
    let echo = std::fs::read(guest("echo")).unwrap();
    #[cfg(target_os = "linux")]
    {
        let (component, outcome) = second.compile(&echo).unwrap();
        assert_eq!(outcome, CacheOutcome::Hit);
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mapped: Vec<_> = files
            .iter()
            .filter(|f| maps.contains(f.to_str().unwrap()))
            .collect();
        assert_eq!(mapped.len(), 1, "echo's entry alone is mapped: {mapped:?}");
        drop(component);
    }

    // The allocator does not change compiled code, so it shares entries;
    // a setting that does (concurrency support) compiles anew.
    for (settings, expected) in [
        (
            wharf::runtime::EngineSettings {
                pooling: false,
                ..test_engine()
            },
            CacheOutcome::Hit,
        ),
        (
            wharf::runtime::EngineSettings {
                concurrency: true,
                ..test_engine()
            },
            CacheOutcome::Stored,
        ),
    ] {
        let mut other = Runtime::new(&settings).unwrap();
        other.use_cache(cache.path()).unwrap();
        let (_, outcome) = other.compile(&echo).unwrap();
        assert_eq!(outcome, expected, "{settings:?}");
    }
}

#[test]
fn a_damaged_entry_is_discarded_and_rebuilt() {
    let agents = agents_dir(&NAMES);
    let cache = tempfile::tempdir().unwrap();
    load_with_cache(agents.path(), cache.path());
    let files = entries(cache.path());
    // One entry's code truncated, one with a flipped byte in its code
    // (written in place, as damage would be, not by Wharf).
    let data = std::fs::read(&files[0]).unwrap();
    std::fs::write(&files[0], &data[..data.len() / 2]).unwrap();
    let mut data = std::fs::read(&files[2]).unwrap();
    let last = data.len() - 1;
    data[last] ^= 0xff;
    std::fs::write(&files[2], &data).unwrap();

    let runtime = load_with_cache(agents.path(), cache.path());
    let stats = &runtime.cache().unwrap().stats;
    assert_eq!(stats.rejected.load(Ordering::Relaxed), 2);
    assert_eq!(stats.stores.load(Ordering::Relaxed), 2);
    assert_eq!(stats.hits.load(Ordering::Relaxed), 1);
    assert_eq!(entries(cache.path()), files, "rebuilt under the same names");
}

/// A sound entry that wasmtime does not load (as when mapping it finds no
/// memory or mappings left) is a miss, not damage: it is kept, not
/// counted as rejected, and the next compile that succeeds replaces it.
#[test]
fn a_sound_entry_that_does_not_load_is_kept() {
    use sha2::Digest;
    let echo = std::fs::read(guest("echo")).unwrap();
    let sha256: [u8; 32] = sha2::Sha256::digest(&echo).into();
    let cache = tempfile::tempdir().unwrap();
    // An entry compiled with concurrency support, under its own name.
    let mut theirs = Runtime::new(&wharf::runtime::EngineSettings {
        concurrency: true,
        ..test_engine()
    })
    .unwrap();
    theirs.use_cache(cache.path()).unwrap();
    theirs.compile(&echo).unwrap();
    let their_files = entries(cache.path());
    let mut ours = Runtime::new(&test_engine()).unwrap();
    ours.use_cache(cache.path()).unwrap();
    ours.compile(&echo).unwrap();
    let our_files: Vec<_> = entries(cache.path())
        .into_iter()
        .filter(|f| !their_files.contains(f))
        .collect();
    assert_eq!((their_files.len(), our_files.len()), (2, 2));
    // Their code and its sum under our name: the checksum holds, and
    // wasmtime refuses code compiled for other settings.
    for (from, to) in their_files.iter().zip(&our_files) {
        std::fs::copy(from, to).unwrap();
    }
    let cache_of = ours.cache().unwrap();
    assert!(cache_of.cached(ours.engine(), &sha256).is_none());
    assert_eq!(cache_of.stats.rejected.load(Ordering::Relaxed), 0);
    assert_eq!(cache_of.stats.hits.load(Ordering::Relaxed), 0);
    for (from, to) in their_files.iter().zip(&our_files) {
        let kept = std::fs::read(to).unwrap();
        assert_eq!(kept, std::fs::read(from).unwrap(), "{to:?} is kept");
    }

    let (_, outcome) = ours.compile(&echo).unwrap();
    assert_eq!(outcome, CacheOutcome::Stored);
    assert_ne!(
        std::fs::read(&our_files[0]).unwrap(),
        std::fs::read(&their_files[0]).unwrap(),
        "replaced by the compile"
    );
    assert_eq!(
        ours.compile(&echo).unwrap().1,
        CacheOutcome::Hit,
        "and loaded from then on"
    );
}

#[test]
fn an_entry_in_an_earlier_format_is_compiled_again_and_replaced() {
    let agents = agents_dir(&NAMES);
    let cache = tempfile::tempdir().unwrap();
    load_with_cache(agents.path(), cache.path());
    let files = entries(cache.path());
    // The earlier format: a header and a checksum before the same code in
    // one file, no `.sum` beside it. Not trusted under the new one, not
    // counted as damaged either.
    let code = std::fs::read(&files[0]).unwrap();
    let sum = std::fs::read(&files[1]).unwrap();
    let mut earlier = b"WHARFC2\n".to_vec();
    earlier.extend_from_slice(&[0; 16]);
    earlier.extend_from_slice(&code);
    std::fs::write(&files[0], &earlier).unwrap();
    std::fs::remove_file(&files[1]).unwrap();

    let runtime = load_with_cache(agents.path(), cache.path());
    let stats = &runtime.cache().unwrap().stats;
    assert_eq!(stats.rejected.load(Ordering::Relaxed), 0);
    assert_eq!(stats.stores.load(Ordering::Relaxed), 1);
    assert_eq!(stats.hits.load(Ordering::Relaxed), 2);
    assert_eq!(entries(cache.path()), files);
    assert_eq!(
        std::fs::read(&files[0]).unwrap(),
        code,
        "replaced in the new format"
    );
    assert_eq!(std::fs::read(&files[1]).unwrap(), sum);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cache_inside_the_agents_directory_is_refused() {
    let agents = agents_dir(&["echo"]);
    let mut cfg = config(agents.path(), "");
    cfg.cache = Cache::Dir(agents.path().join("compiled"));
    let home = own_task_store(&mut cfg);
    let err = App::start(cfg, test_engine()).await.err().expect("refused");
    drop(home);
    assert!(matches!(err, StartError::Cache(_)), "{err}");
    assert!(
        err.to_string().contains("inside the agents directory"),
        "{err}"
    );
    assert!(!agents.path().join("compiled").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_configured_cache_that_cannot_be_created_stops_the_start_with_its_reason() {
    let agents = agents_dir(&["echo"]);
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let mut cfg = config(agents.path(), "");
    cfg.cache = Cache::Dir(file.join("cache"));
    let home = own_task_store(&mut cfg);
    let err = App::start(cfg, test_engine()).await.err().expect("refused");
    drop(home);
    assert!(matches!(err, StartError::Cache(_)), "{err}");
    let text = err.to_string();
    assert!(text.contains("cannot use the cache directory"), "{text}");
    assert!(text.contains("a-file"), "{text}");
}

/// A pre-initialized filter's snapshot is cached under its inputs: a second
/// start with the same component, config and files loads it without
/// running `preinit` (no new entry however often it starts), and a changed
/// rule file makes a new snapshot.
#[test]
fn a_preinitialized_snapshot_is_cached_under_its_inputs() {
    let agents = agents_dir(&["waf"]);
    let rules = tempfile::tempdir().unwrap();
    let file = rules.path().join("custom.conf");
    std::fs::write(
        &file,
        "SecRule ARGS:q \"@streq a\" \"id:5001,phase:2,deny\"\n",
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let kdl = format!(
        "filter \"waf\" {{\n  files \"{}\"\n  config {{ rules \"custom.conf\" }}\n}}\n",
        rules.path().display()
    );
    let load = || {
        let mut runtime = Runtime::new(&test_engine()).unwrap();
        runtime.use_cache(cache.path()).unwrap();
        let cfg = config(agents.path(), &kdl);
        let snapshot = wharf::registry::load_dir(&runtime, &cfg, agents.path()).unwrap();
        assert!(snapshot.refused.is_empty(), "{:?}", snapshot.refused);
        let stats = &runtime.cache().unwrap().stats;
        (
            stats.hits.load(Ordering::Relaxed),
            stats.stores.load(Ordering::Relaxed),
        )
    };
    // The component, then its snapshot.
    assert_eq!(load(), (0, 2));
    let files = entries(cache.path());
    assert_eq!(load(), (2, 0));
    assert_eq!(entries(cache.path()), files);
    std::fs::write(
        &file,
        "SecRule ARGS:q \"@streq b\" \"id:5001,phase:2,deny\"\n",
    )
    .unwrap();
    assert_eq!(
        load(),
        (1, 1),
        "the component is cached, the snapshot is new"
    );
    // Its code and its sum.
    assert_eq!(entries(cache.path()).len(), files.len() + 2);
}
