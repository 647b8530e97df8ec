//! Fault isolation over real sockets: every fault fixture gets its error
//! status, bounded by its deadline, while concurrent echo requests all
//! succeed and the host keeps serving.

use std::time::{Duration, Instant};

use http::StatusCode;

use crate::common::*;

/// Deadline of the `spin` fixture; the others have a long one so that only
/// `spin` can time out, however loaded the machine is.
const DEADLINE: Duration = Duration::from_millis(400);
/// Generous bound on how long past its deadline a fault may take to answer
/// (CI machines are shared and noisy): it proves the call is bounded, and
/// is not a performance target.
const MARGIN: Duration = Duration::from_secs(5);

const FAULTS: &[(&str, u16, &str)] = &[
    ("trap", 500, "agent_failed"),
    ("spin", 504, "deadline_exceeded"),
    ("membomb", 500, "memory_limit"),
    ("stackbomb", 500, "agent_failed"),
    ("bigoutput", 502, "invalid_response"),
];

fn fault_config(dir: &std::path::Path) -> wharf::config::Config {
    let kdl = format!(
        "limits {{\n    deadline \"30s\"\n    memory \"32MiB\"\n}}\n\
         agent \"spin\" {{\n    deadline \"{}ms\"\n}}\n",
        DEADLINE.as_millis()
    );
    config(dir, &kdl)
}

#[tokio::test(flavor = "multi_thread")]
async fn each_fault_gets_its_status_and_a_loop_is_cut_at_its_deadline() {
    let dir = agents_dir(&["echo", "trap", "spin", "membomb", "stackbomb", "bigoutput"]);
    let server = Server::start(fault_config(dir.path())).await;
    for &(name, status, code) in FAULTS {
        let started = Instant::now();
        let reply = post(&server.url(&format!("/agents/{name}")), "boom").await;
        let elapsed = started.elapsed();
        assert_eq!(reply.status.as_u16(), status, "{name}: {}", reply.text());
        assert_eq!(reply.error_code(), code, "{name}");
        if name == "spin" {
            assert!(
                elapsed >= DEADLINE,
                "spin answered before its deadline: {elapsed:?}"
            );
        }
        assert!(
            elapsed < DEADLINE + MARGIN,
            "{name} answered after {elapsed:?}, far past the deadline of {DEADLINE:?}"
        );
        // Nothing internal is shown to the client.
        let text = reply.text();
        assert!(
            !text.contains("wasm") && !text.contains("backtrace"),
            "{name}: {text}"
        );
        // The host is still serving.
        assert_eq!(
            post(&server.url("/agents/echo"), "alive").await.text(),
            "alive"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn echo_succeeds_while_faults_run_concurrently() {
    let dir = agents_dir(&["echo", "trap", "spin", "membomb", "stackbomb", "bigoutput"]);
    let server = Server::start(fault_config(dir.path())).await;

    let mut faults = Vec::new();
    for round in 0..3 {
        for &(name, status, _) in FAULTS {
            let url = server.url(&format!("/agents/{name}"));
            faults.push(tokio::spawn(async move {
                let reply = post(&url, format!("round {round}")).await;
                (name, status, reply.status.as_u16())
            }));
        }
    }
    let mut echoes = Vec::new();
    for worker in 0..4 {
        let url = server.url("/agents/echo");
        echoes.push(tokio::spawn(async move {
            let client = client();
            for i in 0..25 {
                let body = format!("worker {worker} request {i}");
                let reply = send(&client, http::Method::POST, &url, &[], body.clone()).await;
                assert_eq!(reply.status, StatusCode::OK, "{body}");
                assert_eq!(reply.text(), body);
            }
        }));
    }
    for echo in echoes {
        echo.await.expect("every concurrent echo succeeds");
    }
    for fault in faults {
        let (name, expected, got) = fault.await.unwrap();
        assert_eq!(got, expected, "{name} under concurrency");
    }
    assert_eq!(get(&server.url("/healthz")).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_lets_an_in_flight_request_finish() {
    let dir = agents_dir(&["counter"]);
    let server = Server::start(fault_config(dir.path())).await;
    let url = server.url("/agents/counter");
    // The guest computes for 2 s; the server is told to stop after 0.7 s.
    let in_flight = tokio::spawn(async move { post(&url, "busy 2000").await });
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.stop().await;
    let reply = in_flight
        .await
        .expect("the in-flight request gets an answer");
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.text(), "- 1");
}
