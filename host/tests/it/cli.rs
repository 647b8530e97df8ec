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
    assert!(text.contains("wharf:plugin/host@0.1.0"), "{text}");
    assert!(text.contains("handle"), "{text}");

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
    let dir = agents_dir(&["echo", "trap"]);
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let empty = tempfile::tempdir().unwrap();
    let child = wharf()
        .current_dir(empty.path())
        .arg("serve")
        .arg("--agents")
        .arg(dir.path())
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
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
    assert_eq!(names, ["echo", "trap"]);
    assert_eq!(
        post(&format!("{base}/agents/echo"), "hello").await.text(),
        "hello"
    );
}

/// Kills the server even when an assertion fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
