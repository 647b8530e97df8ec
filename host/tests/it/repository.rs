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

/// The crates `manifest` pins with `=`: `(package, version)`.
fn exact_pins(manifest: &str) -> Vec<(String, String)> {
    let mut pins = Vec::new();
    let mut section: Option<(String, Option<String>, Option<String>)> = None;
    let mut flush = |section: &mut Option<(String, Option<String>, Option<String>)>| {
        if let Some((key, package, Some(version))) = section.take()
            && let Some(exact) = version.strip_prefix('=')
        {
            pins.push((package.unwrap_or(key), exact.to_string()));
        }
    };
    for line in manifest.lines() {
        if line.starts_with('[') {
            flush(&mut section);
            let name = line.trim_matches(|c| c == '[' || c == ']');
            section = name
                .rsplit_once("dependencies.")
                .map(|(_, dep)| (dep.to_string(), None, None));
        } else if let Some((_, package, version)) = section.as_mut() {
            if let Some(v) = line.strip_prefix("version = ") {
                *version = Some(v.trim_matches('"').to_string());
            } else if let Some(p) = line.strip_prefix("package = ") {
                *package = Some(p.trim_matches('"').to_string());
            }
        }
    }
    flush(&mut section);
    pins
}

#[test]
fn the_carried_wasmtime_is_the_one_wasmtime_and_its_own_crates_match_it() {
    let top = top();
    let manifest = std::fs::read_to_string(top.join("third_party/wasmtime/Cargo.toml")).unwrap();
    let carried = locked(&format!("[[package]]\n{manifest}"))
        .into_iter()
        .find(|(n, _)| n == "wasmtime")
        .map(|(_, v)| v)
        .expect("third_party/wasmtime/Cargo.toml names no version");
    let lock = std::fs::read_to_string(top.join("Cargo.lock")).unwrap();
    let lock = locked(&lock);
    // One wasmtime: the patched copy, not a second one from the registry.
    let wasmtimes: Vec<_> = lock.iter().filter(|(n, _)| n == "wasmtime").collect();
    assert_eq!(wasmtimes, [&("wasmtime".to_string(), carried.clone())]);
    // The crates released with it (its `=` pins: wasmtime-environ, the
    // internal crates, Cranelift, Pulley) are at the versions it names.
    let pins = exact_pins(&manifest);
    assert!(pins.len() >= 5, "{pins:?}");
    let mut checked = 0;
    for (package, version) in &pins {
        let found: Vec<_> = lock.iter().filter(|(n, _)| n == package).collect();
        if found.is_empty() {
            continue; // an optional dependency Wharf does not enable
        }
        assert!(
            found.iter().all(|(_, v)| v == version),
            "third_party/wasmtime ({carried}) pins {package} ={version}, Cargo.lock has {found:?}: \
             re-make it with scripts/setup/repatch.sh wasmtime VERSION"
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} of its pins are in Cargo.lock");
    // Every other wasmtime crate is of the same release line (a line's
    // patch releases publish only the crates they change).
    let line = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    let others: Vec<_> = lock
        .iter()
        .filter(|(n, _)| {
            n.starts_with("wasmtime-") || n == "wasi-preview1-component-adapter-provider"
        })
        .filter(|(_, v)| line(v) != line(&carried))
        .collect();
    assert!(
        others.is_empty(),
        "not of wasmtime {carried}'s line: {others:?}"
    );
}
