//! The defenses `docs/security.md` states, each shown over real sockets:
//! A2A tasks scoped to their caller, their retention and per-caller cap;
//! body, stream and memory budgets a client cannot exceed; deadlines a
//! guest blocked in a host call cannot outlive; the Unix socket's mode;
//! HTTP/2 flood limits.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::a2a::{JSON, V1, call, rpc, send_params};
use crate::common::*;

/// scribe behind `auth` with two API keys, `alice` and `bob`.
async fn two_callers(dir: &std::path::Path) -> Server {
    let kdl = format!(
        "filters \"auth\"\n\
         filter \"auth\" {{ config {{ api-keys \"alice:{} bob:{}\" }} }}\n\
         push {{ allow \"127.0.0.1\" }}\n",
        sha256_hex(b"k-alice"),
        sha256_hex(b"k-bob"),
    );
    Server::start(config(dir, &kdl)).await
}

/// A JSON-RPC call as `key`'s holder; the reply's `result` or `error`.
async fn as_caller(server: &Server, key: &str, method: &str, params: Value) -> Value {
    let reply = rpc(
        server,
        "scribe",
        &[V1, JSON, ("x-api-key", key)],
        &call(method, params),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json()
}

#[tokio::test(flavor = "multi_thread")]
async fn a2a_tasks_are_reached_only_by_the_caller_that_made_them() {
    let dir = agents_dir(&["scribe", "auth"]);
    let server = two_callers(dir.path()).await;
    // Alice's task waits for input, with a webhook that has credentials.
    let made = as_caller(&server, "k-alice", "SendMessage", send_params("  ")).await;
    let task = made["result"]["task"].clone();
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{made}"
    );
    let id = task["id"].as_str().unwrap().to_string();
    let hook = json!({
        "taskId": id, "id": "h1", "url": "http://127.0.0.1:9/hook",
        "authentication": {"scheme": "Bearer", "credentials": "s3cret"}
    });
    let created = as_caller(&server, "k-alice", "CreateTaskPushNotificationConfig", hook).await;
    assert_eq!(created["result"]["id"], "h1", "{created}");
    assert!(!created.to_string().contains("s3cret"), "{created}");

    // Bob gets for her task exactly what he gets for one that does not
    // exist, by every method.
    let by_id = |id: &str| {
        [
            ("GetTask", json!({"id": id})),
            ("CancelTask", json!({"id": id})),
            ("SubscribeToTask", json!({"id": id})),
            ("SendMessage", {
                let mut p = send_params("take it over");
                p["message"]["taskId"] = json!(id);
                p
            }),
            (
                "GetTaskPushNotificationConfig",
                json!({"taskId": id, "id": "h1"}),
            ),
            ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
            (
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": id, "id": "h1"}),
            ),
            (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "url": "http://127.0.0.1:9/bob"}),
            ),
        ]
    };
    let unknown = "00000000-0000-0000-0000-000000000000";
    for ((method, params), (_, absent)) in by_id(&id).into_iter().zip(by_id(unknown)) {
        let theirs = as_caller(&server, "k-bob", method, params).await;
        let none = as_caller(&server, "k-bob", method, absent).await;
        assert_eq!(theirs["error"]["code"], -32001, "{method}: {theirs}");
        let shown = theirs.to_string().replace(&id, unknown);
        assert_eq!(
            shown,
            none.to_string(),
            "{method}: existence is not revealed"
        );
    }
    let listed = as_caller(&server, "k-bob", "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    assert_eq!(listed["result"]["tasks"], json!([]));
    let rest = send(
        &client(),
        Method::GET,
        &server.url(&format!("/a2a/scribe/tasks/{id}")),
        &[V1, ("x-api-key", "k-bob")],
        "",
    )
    .await;
    assert_eq!(rest.status, StatusCode::NOT_FOUND, "{}", rest.text());

    // Alice still has her task, her webhook (without its credentials), and
    // can go on with it.
    let listed = as_caller(&server, "k-alice", "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 1, "{listed}");
    for (method, params) in [
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "h1"}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
    ] {
        let seen = as_caller(&server, "k-alice", method, params).await;
        assert!(seen.get("result").is_some(), "{method}: {seen}");
        assert!(seen.to_string().contains("Bearer"), "{method}: {seen}");
        assert!(!seen.to_string().contains("s3cret"), "{method}: {seen}");
    }
    let mut next = send_params("now write this");
    next["message"]["taskId"] = json!(id);
    let done = as_caller(&server, "k-alice", "SendMessage", next).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    // Bob's own task is his alone.
    let his = as_caller(&server, "k-bob", "SendMessage", send_params("mine")).await;
    let his_id = his["result"]["task"]["id"].as_str().unwrap().to_string();
    let peek = as_caller(&server, "k-alice", "GetTask", json!({"id": his_id})).await;
    assert_eq!(peek["error"]["code"], -32001, "{peek}");
    let listed = as_caller(&server, "k-bob", "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 1, "{listed}");
    server.stop().await;
}

/// Sends `head` alone on a fresh connection and reads the status line of
/// the answer, which must come without any body having been sent.
async fn status_line_before_any_body(server: &Server, head: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 256];
    // The host's own read timeout is 60 s (it would answer 408 then).
    let n = tokio::time::timeout(std::time::Duration::from_secs(30), stream.read(&mut buf))
        .await
        .expect("an answer while the body is still unsent")
        .unwrap();
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declared_length_past_the_limit_is_refused_at_once() {
    let dir = agents_dir(&["echo", "scribe"]);
    let server = Server::start(config(dir.path(), "")).await;
    for (path, extra) in [
        ("/agents/echo", ""),
        (
            "/a2a/scribe",
            "a2a-version: 1.0\r\ncontent-type: application/json\r\n",
        ),
    ] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\n{extra}content-length: 999999999999\r\n\r\n"
        );
        let status = status_line_before_any_body(&server, &head).await;
        assert!(status.starts_with("HTTP/1.1 413"), "{path}: {status}");
    }
    assert_eq!(post(&server.url("/agents/echo"), "ok").await.text(), "ok");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_unix_socket_appears_with_its_mode_already_set() {
    use notify_debouncer_mini::notify::{
        self, EventKind, RecursiveMode, Watcher, event::ModifyKind,
    };
    use std::os::unix::fs::PermissionsExt;
    let dir = agents_dir(&["echo"]);
    let sockets = tempfile::tempdir().unwrap();
    let socket = sockets.path().join("wharf.sock");
    // Every event the kernel reports in the socket's directory, in order.
    let (tx, rx) = std::sync::mpsc::channel();
    let mut watcher = notify::recommended_watcher(tx).unwrap();
    watcher
        .watch(sockets.path(), RecursiveMode::NonRecursive)
        .unwrap();
    let kdl = format!(
        "binary {{ unix \"{}\" {{ mode \"600\" }} }}\n",
        socket.display()
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    drop(watcher);
    // Made at the socket's path, it would be there (with the umask's mode)
    // until a chmod: it must arrive there whole, renamed into place.
    let at_path: Vec<EventKind> = rx
        .try_iter()
        .map(Result::unwrap)
        .filter(|e| e.paths.iter().any(|p| p == &socket))
        .map(|e| e.kind)
        .collect();
    assert!(
        at_path
            .iter()
            .any(|k| matches!(k, EventKind::Modify(ModifyKind::Name(_)))),
        "{at_path:?}"
    );
    assert!(
        !at_path.iter().any(|k| matches!(k, EventKind::Create(_))),
        "the socket was created at its path: {at_path:?}"
    );
    let left: Vec<_> = std::fs::read_dir(sockets.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        [std::ffi::OsString::from("wharf.sock")],
        "nothing else is left"
    );
    assert_eq!(post(&server.url("/agents/echo"), "ok").await.text(), "ok");
    server.stop().await;
}

/// How long `f` took, and what it answered.
async fn timed<T>(f: impl std::future::Future<Output = T>) -> (std::time::Duration, T) {
    let began = std::time::Instant::now();
    let out = f.await;
    (began.elapsed(), out)
}

/// Each guest below sleeps 30 s in a host call under a 1 s deadline; had
/// the deadline not held, the answer would take the 30 s.
const SLEPT_THROUGH: std::time::Duration = std::time::Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread")]
async fn a_guest_blocked_in_a_host_call_ends_at_its_deadline() {
    let dir = agents_dir(&["sleeper", "scribe", "echo", "probe"]);
    copy_guest(dir.path(), "sleeper", "drowsy");
    let kdl = "agent \"sleeper\" { deadline \"1s\"; retries 0 }\n\
               agent \"scribe\" { deadline \"1s\" }\n\
               agent \"echo\" { filters \"probe\" }\n\
               filter \"probe\" { deadline \"1s\" }\n\
               agent \"drowsy\" { deadline \"1s\"; config { describe-sleep \"30\" } }\n\
               agent \"dozy\" { deadline \"1s\"; config { describe-sleep \"2\" } }\n";
    copy_guest(dir.path(), "sleeper", "dozy");
    let server = Server::start(config(dir.path(), kdl)).await;

    // A component whose describe() sleeps is refused at load, in time: the
    // load-time call gets its deadline or `LOAD_DEADLINE`, whichever is
    // longer, so one that is only slow to start (2 s) still loads.
    let refused = &server.pipeline().registry().snapshot().refused;
    let why = format!("{refused:?}");
    assert!(why.contains("drowsy") && why.contains("deadline"), "{why}");
    assert!(!why.contains("dozy"), "{why}");
    assert_eq!(post(&server.url("/agents/dozy"), "0").await.text(), "awake");

    // An agent's call: 504 at the deadline.
    let timed_out = |(took, reply): (std::time::Duration, Reply)| {
        assert_eq!(
            reply.status,
            StatusCode::GATEWAY_TIMEOUT,
            "{}",
            reply.text()
        );
        assert!(took < SLEPT_THROUGH, "answered after {took:?}");
    };
    timed_out(timed(post(&server.url("/agents/sleeper"), "30")).await);

    // A filter's phase: the request fails as the filter's deadline says.
    timed_out(
        timed(send(
            &client(),
            Method::POST,
            &server.url("/agents/echo"),
            &[("x-probe-probe", "rh:sleep:30")],
            "x",
        ))
        .await,
    );

    // An A2A turn: the task fails, naming its deadline.
    let (took, made) = timed(rpc(
        &server,
        "scribe",
        &[V1, JSON],
        &call("SendMessage", send_params("sleep 30")),
    ))
    .await;
    let task = made.json()["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{task}");
    assert!(took < SLEPT_THROUGH, "answered after {took:?}");

    // Nothing was held: the same agents answer at once.
    assert_eq!(
        post(&server.url("/agents/sleeper"), "0").await.text(),
        "awake"
    );
    let reply = send(
        &client(),
        Method::POST,
        &server.url("/agents/echo"),
        &[],
        "ok",
    )
    .await;
    assert_eq!(reply.text(), "ok");
    server.stop().await;
}

/// A client whose connections come from `ip` (any of 127.0.0.0/8 reaches
/// the server on loopback).
fn client_from(ip: &str) -> HttpClient {
    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
    connector.set_local_address(Some(ip.parse().unwrap()));
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build(connector)
}

#[tokio::test(flavor = "multi_thread")]
async fn long_lived_streams_have_a_budget_that_cannot_starve_requests() {
    let dir = agents_dir(&["echo"]);
    let kdl = "server { connections 8; streams 4; streams-per-client 2 }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let watch = |ip: &'static str| {
        let url = server.url("/topics/news.%3E");
        async move { open(&client_from(ip), Method::GET, &url, "").await }
    };
    let a1 = watch("127.0.0.1").await;
    let a2 = watch("127.0.0.1").await;
    assert_eq!((a1.status(), a2.status()), (StatusCode::OK, StatusCode::OK));
    // Past a client's share: 429 at once, with when to come back.
    let a3 = watch("127.0.0.1").await;
    assert_eq!(a3.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(a3.headers().contains_key("retry-after"));
    let b1 = watch("127.0.0.2").await;
    let b2 = watch("127.0.0.2").await;
    assert_eq!((b1.status(), b2.status()), (StatusCode::OK, StatusCode::OK));
    // Past the host's budget: 503 at once.
    let c1 = watch("127.0.0.3").await;
    assert_eq!(c1.status(), StatusCode::SERVICE_UNAVAILABLE);
    drop((a3, c1));
    // Four streams hold four of the eight connections; requests still
    // find the rest, four of them at once.
    let calls = (0..4).map(|i| {
        let url = server.url("/agents/echo");
        async move {
            send(
                &client_from("127.0.0.3"),
                Method::POST,
                &url,
                &[],
                format!("r{i}"),
            )
            .await
        }
    });
    for (i, reply) in futures_util::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(reply.text(), format!("r{i}"));
    }
    // A stream that ends gives its place back.
    drop(a1);
    wait_until("a place freed", || async {
        watch("127.0.0.3").await.status() == StatusCode::OK
    })
    .await;
    drop((a2, b1, b2));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_that_never_reads_holds_bounded_memory_and_is_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = agents_dir(&["echo"]);
    let kdl = "server { write-timeout \"1s\"; streams-per-client 1 }\n\
               topics { max-payload \"4MiB\" }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let addr: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    // A watcher with a small receive window that reads the head and then
    // nothing more.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(addr).await.unwrap();
    stalled
        .write_all(b"GET /topics/big HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 64];
    let n = stalled.read(&mut head).await.unwrap();
    assert!(head[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &head[..n]);

    // 48 messages of 4 MiB: the watcher's queue keeps at most 4 MiB of them.
    let payload = vec![b'x'; 4 << 20];
    for _ in 0..48 {
        let reply = post(&server.url("/topics/big"), payload.clone()).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    }
    let dropped = r#"wharf_topic_events_total{subscriber="watch",outcome="dropped"}"#;
    assert!(metric(&server, dropped).await >= 40.0);
    // Over the publish limit: refused before it is read.
    let head = format!(
        "POST /topics/big HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n",
        (4 << 20) + 1
    );
    let status = status_line_before_any_body(&server, &head).await;
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");

    // Stalled past the write timeout, the watcher is closed, and its place
    // (this client may hold one stream) is free again.
    wait_until("the stalled watcher closed", || async {
        let url = server.url("/topics/other");
        let watch = open(&client(), Method::GET, &url, "").await;
        watch.status() == StatusCode::OK
    })
    .await;
    drop(stalled);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_answering_without_end_costs_the_host_a_few_kilobytes() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    // A receiver that answers 200 with a body that never ends, counting
    // what it managed to send.
    let sent = Arc::new(AtomicUsize::new(0));
    let counted = sent.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let sent = counted.clone();
            async move {
                let chunk = bytes::Bytes::from(vec![b'z'; 64 << 10]);
                let endless = futures_util::stream::repeat_with(move || {
                    sent.fetch_add(chunk.len(), Ordering::Relaxed);
                    Ok::<_, std::io::Error>(chunk.clone())
                });
                axum::body::Body::from_stream(endless)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = agents_dir(&["scribe"]);
    let kdl = "push { allow \"127.0.0.1\" }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let mut params = send_params("notify me");
    params["configuration"] = json!({"taskPushNotificationConfig": {"url": url}});
    let made = rpc(&server, "scribe", &[V1, JSON], &call("SendMessage", params)).await;
    assert_eq!(
        made.json()["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{}",
        made.text()
    );
    let delivered = r#"wharf_a2a_push_total{outcome="delivered"}"#;
    wait_until("a notification delivered", || async {
        metric(&server, delivered).await >= 1.0
    })
    .await;
    // The host read a few kilobytes and hung up; what the receiver got
    // out is that plus the sockets' buffers, nowhere near a gigabyte.
    let sent = sent.load(Ordering::Relaxed);
    assert!(sent < 32 << 20, "the receiver sent {sent} bytes");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_left_waiting_expire_and_each_caller_has_a_cap_of_open_tasks() {
    let dir = agents_dir(&["scribe", "auth"]);
    let kdl = format!(
        "filters \"auth\"\n\
         filter \"auth\" {{ config {{ api-keys \"alice:{} bob:{}\" }} }}\n\
         tasks {{ max-waiting \"2s\"; max-open-per-owner 2 }}\n",
        sha256_hex(b"k-alice"),
        sha256_hex(b"k-bob"),
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    let waiting = |key: &'static str| {
        let server = &server;
        async move { as_caller(server, key, "SendMessage", send_params("  ")).await }
    };
    let first = waiting("k-alice").await;
    let id = first["result"]["task"]["id"].as_str().unwrap().to_string();
    waiting("k-alice").await;
    // A third unfinished task is refused to her, not to Bob.
    let third = waiting("k-alice").await;
    assert_eq!(third["error"]["code"], -32004, "{third}");
    assert!(
        third["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unfinished")
    );
    let bobs = waiting("k-bob").await;
    assert!(bobs.get("result").is_some(), "{bobs}");
    // Left waiting past `max-waiting`, her tasks go, and she may start
    // new ones.
    wait_until("the waiting tasks evicted", || async {
        let got = as_caller(&server, "k-alice", "GetTask", json!({"id": id})).await;
        got["error"]["code"] == -32001
    })
    .await;
    let listed = as_caller(&server, "k-alice", "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    let again = waiting("k-alice").await;
    assert!(again.get("result").is_some(), "{again}");
    server.stop().await;
}

/// An h2c connection to the server: the client half of its handshake done.
async fn h2c(server: &Server) -> tokio::net::TcpStream {
    let addr = server.base.trim_start_matches("http://").to_string();
    tokio::net::TcpStream::connect(&addr).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn http2_rapid_reset_floods_are_cut_off() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "")).await;
    let (mut sender, conn) = h2::client::handshake(h2c(&server).await).await.unwrap();
    let connection = tokio::spawn(conn);
    // Open a stream and reset it at once, again and again.
    let mut sent = 0;
    for _ in 0..100_000 {
        let req = http::Request::post(server.url("/agents/echo"))
            .body(())
            .unwrap();
        let Ok(ready) = sender.clone().ready().await else {
            break;
        };
        sender = ready;
        let Ok((_, mut stream)) = sender.send_request(req, false) else {
            break;
        };
        stream.send_reset(h2::Reason::CANCEL);
        sent += 1;
        if connection.is_finished() {
            break;
        }
    }
    let ended = tokio::time::timeout(std::time::Duration::from_secs(30), connection)
        .await
        .expect("the flooding connection is closed")
        .unwrap();
    // The server ends it: with ENHANCE_YOUR_CALM, or (when the flood is
    // still being written as it closes) a connection error.
    let err = ended.expect_err("closed with an error");
    let calm = err.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM);
    assert!(calm || err.is_io(), "{err} after {sent}");
    assert!(sent < 100_000, "{sent} resets were taken");
    // Other clients are served.
    assert_eq!(post(&server.url("/agents/echo"), "ok").await.text(), "ok");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http2_continuation_floods_are_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "")).await;
    let stream = h2c(&server).await;
    let (mut rd, mut wr) = stream.into_split();
    let frame = |kind: u8, flags: u8, stream: u32, payload: &[u8]| {
        let len = payload.len() as u32;
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    };
    // Preface and empty SETTINGS, then a HEADERS frame that never ends:
    // CONTINUATION after CONTINUATION, each a valid 1,000-byte header.
    wr.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    wr.write_all(&frame(0x4, 0, 0, &[])).await.unwrap();
    let mut header = vec![0x00, 0x03, b'x', b'-', b'a', 0x7f, 0xe9, 0x06];
    header.extend(std::iter::repeat_n(b'a', 1000));
    let reader = tokio::spawn(async move {
        // Everything the server writes, until it closes.
        let mut seen = Vec::new();
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = rd.read(&mut buf).await {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        seen
    });
    let mut written = 0usize;
    let mut first = true;
    while written < 64 << 20 {
        let f = if first {
            frame(0x1, 0x0, 1, &header)
        } else {
            frame(0x9, 0x0, 1, &header)
        };
        first = false;
        if wr.write_all(&f).await.is_err() {
            break;
        }
        written += f.len();
    }
    let seen = tokio::time::timeout(std::time::Duration::from_secs(30), reader)
        .await
        .expect("the server closes the connection")
        .unwrap();
    // It stopped the flood long before 64 MiB (the head limit is 64 KiB;
    // what was written beyond sat in socket buffers).
    assert!(
        written < 64 << 20,
        "the server took {written} bytes of one header block"
    );
    assert!(
        seen.len() < 1 << 20,
        "the server answered {} bytes",
        seen.len()
    );
    assert_eq!(post(&server.url("/agents/echo"), "ok").await.text(), "ok");
    server.stop().await;
}
