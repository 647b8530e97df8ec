//! The routing core over real sockets: warm pools, affinity, retirement,
//! the breaker, shedding, rate limits, retries and `/metrics`.

use std::time::Duration;

use http::{Method, StatusCode};

use crate::common::*;

/// Sends `body` to `agent` with an `x-session-id` header.
async fn session(server: &Server, agent: &str, id: &str, body: &str) -> Reply {
    let url = server.url(&format!("/agents/{agent}"));
    send(
        &client(),
        Method::POST,
        &url,
        &[("x-session-id", id)],
        body.to_string(),
    )
    .await
}

/// The value of one sample line in the `/metrics` text, or 0 when absent.
const WARM_COUNTER: &str = r#"
agent "counter" {
    retries 0
    instances {
        mode "warm"
        max 2
        max-memory "6MiB"
    }
    affinity {
        header "x-session-id"
    }
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_session_keeps_its_state_on_its_warm_instance() {
    let dir = agents_dir(&["counter"]);
    let server = Server::start(config(dir.path(), WARM_COUNTER)).await;
    for expected in ["alice 1", "alice 2"] {
        assert_eq!(
            session(&server, "counter", "alice", "").await.text(),
            expected
        );
    }
    assert_eq!(session(&server, "counter", "bob", "").await.text(), "bob 1");
    assert_eq!(
        session(&server, "counter", "alice", "").await.text(),
        "alice 3"
    );
    assert_eq!(session(&server, "counter", "bob", "").await.text(), "bob 2");

    // Concurrent sessions each see only their own count, in order.
    let mut tasks = Vec::new();
    for s in 0..4 {
        let url = server.url("/agents/counter");
        tasks.push(tokio::spawn(async move {
            let id = format!("s{s}");
            for n in 1..=5 {
                let reply = send(&client(), Method::POST, &url, &[("x-session-id", &id)], "").await;
                assert_eq!(reply.text(), format!("{id} {n}"));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(
        metric(
            &server,
            r#"wharf_affinity_total{agent="counter",outcome="miss"}"#
        )
        .await,
        6.0
    );
    // 25 requests from 6 sessions: 6 first requests, 19 returning ones.
    assert_eq!(
        metric(
            &server,
            r#"wharf_affinity_total{agent="counter",outcome="hit"}"#
        )
        .await,
        19.0
    );
    assert_eq!(
        metric(
            &server,
            r#"wharf_affinity_total{agent="counter",outcome="repin"}"#
        )
        .await,
        0.0
    );
    assert!(metric(&server, r#"wharf_instances{agent="counter",state="live"}"#).await <= 2.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_retires_the_instance_and_the_session_is_repinned() {
    let dir = agents_dir(&["counter"]);
    let server = Server::start(config(dir.path(), WARM_COUNTER)).await;
    assert_eq!(
        session(&server, "counter", "carol", "").await.text(),
        "carol 1"
    );
    assert_eq!(
        session(&server, "counter", "carol", "").await.text(),
        "carol 2"
    );
    let trapped = session(&server, "counter", "carol", "trap").await;
    assert_eq!(trapped.status, StatusCode::INTERNAL_SERVER_ERROR);
    // The trapped instance and its state are gone; a new one starts at 1.
    assert_eq!(
        session(&server, "counter", "carol", "").await.text(),
        "carol 1"
    );
    let retired = r#"wharf_instances_retired_total{agent="counter",reason="trap"}"#;
    assert_eq!(metric(&server, retired).await, 1.0);
    let repins = r#"wharf_affinity_total{agent="counter",outcome="repin"}"#;
    assert_eq!(metric(&server, repins).await, 1.0);
    assert_eq!(
        metric(&server, r#"wharf_traps_total{agent="counter"}"#).await,
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn instances_retire_after_max_uses_and_past_the_memory_cap() {
    let dir = agents_dir(&["counter"]);
    let kdl = WARM_COUNTER.replace("max 2", "max 1\n        max-uses 3");
    let server = Server::start(config(dir.path(), &kdl)).await;
    for expected in ["dave 1", "dave 2", "dave 3", "dave 1"] {
        assert_eq!(
            session(&server, "counter", "dave", "").await.text(),
            expected
        );
    }
    let uses = r#"wharf_instances_retired_total{agent="counter",reason="uses"}"#;
    assert_eq!(metric(&server, uses).await, 1.0);

    // 8 MiB kept in the guest: past the 6 MiB cap, the instance goes.
    assert_eq!(
        session(&server, "counter", "dave", "grow 8192")
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        session(&server, "counter", "dave", "").await.text(),
        "dave 1"
    );
    let memory = r#"wharf_instances_retired_total{agent="counter",reason="memory"}"#;
    assert_eq!(metric(&server, memory).await, 1.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_breaker_opens_after_failures_and_recovers_through_half_open() {
    let dir = agents_dir(&["counter"]);
    let kdl = r#"
        agent "counter" {
            retries 0
            breaker {
                failures 2
                cool-down "1s"
            }
        }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let state = r#"wharf_breaker_state{agent="counter"}"#;
    for _ in 0..2 {
        assert_eq!(
            session(&server, "counter", "e", "trap").await.status,
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
    let open = session(&server, "counter", "e", "").await;
    assert_eq!(open.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(open.error_code(), "breaker_open");
    assert!(open.headers.contains_key("retry-after"));
    assert_eq!(metric(&server, state).await, 1.0);
    let health = get(&server.url("/agents/counter/health")).await.json();
    assert_eq!(health["breaker"], "open");

    // After the cool-down one trial goes through; it succeeds and closes it.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        session(&server, "counter", "e", "").await.status,
        StatusCode::OK
    );
    assert_eq!(metric(&server, state).await, 0.0);
    assert_eq!(
        session(&server, "counter", "e", "").await.status,
        StatusCode::OK
    );

    // A failed trial opens it again.
    for _ in 0..2 {
        session(&server, "counter", "e", "trap").await;
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        session(&server, "counter", "e", "trap").await.status,
        StatusCode::INTERNAL_SERVER_ERROR
    );
    assert_eq!(
        session(&server, "counter", "e", "").await.error_code(),
        "breaker_open"
    );
    let shed = r#"wharf_requests_shed_total{agent="counter",reason="breaker"}"#;
    assert_eq!(metric(&server, shed).await, 2.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limits_answer_429_with_retry_after() {
    let dir = agents_dir(&["echo"]);
    let kdl = r#"agent "echo" { rate-limit { requests 2; per "60s" } }"#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let url = server.url("/agents/echo");
    assert_eq!(post(&url, "1").await.status, StatusCode::OK);
    assert_eq!(post(&url, "2").await.status, StatusCode::OK);
    let limited = post(&url, "3").await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(limited.error_code(), "rate_limited");
    let wait: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=30).contains(&wait), "retry-after {wait}");
    let shed = r#"wharf_requests_shed_total{agent="echo",reason="rate_limit"}"#;
    assert_eq!(metric(&server, shed).await, 1.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_pool_and_a_concurrency_limit_shed_with_503() {
    let dir = agents_dir(&["spin"]);
    std::fs::copy(guest("spin"), dir.path().join("slow.wasm")).unwrap();
    let kdl = r#"
        agent "spin" {
            deadline "3s"
            retries 0
            instances { mode "warm"; max 1; queue 0 }
        }
        agent "slow" {
            deadline "3s"
            concurrency 1
        }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let busy_url = server.url("/agents/spin");
    let busy = tokio::spawn(async move { post(&busy_url, "hold").await });
    tokio::time::sleep(Duration::from_millis(600)).await;
    let shed = post(&server.url("/agents/spin"), "more").await;
    assert_eq!(
        shed.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        shed.text()
    );
    assert_eq!(shed.error_code(), "overloaded");
    assert_eq!(shed.headers["retry-after"], "1");
    assert_eq!(busy.await.unwrap().status, StatusCode::GATEWAY_TIMEOUT);
    let queue = r#"wharf_requests_shed_total{agent="spin",reason="queue"}"#;
    assert_eq!(metric(&server, queue).await, 1.0);
    assert!(metric(&server, r#"wharf_deadline_exceeded_total{agent="spin"}"#).await >= 1.0);

    // A fresh agent at its concurrency limit of 1 sheds a second call.
    let busy_url = server.url("/agents/slow");
    let busy = tokio::spawn(async move { post(&busy_url, "hold").await });
    tokio::time::sleep(Duration::from_millis(600)).await;
    let shed = post(&server.url("/agents/slow"), "more").await;
    assert_eq!(
        shed.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        shed.text()
    );
    assert_eq!(shed.error_code(), "overloaded");
    assert_eq!(busy.await.unwrap().status, StatusCode::GATEWAY_TIMEOUT);
    let limited = r#"wharf_requests_shed_total{agent="slow",reason="concurrency"}"#;
    assert_eq!(metric(&server, limited).await, 1.0);
    // Shedding is not the agent's fault: its breaker stays closed.
    assert_eq!(
        metric(&server, r#"wharf_breaker_state{agent="slow"}"#).await,
        0.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trapped_call_is_retried_once_on_a_new_instance() {
    let dir = agents_dir(&["trap"]);
    let kdl = r#"agent "trap" { retries 1 }"#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let reply = post(&server.url("/agents/trap"), "x").await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        metric(&server, r#"wharf_retries_total{agent="trap"}"#).await,
        1.0
    );
    assert_eq!(
        metric(&server, r#"wharf_traps_total{agent="trap"}"#).await,
        2.0
    );
    assert_eq!(
        metric(
            &server,
            r#"wharf_requests_total{agent="trap",stage="agent",status="500"}"#
        )
        .await,
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_health_probe_retires_an_instance_that_reports_unhealthy() {
    let dir = agents_dir(&["counter"]);
    let kdl = r#"
        agent "counter" {
            instances { mode "warm"; max 2 }
            affinity { header "x-session-id" }
            health { interval "100ms"; unhealthy-after 1 }
        }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    assert_eq!(session(&server, "counter", "f", "sick").await.text(), "f 1");
    let retired = r#"wharf_instances_retired_total{agent="counter",reason="unhealthy"}"#;
    let mut seen = 0.0;
    for _ in 0..100 {
        seen = metric(&server, retired).await;
        if seen > 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, 1.0, "the probe found the sick instance");
    assert_eq!(session(&server, "counter", "f", "").await.text(), "f 1");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_with_no_traffic_waits_its_idle_interval_for_a_probe() {
    let dir = agents_dir(&["counter"]);
    let kdl = r#"
        agent "counter" {
            instances { mode "warm"; max 2 }
            affinity { header "x-session-id" }
            health { interval "100ms"; idle-interval "1h"; unhealthy-after 1 }
        }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let probes = "wharf_health_probes_total";
    // Probes are looked at every second: three looks, an interval past
    // due each, and none probes the idle agent.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(metric(&server, probes).await, 0.0, "no probe while idle");
    // A request ends the quiet: the next look probes at the interval, and
    // finds the instance the request made sick.
    assert_eq!(session(&server, "counter", "f", "sick").await.text(), "f 1");
    let retired = r#"wharf_instances_retired_total{agent="counter",reason="unhealthy"}"#;
    wait_until("the probe retires the sick instance", || async {
        metric(&server, retired).await == 1.0
    })
    .await;
    assert!(metric(&server, probes).await >= 1.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_and_health_endpoints_describe_what_happened() {
    let dir = agents_dir(&["echo", "counter"]);
    let server = Server::start(config(dir.path(), WARM_COUNTER)).await;
    // Before any request an agent has its state gauges and nothing else:
    // its other series are made when first counted.
    let idle = get(&server.url("/metrics")).await.text();
    let echo: Vec<&str> = idle
        .lines()
        .filter(|l| l.contains(r#"agent="echo""#))
        .filter_map(|l| l.split('{').next())
        .collect();
    assert!(
        echo.contains(&"wharf_agent_healthy") && echo.contains(&"wharf_breaker_state"),
        "{echo:?}"
    );
    assert!(
        !echo.iter().any(|f| f.starts_with("wharf_request")
            || f.starts_with("wharf_guest_call")
            || f.starts_with("wharf_traps")),
        "{echo:?}"
    );
    for _ in 0..3 {
        post(&server.url("/agents/echo"), "x").await;
    }
    session(&server, "counter", "g", "").await;
    let reply = get(&server.url("/metrics")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(
        reply.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = reply.text();
    for name in [
        "wharf_requests_total",
        "wharf_request_duration_seconds_bucket",
        "wharf_guest_call_duration_seconds_bucket",
        "wharf_instantiate_duration_seconds_bucket",
        "wharf_instances{agent=\"counter\"",
        "wharf_affinity_total{agent=\"counter\",outcome=\"miss\"}",
        "wharf_breaker_state",
        "wharf_agent_healthy",
    ] {
        assert!(text.contains(name), "/metrics lacks {name}");
    }
    // Nothing trapped or was cut off: those series were never made.
    assert!(!text.contains("wharf_traps_total{"), "{text}");
    assert!(!text.contains("wharf_deadline_exceeded_total{"), "{text}");
    assert_eq!(
        metric(
            &server,
            r#"wharf_requests_total{agent="echo",stage="agent",status="200"}"#
        )
        .await,
        3.0
    );
    let count = r#"wharf_request_duration_seconds_count{agent="echo"}"#;
    assert_eq!(metric(&server, count).await, 3.0);

    let health = get(&server.url("/agents/counter/health")).await.json();
    assert_eq!(health["mode"], "warm");
    assert_eq!(health["healthy"], true);
    assert_eq!(health["breaker"], "closed");
    assert_eq!(health["instances"].as_array().unwrap().len(), 1);
    let list = get(&server.url("/agents")).await.json();
    assert_eq!(list[0]["health"]["mode"], "warm");
    assert_eq!(list[1]["health"]["mode"], "fresh");
    assert_eq!(
        get(&server.url("/agents/nobody/health")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_abandoned_call_replaces_its_instance_and_the_host_keeps_serving() {
    let dir = agents_dir(&["counter"]);
    let server = Server::start(config(dir.path(), WARM_COUNTER)).await;
    assert_eq!(session(&server, "counter", "h", "").await.text(), "h 1");
    // The client gives up while the guest is still computing.
    let url = server.url("/agents/counter");
    let req = http::Request::post(&url)
        .header("x-session-id", "h")
        .body(http_body_util::Full::new(bytes::Bytes::from("busy 1500")))
        .unwrap();
    let gave_up = tokio::time::timeout(Duration::from_millis(200), client().request(req)).await;
    assert!(
        gave_up.is_err(),
        "the slow call answered before the client gave up"
    );
    // The instance whose call was cut off is replaced, not reused.
    let mut reply = session(&server, "counter", "h", "").await;
    for _ in 0..50 {
        if reply.status == StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        reply = session(&server, "counter", "h", "").await;
    }
    assert_eq!(reply.text(), "h 1");
    let abandoned = r#"wharf_instances_retired_total{agent="counter",reason="abandoned"}"#;
    assert_eq!(metric(&server, abandoned).await, 1.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_snapshot_is_published_while_serving() {
    let first = agents_dir(&["echo"]);
    let server = Server::start(config(first.path(), "")).await;
    assert_eq!(post(&server.url("/agents/echo"), "one").await.text(), "one");

    let second = agents_dir(&["hello"]);
    let cfg = config(second.path(), "");
    let runtime = wharf::runtime::Runtime::new(&test_engine()).unwrap();
    let snapshot = wharf::registry::load_dir(&runtime, &cfg, second.path()).unwrap();
    server.pipeline().publish(snapshot);

    let names: Vec<String> = get(&server.url("/agents"))
        .await
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["hello"]);
    assert_eq!(
        post(&server.url("/agents/hello"), "Ann").await.text(),
        "Hello, Ann!\n"
    );
    assert_eq!(
        post(&server.url("/agents/echo"), "gone").await.status,
        StatusCode::NOT_FOUND
    );
}
