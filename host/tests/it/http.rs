//! The HTTP transport over real sockets: routing, the agent call path,
//! listing, limits, h2c, timeouts and the connection limit.

use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::*;

const HELLO_CONFIG: &str = r#"
agent "hello" {
    config {
        greeting "Ahoy"
    }
}
agent "small" {
    request-body "1KiB"
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn echo_returns_body_and_headers() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "")).await;
    let reply = send(
        &client(),
        Method::PUT,
        &server.url("/agents/echo/some/path?q=1"),
        &[("x-trace", "abc"), ("x-multi", "one")],
        "hello",
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.text(), "hello");
    assert_eq!(reply.headers["x-trace"], "abc");
    assert_eq!(reply.headers["x-multi"], "one");
    assert!(reply.headers.contains_key("x-request-id"));
    // The host owns framing: the echoed content-length is the real one.
    assert_eq!(reply.headers["content-length"], "5");
}

#[tokio::test(flavor = "multi_thread")]
async fn echo_handles_empty_large_and_binary_bodies() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "")).await;
    let url = server.url("/agents/echo");
    let binary: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
    for body in [Vec::new(), vec![0u8], binary] {
        let reply = post(&url, body.clone()).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body.as_ref(), body.as_slice());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn hello_reads_its_config_value() {
    let dir = agents_dir(&["hello"]);
    let server = Server::start(config(dir.path(), HELLO_CONFIG)).await;
    let reply = post(&server.url("/agents/hello"), "Ishmael").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.text(), "Ahoy, Ishmael!\n");
    assert_eq!(reply.headers["content-type"], "text/plain; charset=utf-8");
    // A guest error variant becomes its status, with the guest's text.
    let reply = post(&server.url("/agents/hello"), vec![0xff, 0xfe]).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.error_code(), "bad_request");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("UTF-8")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_agents_with_card_digest_and_world() {
    let dir = agents_dir(&["echo", "hello"]);
    let server = Server::start(config(dir.path(), "")).await;
    let reply = get(&server.url("/agents")).await;
    assert_eq!(reply.status, StatusCode::OK);
    let list = reply.json();
    let list = list.as_array().unwrap();
    let names: Vec<&str> = list.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "hello"]);
    let echo = &list[0];
    assert_eq!(echo["world"], "agent");
    assert_eq!(echo["card"]["name"], "echo");
    assert_eq!(echo["card"]["skills"][0]["id"], "echo");
    let bytes = std::fs::read(guest("echo")).unwrap();
    let expected = format!(
        "sha256:{}",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes))
    );
    assert_eq!(echo["digest"], expected.as_str());
    assert_eq!(echo["size"], bytes.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn healthz_and_unknown_routes() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "")).await;
    let reply = get(&server.url("/healthz")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["status"], "ok");

    let reply = post(&server.url("/agents/nobody"), "x").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.error_code(), "agent_not_found");

    let reply = get(&server.url("/elsewhere")).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.error_code(), "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn body_over_the_limit_is_413_and_the_host_keeps_serving() {
    let dir = agents_dir(&["echo"]);
    std::fs::copy(guest("echo"), dir.path().join("small.wasm")).unwrap();
    let server = Server::start(config(dir.path(), HELLO_CONFIG)).await;
    let url = server.url("/agents/small");

    // Declared length over the limit.
    let reply = post(&url, vec![b'a'; 2048]).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(reply.error_code(), "body_too_large");

    // No declared length (chunked): refused while streaming.
    let mut stream = TcpStream::connect(server.base.trim_start_matches("http://"))
        .await
        .unwrap();
    let chunk = "a".repeat(600);
    let raw = format!(
        "POST /agents/small HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n\
         258\r\n{chunk}\r\n258\r\n{chunk}\r\n0\r\n\r\n"
    );
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut head = vec![0u8; 64];
    let n = stream.read(&mut head).await.unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 413"));

    // At the limit it passes, and other agents are unaffected.
    let reply = post(&url, vec![b'a'; 1024]).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        post(&server.url("/agents/echo"), vec![b'a'; 4096])
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn h2c_prior_knowledge_is_served() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "")).await;
    let client = h2c_client();
    let url = server.url("/agents/echo");
    let replies = futures_join(&client, &url, 8).await;
    for (i, reply) in replies.into_iter().enumerate() {
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.text(), format!("stream {i}"));
    }
}

async fn futures_join(client: &HttpClient, url: &str, n: usize) -> Vec<Reply> {
    let mut tasks = Vec::new();
    for i in 0..n {
        let client = client.clone();
        let url = url.to_string();
        tasks.push(tokio::spawn(async move {
            send(
                &client,
                Method::POST,
                &url,
                &[],
                Bytes::from(format!("stream {i}")),
            )
            .await
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn non_ascii_paths_reach_the_guest_encoded() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "")).await;
    let reply = post(&server.url("/agents/echo/caf%C3%A9/%E2%9C%93"), "ok").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.text(), "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_request_heads_are_cut_off() {
    let dir = agents_dir(&["echo"]);
    let kdl = "server { header-timeout \"300ms\" }";
    let server = Server::start(config(dir.path(), kdl)).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    // Never finish the head: the server must close the connection itself.
    let mut buf = [0u8; 256];
    let read = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf))
        .await
        .expect("the server closes a connection whose head never completes");
    let n = read.unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(
        n == 0 || text.starts_with("HTTP/1.1 408"),
        "unexpected reply: {text}"
    );
    // And keeps serving others.
    assert_eq!(get(&server.url("/healthz")).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_requests_get_400_and_the_host_keeps_serving() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "")).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream.write_all(b"NOT HTTP AT ALL\r\n\r\n").await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut buf)).await;
    assert!(String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 400"));
    assert_eq!(
        post(&server.url("/agents/echo"), "still here").await.text(),
        "still here"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn at_the_limit_idle_connections_make_room_and_busy_ones_do_not() {
    let dir = agents_dir(&["echo"]);
    let kdl = "server { connections 2; request-timeout \"30s\" }";
    let server = Server::start(config(dir.path(), kdl)).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    // Two idle keep-alive connections hold both slots: a third client is
    // served all the same, and the idlest connection is closed.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 512];
        let n = s.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        held.push(s);
    }
    let reply = tokio::time::timeout(Duration::from_secs(10), get(&server.url("/healthz")))
        .await
        .expect("an idle connection makes room");
    assert_eq!(reply.status, StatusCode::OK);
    let mut buf = [0u8; 16];
    let closed = tokio::time::timeout(Duration::from_secs(10), held[0].read(&mut buf))
        .await
        .expect("the idlest connection is closed");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    drop(held);

    // Two connections in the middle of a request (uploading a body) are
    // busy: a third waits until one of them finishes.
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(
            b"POST /agents/echo HTTP/1.1\r\nhost: x\r\ncontent-length: 20\r\n\r\n0123456789",
        )
        .await
        .unwrap();
        busy.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let url = server.url("/healthz");
    let waiting = tokio::spawn(async move { get(&url).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "a busy connection was closed to make room"
    );
    busy[0].write_all(b"abcdefghij").await.unwrap();
    let mut buf = vec![0u8; 1024];
    let n = busy[0].read(&mut buf).await.unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("0123456789abcdefghij"),
        "{answer}"
    );
    let reply = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("served once a connection is idle")
        .unwrap();
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_that_never_finishes_gets_408_and_the_host_keeps_serving() {
    let dir = agents_dir(&["echo"]);
    let kdl = "server { request-timeout \"400ms\" }";
    let server = Server::start(config(dir.path(), kdl)).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    // Promise 100 bytes, send 10, then stall.
    stream
        .write_all(
            b"POST /agents/echo HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n0123456789",
        )
        .await
        .unwrap();
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf))
        .await
        .expect("the server answers a stalled body")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("request_timeout"), "{text}");
    assert_eq!(
        post(&server.url("/agents/echo"), "next").await.text(),
        "next"
    );
}
