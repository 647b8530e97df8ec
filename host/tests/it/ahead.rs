//! Fresh instances made ahead (`instances { ahead N }`): still fresh, used
//! by the requests that come, refilled off the request's path, and given
//! their own deadline when their request comes, however long they waited.

use std::time::Duration;

use http::StatusCode;

use crate::common::*;

const AHEAD: &str = r#"
agent "counter" {
    retries 0
    deadline "400ms"
    instances {
        mode "fresh"
        ahead 2
    }
}
"#;

const HIT: &str = r#"wharf_instances_ahead_total{agent="counter",outcome="hit"}"#;
const MISS: &str = r#"wharf_instances_ahead_total{agent="counter",outcome="miss"}"#;

/// Waits (up to 20 s) until the agent has `n` instances ready.
async fn ready(server: &Server, n: u64) {
    for _ in 0..400 {
        let health = get(&server.url("/agents/counter/health")).await.json();
        if health["ready_instances"] == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the counter agent never had {n} instances ready");
}

#[tokio::test(flavor = "multi_thread")]
async fn instances_made_ahead_serve_each_request_fresh_and_are_refilled() {
    let dir = agents_dir(&["counter"]);
    let server = Server::start(config(dir.path(), AHEAD)).await;
    let health = get(&server.url("/agents/counter/health")).await.json();
    assert_eq!(health["mode"], "fresh");
    assert_eq!(
        health["ready_instances"], 0,
        "the stock fills as requests come"
    );

    // The first request makes its own instance; its end fills the stock.
    assert_eq!(post(&server.url("/agents/counter"), "").await.text(), "- 1");
    assert_eq!(metric(&server, MISS).await, 1.0);
    ready(&server, 2).await;
    assert_eq!(post(&server.url("/agents/counter"), "").await.text(), "- 1");
    assert_eq!(metric(&server, HIT).await, 1.0);
    ready(&server, 2).await;

    // Every answer comes from an instance that never served a request
    // before: a counter that grew past 1 would have been reused.
    let mut tasks = Vec::new();
    for _ in 0..24 {
        let url = server.url("/agents/counter");
        tasks.push(tokio::spawn(async move { post(&url, "").await.text() }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), "- 1");
    }
    let (hits, misses) = (metric(&server, HIT).await, metric(&server, MISS).await);
    assert_eq!(hits + misses, 26.0, "every request counted once");
    assert!(
        hits >= 3.0,
        "the two ready instances were used: {hits} hits"
    );
    ready(&server, 2).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instance_that_waited_past_the_deadline_still_gets_a_whole_one() {
    let dir = agents_dir(&["counter"]);
    let server = Server::start(config(dir.path(), AHEAD)).await;
    post(&server.url("/agents/counter"), "").await;
    ready(&server, 2).await;
    // The instance was made more than a deadline ago; its call computes for
    // a quarter of one and must not be cut off.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let reply = post(&server.url("/agents/counter"), "busy 100").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.text(), "- 1");
    assert_eq!(metric(&server, HIT).await, 1.0);
    // And a call that runs past its own deadline is still cut off.
    ready(&server, 2).await;
    let reply = post(&server.url("/agents/counter"), "busy 2000").await;
    assert_eq!(
        reply.status,
        StatusCode::GATEWAY_TIMEOUT,
        "{}",
        reply.text()
    );
    // The host keeps serving, and the stock refills.
    ready(&server, 2).await;
    assert_eq!(post(&server.url("/agents/counter"), "").await.text(), "- 1");
    server.stop().await;
}
