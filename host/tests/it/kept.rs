//! Kept topics over real sockets: a `topic` block keeps a pattern's
//! messages in the history file; clients read them back by cursor, time
//! and content (`GET /topics/{pattern}/messages`), watchers resume after
//! the last id they saw (`Last-Event-ID`), and what was written survives a
//! restart and a killed process.

use std::time::Duration;

use http::Method;

use crate::cli::{KillOnDrop, wait_ready};
use crate::common::*;

/// One server-sent event: its id, its type, its data as JSON.
#[derive(Debug, Clone)]
pub(crate) struct Sse {
    pub id: Option<u64>,
    pub event: String,
    pub data: serde_json::Value,
}

/// Reads frames from `body` until `n` events (not comments) have come.
pub(crate) async fn sse(body: &mut hyper::body::Incoming, text: &mut String, n: usize) -> Vec<Sse> {
    loop {
        let complete = text.rfind("\n\n").map_or("", |end| &text[..end]);
        let frames: Vec<Sse> = complete
            .split("\n\n")
            .filter(|f| f.contains("data: "))
            .map(|frame| {
                let mut sse = Sse {
                    id: None,
                    event: "message".into(),
                    data: serde_json::Value::Null,
                };
                for line in frame.lines() {
                    if let Some(id) = line.strip_prefix("id: ") {
                        sse.id = Some(id.parse().unwrap());
                    } else if let Some(event) = line.strip_prefix("event: ") {
                        sse.event = event.into();
                    } else if let Some(data) = line.strip_prefix("data: ") {
                        sse.data = serde_json::from_str(data).unwrap();
                    }
                }
                sse
            })
            .collect();
        if frames.len() >= n {
            return frames;
        }
        let chunk = tokio::time::timeout(Duration::from_secs(30), next_chunk(body))
            .await
            .unwrap_or_else(|_| panic!("{n} events within 30 s; got:\n{text}"))
            .unwrap()
            .expect("the stream stays open");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

/// Opens a watch of `pattern` (URL-encoded), resuming after `last` when
/// given; answers its body once the greeting comment has come.
pub(crate) async fn watch(
    server: &Server,
    pattern: &str,
    last: Option<u64>,
) -> hyper::body::Incoming {
    let last = last.map(|id| id.to_string());
    let headers: Vec<(&str, &str)> = last.iter().map(|l| ("last-event-id", l.as_str())).collect();
    let resp = open_with(
        &client(),
        Method::GET,
        &server.url(&format!("/topics/{pattern}")),
        &headers,
    )
    .await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    let hello = next_chunk(&mut body).await.unwrap().unwrap();
    assert!(hello.starts_with(b": watching "), "{hello:?}");
    body
}

async fn publish(server: &Server, topic: &str, payload: &str) {
    let reply = post(
        &server.url(&format!("/topics/{topic}")),
        payload.to_string(),
    )
    .await;
    assert_eq!(reply.status, 202, "{}", reply.text());
}

fn payloads(page: &serde_json::Value) -> Vec<String> {
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["payload"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn kept_messages_are_read_back_by_cursor_time_and_content() {
    let dir = agents_dir(&["echo"]);
    kept_messages_are_read_back_by_cursor_time_and_content_on(
        Server::start(config(dir.path(), READ_BACK)).await,
    )
    .await;
}

/// What `READ_BACK` keeps, on one node or in a cluster (`cluster_topics`).
pub(crate) const READ_BACK: &str = r#"topic "orders.>" { keep 5; }
           topic "audit.*" { for "1h"; }"#;

/// The test's body, on `server`.
pub(crate) async fn kept_messages_are_read_back_by_cursor_time_and_content_on(server: Server) {
    for n in 0..8 {
        let region = if n % 2 == 0 { "eu" } else { "us" };
        publish(
            &server,
            &format!("orders.{region}"),
            &format!("order {n} {region}"),
        )
        .await;
    }
    publish(&server, "news.today", "not kept").await;
    let queued = r#"wharf_topic_kept_total{outcome="queued"}"#;
    assert_eq!(metric(&server, queued).await, 8.0);
    let read = |query: &'static str| {
        let url = server.url(&format!("/topics/{query}"));
        async move {
            let reply = get(&url).await;
            assert_eq!(reply.status, 200, "{query}: {}", reply.text());
            reply.json()
        }
    };
    // Past `keep 5`, the oldest go.
    wait_until("orders.> trimmed to its 5 newest", || async {
        payloads(&read("orders.%3E/messages").await).len() == 5
    })
    .await;
    let all = read("orders.%3E/messages").await;
    assert_eq!(payloads(&all)[0], "order 3 us");
    assert_eq!(all["next"], serde_json::Value::Null);
    let ids: Vec<u64> = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_u64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let first = &all["messages"][0];
    assert_eq!(first["topic"], "orders.us");
    assert!(first["published"].as_str().unwrap().ends_with('Z'));

    // The last two, newest first, then the page before them.
    let newest = read("orders.%3E/messages?order=newest&limit=2").await;
    assert_eq!(payloads(&newest), ["order 7 us", "order 6 eu"]);
    let before = newest["next"].as_u64().unwrap();
    let url = server.url(&format!(
        "/topics/orders.%3E/messages?order=newest&limit=2&before={before}"
    ));
    assert_eq!(
        payloads(&get(&url).await.json()),
        ["order 5 us", "order 4 eu"]
    );
    // Oldest first from a cursor.
    let url = server.url(&format!("/topics/orders.%3E/messages?after={}", ids[2]));
    assert_eq!(
        payloads(&get(&url).await.json()),
        ["order 6 eu", "order 7 us"]
    );
    // One topic; a substring; a regular expression.
    assert_eq!(
        payloads(&read("orders.eu/messages").await),
        ["order 4 eu", "order 6 eu"]
    );
    assert_eq!(
        payloads(&read("orders.%3E/messages?contains=5%20us").await),
        ["order 5 us"]
    );
    assert_eq!(
        payloads(&read("orders.*/messages?match=%5Eorder%20%5B37%5D").await),
        ["order 3 us", "order 7 us"]
    );
    // A time range: from the publish time of the fourth kept message.
    let since = first["published"].as_str().unwrap().to_string();
    let url = server.url(&format!(
        "/topics/orders.%3E/messages?since={since}&until=9999999999999"
    ));
    assert_eq!(payloads(&get(&url).await.json()).len(), 5);
    let url = server.url("/topics/orders.%3E/messages?until=1000");
    assert_eq!(payloads(&get(&url).await.json()).len(), 0);

    // What nothing keeps, and queries that cannot be answered, say why;
    // the host keeps serving.
    let reply = get(&server.url("/topics/news.today/messages")).await;
    assert_eq!(
        (reply.status.as_u16(), reply.error_code().as_str()),
        (404, "not_kept")
    );
    assert!(
        reply.text().contains("add a `topic` block"),
        "{}",
        reply.text()
    );
    for (query, says) in [
        ("match=(", "regex parse error"),
        ("limit=5000", "from 1 to 1000"),
        ("since=yesterday", "RFC 3339"),
        ("colour=red", "unknown"),
    ] {
        let reply = get(&server.url(&format!("/topics/orders.%3E/messages?{query}"))).await;
        assert_eq!(
            (reply.status.as_u16(), reply.error_code().as_str()),
            (400, "bad_query"),
            "{query}"
        );
        assert!(reply.text().contains(says), "{query}: {}", reply.text());
    }
    let reply = get(&server.url("/topics/orders.%3E.x/messages")).await;
    assert_eq!(
        (reply.status.as_u16(), reply.error_code().as_str()),
        (400, "bad_topic")
    );
    assert_eq!(
        payloads(&read("orders.%3E/messages?limit=1").await).len(),
        1
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_resumes_after_the_last_event_id_it_saw() {
    let dir = agents_dir(&["echo"]);
    a_watcher_resumes_after_the_last_event_id_it_saw_on(
        Server::start(config(dir.path(), RESUME)).await,
    )
    .await;
}

/// What `RESUME` keeps, on one node or in a cluster (`cluster_topics`).
pub(crate) const RESUME: &str = r#"topic "chat.>" { keep 100; }
           topic "small.*" { keep 2; }"#;

/// The test's body, on `server`.
pub(crate) async fn a_watcher_resumes_after_the_last_event_id_it_saw_on(server: Server) {
    let mut body = watch(&server, "chat.%3E", None).await;
    let mut text = String::new();
    for n in 0..3 {
        publish(&server, "chat.room", &format!("m{n}")).await;
    }
    let seen = sse(&mut body, &mut text, 3).await;
    let last = seen[2].id.expect("kept events carry an id");
    assert!(seen[0].id < seen[1].id && seen[1].id < seen[2].id);
    assert_eq!(seen[2].data["id"], last);
    drop(body);

    // Published while the watcher was away, then resumed: the missed two,
    // then live ones, none twice.
    publish(&server, "chat.room", "m3").await;
    publish(&server, "chat.hall", "m4").await;
    let mut body = watch(&server, "chat.%3E", Some(last)).await;
    let mut text = String::new();
    publish(&server, "chat.room", "m5").await;
    let got = sse(&mut body, &mut text, 3).await;
    let got: Vec<(&str, &str)> = got
        .iter()
        .map(|e| (e.event.as_str(), e.data["payload"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [("message", "m3"), ("message", "m4"), ("message", "m5")]
    );
    drop(body);

    // `?after=` does the same for a client that cannot set the header.
    let resp = open(
        &client(),
        Method::GET,
        &server.url(&format!("/topics/chat.room?after={last}")),
        "",
    )
    .await;
    let mut body = resp.into_body();
    let mut text = String::new();
    let got = sse(&mut body, &mut text, 2).await;
    assert_eq!(
        (
            got[0].data["payload"].as_str(),
            got[1].data["payload"].as_str()
        ),
        (Some("m3"), Some("m5"))
    );
    drop(body);

    // Resuming past what retention deleted: told so, then what is kept.
    // On a node of a cluster the kept copy follows the stream a moment
    // later: wait for what each step needs rather than read it once (a copy
    // caught between `s1` and `s2` also holds two messages).
    publish(&server, "small.x", "s0").await;
    let first_id = || async {
        let page = get(&server.url("/topics/small.x/messages")).await.json();
        page["messages"][0]["id"].as_u64()
    };
    wait_until("s0 is kept", || async { first_id().await.is_some() }).await;
    let first = first_id().await;
    for n in 1..5 {
        publish(&server, "small.x", &format!("s{n}")).await;
    }
    wait_until("small.* trimmed to s3 and s4", || async {
        payloads(&get(&server.url("/topics/small.x/messages")).await.json()) == ["s3", "s4"]
    })
    .await;
    let mut body = watch(&server, "small.*", first).await;
    let mut text = String::new();
    let got = sse(&mut body, &mut text, 3).await;
    assert_eq!(got[0].event, "gap", "{text}");
    assert!(got[0].data["lost_through"].as_u64().unwrap() > first.unwrap());
    assert_eq!(
        (
            got[1].data["payload"].as_str(),
            got[2].data["payload"].as_str()
        ),
        (Some("s3"), Some("s4"))
    );
    drop(body);

    // A pattern nothing keeps: told so; a bad id is refused.
    let mut body = watch(&server, "news.*", Some(1)).await;
    let got = sse(&mut body, &mut String::new(), 1).await;
    assert_eq!(got[0].event, "gap");
    assert!(
        got[0].data["reason"]
            .as_str()
            .unwrap()
            .contains("nothing is kept")
    );
    drop(body);
    let reply = send(
        &client(),
        Method::GET,
        &server.url("/topics/chat.%3E"),
        &[("last-event-id", "yesterday")],
        "",
    )
    .await;
    assert_eq!(
        (reply.status.as_u16(), reply.error_code().as_str()),
        (400, "bad_query")
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kept_messages_survive_a_restart_and_ids_keep_growing() {
    let dir = agents_dir(&["echo"]);
    let data = tempfile::tempdir().unwrap();
    let kdl = format!(
        "tasks {{ path {:?} }}\ntopic \"log.>\"",
        data.path().join("tasks.db").display().to_string()
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    for n in 0..3 {
        publish(&server, "log.a", &format!("before {n}")).await;
    }
    let before = get(&server.url("/topics/log.%3E/messages")).await.json();
    assert_eq!(payloads(&before).len(), 3);
    server.stop().await;
    assert!(data.path().join("tasks.topics.db").exists());

    let server = Server::start(config(dir.path(), &kdl)).await;
    publish(&server, "log.a", "after").await;
    let after = get(&server.url("/topics/log.%3E/messages")).await.json();
    assert_eq!(
        payloads(&after),
        ["before 0", "before 1", "before 2", "after"]
    );
    assert_eq!(after["messages"][2], before["messages"][2]);
    assert!(after["messages"][3]["id"].as_u64() > before["messages"][2]["id"].as_u64());
    // A watcher from before the restart resumes after it.
    let last = before["messages"][2]["id"].as_u64();
    let mut body = watch(&server, "log.%3E", last).await;
    let got = sse(&mut body, &mut String::new(), 1).await;
    assert_eq!(got[0].data["payload"], "after");
    server.stop().await;
}

/// A `wharf serve` keeping `jobs.>` in `dir`, on `port`.
fn serve_keeping(dir: &std::path::Path, port: u16) -> KillOnDrop {
    serve_keeping_with(dir, port, "")
}

/// `wharf serve` in `dir` on `port`, keeping `jobs.>`, with `extra`
/// configuration.
pub(crate) fn serve_keeping_with(dir: &std::path::Path, port: u16, extra: &str) -> KillOnDrop {
    let text = format!(
        "listen \"127.0.0.1:{port}\"\nagents \"agents\"\ncache {:?}\ntasks {{ path \"tasks.db\" }}\ntopic \"jobs.>\"\n{extra}\n",
        test_cache_dir().display().to_string()
    );
    std::fs::create_dir_all(dir.join("agents")).unwrap();
    std::fs::write(dir.join("wharf.kdl"), text).unwrap();
    KillOnDrop(
        std::process::Command::new(env!("CARGO_BIN_EXE_wharf"))
            .current_dir(dir)
            .args(["serve", "-c", "wharf.kdl"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

pub(crate) fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}

pub(crate) async fn publish_jobs(base: &str, n: usize) {
    for i in 0..n {
        let reply = post(
            &format!("{base}/topics/jobs.n{}", i % 7),
            format!("job {i}"),
        )
        .await;
        assert_eq!(reply.status, 202);
    }
}

async fn jobs_kept(base: &str) -> Vec<String> {
    payloads(
        &get(&format!("{base}/topics/jobs.%3E/messages?limit=1000"))
            .await
            .json(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_read_has_seen_survives_a_killed_process() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = serve_keeping(dir.path(), port);
    wait_ready(&base).await;
    publish_jobs(&base, 200).await;
    // A read answers once every publish before it is written.
    assert_eq!(jobs_kept(&base).await.len(), 200);
    child.0.kill().unwrap(); // SIGKILL: no shutdown at all
    child.0.wait().unwrap();
    drop(child);

    let _child = serve_keeping(dir.path(), port);
    wait_ready(&base).await;
    let kept = jobs_kept(&base).await;
    assert_eq!(kept.len(), 200);
    assert_eq!((kept[0].as_str(), kept[199].as_str()), ("job 0", "job 199"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_told_to_stop_writes_what_it_had_queued() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = serve_keeping(dir.path(), port);
    wait_ready(&base).await;
    // No read: the last publishes may still be queued when SIGTERM comes.
    publish_jobs(&base, 300).await;
    let pid = child.0.id().to_string();
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(child.0.wait().unwrap().success(), "a clean exit");
    drop(child);

    let _child = serve_keeping(dir.path(), port);
    wait_ready(&base).await;
    assert_eq!(jobs_kept(&base).await.len(), 300);
}

/// The numbers the first `width` characters of each event's payload
/// hold, for the first `n` events read from a watch (frames taken off as
/// they complete, so large ones cost no rescans).
async fn numbered(body: &mut hyper::body::Incoming, n: usize, width: usize) -> Vec<u32> {
    let mut pending = String::new();
    let mut got: Vec<u32> = Vec::new();
    while got.len() < n {
        let chunk = tokio::time::timeout(Duration::from_secs(60), next_chunk(body))
            .await
            .unwrap_or_else(|_| panic!("{n} events within 60 s; got {}", got.len()))
            .unwrap()
            .expect("the stream stays open");
        pending.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = pending.find("\n\n") {
            let frame: String = pending.drain(..end + 2).collect();
            if let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) {
                let data: serde_json::Value = serde_json::from_str(data).unwrap();
                got.push(data["payload"].as_str().unwrap()[..width].parse().unwrap());
            }
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_too_slow_for_its_queue_loses_no_kept_message() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), r#"topic "bulk.>" { keep 10000; }"#)).await;
    let mut body = watch(&server, "bulk.%3E", None).await;
    // 3,000 messages of 2 KiB while the watcher reads nothing: more than
    // the socket buffers and the watch's queue (1,024 events, 4 MiB) hold.
    let pad = "p".repeat(2048);
    for n in 0..3000 {
        publish(&server, "bulk.x", &format!("{n:05} {pad}")).await;
    }
    let dropped = metric(
        &server,
        r#"wharf_topic_events_total{subscriber="watch",outcome="dropped"}"#,
    )
    .await;
    assert!(dropped > 0.0, "the queue overflowed");
    let got = numbered(&mut body, 3000, 5).await;
    let want: Vec<u32> = (0..3000).collect();
    assert!(
        got == want,
        "in order, none lost, none twice: first wrong at {:?}",
        got.iter().zip(&want).position(|(a, b)| a != b)
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_back_page_is_bounded_in_bytes_and_next_reads_on() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), r#"topic "big.>" { keep 100; }"#)).await;
    // 40 messages of 1 MiB (the default max-payload), asked for in one page
    // of a thousand: each answer holds at most 4 MiB of payload.
    let mib = "m".repeat((1 << 20) - 8);
    for n in 0..40 {
        publish(&server, "big.x", &format!("{n:07} {mib}")).await;
    }
    let mut seen = Vec::new();
    let mut after = String::new();
    let mut pages = 0;
    loop {
        let url = server.url(&format!("/topics/big.%3E/messages?limit=1000{after}"));
        let reply = get(&url).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert!(
            reply.body.len() <= (4 << 20) + 4096,
            "{} bytes",
            reply.body.len()
        );
        let page = reply.json();
        let got = payloads(&page);
        assert!(!got.is_empty() && got.len() <= 4, "{} messages", got.len());
        seen.extend(got.iter().map(|p| p[..7].parse::<u32>().unwrap()));
        pages += 1;
        match page["next"].as_u64() {
            Some(next) => after = format!("&after={next}"),
            None => break,
        }
    }
    assert_eq!(
        seen,
        (0..40).collect::<Vec<_>>(),
        "every message once, in order"
    );
    assert!(pages >= 10, "{pages} pages");

    // Watchers resuming from the start, reading nothing: each holds what
    // its queue and one page read back may hold, not the history.
    let mut stalled = Vec::new();
    for _ in 0..8 {
        stalled.push(watch(&server, "big.%3E", Some(0)).await);
    }
    // Reads go on meanwhile: the read-back budget is shared, not taken.
    let reply = get(&server.url("/topics/big.%3E/messages?limit=1&order=newest")).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(payloads(&reply.json()).len(), 1);
    // A watcher that reads gets every kept message in order.
    let mut body = watch(&server, "big.%3E", Some(0)).await;
    let ids = numbered(&mut body, 40, 7).await;
    assert_eq!(ids, (0..40).collect::<Vec<_>>());
    drop(stalled);
    server.stop().await;
}

pub(crate) const DURABLE: &str = r#"
topic "jobs.>" { keep 100; }
agent "worker" {
    subscribe "jobs.*" {
        delivery "at-least-once"
        attempts 3
        backoff "20ms"
        dead-letter "dead.jobs"
    }
    retries 0
    breaker { failures 10000; }
    health { unhealthy-after 1000; }
}
"#;

pub(crate) fn sample(outcome: &str) -> String {
    format!(r#"wharf_topic_events_total{{subscriber="worker",outcome="{outcome}"}}"#)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscriber_that_traps_gets_the_event_again_then_it_goes_to_the_dead_letters() {
    let dir = agents_dir(&[]);
    copy_guest(dir.path(), "counter", "worker");
    let server = Server::start(config(dir.path(), DURABLE)).await;
    let mut dead = watch(&server, "dead.%3E", None).await;
    publish(&server, "jobs.a", "trap").await;
    publish(&server, "jobs.a", "fine").await;
    let got = sse(&mut dead, &mut String::new(), 1).await;
    assert_eq!(
        (
            got[0].data["topic"].as_str(),
            got[0].data["payload"].as_str()
        ),
        (Some("dead.jobs"), Some("trap"))
    );
    wait_until(
        "`fine` taken after the trapping event's three tries",
        || async { metric(&server, &sample("delivered")).await == 1.0 },
    )
    .await;
    assert_eq!(metric(&server, &sample("failed")).await, 3.0);
    assert_eq!(metric(&server, &sample("dead_lettered")).await, 1.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_at_least_once_subscriber_resumes_where_it_left_off_after_a_restart() {
    let dir = agents_dir(&[]);
    copy_guest(dir.path(), "counter", "worker");
    let data = tempfile::tempdir().unwrap();
    let kdl = format!(
        "tasks {{ path {:?} }}\n{DURABLE}",
        data.path().join("tasks.db").display().to_string()
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    // Four jobs of 400 ms each; the host stops during the first.
    for _ in 0..4 {
        publish(&server, "jobs.slow", "busy 400").await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.stop().await;

    let server = Server::start(config(dir.path(), &kdl)).await;
    // What the first run had not finished is handed over by the second.
    wait_until("the jobs left over delivered after the restart", || async {
        metric(&server, &sample("delivered")).await >= 3.0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = metric(&server, &sample("delivered")).await;
    assert!((3.0..=4.0).contains(&second), "{second}");
    server.stop().await;
}
