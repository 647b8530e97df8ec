//! Unmodified `wasi:http/proxy` components served like agents, over real
//! sockets: the echo contract kept by wasi:http echoes written with the
//! Rust `wasi` crate, componentize-py and componentize-js; the filter chain
//! applied to them; fresh and warm instances; every way such a component
//! can misbehave (no response, an error, a trap before or after the head,
//! a body that never ends), bounded and classified while the host keeps
//! serving; and outbound HTTP denied unless the agent's `outbound` block
//! allows it, against a local upstream.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;

use crate::common::*;

/// The wasi:http echoes, one per toolchain, beside the Rust echo agent
/// whose contract they keep.
const HTTP_ECHOES: [&str; 3] = ["http_echo", "http_echo-py", "http_echo-js"];

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

/// Method, path below the agent, headers, body.
type Case = (Method, &'static str, Vec<(String, String)>, Vec<u8>);

#[tokio::test(flavor = "multi_thread")]
async fn wasi_http_components_keep_the_echo_contract() {
    let names = ["echo", HTTP_ECHOES[0], HTTP_ECHOES[1], HTTP_ECHOES[2]];
    let dir = agents_dir(&names);
    let server = Server::start(config(dir.path(), "")).await;
    let client = client();
    let many: Vec<(String, String)> = (0..40)
        .map(|i| (format!("x-h-{i}"), format!("value {i}")))
        .collect();
    let cases: [Case; 6] = [
        (Method::POST, "/", Vec::new(), Vec::new()),
        (Method::POST, "/kib?q=1", Vec::new(), pattern(1024)),
        (Method::POST, "/mib", Vec::new(), pattern(1 << 20)),
        (
            Method::PUT,
            "/doc",
            vec![("content-type".into(), "application/json".into())],
            b"{}".to_vec(),
        ),
        (
            Method::GET,
            "/h%C3%A9llo/w%C3%B6rld/%E2%9C%93",
            many,
            Vec::new(),
        ),
        (Method::DELETE, "/", Vec::new(), b"x".to_vec()),
    ];
    for (method, path, headers, body) in &cases {
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        for agent in names {
            let url = server.url(&format!("/agents/{agent}{path}"));
            let reply = send(&client, method.clone(), &url, &headers, body.clone()).await;
            let what = format!("{agent} {method} {path}");
            assert_eq!(reply.status, StatusCode::OK, "{what}: {}", reply.text());
            assert!(reply.body == *body, "{what}: the body differs");
            assert_eq!(reply.headers["x-echo-method"], method.as_str(), "{what}");
            let bare = path.split('?').next().unwrap();
            assert_eq!(reply.headers["x-echo-path"], bare, "{what}");
            let length = body.len().to_string();
            assert_eq!(reply.headers["content-length"], length.as_str(), "{what}");
            for (name, value) in &headers {
                assert_eq!(reply.headers[*name], *value, "{what}: {name}");
            }
        }
    }
    // Written in pieces: the same body. (An answer the guest writes without
    // waiting is sent whole; one that waits streams: see the tests below.)
    let body = pattern(10_000);
    for agent in HTTP_ECHOES {
        let url = server.url(&format!("/agents/{agent}/streamed"));
        let headers = [("x-echo-chunks", "4"), ("x-custom", "kept")];
        let reply = send(&client, Method::POST, &url, &headers, body.clone()).await;
        assert_eq!(reply.status, StatusCode::OK, "{agent}: {}", reply.text());
        assert!(reply.body == body, "{agent}: the streamed body differs");
        assert_eq!(reply.headers["x-custom"], "kept", "{agent}");
        let bad = [("x-echo-chunks", "0")];
        let reply = send(&client, Method::POST, &url, &bad, "x").await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{agent}");
        assert_eq!(reply.text(), "x-echo-chunks must be 1 to 64", "{agent}");
    }
    // Listed as what they are, healthy.
    let list = get(&server.url("/agents")).await.json();
    for agent in HTTP_ECHOES {
        let entry = list
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == agent)
            .unwrap();
        assert_eq!(entry["world"], "wasi-http", "{agent}");
        let health = get(&server.url(&format!("/agents/{agent}/health"))).await;
        assert_eq!(health.json()["healthy"], true, "{agent}");
    }
    let echo = list
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "echo");
    assert_eq!(echo.unwrap()["world"], "agent");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_filter_chain_and_warm_instances_apply_to_wasi_http_components() {
    let dir = agents_dir(&["http_echo", "headers", "waf"]);
    let kdl = r#"
        filters "headers" "waf"
        agent "http_echo" {
            instances {
                mode "warm"
                max 2
            }
        }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let client = client();
    for i in 0..20 {
        let url = server.url(&format!("/agents/http_echo/n{i}"));
        let reply = send(&client, Method::POST, &url, &[], format!("call {i}")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        assert_eq!(reply.text(), format!("call {i}"));
        // The headers filter's response phase ran on the guest's answer.
        assert_eq!(reply.headers["x-content-type-options"], "nosniff");
    }
    // Warm: at most two instances ever made, none retired.
    let instantiated = metric(
        &server,
        "wharf_instantiate_duration_seconds_count{agent=\"http_echo\"}",
    )
    .await;
    assert!((1.0..=2.0).contains(&instantiated), "{instantiated}");
    // The WAF refuses an injection before the component sees it.
    let url = server.url("/agents/http_echo/q?q=1%27%20OR%20%271%27=%271");
    let reply = send(&client, Method::GET, &url, &[], "").await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.text());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn misbehaving_wasi_http_components_are_bounded_and_classified() {
    let dir = agents_dir(&["http_faults"]);
    let kdl = r#"
        agent "http_faults" {
            deadline "5s"
            response-body "64KiB"
            retries 0
            breaker {
                failures 1000
            }
        }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let client = client();
    let url = |path: &str| server.url(&format!("/agents/http_faults{path}"));
    for (path, status, code) in [
        ("/never", StatusCode::BAD_GATEWAY, "invalid_response"),
        ("/error", StatusCode::INTERNAL_SERVER_ERROR, "agent_error"),
        ("/trap", StatusCode::INTERNAL_SERVER_ERROR, "agent_failed"),
    ] {
        let reply = send(&client, Method::GET, &url(path), &[], "").await;
        assert_eq!(reply.status, status, "{path}: {}", reply.text());
        assert_eq!(reply.error_code(), code, "{path}");
    }
    // A trap after the head cuts the answer off.
    let mut resp = open(&client, Method::GET, &url("/trap-after-head"), "").await;
    assert_eq!(resp.status(), StatusCode::OK);
    let ending = drain(resp.body_mut()).await;
    assert!(
        ending.is_err(),
        "the answer of a guest that trapped after its head ended cleanly"
    );
    // A body written as fast as the guest can passes the response-body
    // limit: a 502 when nothing was sent yet, else the answer is cut off
    // (whether the head left first depends on when the guest yielded).
    let mut resp = open(&client, Method::GET, &url("/forever"), "").await;
    if resp.status() == StatusCode::OK {
        let mut received = 0;
        let ending = loop {
            match next_chunk(resp.body_mut()).await {
                Ok(Some(chunk)) => received += chunk.len(),
                other => break other,
            }
        };
        assert!(ending.is_err(), "a never-ending body ended cleanly");
        assert!(
            received <= 64 * 1024,
            "{received} bytes passed a 64 KiB limit"
        );
    } else {
        assert_eq!(resp.status(), StatusCode::BAD_GATEWAY);
    }
    // One that drips streams, and never ends: the deadline cuts it off.
    // Its first chunks arrive while the call is still running.
    let mut resp = open(&client, Method::GET, &url("/drip"), "").await;
    assert_eq!(resp.status(), StatusCode::OK);
    let first = next_chunk(resp.body_mut()).await.unwrap().unwrap();
    assert!(first.iter().all(|b| *b == b'x'), "{first:?}");
    let running = metric(
        &server,
        "wharf_guest_call_duration_seconds_count{agent=\"http_faults\"}",
    )
    .await;
    let ending = drain(resp.body_mut()).await;
    assert!(ending.is_err(), "a never-ending body ended cleanly");
    let deadlines = metric(
        &server,
        "wharf_deadline_exceeded_total{agent=\"http_faults\"}",
    )
    .await;
    assert_eq!(deadlines, 1.0);
    let done = metric(
        &server,
        "wharf_guest_call_duration_seconds_count{agent=\"http_faults\"}",
    )
    .await;
    assert!(
        done > running,
        "the call had ended before its first chunk arrived"
    );
    // And the host keeps serving it.
    let reply = send(&client, Method::GET, &url("/fine"), &[], "").await;
    assert_eq!(
        (reply.status, reply.text().as_str()),
        (StatusCode::OK, "ok")
    );
    server.stop().await;
}

/// One piece of a request body the test writes piece by piece.
type Piece = Result<hyper::body::Frame<Bytes>, std::convert::Infallible>;
type Pieces = http_body_util::StreamBody<tokio_stream::wrappers::ReceiverStream<Piece>>;
type Answer = Result<http::Response<hyper::body::Incoming>, hyper_util::client::legacy::Error>;

fn piece(text: &'static str) -> Piece {
    Ok(hyper::body::Frame::data(Bytes::from_static(
        text.as_bytes(),
    )))
}

#[tokio::test(flavor = "multi_thread")]
async fn request_bodies_reach_the_component_as_they_arrive() {
    let dir = agents_dir(&["http_faults", "http_echo"]);
    let kdl = r#"
        agent "http_echo" {
            request-body "1KiB"
        }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    // `relay` answers each piece of the upload as it reads it.
    relays_each_piece_as_it_arrives(server.url("/agents/http_faults/relay")).await;

    // An upload past the limit fails the guest's read: 413, whether the
    // length was declared or the body just kept coming.
    let client = client();
    let url = server.url("/agents/http_echo");
    let reply = send(&client, Method::POST, &url, &[], vec![b'x'; 4096]).await;
    assert_eq!(
        reply.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        reply.text()
    );
    assert_eq!(reply.error_code(), "body_too_large");
    match upload_2kib_in_pieces(url.clone()).await {
        Ok(resp) => assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE),
        // The host answers 413 and closes once the body is past the limit;
        // a client still writing pieces can meet the closed socket before
        // it reads that answer (seen once in CI: a broken pipe).
        Err(e) => assert!(format!("{e:?}").contains("BodyWrite"), "{e:?}"),
    }
    // And the host keeps serving.
    let reply = send(&client, Method::POST, &url, &[], "small").await;
    assert_eq!(
        (reply.status, reply.text().as_str()),
        (StatusCode::OK, "small")
    );
    server.stop().await;
}

/// POSTs pieces to `url` and checks that the answer to each arrives while
/// the upload is still open: the first before the second is sent.
pub(crate) async fn relays_each_piece_as_it_arrives(url: String) {
    let (tx, pending) = upload(url);
    tx.send(piece("first ")).await.unwrap();
    let mut resp = pending.await.unwrap().unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let first = next_chunk(resp.body_mut()).await.unwrap().unwrap();
    assert_eq!(first, "first ");
    tx.send(piece("second")).await.unwrap();
    let second = next_chunk(resp.body_mut()).await.unwrap().unwrap();
    assert_eq!(second, "second");
    drop(tx);
    assert_eq!(drain(resp.body_mut()).await, Ok(()));
}

/// POSTs 2 KiB to `url` with no declared length, 64 bytes a piece; a host
/// that stops reading once past a limit leaves later pieces to nobody.
pub(crate) async fn upload_2kib_in_pieces(url: String) -> Answer {
    let (tx, pending) = upload(url);
    for _ in 0..32 {
        let sixty_four = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        if tx.send(piece(sixty_four)).await.is_err() {
            break;
        }
    }
    drop(tx);
    pending.await.unwrap()
}

/// Starts a POST to `url` whose body the test sends piece by piece.
fn upload(
    url: String,
) -> (
    tokio::sync::mpsc::Sender<Piece>,
    tokio::task::JoinHandle<Answer>,
) {
    let client: hyper_util::client::legacy::Client<_, Pieces> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http();
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let body = http_body_util::StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    let req = http::Request::post(url).body(body).unwrap();
    (tx, tokio::spawn(client.request(req)))
}

/// Reads `body` to its end: `Err` when the answer was cut off.
pub(crate) async fn drain(body: &mut hyper::body::Incoming) -> Result<(), String> {
    while next_chunk(body).await?.is_some() {}
    Ok(())
}

/// A local upstream: `/small` answers a short text, `/big` 4 KiB, `/stall`
/// never answers, `/traceparent` the request's `traceparent` header.
pub(crate) async fn upstream() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let service = hyper::service::service_fn(
                |req: http::Request<hyper::body::Incoming>| async move {
                    let body = match req.uri().path() {
                        "/big" => Bytes::from(vec![b'b'; 4096]),
                        "/traceparent" => match req.headers().get("traceparent") {
                            Some(v) => Bytes::copy_from_slice(v.as_bytes()),
                            None => Bytes::from_static(b"none"),
                        },
                        "/stall" => {
                            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
                            Bytes::new()
                        }
                        _ => Bytes::from_static(b"from upstream"),
                    };
                    Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(body)))
                },
            );
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    addr
}

/// Asks the `http_faults` copy `agent` to fetch `target` and checks the
/// status it answers and a part of its body.
pub(crate) async fn expect_fetch(
    server: &Server,
    agent: &str,
    target: &str,
    status: u16,
    says: &str,
) {
    let url = server.url(&format!("/agents/{agent}/fetch?{target}"));
    let reply = send(&client(), Method::GET, &url, &[], "").await;
    let what = format!("{agent} → {target}");
    assert_eq!(reply.status.as_u16(), status, "{what}: {}", reply.text());
    assert!(reply.text().contains(says), "{what}: {}", reply.text());
}

/// The outbound counter of `agent` for `outcome`, as /metrics writes it.
pub(crate) fn outbound_count(agent: &str, outcome: &str) -> String {
    format!("wharf_outbound_requests_total{{agent=\"{agent}\",outcome=\"{outcome}\"}}")
}

#[tokio::test(flavor = "multi_thread")]
async fn outbound_http_is_denied_unless_the_agent_allows_it() {
    let up = upstream().await;
    let port = up.port();
    let dir = tempfile::tempdir().unwrap();
    let agents = [
        "closed",
        "by_address",
        "by_name",
        "name_only",
        "small",
        "slow",
        "by_socket",
    ];
    for name in agents {
        std::fs::copy(
            guest("http_faults"),
            dir.path().join(format!("{name}.wasm")),
        )
        .unwrap();
    }
    let kdl = r#"
        agent "by_socket" {
            outbound {
                allow "127.0.0.1:PORT"
            }
        }
        agent "by_address" {
            outbound {
                allow "127.0.0.1"
            }
        }
        agent "by_name" {
            outbound {
                allow "localhost" "127.0.0.0/8" "::1"
            }
        }
        agent "name_only" {
            outbound {
                allow "localhost"
            }
        }
        agent "small" {
            outbound {
                allow "127.0.0.1"
                max-body "1KiB"
            }
        }
        agent "slow" {
            outbound {
                allow "127.0.0.1"
                timeout "300ms"
            }
        }
    "#
    .replace("PORT", &port.to_string());
    let server = Server::start(config(dir.path(), &kdl)).await;
    let ip = format!("http://127.0.0.1:{port}");
    let name = format!("http://localhost:{port}");
    for (agent, target, status, says) in [
        ("closed", format!("{ip}/small"), 502, "HttpRequestDenied"),
        ("by_address", format!("{ip}/small"), 200, "from upstream"),
        (
            "by_address",
            format!("{name}/small"),
            502,
            "HttpRequestDenied",
        ),
        ("by_name", format!("{name}/small"), 200, "from upstream"),
        // Listed by name, but it resolves to loopback, which is not listed.
        (
            "name_only",
            format!("{name}/small"),
            502,
            "HttpRequestDenied",
        ),
        // An address with a port admits that port alone.
        ("by_socket", format!("{ip}/small"), 200, "from upstream"),
        (
            "by_socket",
            format!("http://127.0.0.1:{}/small", port ^ 1),
            502,
            "HttpRequestDenied",
        ),
        ("small", format!("{ip}/small"), 200, "from upstream"),
        ("small", format!("{ip}/big"), 502, "reading the answer"),
        ("slow", format!("{ip}/stall"), 502, "HttpResponseTimeout"),
    ] {
        expect_fetch(&server, agent, &target, status, says).await;
    }
    let count = outbound_count;
    assert_eq!(metric(&server, &count("closed", "denied")).await, 1.0);
    assert_eq!(metric(&server, &count("by_address", "denied")).await, 1.0);
    assert_eq!(metric(&server, &count("by_address", "allowed")).await, 1.0);
    assert_eq!(metric(&server, &count("name_only", "denied")).await, 1.0);
    assert_eq!(metric(&server, &count("slow", "failed")).await, 1.0);
    server.stop().await;
}
