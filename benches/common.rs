//! What the benchmarks (and the integration tests) share: building the guest
//! components (Rust in the returned directory; the other languages in
//! `lang/` beside it, see [`lang_dir`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the guests with `scripts/setup/build-guests.sh` and returns their directory.
pub fn guests_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("bash")
        .arg(root.join("scripts/setup/build-guests.sh"))
        // The wharf binary cargo built for this test or bench run does the
        // bindings and componentizing; no nested cargo build.
        .env("WHARF_BIN", env!("CARGO_BIN_EXE_wharf"))
        .output()
        .expect("running scripts/setup/build-guests.sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("the script prints a path");
    PathBuf::from(
        stdout
            .trim()
            .lines()
            .last()
            .expect("the script prints a path"),
    )
}

/// Where `scripts/setup/build-guests.sh` puts the C, Go, Python and JavaScript
/// components (`NAME-LANG.wasm`), given the Rust directory it returned.
#[allow(dead_code)]
pub fn lang_dir(rust_dir: &Path) -> PathBuf {
    rust_dir.join("../../lang")
}

/// A guest instantiated straight from the linker, in a store with a far
/// deadline: for raw calls that bypass Wharf's dispatch.
#[allow(dead_code)]
pub fn raw_instance(
    runtime: &wharf::runtime::Runtime,
    file: &Path,
) -> (
    wasmtime::Store<wharf::runtime::GuestState>,
    wasmtime::component::Instance,
) {
    let (component, _) = runtime.compile(&std::fs::read(file).unwrap()).unwrap();
    let identity = std::sync::Arc::new(wharf::runtime::GuestIdentity::default());
    let mut store = wasmtime::Store::new(
        runtime.engine(),
        wharf::runtime::GuestState::new(identity, 64 << 20),
    );
    store.set_epoch_deadline(u64::MAX / 2);
    let instance = runtime
        .linker()
        .instantiate(&mut store, &component)
        .unwrap();
    (store, instance)
}
