//! Topics over real sockets with real guests: clients publish
//! (`POST /topics/{topic}`) and watch patterns as server-sent events
//! (`GET /topics/{pattern}`) through the top-level filters; agents
//! subscribed in KDL receive events in order, each through its own bounded
//! queue, so a trapping or slow subscriber stalls no one else; agents
//! publish only where their block allows.

use http::Method;

use crate::common::*;

const TOPICS: &str = r#"
filters "probe"
agent "audit" {
    subscribe "orders.>"
    publishes "audit.>"
    config { forward "audit"; }
}
agent "trap" {
    subscribe "orders.*"
    retries 0
    breaker { failures 10000; }
    health { unhealthy-after 1000; }
}
agent "spin" {
    subscribe "orders.created" {
        queue 2
        overflow "drop-newest"
    }
    deadline "100ms"
    retries 0
    breaker { failures 10000; }
    health { unhealthy-after 1000; }
}
agent "loud" { publishes "news.*"; }
"#;

/// Reads server-sent events from `body` into `text` (what was read
/// before included) until it holds `n` events; returns them all.
async fn events(
    body: &mut hyper::body::Incoming,
    text: &mut String,
    n: usize,
) -> Vec<serde_json::Value> {
    loop {
        let data: Vec<serde_json::Value> = text
            .split("\n\n")
            .filter_map(|frame| frame.strip_prefix("event: message\ndata: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        if data.len() >= n {
            return data;
        }
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(30), next_chunk(body))
            .await
            .unwrap_or_else(|_| panic!("{n} events within 30 s; got:\n{text}"))
            .unwrap()
            .expect("the stream stays open");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn subscribers_get_events_in_order_and_a_bad_one_stalls_no_one() {
    let dir = agents_dir(&["trap", "spin", "probe"]);
    copy_guest(dir.path(), "relay", "audit");
    copy_guest(dir.path(), "relay", "loud");
    let server = Server::start(config(dir.path(), TOPICS)).await;

    // A client watches what the audit agent forwards.
    let watch = open(&client(), Method::GET, &server.url("/topics/audit.%3E"), "").await;
    assert_eq!(watch.status(), 200);
    assert_eq!(watch.headers()["content-type"], "text/event-stream");
    let mut body = watch.into_body();
    let mut seen = String::new();
    let hello = next_chunk(&mut body).await.unwrap().unwrap();
    assert_eq!(&hello[..], b": watching audit.>\n\n");

    // Three subscriptions match orders.created, two match orders.paid.
    for n in 0..20 {
        let topic = if n % 2 == 0 {
            "orders.created"
        } else {
            "orders.paid"
        };
        let reply = post(&server.url(&format!("/topics/{topic}")), n.to_string()).await;
        assert_eq!(reply.status, 202, "{}", reply.text());
        assert_eq!(reply.json()["topic"], topic);
        // The probe filter ran on the publish (the top-level chain).
        assert!(reply.headers.contains_key("x-probe-probe-seen"));
    }
    // Each event went to audit, which published it again: all 20, in order,
    // while the trapping and the spinning subscribers fail on theirs.
    let got = events(&mut body, &mut seen, 20).await;
    let payloads: Vec<&str> = got.iter().map(|e| e["payload"].as_str().unwrap()).collect();
    let want: Vec<String> = (0..20).map(|n| n.to_string()).collect();
    assert_eq!(payloads, want);
    assert_eq!(got[0]["topic"], "audit.orders.created");
    assert_eq!(got[1]["topic"], "audit.orders.paid");

    let sample = |who: &str, outcome: &str| {
        format!(r#"wharf_topic_events_total{{subscriber="{who}",outcome="{outcome}"}}"#)
    };
    wait_until("audit took each of its 20 events", || async {
        metric(&server, &sample("audit", "delivered")).await == 20.0
    })
    .await;
    wait_until("the trap failed on each of its 20 events", || async {
        metric(&server, &sample("trap", "failed")).await == 20.0
    })
    .await;
    // spin holds 2 events at most and drops the newest past that: of its
    // 10, some were dropped, none was delivered.
    assert!(metric(&server, &sample("spin", "dropped")).await >= 1.0);
    assert_eq!(metric(&server, &sample("spin", "delivered")).await, 0.0);

    // A filter that blocks the publish: nothing is queued.
    let blocked = send(
        &client(),
        Method::POST,
        &server.url("/topics/orders.created"),
        &[("x-probe-probe", "rh:block:403")],
        "no",
    )
    .await;
    assert_eq!(blocked.status, 403);
    // Bad topics and patterns say why; the host keeps serving.
    let wild = post(&server.url("/topics/orders.*"), "").await;
    assert_eq!(
        (wild.status.as_u16(), wild.error_code().as_str()),
        (400, "bad_topic")
    );
    assert!(
        get(&server.url("/topics/a..b"))
            .await
            .text()
            .contains("empty token")
    );
    let reply = post(&server.url("/topics/orders.created"), "20").await;
    assert_eq!(reply.status, 202);
    let got = events(&mut body, &mut seen, 21).await;
    assert_eq!(
        got[20]["payload"], "20",
        "the blocked publish never arrived"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_publish_only_where_their_block_allows() {
    let dir = agents_dir(&["echo"]);
    copy_guest(dir.path(), "relay", "loud");
    copy_guest(dir.path(), "relay", "quiet");
    let server = Server::start(config(
        dir.path(),
        TOPICS.replace("filters \"probe\"", "").as_str(),
    ))
    .await;
    let watch = open(&client(), Method::GET, &server.url("/topics/news.%3E"), "").await;
    let mut body = watch.into_body();
    let mut seen = String::new();
    next_chunk(&mut body).await.unwrap().unwrap();

    let reply = post(&server.url("/agents/loud/publish/news.today"), "extra").await;
    assert_eq!(
        (reply.status.as_u16(), reply.text().as_str()),
        (200, "queued 1")
    );
    let got = events(&mut body, &mut seen, 1).await;
    assert_eq!(
        got[0],
        serde_json::json!({"topic": "news.today", "payload": "extra"})
    );

    let reply = post(&server.url("/agents/loud/publish/news.today.late"), "").await;
    assert_eq!(reply.status, 403);
    assert!(
        reply
            .text()
            .contains("no pattern in its `publishes` matches it"),
        "{}",
        reply.text()
    );
    let reply = post(&server.url("/agents/quiet/publish/news.today"), "").await;
    assert_eq!(reply.status, 403);
    assert!(
        reply.text().contains("allows no publishing"),
        "{}",
        reply.text()
    );
    let reply = post(&server.url("/agents/loud/publish/news.*"), "").await;
    assert!(reply.text().contains("wildcard"), "{}", reply.text());
    // A binary payload reaches a watcher as base64.
    post(
        &server.url("/agents/loud/publish/news.raw"),
        vec![0xff, 0x00],
    )
    .await;
    let got = events(&mut body, &mut seen, 2).await;
    assert_eq!(got[1]["encoding"], "base64");
    assert_eq!(got[1]["payload"], "/wA=");
    server.stop().await;
}

/// Two loops of republishing agents: `echoer` republishes what it gets
/// to a topic it subscribes to; `ping` and `pong` republish each other's
/// events, `pong` through a call to `ponger`.
const LOOPS: &str = r#"
topics { max-hops 3; }
agent "echoer" {
    subscribe "loop.>"
    publishes "loop.>"
    config { forward "loop"; }
    retries 0
}
agent "ping" {
    subscribe "ping.>"
    publishes "pong.>"
    config { forward "pong"; }
    retries 0
}
agent "pong" {
    subscribe "pong.>"
    calls "ponger"
    config { forward "ping"; via "ponger"; }
    retries 0
}
agent "ponger" { publishes "ping.>"; }
"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_event_republished_in_a_loop_stops_at_max_hops() {
    let dir = agents_dir(&[]);
    for name in ["echoer", "ping", "pong", "ponger"] {
        copy_guest(dir.path(), "relay", name);
    }
    let server = Server::start(config(dir.path(), LOOPS)).await;
    let watch = open(&client(), Method::GET, &server.url("/topics/%3E"), "").await;
    let mut body = watch.into_body();
    let mut seen = String::new();
    next_chunk(&mut body).await.unwrap().unwrap();

    let refused = |who: &str| format!(r#"wharf_topic_hops_refused_total{{publisher="{who}"}}"#);
    let sample = |who: &str, outcome: &str| {
        format!(r#"wharf_topic_events_total{{subscriber="{who}",outcome="{outcome}"}}"#)
    };
    // The client's event and three republishes in a row; the fourth is
    // refused, which fails that delivery, and the loop ends.
    assert_eq!(post(&server.url("/topics/loop.x"), "a").await.status, 202);
    wait_until("echoer's fourth republish was refused", || async {
        metric(&server, &refused("echoer")).await == 1.0
    })
    .await;
    let got = events(&mut body, &mut seen, 4).await;
    let topics: Vec<&str> = got.iter().map(|e| e["topic"].as_str().unwrap()).collect();
    assert_eq!(
        topics,
        [
            "loop.x",
            "loop.loop.x",
            "loop.loop.loop.x",
            "loop.loop.loop.loop.x"
        ]
    );
    // A delivery's outcome is counted when its call returns, which may be
    // after the event it republished reached the watcher.
    wait_until(
        "echoer's three deliveries and one failure were counted",
        || async {
            metric(&server, &sample("echoer", "delivered")).await == 3.0
                && metric(&server, &sample("echoer", "failed")).await == 1.0
        },
    )
    .await;

    // Through a call, the count goes on: ponger publishes for pong, which
    // serves a delivered event, so its publishes count as republishes.
    assert_eq!(post(&server.url("/topics/ping.x"), "b").await.status, 202);
    wait_until("ponger's republish past max-hops was refused", || async {
        metric(&server, &refused("ponger")).await == 1.0
    })
    .await;
    let got = events(&mut body, &mut seen, 8).await;
    let topics: Vec<&str> = got[4..]
        .iter()
        .map(|e| e["topic"].as_str().unwrap())
        .collect();
    assert_eq!(
        topics,
        [
            "ping.x",
            "pong.ping.x",
            "ping.pong.ping.x",
            "pong.ping.pong.ping.x"
        ]
    );
    wait_until("pong's failed delivery was counted", || async {
        metric(&server, &sample("pong", "failed")).await == 1.0
    })
    .await;

    // A client's own request starts at 0 again: the host keeps serving
    // (queued for `ping` and the watcher).
    let reply = post(&server.url("/agents/ponger/publish/ping.y"), "c").await;
    assert_eq!(
        (reply.status.as_u16(), reply.text().as_str()),
        (200, "queued 2")
    );
    wait_until("the new chain was cut too", || async {
        metric(&server, &refused("ponger")).await == 2.0
    })
    .await;
    server.stop().await;
}

#[test]
fn check_warns_of_agents_that_may_republish_in_a_loop() {
    let dir = agents_dir(&[]);
    for name in ["echoer", "ping", "pong", "ponger"] {
        copy_guest(dir.path(), "relay", name);
    }
    let file = dir.path().join("loops.kdl");
    std::fs::write(&file, format!("agents \".\"\n{LOOPS}")).unwrap();
    let out = crate::cli::wharf()
        .arg("check")
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let warnings: Vec<&str> = stdout.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(
        warnings,
        [
            "  warning: `echoer` may republish its own events: it subscribes to `loop.>` and publishes `loop.>`; each event stops after `topics { max-hops 3 }` republishes in a row",
            "  warning: `ping` → `pong` → `ping` may republish each other's events in a loop: `ping` publishes `pong.>`, which `pong` subscribes to as `pong.>`; `pong` calls `ponger`, which publishes `ping.>`, which `ping` subscribes to as `ping.>`; each event stops after `topics { max-hops 3 }` republishes in a row",
        ],
        "{stdout}"
    );
}
