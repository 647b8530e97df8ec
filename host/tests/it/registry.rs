//! Loading an agents directory: what is loaded, what is refused and why,
//! each refusal leaving the others loaded.

use std::path::Path;

use wharf::registry::{Snapshot, Wanted, load_dir, load_filters_first, load_pending};
use wharf::runtime::Runtime;

use crate::common::*;

fn load(dir: &Path, kdl: &str) -> Snapshot {
    let cfg = config(dir, kdl);
    let runtime = Runtime::new(&test_engine()).unwrap();
    load_dir(&runtime, &cfg, dir).unwrap()
}

fn reason_for(snapshot: &Snapshot, file: &str) -> String {
    snapshot
        .refused
        .iter()
        .find(|r| r.path.file_name().unwrap() == file)
        .unwrap_or_else(|| panic!("`{file}` was not refused: {:?}", snapshot.refused))
        .reason
        .clone()
}

#[test]
fn bad_files_are_refused_one_by_one_and_good_ones_load() {
    let dir = agents_dir(&["echo", "hello"]);
    let d = dir.path();
    let outside = tempfile::tempdir().unwrap();
    std::fs::copy(guest("echo"), outside.path().join("elsewhere.wasm")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("elsewhere.wasm"), d.join("escape.wasm"))
        .unwrap();
    std::os::unix::fs::symlink(d.join("echo.wasm"), d.join("alias.wasm")).unwrap();
    std::fs::write(d.join("notes.txt"), "not a component").unwrap();
    std::fs::write(d.join("text.wasm"), "hello, I am text").unwrap();
    std::fs::write(d.join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(d.join("broken.wasm"), b"\0asm\x0d\0\x01\0\xff\xff\xff").unwrap();
    std::fs::copy(guest("shapes"), d.join("shapes.wasm")).unwrap();
    std::fs::write(d.join("bad name.wasm"), b"\0asm\x0d\0\x01\0").unwrap();
    std::fs::create_dir(d.join("subdir.wasm")).unwrap();

    let snapshot = load(d, "");
    let loaded: Vec<&str> = snapshot.agents.keys().map(String::as_str).collect();
    assert_eq!(loaded, ["alias", "echo", "hello"]);

    assert!(reason_for(&snapshot, "escape.wasm").contains("symlink leaves the agents directory"));
    assert!(reason_for(&snapshot, "notes.txt").contains("not a `.wasm` file"));
    assert!(reason_for(&snapshot, "text.wasm").contains("not a WebAssembly file"));
    assert!(
        reason_for(&snapshot, "core.wasm").contains("core WebAssembly module, not a component")
    );
    assert!(reason_for(&snapshot, "broken.wasm").contains("failed to compile"));
    assert!(reason_for(&snapshot, "shapes.wasm").contains("fits none of the agent world"));
    assert!(reason_for(&snapshot, "bad name.wasm").contains("not a valid agent name"));
    assert_eq!(snapshot.refused.len(), 7, "{:?}", snapshot.refused);
}

#[test]
fn oversized_files_are_refused_before_reading() {
    let dir = agents_dir(&["echo", "hello"]);
    let size = |name| std::fs::metadata(guest(name)).unwrap().len();
    let (mut small, mut big) = ("echo", "hello");
    if size(small) > size(big) {
        (small, big) = (big, small);
    }
    assert!(size(big) > size(small));
    let kdl = format!("server {{ component-size {} }}", size(small));
    let snapshot = load(dir.path(), &kdl);
    assert!(snapshot.agents.contains_key(small));
    assert!(reason_for(&snapshot, &format!("{big}.wasm")).contains("over the limit"));
}

#[test]
fn two_files_with_one_agent_name_are_both_refused_naming_both() {
    let dir = agents_dir(&["echo", "hello"]);
    std::fs::copy(guest("echo"), dir.path().join("hello.WASM")).unwrap();
    let snapshot = load(dir.path(), "");
    assert_eq!(snapshot.agents.keys().collect::<Vec<_>>(), ["echo"]);
    for file in ["hello.wasm", "hello.WASM"] {
        let reason = reason_for(&snapshot, file);
        assert!(
            reason.contains("hello.wasm") && reason.contains("hello.WASM"),
            "{reason}"
        );
    }
}

#[test]
fn a_missing_directory_is_an_error_naming_it() {
    let runtime = Runtime::new(&test_engine()).unwrap();
    let missing = Path::new("/nonexistent/wharf-agents");
    let cfg = config(missing, "");
    let err = load_dir(&runtime, &cfg, missing)
        .err()
        .expect("missing dir is an error");
    assert!(
        err.to_string().contains("/nonexistent/wharf-agents"),
        "{err}"
    );
}

#[test]
fn an_agent_whose_describe_traps_is_refused() {
    // `trap` traps in handle, not describe; it must load.
    let dir = agents_dir(&["trap"]);
    let snapshot = load(dir.path(), "");
    assert!(snapshot.agents.contains_key("trap"));
}

#[test]
fn a_start_that_loads_while_serving_loads_chained_filters_first_and_the_rest_after() {
    let dir = agents_dir(&["echo", "hello", "probe"]);
    // A filter no chain names waits with the agents.
    copy_guest(dir.path(), "probe", "unchained");
    let kdl = r#"
server { load "while-serving" }
filters "probe"
pipeline "seq" {
    sequential {
        step "echo"
        step "hello"
    }
}
"#;
    let cfg = config(dir.path(), kdl);
    let runtime = Runtime::new(&test_engine()).unwrap();
    let first = load_filters_first(&runtime, &cfg, dir.path()).unwrap();
    assert_eq!(first.filters.keys().collect::<Vec<_>>(), ["probe"]);
    assert!(first.agents.is_empty());
    // The pipeline waits for its steps: not served yet, and not refused.
    assert!(first.compositions.is_empty());
    assert!(first.refused.is_empty(), "{:?}", first.refused);
    assert_eq!(
        first.pending.iter().collect::<Vec<_>>(),
        ["echo", "hello", "seq", "unchained"]
    );

    let reported = std::sync::Mutex::new(Vec::new());
    let report = |p: wharf::registry::Progress<'_>| {
        let agent = p.agent.map(|a| a.origin.name.clone());
        reported.lock().unwrap().push((p.name.to_string(), agent));
    };
    let wanted = Wanted::default();
    wanted.want("hello");
    let last = load_pending(&runtime, &cfg, dir.path(), &first, &report, &wanted).unwrap();
    assert!(last.pending.is_empty());
    assert!(last.refused.is_empty(), "{:?}", last.refused);
    assert_eq!(last.agents.keys().collect::<Vec<_>>(), ["echo", "hello"]);
    assert_eq!(
        last.filters.keys().collect::<Vec<_>>(),
        ["probe", "unchained"]
    );
    assert_eq!(last.compositions.keys().collect::<Vec<_>>(), ["seq"]);
    // The filter loaded first is the same entry, not loaded again.
    assert!(std::sync::Arc::ptr_eq(
        &first.filters["probe"],
        &last.filters["probe"]
    ));
    // Each component is reported: the agents as they load, with their
    // entries (what is served before the rest); the filters with none.
    let mut reported = reported.into_inner().unwrap();
    reported.sort();
    assert_eq!(
        reported,
        [
            ("echo".to_string(), Some("echo".to_string())),
            ("hello".to_string(), Some("hello".to_string())),
            ("probe".to_string(), None),
            ("unchained".to_string(), None),
        ]
    );
}
