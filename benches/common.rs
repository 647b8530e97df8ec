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
