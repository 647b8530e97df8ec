//! What an A2A request costs the host before any filter runs, measured on a
//! real `wharf serve` process (its peak resident memory, `VmHWM`) at the
//! default limits: a message of hundreds of thousands of empty parts, over
//! each binding, is refused from its bytes, before a value or a typed
//! message is built from it; and the host keeps serving.

use std::time::Duration;

use bytes::Bytes;
use http::Method;
use http_body_util::{BodyExt, Full};
use prost::Message as _;
use wharf_a2a_proto::v1;

use crate::cli::{KillOnDrop, wait_ready};
use crate::common::*;
use crate::kept::{free_port, serve_keeping_with};

/// The process's peak resident memory so far, in bytes.
fn peak(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kb * 1024
}

/// `wharf serve` with the `scribe` A2A agent, at the default limits.
fn serve(dir: &std::path::Path, port: u16) -> KillOnDrop {
    std::fs::create_dir_all(dir.join("agents")).unwrap();
    std::fs::copy(guest("scribe"), dir.join("agents/scribe.wasm")).unwrap();
    serve_keeping_with(dir, port, "a2a { default \"scribe\" }")
}

/// Sends `hello` to `scribe` over JSON-RPC and checks the task completed.
async fn send_hello(base: &str, headers: &[(&str, &str)], body: String) {
    let sent = send(
        &client(),
        Method::POST,
        &format!("{base}/a2a/scribe"),
        headers,
        body,
    )
    .await;
    assert_eq!(
        sent.json()["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{}",
        sent.text()
    );
}

/// A JSON message of `n` empty parts.
fn empty_parts(n: usize) -> String {
    let parts = vec!["{}"; n].join(",");
    format!(r#"{{"messageId":"m1","role":"ROLE_USER","parts":[{parts}]}}"#)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_empty_parts_costs_a_few_times_its_bytes_on_every_binding() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = serve(dir.path(), port);
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&base).await;
    let pid = server.0.id();
    let json = [("content-type", "application/json"), ("a2a-version", "1.0")];
    // Warm: one real send over each JSON binding, so what follows measures
    // only the floods.
    let ok = empty_parts(0).replace("[]", r#"[{"text":"hello"}]"#);
    let rpc = |message: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{{"message":{message}}}}}"#
        )
    };
    send_hello(&base, &json, rpc(&ok)).await;
    let before = peak(pid);

    // JSON-RPC: 6 MB of empty parts (about 940 MiB before the bounds).
    let body = rpc(&empty_parts(2_000_000));
    assert!(body.len() > 6_000_000);
    let reply = send(
        &client(),
        Method::POST,
        &format!("{base}/a2a/scribe"),
        &json,
        body.clone(),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["error"]["code"], -32602, "{}", reply.text());
    assert_eq!(reply.json()["id"], 7, "the id is read back unbuilt");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("256")
    );

    // HTTP+JSON: the same message.
    let body = format!(r#"{{"message":{}}}"#, empty_parts(2_000_000));
    let reply = send(
        &client(),
        Method::POST,
        &format!("{base}/a2a/scribe/message:send"),
        &json,
        body,
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.text());

    // gRPC: 4 MB of 2,000,000 empty parts (729 MiB before the bounds).
    let message = v1::SendMessageRequest {
        tenant: "scribe".into(),
        message: Some(v1::Message {
            message_id: "m2".into(),
            role: v1::Role::User as i32,
            parts: vec![v1::Part::default(); 2_000_000],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    let mut framed = vec![0];
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(&message);
    drop(message);
    let req = http::Request::builder()
        .method(Method::POST)
        .uri(format!("{base}/lf.a2a.v1.A2AService/SendMessage"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("a2a-version", "1.0")
        .body(Full::new(Bytes::from(framed)))
        .unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(120), h2c_client().request(req))
        .await
        .expect("answered")
        .expect("answered at the HTTP level");
    let (head, body) = resp.into_parts();
    let collected = body.collect().await.unwrap();
    let trailers = collected.trailers().cloned().unwrap_or_default();
    let status = trailers
        .get("grpc-status")
        .or_else(|| head.headers.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert_eq!(
        status, "3",
        "INVALID_ARGUMENT; {:?} {:?}",
        head.headers, trailers
    );

    let rise = peak(pid).saturating_sub(before);
    println!(
        "peak resident memory rose {} KiB over the three floods",
        rise >> 10
    );
    // Each flood's body is 4 to 6 MB; without the bounds one alone built
    // 729 to 940 MiB. What is left is the bodies themselves, in flight.
    assert!(rise < 64 << 20, "peak memory rose {} MiB", rise >> 20);

    // And the host serves as before.
    send_hello(&base, &json, rpc(&ok)).await;
    drop(server);
}
