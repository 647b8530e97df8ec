//! What the benchmarks (and the integration tests) share: building the guest
//! components (Rust in the returned directory; the other languages in
//! `lang/` beside it, see [`lang_dir`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the guests with `scripts/build-guests.sh` and returns their directory.
pub fn guests_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("bash")
        .arg(root.join("scripts/build-guests.sh"))
        // The wharf binary cargo built for this test or bench run does the
        // bindings and componentizing; no nested cargo build.
        .env("WHARF_BIN", env!("CARGO_BIN_EXE_wharf"))
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

/// Where `scripts/build-guests.sh` puts the C, Go, Python and JavaScript
/// components (`NAME-LANG.wasm`), given the Rust directory it returned.
#[allow(dead_code)]
pub fn lang_dir(rust_dir: &Path) -> PathBuf {
    rust_dir.join("../../lang")
}

/// Debian's OWASP Core Rule Set 3.3 (`apt-get install modsecurity-crs`),
/// laid out as the `waf` filter reads it: `crs-setup.conf` and `rules/`.
/// Left out: the application exclusion plugins (REQUEST-903.*) and the
/// logging-phase correlation (RESPONSE-980), which the engine does not load
/// (see docs/filters.md). None when the package is not installed.
#[allow(dead_code)]
pub fn crs_files() -> Option<tempfile::TempDir> {
    const RULES: &str = "/usr/share/modsecurity-crs/rules";
    const SETUP: &str = "/etc/modsecurity/crs/crs-setup.conf";
    if !Path::new(RULES).is_dir() || !Path::new(SETUP).is_file() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(SETUP, dir.path().join("crs-setup.conf")).unwrap();
    std::fs::create_dir(dir.path().join("rules")).unwrap();
    for entry in std::fs::read_dir(RULES).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("REQUEST-903.") || name.starts_with("RESPONSE-980") {
            continue;
        }
        std::fs::copy(&path, dir.path().join("rules").join(&name)).unwrap();
    }
    Some(dir)
}
