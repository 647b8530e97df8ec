//! WASIp3 wasi:http components (`wasi:http/handler@0.3.x`) served like
//! WASIp2 ones, over real sockets: unmodified upstream examples (the
//! `wasip3` crate's `http-proxy`, the hello-world of `spin-sdk` 7) and a
//! component written with the `wasip3` crate alone (`guests/http-p3`):
//! bodies streamed both ways, fresh and warm instances, the filter chain,
//! the body limit and the deadline, outbound requests under the allow-list;
//! and a WASIp3 component that is not an HTTP handler refused by name.

use http::{Method, StatusCode};

use crate::common::*;
use crate::wasi_http::{
    drain, expect_fetch, outbound_count, relays_each_piece_as_it_arrives, upload_2kib_in_pieces,
    upstream,
};

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn wasip3_components_answer_like_wasip2_ones() {
    let dir = agents_dir(&["http_p3", "headers", "waf"]);
    copy_guest(dir.path(), "wasip3_http_proxy", "p3");
    copy_guest(dir.path(), "spin_hello", "spin");
    copy_guest(dir.path(), "http_p3", "warm_p3");
    let kdl = r#"
        filters "headers" "waf"
        agent "warm_p3" {
            instances {
                mode "warm"
                max 2
            }
        }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let client = client();
    for (agent, says) in [("p3", "Hello, WASI!"), ("spin", "Hello, Spin")] {
        let reply = send(
            &client,
            Method::GET,
            &server.url(&format!("/agents/{agent}/")),
            &[],
            "",
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{agent}: {}", reply.text());
        assert_eq!(reply.text(), says, "{agent}");
        // Written by a task right after the head, without waiting: the
        // answer leaves whole, with its length.
        let length = says.len().to_string();
        assert_eq!(reply.headers["content-length"], length.as_str(), "{agent}");
        // The headers filter's response phase ran on the guest's answer.
        assert_eq!(
            reply.headers["x-content-type-options"], "nosniff",
            "{agent}"
        );
    }
    let requests = 6;
    for agent in ["http_p3", "warm_p3"] {
        for (i, len) in [0, 1024, 1 << 20]
            .into_iter()
            .cycle()
            .take(requests)
            .enumerate()
        {
            let url = server.url(&format!("/agents/{agent}/n{i}?q=1"));
            let body = pattern(len);
            let reply = send(&client, Method::POST, &url, &[], body.clone()).await;
            let what = format!("{agent} {i} ({len} bytes)");
            assert_eq!(reply.status, StatusCode::OK, "{what}: {}", reply.text());
            assert!(reply.body == body, "{what}: the body differs");
            assert_eq!(reply.headers["x-echo-method"], "POST", "{what}");
            assert_eq!(reply.headers["x-echo-path"], format!("/n{i}"), "{what}");
        }
    }
    // Fresh by default: an instance a request; warm: at most two ever made.
    let made =
        |agent: &str| format!("wharf_instantiate_duration_seconds_count{{agent=\"{agent}\"}}");
    assert_eq!(metric(&server, &made("http_p3")).await, requests as f64);
    let warm = metric(&server, &made("warm_p3")).await;
    assert!((1.0..=2.0).contains(&warm), "{warm}");
    // The WAF refuses an injection before the component sees it.
    let url = server.url("/agents/http_p3/q?q=1%27%20OR%20%271%27=%271");
    let reply = send(&client, Method::GET, &url, &[], "").await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.text());
    let listed = get(&server.url("/agents")).await.json();
    let spin = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "spin")
        .expect("listed");
    assert_eq!(spin["world"], "wasi-http");
    let description = spin["card"]["description"].as_str();
    assert_eq!(
        description,
        Some("a wasi:http component (WASI 0.3)"),
        "{spin}"
    );
    server.stop().await;

    let path = dir.path().join("p3.wasm");
    let report = wharf::inspect::inspect(&path).expect("inspect reads it");
    assert_eq!(report.world, Some("wasi-http"));
    assert!(report.fits.contains("WASI 0.3"), "{}", report.fits);
    assert!(
        report
            .exports
            .iter()
            .any(|e| e == "wasi:http/handler@0.3.2")
    );
    let found = wharf::registry::world_of_file(&path, 1 << 30);
    assert_eq!(found, wharf::config::check::Found::WasiHttp);
}

#[tokio::test(flavor = "multi_thread")]
async fn wasip3_bodies_stream_both_ways_within_the_limits_and_deadline() {
    let dir = agents_dir(&["http_p3"]);
    let kdl = r#"
        agent "http_p3" {
            request-body "1KiB"
            deadline "2s"
            retries 0
            breaker {
                failures 1000
            }
        }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    // The echo writes each piece of the upload back as it reads it.
    relays_each_piece_as_it_arrives(server.url("/agents/http_p3/relay")).await;

    let client = client();
    let url = server.url("/agents/http_p3/up");
    // Past the request-body limit, declared or not: the guest's read
    // fails, and the echo fails its answer with it. Its head left once the
    // echo waited for more of the upload, so the answer is cut off (or,
    // had nothing left yet, a 413; or the connection closed under a
    // client still writing).
    match upload_2kib_in_pieces(url.clone()).await {
        Ok(mut resp) if resp.status() == StatusCode::OK => {
            let ending = drain(resp.body_mut()).await;
            assert!(ending.is_err(), "an over-limit echo ended cleanly");
        }
        Ok(resp) => assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE),
        Err(e) => assert!(format!("{e:?}").contains("BodyWrite"), "{e:?}"),
    }
    let declared: &'static str = "x".repeat(4096).leak();
    let mut resp = open(&client, Method::POST, &url, declared).await;
    if resp.status() == StatusCode::OK {
        let ending = drain(resp.body_mut()).await;
        assert!(ending.is_err(), "an over-limit echo ended cleanly");
    } else {
        assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
    // A guest that never returns is stopped at its deadline.
    let reply = send(
        &client,
        Method::GET,
        &server.url("/agents/http_p3/spin"),
        &[],
        "",
    )
    .await;
    assert_eq!(
        reply.status,
        StatusCode::GATEWAY_TIMEOUT,
        "{}",
        reply.text()
    );
    assert_eq!(reply.error_code(), "deadline_exceeded");
    let cut = metric(&server, r#"wharf_deadline_exceeded_total{agent="http_p3"}"#).await;
    assert_eq!(cut, 1.0);
    // And the host keeps serving it.
    let reply = send(&client, Method::POST, &url, &[], "small").await;
    assert_eq!(
        (reply.status, reply.text().as_str()),
        (StatusCode::OK, "small")
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn wasip3_outbound_requests_follow_the_allow_list() {
    let up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    copy_guest(dir.path(), "http_p3", "closed");
    copy_guest(dir.path(), "http_p3", "open");
    let kdl = r#"
        agent "open" {
            outbound {
                allow "127.0.0.1"
            }
        }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let ip = format!("http://127.0.0.1:{}", up.port());
    let name = format!("http://localhost:{}", up.port());
    for (agent, target, status, says) in [
        ("closed", format!("{ip}/small"), 502, "HttpRequestDenied"),
        ("open", format!("{ip}/small"), 200, "200 from upstream"),
        ("open", format!("{name}/small"), 502, "HttpRequestDenied"),
    ] {
        expect_fetch(&server, agent, &target, status, says).await;
    }
    assert_eq!(
        metric(&server, &outbound_count("closed", "denied")).await,
        1.0
    );
    assert_eq!(
        metric(&server, &outbound_count("open", "allowed")).await,
        1.0
    );
    assert_eq!(
        metric(&server, &outbound_count("open", "denied")).await,
        1.0
    );
    server.stop().await;
}

/// A WASIp3 component that is not an HTTP handler (the `wasip3` crate's
/// own `cli-command` example, built unmodified by the test command) is
/// refused by name: what it exports and what Wharf serves instead, in the
/// answer to its requests, from `wharf inspect` and from `wharf check`;
/// the rest is served.
#[tokio::test(flavor = "multi_thread")]
async fn a_wasip3_component_that_is_not_an_http_handler_is_refused_by_name() {
    let says = "a WASIp3 component (it exports `wasi:cli/run@0.3.2`) that is not an HTTP handler";
    let dir = agents_dir(&["echo"]);
    copy_guest(dir.path(), "wasip3_cli_command", "cli");
    let server = Server::start(config(dir.path(), "")).await;
    let reply = get(&server.url("/agents/cli/")).await;
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert!(reply.text().contains(says), "{}", reply.text());
    assert_eq!(post(&server.url("/agents/echo"), "on").await.text(), "on");
    server.stop().await;

    let path = dir.path().join("cli.wasm");
    let report = wharf::inspect::inspect(&path).expect("inspect reads it");
    assert_eq!(report.world, None);
    assert!(report.fits.contains(says), "{}", report.fits);
    match wharf::registry::world_of_file(&path, 1 << 30) {
        wharf::config::check::Found::Unusable(why) => assert!(why.contains(says), "{why}"),
        other => panic!("{other:?}"),
    }
}
