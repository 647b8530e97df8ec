//! The `wharf` binary as an operator meets it: `check` against the agents
//! directory (names with line:col and a did-you-mean, in file order, KDL v1
//! spellings, `./wharf.kdl` by default), `inspect` and `verify` on
//! signatures, `--version`, completions; `serve` naming its URLs when
//! ready, JSON logs, a busy port found before anything compiles, a task
//! store another process holds refused, and a second Ctrl-C exiting at once.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::cli::{KillOnDrop, wait_ready, wharf};
use crate::common::*;

fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}

/// A directory with `agents/` holding copies of `names`.
fn project(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    for name in names {
        copy_guest(&dir.path().join("agents"), name, name);
    }
    dir
}

/// `wharf check` with no argument, in `dir`.
fn check_in(dir: &std::path::Path) -> std::process::Output {
    wharf().current_dir(dir).arg("check").output().unwrap()
}

#[test]
fn check_names_what_the_agents_directory_does_not_serve_in_file_order() {
    let dir = project(&["echo", "hello", "scribe", "waf", "headers"]);
    let kdl = "agents \"agents\"\n\
               filters \"wafx\"\n\
               agent \"helo\" {\n    instances {\n        mode \"warm\"\n    }\n}\n\
               a2a {\n    default \"scibe\"\n}\n\
               pipeline \"p\" {\n    step \"helo\"\n}\n";
    std::fs::write(dir.path().join("wharf.kdl"), kdl).unwrap();
    // No argument: ./wharf.kdl, as `serve` reads.
    let out = check_in(dir.path());
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    let at = |needle: &str| {
        said.find(needle)
            .unwrap_or_else(|| panic!("`{needle}` not in:\n{said}"))
    };
    let places = [
        at("wharf.kdl:2:9"),
        at("wharf.kdl:3:7"),
        at("wharf.kdl:9:13"),
        at("wharf.kdl:12:10"),
    ];
    assert!(places.is_sorted(), "problems out of file order:\n{said}");
    assert!(said.contains("no filter named `wafx`"), "{said}");
    assert!(said.contains("did you mean `waf`?"), "{said}");
    assert!(said.contains("no agent named `helo`"), "{said}");
    assert!(said.contains("did you mean `hello`?"), "{said}");
    assert!(said.contains("no A2A agent named `scibe`"), "{said}");
    assert!(said.contains("did you mean `scribe`?"), "{said}");
    assert!(said.contains("4 problems"), "{said}");

    // The same names put right pass, with what was found.
    let fixed = "agents \"agents\"\nfilters \"waf\"\nagent \"echo\" {\n    instances {\n        mode \"warm\"\n    }\n}\n\
                 a2a {\n    default \"scribe\"\n}\npipeline \"p\" {\n    step \"echo\"\n}\n";
    std::fs::write(dir.path().join("wharf.kdl"), fixed).unwrap();
    let out = check_in(dir.path());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("3 agent(s), 2 filter(s); 1 agent block(s), 1 pipeline(s)"),
        "{said}"
    );
}

#[test]
fn check_says_when_there_is_no_file_and_when_the_file_is_kdl_v1() {
    let dir = project(&[]);
    let out = check_in(dir.path());
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("no configuration file `wharf.kdl`"), "{said}");

    std::fs::write(
        dir.path().join("wharf.kdl"),
        "agents \"agents\"\nwatch true\n",
    )
    .unwrap();
    let out = check_in(dir.path());
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("KDL v2"), "{said}");
    assert!(said.contains("`#true`"), "{said}");
}

#[test]
fn inspect_says_whether_and_by_which_key_a_file_is_signed() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| wharf().current_dir(dir.path()).args(args).output().unwrap();
    assert!(run(&["keygen", "release"]).status.success());
    std::fs::copy(guest("echo"), dir.path().join("echo.wasm")).unwrap();
    let text = |out: std::process::Output| String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text(run(&["inspect", "echo.wasm"])).contains("signature: none"));
    let unsigned = run(&["verify", "echo.wasm", "--key", "release.pub"]);
    let said = String::from_utf8_lossy(&unsigned.stderr);
    assert!(said.contains("it is not signed"), "{said}");
    assert!(!said.contains("require-signature"), "{said}");

    assert!(
        run(&["sign", "echo.wasm", "--key", "release.key"])
            .status
            .success()
    );
    assert!(text(run(&["inspect", "echo.wasm"])).contains("signature: signed (give `--key"));
    let by = text(run(&["inspect", "echo.wasm", "--key", "release.pub"]));
    assert!(by.contains("signature: signed by ed25519:"), "{by}");
    let json = run(&["inspect", "--json", "echo.wasm", "--key", "release.pub"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["signature"]["state"], "signed_by");
}

#[test]
fn version_names_the_commit_and_completions_are_printed() {
    let out = wharf().arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(
        version.contains(&format!("(commit {}, built ", wharf::COMMIT)),
        "{version}"
    );
    for shell in ["bash", "zsh", "fish"] {
        let out = wharf().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("wharf") && script.contains("serve"),
            "{shell}"
        );
    }
    let help = wharf().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("RUST_LOG"), "{help}");
    assert!(help.contains("--log-format"), "{help}");
    let bindgen = wharf().args(["bindgen", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&bindgen.stdout).contains("filter-preinit"));
}

/// `wharf serve` in `dir` with its own `wharf.kdl`, output to files.
fn serve(dir: &std::path::Path, extra: &[&str]) -> KillOnDrop {
    let child = wharf()
        .current_dir(dir)
        .args(extra)
        .args(["serve", "-c", "wharf.kdl"])
        .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .unwrap();
    KillOnDrop(child)
}

/// A `wharf.kdl` in `dir` serving `agents/` on `port`, its task store at
/// `tasks` (relative to `dir`), with `more` after it.
fn write_config(dir: &std::path::Path, port: u16, tasks: &str, more: &str) {
    let text = format!(
        "listen \"127.0.0.1:{port}\"\nagents \"agents\"\nfilters #false\ncache {:?}\ntasks {{ path {tasks:?} }}\n{more}",
        test_cache_dir().display().to_string()
    );
    std::fs::write(dir.join("wharf.kdl"), text).unwrap();
}

/// A project of `names` served by `wharf serve` (`args` before `serve`) on
/// a free port with `more` in its configuration, and ready.
struct Served {
    /// Killed first, then the directory goes.
    server: KillOnDrop,
    dir: tempfile::TempDir,
    port: u16,
    base: String,
}

async fn served(names: &[&str], more: &str, args: &[&str]) -> Served {
    let dir = project(names);
    let port = free_port();
    write_config(dir.path(), port, "tasks.db", more);
    let server = serve(dir.path(), args);
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&base).await;
    Served {
        server,
        dir,
        port,
        base,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_names_its_urls_when_ready_and_writes_json_logs() {
    let Served { dir, base, .. } =
        &served(&["echo", "scribe"], "", &["--log-format", "json"]).await;
    let stdout = || std::fs::read_to_string(dir.path().join("stdout")).unwrap();
    wait_until("the ready lines", || async { stdout().contains("Ctrl-C") }).await;
    let ready = stdout();
    assert!(ready.contains(&format!("is serving on {base}")), "{ready}");
    assert!(
        ready.contains(&format!("agent     {base}/agents/echo")),
        "{ready}"
    );
    assert!(
        ready.contains(&format!("(A2A: {base}/a2a/scribe)")),
        "{ready}"
    );
    let logs = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["message"] == "ready" && l["url"] == base.as_str()),
        "{logs}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_port_and_a_held_task_store_are_refused_before_anything_loads() {
    let running = served(&["echo"], "", &[]).await;
    let first = &running.dir;
    let port = running.port;

    // The same port: refused, and nothing was compiled for it.
    let second = project(&["echo"]);
    write_config(second.path(), port, "tasks.db", "");
    let said = refused_start(second.path());
    assert!(
        said.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{said}"
    );

    // Another port, but the first server's task store.
    let store = first.path().join("tasks.db");
    let other = free_port();
    write_config(second.path(), other, &store.display().to_string(), "");
    let said = refused_start(second.path());
    assert!(
        said.contains("in use by another Wharf process (pid "),
        "{said}"
    );
}

/// Runs `wharf serve` in `dir`, which must fail before loading any
/// component; what it said.
fn refused_start(dir: &std::path::Path) -> String {
    let out = wharf()
        .current_dir(dir)
        .args(["serve", "-c", "wharf.kdl"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !said.contains("loaded"),
        "it loaded components first: {said}"
    );
    said
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_ctrl_c_exits_without_waiting_for_the_grace_period() {
    let Served {
        server, dir, base, ..
    } = served(
        &["sleeper"],
        "server {\n    shutdown-grace \"120s\"\n    request-timeout \"120s\"\n}\n\
         agent \"sleeper\" {\n    deadline \"120s\"\n}\n",
        &[],
    )
    .await;
    let pid = server.0.id().to_string();
    // A request that holds its connection for a minute.
    let slow = tokio::spawn({
        let url = format!("{base}/agents/sleeper");
        async move {
            let client = client();
            let req = http::Request::builder()
                .method(http::Method::POST)
                .uri(url)
                .body(http_body_util::Full::new(bytes::Bytes::from("60")))
                .unwrap();
            let _ = client.request(req).await;
        }
    });
    let log = || std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    // Its connection and the one asking are both open.
    wait_until("the slow request under way", || async {
        let text = get(&format!("{base}/metrics")).await.text();
        text.lines()
            .filter_map(|l| l.strip_prefix("wharf_connections_open{listener=\"http\"} "))
            .any(|n| n.parse::<f64>().is_ok_and(|n| n >= 2.0))
    })
    .await;
    let interrupt = || {
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    };
    assert!(interrupt());
    wait_until("the first Ctrl-C logged", || async {
        log().contains("a second Ctrl-C exits at once")
    })
    .await;
    assert!(interrupt());
    let mut server = server;
    let mut status = None;
    for _ in 0..600 {
        status = server.0.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = status.expect("the server exited");
    // 130 is the forced exit; waiting out the request would have exited 0.
    assert_eq!(status.code(), Some(130), "{}", log());
    assert!(log().contains("second signal: exiting"), "{}", log());
    slow.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_trap_is_logged_with_its_instance_once() {
    let Served { dir, base, .. } = &served(&["trap"], "", &[]).await;
    assert_eq!(post(&format!("{base}/agents/trap"), "").await.status, 500);
    let log = || std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    wait_until("the failed request logged", || async {
        log().contains("request failed")
    })
    .await;
    let logged = log();
    let line = logged
        .lines()
        .find(|l| l.contains("request failed"))
        .unwrap();
    // The retry (traps are retried once) logs its own instance instead.
    assert_eq!(line.matches("instance=").count(), 1, "{line}");
    assert!(logged.contains("retrying on a fresh instance"), "{logged}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_start_says_what_it_is_doing() {
    // `describe()` sleeping two seconds makes loading take over a second.
    let slow = "agent \"sleeper\" {\n    config {\n        describe-sleep \"2\"\n    }\n}\n";
    let Served { dir, .. } = &served(&["sleeper"], slow, &[]).await;
    let log = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    assert!(
        log.contains("loading the agents directory (compiling components"),
        "{log}"
    );
    assert!(log.contains("loaded `sleeper` (1/1) in "), "{log}");
    assert!(
        log.contains("loading the agents directory: done in "),
        "{log}"
    );
}
