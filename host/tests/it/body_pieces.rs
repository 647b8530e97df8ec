//! The request body shown to a filter in pieces as it arrives (the
//! `filter-streaming` world), with the `sniff` fixture in front of the
//! `mirror` agent (which answers with the body and metadata it received)
//! and the `http-echo` wasi:http component (which reads the body as it
//! arrives): a decision on the first piece, a block on a later one, a body
//! sent a byte at a time, a whole-body filter after a streaming one, the
//! filter's body limit, failures and bad verdicts.

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;

use crate::common::*;

/// `mirror`, `http-echo` and `sniff` (and `probe`, as filter `a`) behind
/// a chain of `filters`, with `extra` KDL.
async fn start(filters: &str, extra: &str) -> (Server, tempfile::TempDir) {
    let dir = agents_dir(&["mirror", "http_echo", "sniff"]);
    std::fs::copy(guest("probe"), dir.path().join("a.wasm")).unwrap();
    let kdl = format!("filter \"a\" {{ config {{ name \"a\" }} }}\n{extra}\nfilters {filters}\n");
    (Server::start(config(dir.path(), &kdl)).await, dir)
}

/// `n` bytes of `0123456789…` with `at` (if any) written at an offset.
fn body(n: usize, at: Option<(usize, &str)>) -> Vec<u8> {
    let mut body: Vec<u8> = (0..n).map(|i| b'0' + (i % 10) as u8).collect();
    if let Some((offset, text)) = at {
        body[offset..offset + text.len()].copy_from_slice(text.as_bytes());
    }
    body
}

async fn post(server: &Server, agent: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Reply {
    let url = server.url(&format!("/agents/{agent}/p"));
    send(&client(), Method::POST, &url, headers, body).await
}

/// What `mirror` received: its body and the metadata `key`.
fn mirrored(reply: &Reply, key: &str) -> (String, String) {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let json = reply.json();
    let meta = json["meta"][key].as_str().unwrap_or("").to_string();
    (json["body"].as_str().unwrap().to_string(), meta)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_filter_decides_on_the_first_piece_and_the_agent_gets_the_whole_body() {
    let (server, _dir) = start("\"sniff\"", "").await;
    let sent = body(200 * 1024, None);
    let reply = post(&server, "mirror", &[], sent.clone()).await;
    let (got, pieces) = mirrored(&reply, "sniff.pieces");
    assert_eq!(got.as_bytes(), &sent[..], "the agent gets every byte");
    assert_eq!(pieces, "1", "one piece was enough to decide");
    assert_eq!(mirrored(&reply, "sniff.seen").1, "8192");

    // The same to a component that reads the body as it arrives.
    let url = server.url("/agents/http_echo/p");
    let reply = send(&client(), Method::POST, &url, &[], sent.clone()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(&reply.body[..], &sent[..]);

    // A short body is one last piece.
    let reply = post(&server, "mirror", &[], b"short".to_vec()).await;
    assert_eq!(
        mirrored(&reply, "sniff.pieces"),
        ("short".into(), "1".into())
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_filter_blocks_on_a_later_piece_and_across_a_piece_boundary() {
    let extra = "filter \"sniff\" { config { decide-after \"10000000\" } }";
    let (server, _dir) = start("\"sniff\"", extra).await;
    for offset in [100 * 1024, 8190] {
        let reply = post(
            &server,
            "mirror",
            &[],
            body(300 * 1024, Some((offset, "EVIL"))),
        )
        .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "EVIL at {offset}");
        assert_eq!(reply.text(), "denied");
    }
    // Read to the end: 300 KiB is 37 full pieces, a short one, no empty one.
    let reply = post(&server, "mirror", &[], body(300 * 1024, None)).await;
    assert_eq!(mirrored(&reply, "sniff.pieces").1, "38");
    assert_eq!(mirrored(&reply, "sniff.seen").1, (300 * 1024).to_string());
    server.stop().await;
}

/// A POST to `url` whose body is `n` pieces of one byte each.
async fn byte_at_a_time(url: String, n: usize) -> Reply {
    type Piece = Result<hyper::body::Frame<Bytes>, std::convert::Infallible>;
    let client: hyper_util::client::legacy::Client<_, _> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http();
    let (tx, rx) = tokio::sync::mpsc::channel::<Piece>(64);
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let req = http::Request::post(url)
        .body(http_body_util::StreamBody::new(stream))
        .unwrap();
    let pending = tokio::spawn(client.request(req));
    for i in 0..n {
        let byte = Bytes::from(vec![b'0' + (i % 10) as u8]);
        if tx.send(Ok(hyper::body::Frame::data(byte))).await.is_err() {
            break;
        }
    }
    drop(tx);
    let resp = pending.await.unwrap().unwrap();
    let (parts, body) = resp.into_parts();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_sent_a_byte_at_a_time_costs_one_call_per_piece() {
    let extra = "filter \"sniff\" { config { decide-after \"10000000\" } }";
    let (server, _dir) = start("\"sniff\"", extra).await;
    let reply = byte_at_a_time(server.url("/agents/mirror/p"), 16 * 1024).await;
    // 16,384 one-byte chunks: two full pieces and the empty last one.
    assert_eq!(mirrored(&reply, "sniff.pieces").1, "3");
    let (got, seen) = mirrored(&reply, "sniff.seen");
    assert_eq!(seen, "16384");
    assert_eq!(got.as_bytes(), &body(16 * 1024, None)[..]);
    let calls = metric(
        &server,
        "wharf_filter_calls_total{filter=\"sniff\",phase=\"request_body\"}",
    )
    .await;
    assert_eq!(calls, 3.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_filter_reading_whole_after_one_reading_pieces_gets_the_whole_body() {
    let (server, _dir) = start("\"sniff\" \"a\"", "").await;
    let sent = body(64 * 1024, None);
    let script = [("x-probe-a", "rh:want-body")];
    let reply = post(&server, "mirror", &script, sent.clone()).await;
    let (got, len) = mirrored(&reply, "a.rb-len");
    assert_eq!(len, (64 * 1024).to_string(), "probe read the body whole");
    assert_eq!(got.as_bytes(), &sent[..]);
    assert_eq!(mirrored(&reply, "sniff.pieces").1, "1");

    // The other way round, the whole-body filter comes first: `sniff` is
    // shown the body whole too (it is after a filter that reads it so).
    server.stop().await;
    let (server, _dir) = start("\"a\" \"sniff\"", "").await;
    let reply = post(&server, "mirror", &script, sent.clone()).await;
    assert_eq!(mirrored(&reply, "a.rb-len").1, (64 * 1024).to_string());
    assert_eq!(
        mirrored(&reply, "sniff.pieces").1,
        "",
        "no pieces: read whole"
    );
    let reply = post(
        &server,
        "mirror",
        &script,
        body(64 * 1024, Some((40_000, "EVIL"))),
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::FORBIDDEN,
        "the whole-body call blocks"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_filters_body_limit_applies_to_what_it_is_shown() {
    let extra = r#"
filter "sniff" { body-limit 10000 past="inspect-prefix"; config { decide-after "10000000" } }
"#;
    let (server, _dir) = start("\"sniff\"", extra).await;
    // Past its limit the filter sees nothing: EVIL there is not found.
    let reply = post(
        &server,
        "mirror",
        &[],
        body(64 * 1024, Some((20_000, "EVIL"))),
    )
    .await;
    assert_eq!(mirrored(&reply, "sniff.seen").1, "10000");
    assert_eq!(mirrored(&reply, "sniff.pieces").1, "2");
    let reply = post(
        &server,
        "mirror",
        &[],
        body(64 * 1024, Some((9_000, "EVIL"))),
    )
    .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    server.stop().await;

    let extra = r#"
filter "sniff" { body-limit 10000 past="reject"; config { decide-after "10000000" } }
"#;
    let (server, _dir) = start("\"sniff\"", extra).await;
    let reply = post(&server, "mirror", &[], body(64 * 1024, None)).await;
    assert_eq!(
        reply.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        reply.text()
    );
    // A filter that decided before its limit is not held to it.
    server.stop().await;
    let extra = r#"
filter "sniff" { body-limit 10000 past="reject" }
"#;
    let (server, _dir) = start("\"sniff\"", extra).await;
    let reply = post(&server, "mirror", &[], body(64 * 1024, None)).await;
    assert_eq!(mirrored(&reply, "sniff.pieces").1, "1");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_and_bad_verdicts_follow_the_failure_mode() {
    let (server, _dir) = start("\"sniff\"", "").await;
    for script in ["trap", "replace"] {
        let reply = post(
            &server,
            "mirror",
            &[("x-sniff", script)],
            body(32 * 1024, None),
        )
        .await;
        assert_eq!(
            reply.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{script}: {}",
            reply.text()
        );
    }
    // `more` to the last piece allows.
    let sent = body(20 * 1024, None);
    let reply = post(&server, "mirror", &[("x-sniff", "more")], sent.clone()).await;
    assert_eq!(mirrored(&reply, "sniff.pieces").0.as_bytes(), &sent[..]);
    server.stop().await;

    let (server, _dir) = start("\"sniff\"", "filter \"sniff\" { failure \"open\" }").await;
    for script in ["trap", "replace"] {
        let reply = post(&server, "mirror", &[("x-sniff", script)], sent.clone()).await;
        let (got, _) = mirrored(&reply, "sniff.pieces");
        assert_eq!(
            got.as_bytes(),
            &sent[..],
            "{script}: failed open, body intact"
        );
    }
    let failures = metric(
        &server,
        "wharf_filter_failures_total{filter=\"sniff\",kind=\"trap\"}",
    )
    .await;
    assert_eq!(failures, 1.0);
    server.stop().await;
}

/// A filter exporting `on-request-body-chunk` with another type than the
/// `filter-streaming` world's is refused at load, naming the type the host
/// expected; the agents whose chain names it are not served, and the
/// others are.
#[tokio::test(flavor = "multi_thread")]
async fn a_chunk_export_of_the_wrong_type_refuses_the_filter() {
    let dir = agents_dir(&["mirror", "http_echo", "mistyped"]);
    let kdl = "filter \"mistyped\" {}\nagent \"mirror\" { filters \"mistyped\" }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let refused = server.pipeline().registry().snapshot().refused.clone();
    let found = refused
        .iter()
        .find(|r| r.name.as_deref() == Some("mistyped"));
    assert!(
        found.is_some_and(|r| r.reason.contains(
            "its `on-request-body-chunk` export is not `func(head: list<u8>, headers: list<u8>, chunk: list<u8>, last: bool) -> body-step`"
        )),
        "{refused:?}"
    );
    let reply = post(&server, "mirror", &[], b"x".to_vec()).await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.text()
    );
    assert_eq!(reply.error_code(), "agent_refused");
    let reply = post(&server, "http_echo", &[], b"still served".to_vec()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(&reply.body[..], b"still served");
    server.stop().await;
}
