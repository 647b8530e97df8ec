//! What the benchmarks (and the integration tests) share: building the guest
//! components.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the guests with `scripts/build-guests.sh` and returns their directory.
pub fn guests_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("bash")
        .arg(root.join("scripts/build-guests.sh"))
        .output()
        .expect("running scripts/build-guests.sh");
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
