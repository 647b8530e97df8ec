//! The `wharf` binary: `check`, `inspect`, `keygen`/`sign`/`verify`,
//! `serve --agents --listen` serving exactly the components in a
//! directory, and SIGHUP reloading a running `serve`.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;

pub(crate) fn wharf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wharf"))
}

#[test]
fn check_accepts_a_valid_file_and_rejects_an_invalid_one() {
    let dir = tempfile::tempdir().unwrap();
    // `check` reads the agents directory the file names (here the default).
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    let good = dir.path().join("good.kdl");
    std::fs::write(
        &good,
        "listen \"127.0.0.1:9000\"\nlimits { memory \"32MiB\" }\n",
    )
    .unwrap();
    let out = wharf().arg("check").arg(&good).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok"));

    let bad = dir.path().join("bad.kdl");
    std::fs::write(
        &bad,
        "listen \"nowhere\"\nlimits { memory #true }\nport 80\n",
    )
    .unwrap();
    let out = wharf().arg("check").arg(&bad).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`nowhere` is not a socket address"),
        "{stderr}"
    );
    assert!(stderr.contains("`memory` expects a size"), "{stderr}");
    assert!(stderr.contains("unknown node `port`"), "{stderr}");
}

#[test]
fn inspect_reports_world_digest_imports_and_exports() {
    let out = wharf().arg("inspect").arg(guest("hello")).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("world:   agent"), "{text}");
    assert!(text.contains("digest:  sha256:"), "{text}");
    assert!(text.contains("wharf:plugin/host@0.2.0"), "{text}");
    assert!(text.contains("handle"), "{text}");

    let out = wharf()
        .arg("inspect")
        .arg(guest("scribe"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("world:   a2a-agent"), "{text}");
    assert!(text.contains("wharf:plugin/a2a@0.2.0"), "{text}");

    let out = wharf()
        .args(["inspect", "--json"])
        .arg(guest("shapes"))
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a component that fits no world is not servable"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["world"].is_null());
    assert!(
        report["fits"]
            .as_str()
            .unwrap()
            .contains("fits none of the agent world")
    );

    let dir = tempfile::tempdir().unwrap();
    let core = dir.path().join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").unwrap();
    let out = wharf().arg("inspect").arg(&core).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a component"));
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_with_agents_and_listen_serves_exactly_that_directory() {
    // The embedded default's chain names the shipped `headers` and `waf`.
    let dir = agents_dir(&["echo", "trap", "headers", "waf"]);
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let empty = tempfile::tempdir().unwrap();
    let child = wharf()
        .current_dir(empty.path())
        // The default task store goes under the data directory: a throwaway one.
        .env("XDG_DATA_HOME", empty.path())
        .arg("serve")
        .arg("--agents")
        .arg(dir.path())
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(empty.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let _guard = KillOnDrop(child);
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&base).await;
    let list = get(&format!("{base}/agents")).await.json();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "trap", "headers", "waf"]);
    let reply = post(&format!("{base}/agents/echo"), "hello").await;
    assert_eq!(reply.text(), "hello");
    assert_eq!(reply.headers["x-content-type-options"], "nosniff");

    // The embedded default runs its filter chain: an SQL injection gets a
    // JSON 403 naming the rule, and the audit line goes to stderr.
    let reply = get(&format!("{base}/agents/echo?q=1%27%20OR%20%271%27=%271")).await;
    assert_eq!(reply.status, 403, "{}", reply.text());
    let rules = reply.json()["error"]["rule_ids"].clone();
    assert!(
        rules.as_array().unwrap().contains(&"910400".into()),
        "{rules}"
    );
    let id = reply.headers["x-request-id"].to_str().unwrap().to_string();
    let mut audit = None;
    for _ in 0..200 {
        let text = std::fs::read_to_string(empty.path().join("stderr")).unwrap();
        audit = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|l| l["request_id"] == id.as_str());
        if audit.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let audit = audit.expect("an audit line on stderr");
    assert_eq!(audit["verdicts"][0]["filter"], "waf");
    assert_eq!(audit["status"], 403);
}

#[test]
fn keygen_sign_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| wharf().current_dir(dir.path()).args(args).output().unwrap();
    assert!(run(&["keygen", "release"]).status.success());
    assert!(run(&["keygen", "other"]).status.success());
    let again = run(&["keygen", "release"]);
    assert!(!again.status.success(), "an existing key was overwritten");
    std::fs::copy(guest("echo"), dir.path().join("echo.wasm")).unwrap();
    let unsigned = run(&["verify", "echo.wasm", "--key", "release.pub"]);
    assert!(!unsigned.status.success());
    assert!(String::from_utf8_lossy(&unsigned.stderr).contains("not signed"));

    let signed = run(&["sign", "echo.wasm", "--key", "release.key"]);
    assert!(
        signed.status.success(),
        "{}",
        String::from_utf8_lossy(&signed.stderr)
    );
    let good = run(&[
        "verify",
        "echo.wasm",
        "--key",
        "other.pub",
        "--key",
        "release.pub",
    ]);
    assert!(
        good.status.success(),
        "{}",
        String::from_utf8_lossy(&good.stderr)
    );
    assert!(String::from_utf8_lossy(&good.stdout).contains("good signature by ed25519:"));
    let wrong = run(&["verify", "echo.wasm", "--key", "other.pub"]);
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("bad signature"));
    // The signed component still inspects as an agent.
    let inspect = run(&["inspect", "echo.wasm"]);
    assert!(
        inspect.status.success(),
        "{}",
        String::from_utf8_lossy(&inspect.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_configuration_and_the_agents() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    std::fs::copy(guest("hello"), dir.path().join("agents/hello.wasm")).unwrap();
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let write_config = |greeting: &str| {
        let text = format!(
            "listen \"127.0.0.1:{port}\"\nagents \"agents\"\nwatch #false\ncache {:?}\ntasks {{ path \"tasks.db\" }}\nagent \"hello\" {{ config {{ greeting {greeting:?} }} }}\n",
            test_cache_dir().display().to_string()
        );
        std::fs::write(dir.path().join("wharf.kdl"), text).unwrap();
    };
    write_config("Ahoy");
    let child = wharf()
        .current_dir(dir.path())
        .args(["serve", "-c", "wharf.kdl"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let _guard = KillOnDrop(child);
    let base = format!("http://127.0.0.1:{port}");
    let hello = |base: String| async move { post(&format!("{base}/agents/hello"), "Ann").await };
    wait_ready(&base).await;
    assert_eq!(hello(base.clone()).await.text(), "Ahoy, Ann!\n");

    // With `watch #false`, changes wait for SIGHUP.
    write_config("Hi");
    std::fs::copy(guest("echo"), dir.path().join("agents/echo.wasm")).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hello(base.clone()).await.text(), "Ahoy, Ann!\n");
    let hup = Command::new("kill").args(["-HUP", &pid]).status().unwrap();
    assert!(hup.success());
    wait_until("SIGHUP reloading the configuration", || async {
        hello(base.clone()).await.text() == "Hi, Ann!\n"
    })
    .await;
    assert_eq!(post(&format!("{base}/agents/echo"), "e").await.text(), "e");

    // A configuration with errors: every problem logged, nothing changed.
    std::fs::write(
        dir.path().join("wharf.kdl"),
        "listen 8080\nlimits { deadline \"soon\" }\n",
    )
    .unwrap();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let stderr = dir.path().join("stderr");
    let log = || std::fs::read_to_string(&stderr).unwrap();
    wait_until("the bad configuration refused in the log", || async {
        log().contains("the configuration was not reloaded")
    })
    .await;
    let logged = log();
    assert!(
        logged.contains("wharf.kdl:1:8"),
        "each problem is logged with its place: {logged}"
    );
    assert!(logged.contains("wharf.kdl:2:19"), "{logged}");
    assert_eq!(hello(base.clone()).await.text(), "Hi, Ann!\n");
}

/// Waits (up to a minute) for a `wharf serve` at `base` to answer `/healthz`.
pub(crate) async fn wait_ready(base: &str) {
    for _ in 0..600 {
        let probe = client().get(format!("{base}/healthz").parse().unwrap());
        if let Ok(Ok(resp)) = tokio::time::timeout(Duration::from_secs(1), probe).await
            && resp.status() == 200
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("wharf serve did not become ready");
}

/// Kills the server even when an assertion fails.
pub(crate) struct KillOnDrop(pub(crate) std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
