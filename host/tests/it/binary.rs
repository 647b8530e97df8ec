//! The binary transport over real sockets: the Python client (the `msgpack`
//! package) drives a Unix socket and TCP through the same filters and
//! routes as HTTP; socket files are replaced only when stale.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::common::*;

fn binary_config(dir: &Path, socket: &Path, extra: &str) -> wharf::config::Config {
    let kdl = format!(
        r#"
        filters "headers" "waf"
        binary {{
            unix "{}" {{ mode "600" }}
            tcp "127.0.0.1:0"
            in-flight 8
        }}
        agent "spin" {{ deadline "300ms"; retries 0 }}
        pipeline "echo-twice" {{ sequential {{ step "echo"; step "echo"; }} }}
        agent "counter" {{
            instances {{ mode "warm"; max 2 }}
            affinity {{ header "x-session-id" }}
        }}
        {extra}
        "#,
        socket.display()
    );
    config(dir, &kdl)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_drives_the_binary_transport() {
    let dir = agents_dir(&["echo", "counter", "spin", "headers", "waf"]);
    let sockets = tempfile::tempdir().unwrap();
    let socket = sockets.path().join("wharf.sock");
    let kept = r#"topic "binary.kept" { keep 10; }"#;
    let server = Server::start(binary_config(dir.path(), &socket, kept)).await;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o777,
        0o600,
        "the socket's mode is the configured one"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/binary/binary_client.py");
    let mut cmd = Command::new(client_python());
    cmd.arg(script)
        .arg(&socket)
        .arg(server.binary_tcp.expect("a TCP listener").to_string())
        .arg(&server.base);
    run_client(cmd, "the binary transport's Python client").await;
    // HTTP kept serving alongside, and the socket file goes with the server.
    assert_eq!(
        post(&server.url("/agents/echo"), "http").await.text(),
        "http"
    );
    server.stop().await;
    assert!(!socket.exists(), "the socket file is removed at shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_files_are_replaced_only_when_stale() {
    let dir = agents_dir(&["echo"]);
    let sockets = tempfile::tempdir().unwrap();

    // A socket file nobody listens on (a crashed run) is replaced.
    let stale = sockets.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let server = Server::start(binary_config(dir.path(), &stale, "")).await;

    // One a running Wharf listens on is not taken over.
    let engine = test_engine();
    let alone = |socket: &Path| {
        let mut config = binary_config(dir.path(), socket, "");
        config.tasks.path = Some(sockets.path().join("tasks.db"));
        config
    };
    let err = match wharf::app::App::start(alone(&stale), engine).await {
        Ok(_) => panic!("a second server took over a live socket"),
        Err(err) => err.to_string(),
    };
    assert!(err.contains("in use"), "{err}");
    server.stop().await;

    // Any other file is never replaced.
    let file = sockets.path().join("notes.txt");
    std::fs::write(&file, "keep me").unwrap();
    let err = match wharf::app::App::start(alone(&file), engine).await {
        Ok(_) => panic!("a regular file was replaced by a socket"),
        Err(err) => err.to_string(),
    };
    assert!(err.contains("is not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
}
