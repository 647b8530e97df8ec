//! The `wharf` binary: `check`, `inspect`, and `serve --agents --listen`
//! serving exactly the components in a directory.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;

fn wharf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wharf"))
}

#[test]
fn check_accepts_a_valid_file_and_rejects_an_invalid_one() {
    let dir = tempfile::tempdir().unwrap();
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
    assert!(report["fits"].as_str().unwrap().contains("fits neither"));

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
    let mut ready = false;
    for _ in 0..600 {
        let probe = client().get(format!("{base}/healthz").parse().unwrap());
        if let Ok(Ok(resp)) = tokio::time::timeout(Duration::from_secs(1), probe).await
            && resp.status() == 200
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "wharf serve did not become ready");
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

/// Kills the server even when an assertion fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
