//! Topics across the nodes of a cluster, over a real NATS server with
//! JetStream: a publish on any node reaches watchers on every node and
//! one node serving each subscribed agent; kept messages are stored in
//! the cluster's stream, so every node reads back the same history under
//! the same ids, a node started late or restarted catches up (and one
//! whose copy is of a stream since deleted starts over), and an
//! at-least-once subscription takes each event once across the nodes.

use std::time::Duration;

use crate::cli::wait_ready;
use crate::cluster::{Nats, cluster_kdl, hears};
use crate::common::*;
use crate::kept::{
    DURABLE, READ_BACK, RESUME, free_port, publish_jobs, sample, serve_keeping_with, sse, watch,
};

/// A node of `agents` (guest, name) with `kdl`, its task store (and the
/// copy of the history beside it) in `data`.
async fn node(
    nats: &Nats,
    name: &str,
    agents: &[(&str, &str)],
    kdl: &str,
    data: &std::path::Path,
) -> (Server, tempfile::TempDir) {
    let dir = agents_dir(&[]);
    for (guest, agent) in agents {
        copy_guest(dir.path(), guest, agent);
    }
    let tasks = data.join("tasks.db").display().to_string();
    let extra = format!("tasks {{ path {tasks:?} }}\n{kdl}");
    let kdl = cluster_kdl(nats, name, &extra, "30s", "");
    (Server::start(config(dir.path(), &kdl)).await, dir)
}

/// Reads `n` message events from `body`: (id, topic, payload) each.
async fn messages(
    body: &mut hyper::body::Incoming,
    n: usize,
) -> Vec<(Option<u64>, String, String)> {
    let got = sse(body, &mut String::new(), n).await;
    got.into_iter()
        .map(|e| {
            assert_eq!(e.event, "message");
            let field = |k: &str| e.data[k].as_str().unwrap().to_string();
            (e.id, field("topic"), field("payload"))
        })
        .collect()
}

/// Publishes on `server`; answers the id the cluster gave a kept message.
async fn publish(server: &Server, topic: &str, payload: &str) -> Option<u64> {
    let reply = post(
        &server.url(&format!("/topics/{topic}")),
        payload.to_string(),
    )
    .await;
    assert_eq!(reply.status, 202, "{}", reply.text());
    let json = reply.json();
    assert_eq!(json["cluster"], true, "{json}");
    json["id"].as_u64()
}

/// The kept messages of `pattern` (URL-encoded) `server` reads back:
/// (id, payload) each.
async fn read(server: &Server, pattern: &str) -> Vec<(u64, String)> {
    read_at(&server.url(""), pattern).await
}

async fn read_at(base: &str, pattern: &str) -> Vec<(u64, String)> {
    let reply = get(&format!("{base}/topics/{pattern}/messages?limit=1000")).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let payload = m["payload"].as_str().unwrap().to_string();
            (m["id"].as_u64().unwrap(), payload)
        })
        .collect()
}

const SHARED: &str = r#"
topic "orders.>" { keep 1000; }
agent "fwd" {
    subscribe "orders.>"
    publishes "audit.>"
    config { forward "audit"; }
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn topics_cross_the_nodes_and_every_node_reads_the_same_history() {
    let nats = Nats::start().await;
    let (d1, d2, d3) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let fwd = [("relay", "fwd")];
    let (n1, _a1) = node(&nats, "n1", &fwd, SHARED, d1.path()).await;
    let (n2, _a2) = node(&nats, "n2", &fwd, SHARED, d2.path()).await;
    hears(&n1, 2).await;
    hears(&n2, 2).await;
    let mut kept_on_n2 = watch(&n2, "orders.%3E", None).await;
    let mut audit_on_n1 = watch(&n1, "audit.%3E", None).await;
    let mut news_on_n2 = watch(&n2, "news.%3E", None).await;

    // Kept messages published on n1 get the stream's ids, in order.
    let mut ids = Vec::new();
    for n in 0..10 {
        ids.push(
            publish(&n1, "orders.eu", &format!("o{n}"))
                .await
                .expect("kept: an id"),
        );
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let want: Vec<(Option<u64>, String, String)> = (0..10)
        .map(|n| (Some(ids[n]), "orders.eu".to_string(), format!("o{n}")))
        .collect();
    // n2's watcher sees them under the same ids.
    assert_eq!(messages(&mut kept_on_n2, 10).await, want);

    // `fwd` runs on both nodes and takes each event once across them: the
    // audit copies it published reach n1's watcher, ten, each once.
    let mut audit: Vec<String> = messages(&mut audit_on_n1, 10)
        .await
        .into_iter()
        .map(|(id, topic, payload)| {
            assert_eq!((id, topic.as_str()), (None, "audit.orders.eu"));
            payload
        })
        .collect();
    audit.sort();
    assert_eq!(audit, (0..10).map(|n| format!("o{n}")).collect::<Vec<_>>());
    let delivered = r#"wharf_topic_events_total{subscriber="fwd",outcome="delivered"}"#;
    wait_until("fwd took ten events across the nodes", || async {
        metric(&n1, delivered).await + metric(&n2, delivered).await == 10.0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        metric(&n1, delivered).await + metric(&n2, delivered).await,
        10.0,
        "none twice"
    );

    // A live message (no block keeps it) from n1 reaches n2, without an id.
    assert_eq!(publish(&n1, "news.today", "hello").await, None);
    let news = messages(&mut news_on_n2, 1).await;
    assert_eq!(news[0], (None, "news.today".into(), "hello".into()));

    // Every node reads back the same history, a node started now too.
    let history: Vec<(u64, String)> = (0..10).map(|n| (ids[n], format!("o{n}"))).collect();
    assert_eq!(read(&n1, "orders.%3E").await, history);
    assert_eq!(read(&n2, "orders.%3E").await, history);
    let (n3, _a3) = node(&nats, "n3", &fwd, SHARED, d3.path()).await;
    wait_until("n3 caught up with the stream", || async {
        read(&n3, "orders.%3E").await.len() == 10
    })
    .await;
    assert_eq!(read(&n3, "orders.%3E").await, history);
    // A watcher resumes on n3 after an id n1 gave.
    let mut resumed = watch(&n3, "orders.%3E", Some(ids[6])).await;
    assert_eq!(messages(&mut resumed, 3).await, want[7..].to_vec());
}

#[tokio::test(flavor = "multi_thread")]
async fn at_least_once_goes_once_across_the_nodes_and_a_node_restarted_catches_up() {
    let nats = Nats::start().await;
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let worker = [("counter", "worker")];
    let (n1, _a1) = node(&nats, "n1", &worker, DURABLE, d1.path()).await;
    let (n2, _a2) = node(&nats, "n2", &worker, DURABLE, d2.path()).await;
    hears(&n1, 2).await;
    hears(&n2, 2).await;
    let mut dead = watch(&n2, "dead.%3E", None).await;
    publish(&n1, "jobs.a", "trap").await;
    for _ in 0..5 {
        publish(&n2, "jobs.a", "fine").await;
    }
    // The trapping job: three tries (on whichever nodes), then one dead
    // letter; the five others taken once each, across both nodes.
    let got = messages(&mut dead, 1).await;
    assert_eq!(got[0], (None, "dead.jobs".into(), "trap".into()));
    let both = |outcome: &'static str| {
        let (n1, n2) = (&n1, &n2);
        async move { metric(n1, &sample(outcome)).await + metric(n2, &sample(outcome)).await }
    };
    wait_until("five jobs taken across the nodes", || async {
        both("delivered").await == 5.0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(both("delivered").await, 5.0, "none twice");
    assert_eq!(both("failed").await, 3.0);
    assert_eq!(both("dead_lettered").await, 1.0);

    // n2 stops; what n1 takes meanwhile is in n2's copy once it is back.
    n2.stop().await;
    let before = metric(&n1, &sample("delivered")).await;
    for _ in 0..3 {
        publish(&n1, "jobs.b", "fine").await;
    }
    wait_until("n1 alone took the three", || async {
        metric(&n1, &sample("delivered")).await == before + 3.0
    })
    .await;
    let (n2, _a2) = node(&nats, "n2", &worker, DURABLE, d2.path()).await;
    let kept = read(&n1, "jobs.%3E").await;
    assert_eq!(kept.len(), 9);
    wait_until("n2's copy caught up", || async {
        read(&n2, "jobs.%3E").await == kept
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_node_loses_no_kept_message_and_its_copy_catches_up() {
    let nats = Nats::start().await;
    let home = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let cluster = cluster_kdl(&nats, "n1", "", "30s", "");
    let mut n1 = serve_keeping_with(home.path(), port, &cluster);
    wait_ready(&base).await;
    let data = tempfile::tempdir().unwrap();
    let (n2, _a2) = node(&nats, "n2", &[], "topic \"jobs.>\"", data.path()).await;
    // Each publish is answered once the stream has it; then SIGKILL, with
    // no read on n1 first (its copy may lack the last of them).
    publish_jobs(&base, 200).await;
    n1.0.kill().unwrap();
    n1.0.wait().unwrap();
    drop(n1);
    wait_until("n2 has the 200 n1 acknowledged", || async {
        read(&n2, "jobs.%3E").await.len() == 200
    })
    .await;
    for n in 0..50 {
        publish(&n2, "jobs.late", &format!("late {n}")).await;
    }
    let all = read(&n2, "jobs.%3E").await;
    assert_eq!(all.len(), 250);
    assert_eq!(
        (all[0].1.as_str(), all[249].1.as_str()),
        ("job 0", "late 49")
    );

    // Back, n1 copies what it missed, under the same ids.
    let _n1 = serve_keeping_with(home.path(), port, &cluster);
    wait_ready(&base).await;
    wait_until("n1's copy caught up", || async {
        read_at(&base, "jobs.%3E").await == all
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_deleted_by_hand_is_made_again_and_the_copies_start_over() {
    let nats = Nats::start().await;
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keep = r#"topic "orders.>""#;
    let (n1, _a1) = node(&nats, "n1", &[], keep, d1.path()).await;
    let (n2, _a2) = node(&nats, "n2", &[], keep, d2.path()).await;
    for n in 0..3 {
        publish(&n1, "orders.eu", &format!("old {n}")).await;
    }
    wait_until("n2 copied the three", || async {
        read(&n2, "orders.%3E").await.len() == 3
    })
    .await;
    let js = async_nats::jetstream::new(async_nats::connect(&nats.url).await.unwrap());
    js.delete_stream("WHARF_TOPICS").await.unwrap();
    // Until a node makes the stream again a kept publish is refused, with
    // the reason; then five go through.
    let stored = std::sync::atomic::AtomicU64::new(0);
    wait_until("five kept publishes after the stream is back", || async {
        let n = stored.load(std::sync::atomic::Ordering::Relaxed);
        let reply = post(&n1.url("/topics/orders.eu"), format!("new {n}")).await;
        match reply.status.as_u16() {
            202 => stored.store(n + 1, std::sync::atomic::Ordering::Relaxed),
            503 => assert_eq!(reply.error_code(), "topic_cluster", "{}", reply.text()),
            other => panic!("{other}: {}", reply.text()),
        }
        n + 1 == 5 && reply.status == 202
    })
    .await;
    // Both copies hold the new stream alone, under its ids.
    let want: Vec<(u64, String)> = (0..5).map(|n| (n + 1, format!("new {n}"))).collect();
    for n in [&n1, &n2] {
        wait_until("the copy started over", || async {
            read(n, "orders.%3E").await == want
        })
        .await;
    }
}

/// The one-node tests of read-back and resume (`kept::…`), on a node of a
/// cluster: the same answers from the copy of the cluster's stream.
#[tokio::test(flavor = "multi_thread")]
async fn read_back_and_resume_answer_in_a_cluster_as_on_one_node() {
    let nats = Nats::start().await;
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (n1, _a1) = node(&nats, "n1", &[("echo", "echo")], READ_BACK, d1.path()).await;
    crate::kept::kept_messages_are_read_back_by_cursor_time_and_content_on(n1).await;
    let (n2, _a2) = node(&nats, "n2", &[("echo", "echo")], RESUME, d2.path()).await;
    crate::kept::a_watcher_resumes_after_the_last_event_id_it_saw_on(n2).await;
}
