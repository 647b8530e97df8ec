//! The repository carries what its tests and scripts read: no tracked
//! file but the dated benchmark history names the folder that sits beside
//! the checkout on the project's own machines, and the data the
//! conformance run reads is inside the tree.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The checkout's top folder.
fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every tracked file (relative paths), from `git ls-files`; without git
/// (an exported tree) every file below the top but build outputs.
fn tracked(top: &Path) -> Vec<PathBuf> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(top)
        .output();
    if let Ok(out) = out
        && out.status.success()
        && !out.stdout.is_empty()
    {
        return out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
            .collect();
    }
    let mut files = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(top.join(&dir)).unwrap() {
            let entry = entry.unwrap();
            let rel = dir.join(entry.file_name());
            let name = entry.file_name();
            if [".git", "target", "node_modules", "agents"].contains(&name.to_str().unwrap_or("")) {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(rel);
            } else {
                files.push(rel);
            }
        }
    }
    files
}

#[test]
fn no_tracked_file_reads_outside_the_repository() {
    let top = top();
    // Spelled in two pieces so that this file does not name it itself.
    let needle = ["..", "/shared"].concat();
    let files = tracked(&top);
    assert!(
        files.len() > 100,
        "only {} files found under {}",
        files.len(),
        top.display()
    );
    let mut naming = Vec::new();
    for rel in &files {
        if rel == Path::new("docs/benchmarks-history.md") {
            continue; // the dated history says where each past run read from
        }
        let Ok(bytes) = std::fs::read(top.join(rel)) else {
            continue; // deleted in the work tree, not yet in the index
        };
        if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            naming.push(rel.display().to_string());
        }
    }
    assert!(
        naming.is_empty(),
        "these tracked files name `{needle}`, which a fresh clone does not have beside it: {naming:?}"
    );
}

#[test]
fn the_crs_regression_cases_are_carried() {
    let path = top().join("third_party/coreruleset/tests/regression-tests.jsonl.gz");
    // gzip is on every machine the tests run on; no decoder crate for one file.
    let out = Command::new("gzip").arg("-dc").arg(&path).output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut cases = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        for field in ["id", "file", "method", "uri", "expect"] {
            assert!(
                case.get(field).is_some(),
                "a case without `{field}`: {line}"
            );
        }
        cases += 1;
    }
    // The conformance sample the test command runs takes 400 of them.
    assert_eq!(cases, 2557, "cases in {}", path.display());
}

/// `(name, version)` of every package in a `Cargo.lock`.
fn locked(lock: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut name = None;
    for line in lock.lines() {
        if line == "[[package]]" {
            name = None;
        } else if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            out.push((n, v.trim_matches('"').to_string()));
        }
    }
    out
}

/// wasmtime's family: the crates released with wasmtime, at its version.
fn wasmtime_family(name: &str) -> bool {
    name == "wasmtime"
        || name.starts_with("wasmtime-")
        || name.starts_with("pulley-")
        || name == "wasi-preview1-component-adapter-provider"
}

#[test]
fn the_carried_wasmtime_is_the_version_of_every_wasmtime_crate() {
    let top = top();
    let manifest = std::fs::read_to_string(top.join("third_party/wasmtime/Cargo.toml")).unwrap();
    let carried = locked(&format!("[[package]]\n{manifest}"))
        .into_iter()
        .find(|(n, _)| n == "wasmtime")
        .map(|(_, v)| v)
        .expect("third_party/wasmtime/Cargo.toml names no version");
    let lock = std::fs::read_to_string(top.join("Cargo.lock")).unwrap();
    let family: Vec<_> = locked(&lock)
        .into_iter()
        .filter(|(n, _)| wasmtime_family(n))
        .collect();
    assert!(
        family.len() >= 10,
        "only {family:?} of wasmtime's crates in Cargo.lock"
    );
    let other: Vec<_> = family.iter().filter(|(_, v)| *v != carried).collect();
    assert!(
        other.is_empty(),
        "third_party/wasmtime is {carried}, but Cargo.lock has {other:?}: \
         re-make it with scripts/setup/repatch.sh wasmtime VERSION"
    );
    // Exactly one wasmtime: the patched copy, not a second one from the registry.
    assert_eq!(family.iter().filter(|(n, _)| n == "wasmtime").count(), 1);
}
