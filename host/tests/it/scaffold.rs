//! `wharf new` for every language: the project builds with its own
//! `build.sh` (toolchains from the test run's setup) and its agent serves
//! through HTTP under the project's name. Also `bindgen` and `componentize`
//! refusing bad input.

use std::path::Path;
use std::process::Command;

use http::{Method, StatusCode};
use wharf::config::Cache;

use crate::common::*;

fn wharf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wharf"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

/// Creates a project, runs its `test.sh` (build, serve, one request), then
/// serves it in-process and checks it answers as the echo does.
async fn new_builds_and_serves(lang: &str) {
    // Toolchains were installed by scripts/setup/build-guests.sh (guests_dir).
    let root = guests_dir().join("../../../..");
    let parent = tempfile::tempdir().unwrap();
    let name = format!("my-{lang}-agent");
    let out = run(wharf()
        .args(["new", &name, "--lang", lang, "--dir"])
        .arg(parent.path()));
    assert!(out.contains("created"), "{out}");
    let project = parent.path().join(&name);
    let xdg_cache = root.join("target/guests/test-xdg-cache");
    // The project's own smoke test: build.sh, then `wharf serve` on a free
    // port and one request.
    let mut build = Command::new("bash");
    build
        .arg(project.join("test.sh"))
        .env("WHARF", env!("CARGO_BIN_EXE_wharf"))
        // `wharf serve` there uses the default cache dir: keep it in target/.
        .env("XDG_CACHE_HOME", &xdg_cache)
        // …and its task store under the project's parent (a throwaway).
        .env("XDG_DATA_HOME", parent.path())
        .env(
            "COMPONENTIZE_PY",
            root.join("target/toolchains/python/bin/componentize-py"),
        )
        // Shares compiled dependencies with Wharf's own Rust guests.
        .env("CARGO_TARGET_DIR", root.join("target/guests"));
    let out = tokio::task::spawn_blocking(move || run(&mut build))
        .await
        .unwrap();
    assert!(out.contains(&format!("built agents/{name}.wasm")), "{out}");
    assert!(out.contains(&format!("ok: {name} answered")), "{out}");

    let agents = project.join("agents");
    let mut cfg = config(&agents, "");
    // The cache `wharf serve` filled in test.sh: no second compile.
    cfg.cache = Cache::Dir(xdg_cache.join("wharf"));
    let server = Server::start(cfg).await;
    let reply = send(
        &client(),
        Method::POST,
        &server.url(&format!("/agents/{name}/hello")),
        &[("x-from", "test")],
        "hi",
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{lang}: {}", reply.text());
    assert_eq!(reply.text(), "hi", "{lang}");
    assert_eq!(reply.headers["x-echo-path"], "/hello", "{lang}");
    assert_eq!(reply.headers["x-from"], "test", "{lang}");
    let list = get(&server.url("/agents")).await.json();
    assert_eq!(list[0]["card"]["name"], name.as_str(), "{lang}");
    server.stop().await;
    assert_project_files(&project);
}

fn assert_project_files(project: &Path) {
    for file in [
        "build.sh",
        "test.sh",
        "README.md",
        "wit/wharf.wit",
        ".gitignore",
    ] {
        assert!(project.join(file).is_file(), "{file} in {project:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn new_rust_project_builds_and_serves() {
    new_builds_and_serves("rust").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn new_c_project_builds_and_serves() {
    new_builds_and_serves("c").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn new_go_project_builds_and_serves() {
    new_builds_and_serves("go").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn new_python_project_builds_and_serves() {
    new_builds_and_serves("python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn new_js_project_builds_and_serves() {
    new_builds_and_serves("js").await;
}

#[test]
fn new_refuses_bad_names_and_existing_projects() {
    let parent = tempfile::tempdir().unwrap();
    let out = wharf()
        .args(["new", "My_Agent", "--lang", "c", "--dir"])
        .arg(parent.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot name an agent"));

    run(wharf()
        .args(["new", "twice", "--lang", "go", "--dir"])
        .arg(parent.path()));
    let out = wharf()
        .args(["new", "twice", "--lang", "c", "--dir"])
        .arg(parent.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));

    let out = wharf()
        .args(["new", "x", "--lang", "cobol"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("rust, python, js, c, go"));
}

#[test]
fn componentize_and_bindgen_report_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.wasm");
    std::fs::write(&junk, b"not wasm at all").unwrap();
    let out = wharf()
        .arg("componentize")
        .arg(&junk)
        .arg("--out")
        .arg(dir.path().join("out.wasm"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a WebAssembly module"));

    // A component is not a core module.
    let out = wharf()
        .arg("componentize")
        .arg(guest("echo"))
        .arg("--out")
        .arg(dir.path().join("out.wasm"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already a component"));

    let out = wharf()
        .args(["bindgen", "--lang", "c", "--world", "nope", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no world `nope`"));
}
