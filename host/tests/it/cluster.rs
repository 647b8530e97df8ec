//! Nodes as one service over a real NATS server (with JetStream, started
//! here on loopback from the `nats-server` on PATH): requests to any node
//! reach every agent, sessions stay pinned across nodes and re-pin when
//! their node goes, a drained node loses nothing, and a node killed
//! (SIGKILL) under load fails only what was in flight on it.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use bytes::Bytes;
use http::{Method, StatusCode};

use crate::common::*;

/// A NATS server with JetStream in a temporary directory, stopped on drop.
pub(crate) struct Nats {
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The server scripts/setup/test-clients.sh installs, else the one on PATH.
fn nats_server() -> std::path::PathBuf {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/toolchains/a2a-client/bin/nats-server");
    if installed.is_file() {
        installed
    } else {
        "nats-server".into()
    }
}

impl Nats {
    pub(crate) async fn start() -> Nats {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let conf = dir.path().join("nats.conf");
        let store = dir.path().join("js");
        std::fs::write(
            &conf,
            format!(
                "listen: 127.0.0.1:{port}\nmax_payload: 8MB\njetstream {{ store_dir: {:?} }}\n",
                store.display().to_string()
            ),
        )
        .unwrap();
        let child = Command::new(nats_server())
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server runs (scripts/setup/test-clients.sh installs it)");
        let addr = format!("127.0.0.1:{port}");
        wait_until("NATS listens", || {
            let addr = addr.clone();
            async move { tokio::net::TcpStream::connect(addr).await.is_ok() }
        })
        .await;
        Nats {
            url: format!("nats://{addr}"),
            child,
            _dir: dir,
        }
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `cluster` block of node `name` after `extra` configuration. A
/// request lost on the way shows as a 504 after `forward-timeout`: 30 s
/// here, so that a slow answer on a busy test machine is not taken for a
/// lost one (the SIGKILL test waits 3 s for what died with its node).
/// `inside` adds lines to the block.
pub(crate) fn cluster_kdl(
    nats: &Nats,
    name: &str,
    extra: &str,
    forward_timeout: &str,
    inside: &str,
) -> String {
    format!(
        "{extra}\ncluster {{\n    nats \"{}\"\n    node \"{name}\"\n    heartbeat \"100ms\"\n    forward-timeout \"{forward_timeout}\"\n    {inside}\n}}\n",
        nats.url
    )
}

/// An in-process node serving copies of `agents`.
pub(crate) async fn node(
    nats: &Nats,
    name: &str,
    agents: &[&str],
    extra: &str,
) -> (Server, tempfile::TempDir) {
    let dir = agents_dir(agents);
    let kdl = cluster_kdl(nats, name, extra, "30s", "");
    let server = Server::start(config(dir.path(), &kdl)).await;
    (server, dir)
}

/// Waits until `server` hears `n` serving nodes.
pub(crate) async fn hears(server: &Server, n: usize) {
    wait_until(&format!("{n} nodes serving"), || async {
        let view = get(&server.url("/cluster")).await.json();
        let nodes = view["nodes"].as_array().cloned().unwrap_or_default();
        nodes.iter().filter(|m| m["state"] == "serving").count() == n
    })
    .await;
}

pub(crate) fn answered_by(reply: &Reply) -> String {
    reply
        .headers
        .get("x-wharf-node")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

pub(crate) const WARM_COUNTER: &str = r#"
agent "counter" {
    instances { mode "warm"; max 2; }
    affinity { header "x-session-id"; }
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn requests_to_any_node_reach_every_agent() {
    let nats = Nats::start().await;
    let (n1, _d1) = node(&nats, "n1", &["echo"], "").await;
    let (n2, _d2) = node(&nats, "n2", &["hello"], "").await;
    let (n3, _d3) = node(&nats, "n3", &["counter"], WARM_COUNTER).await;
    for n in [&n1, &n2, &n3] {
        hears(n, 3).await;
    }
    let home = [("echo", "n1"), ("hello", "n2"), ("counter", "n3")];
    for (entry, server) in [("n1", &n1), ("n2", &n2), ("n3", &n3)] {
        for (agent, serves) in home {
            let body = Bytes::from(format!("\x00\u{ff} from {entry}").into_bytes());
            let url = server.url(&format!("/agents/{agent}/some/path?q=1"));
            let reply = send(
                &client(),
                Method::POST,
                &url,
                &[("x-session-id", entry)],
                body.clone(),
            )
            .await;
            assert_eq!(
                reply.status,
                StatusCode::OK,
                "{agent} via {entry}: {}",
                reply.text()
            );
            assert_eq!(answered_by(&reply), serves, "{agent} via {entry}");
            if agent == "echo" {
                // Bytes, path and query arrive as sent.
                assert_eq!(reply.body, body);
                assert_eq!(reply.headers["x-echo-path"], "/some/path");
            }
        }
    }
    // Every node lists every agent, with the nodes serving it.
    let listed = get(&n1.url("/agents")).await.json();
    let hello = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "hello")
        .expect("hello is listed on n1")
        .clone();
    assert_eq!(hello["local"], false);
    assert_eq!(hello["nodes"], serde_json::json!(["n2"]));
    // What no node serves: 503 with the reason, and the node still serves.
    let none = post(&n1.url("/agents/nobody"), "x").await;
    assert_eq!(none.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(none.error_code(), "no_node");
    assert_eq!(post(&n1.url("/agents/echo"), "ok").await.text(), "ok");
    let forwarded = r#"wharf_cluster_forwarded_total{agent="hello",to="any",outcome="ok"}"#;
    assert_eq!(metric(&n1, forwarded).await, 1.0);
    assert_eq!(
        metric(&n1, r#"wharf_cluster_nodes{state="serving"}"#).await,
        3.0
    );
    assert!(metric(&n2, "wharf_cluster_answered_total").await >= 2.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_on_an_agent_subject_gets_an_error_and_the_node_serves_on() {
    let nats = Nats::start().await;
    let (n1, _d1) = node(&nats, "n1", &["echo"], "").await;
    hears(&n1, 1).await;
    let client = async_nats::connect(&nats.url).await.unwrap();
    let answer = client
        .request("wharf.agent.echo", Bytes::from_static(b"\xc1 not msgpack"))
        .await
        .unwrap();
    let (resp, node) = wharf::cluster::wire::decode_answer(&answer.payload).unwrap();
    assert_eq!(
        (resp.status, node.as_str()),
        (StatusCode::BAD_REQUEST, "n1")
    );
    assert!(String::from_utf8_lossy(&resp.body).contains("bad_forward"));
    assert_eq!(post(&n1.url("/agents/echo"), "still").await.text(), "still");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_stays_pinned_across_nodes_and_repins_when_its_node_goes() {
    let nats = Nats::start().await;
    let (n1, _d1) = node(&nats, "n1", &["counter"], WARM_COUNTER).await;
    let (n2, _d2) = node(&nats, "n2", &["counter"], WARM_COUNTER).await;
    let (n3, _d3) = node(&nats, "n3", &["counter"], WARM_COUNTER).await;
    hears(&n1, 3).await;
    let ask = |server: &Server| {
        let url = server.url("/agents/counter");
        async move {
            send(
                &client(),
                Method::POST,
                &url,
                &[("x-session-id", "alice")],
                Bytes::new(),
            )
            .await
        }
    };
    // The first node asked holds the session; the others send it there.
    let mut holder = String::new();
    for (n, server) in [&n2, &n1, &n3, &n2, &n1].into_iter().enumerate() {
        let reply = ask(server).await;
        assert_eq!(reply.text(), format!("alice {}", n + 1));
        if holder.is_empty() {
            holder = answered_by(&reply);
        }
        assert_eq!(answered_by(&reply), holder);
    }
    assert_eq!(holder, "n2");
    // n1, asked twice moments apart, read the pin from the bucket once.
    assert_eq!(metric(&n1, "wharf_cluster_pin_reads_total").await, 1.0);
    // The holder leaves: the next request re-pins the session (a new
    // instance, so the count starts again) and it stays there.
    n2.stop().await;
    let reply = ask(&n1).await;
    assert_eq!(reply.text(), "alice 1");
    let new_holder = answered_by(&reply);
    assert_eq!(new_holder, "n1");
    for (n, server) in [&n3, &n1, &n3].into_iter().enumerate() {
        let reply = ask(server).await;
        assert_eq!(reply.text(), format!("alice {}", n + 2));
        assert_eq!(answered_by(&reply), new_holder);
    }
    let repinned = r#"wharf_cluster_pins_total{outcome="repinned"}"#;
    assert_eq!(metric(&n1, repinned).await, 1.0);
}

/// Sends `total` requests for `agent` through `entry`, `clients` at a
/// time, while `during` runs once a third of them are done; the statuses.
pub(crate) async fn load_while<F: Future<Output = ()>>(
    entry: &str,
    agent: &str,
    body: &'static str,
    clients: usize,
    total: usize,
    during: F,
) -> Vec<StatusCode> {
    let url = format!("{entry}/agents/{agent}");
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..clients {
        let (url, sent) = (url.clone(), sent.clone());
        workers.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            while sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < total {
                statuses.push(post(&url, body).await.status);
            }
            statuses
        }));
    }
    let third = sent.clone();
    wait_until("a third of the load sent", || {
        let n = third.load(std::sync::atomic::Ordering::Relaxed);
        async move { n >= total / 3 }
    })
    .await;
    during.await;
    let mut statuses = Vec::new();
    for w in workers {
        statuses.extend(w.await.unwrap());
    }
    statuses
}

#[tokio::test(flavor = "multi_thread")]
async fn a_drained_node_loses_nothing() {
    let nats = Nats::start().await;
    let (entry, _d1) = node(&nats, "entry", &["hello"], "").await;
    let (n2, _d2) = node(&nats, "n2", &["counter"], "").await;
    let (n3, _d3) = node(&nats, "n3", &["counter"], "").await;
    hears(&entry, 3).await;
    let statuses = load_while(&entry.base, "counter", "busy 20", 8, 240, n2.stop()).await;
    let failed: Vec<_> = statuses.iter().filter(|s| **s != StatusCode::OK).collect();
    assert!(failed.is_empty(), "failed while draining: {failed:?}");
    assert_eq!(statuses.len(), 240);
    hears(&entry, 2).await;
    // n3 answered the rest; the entry lists only it for counter now.
    let reply = post(&entry.url("/agents/counter"), "").await;
    assert_eq!(answered_by(&reply), "n3");
    drop(n3);
}

/// A `wharf serve` process: a node that can be killed outright.
pub(crate) struct Process {
    child: Child,
    pub(crate) base: String,
    _dir: tempfile::TempDir,
}

impl Process {
    /// `extra` is more configuration; `inside` adds lines to its `cluster`
    /// block.
    pub(crate) async fn start(
        nats: &Nats,
        name: &str,
        agents: &[&str],
        extra: &str,
        inside: &str,
    ) -> Process {
        let dir = agents_dir(agents);
        let port = free_port();
        let kdl = format!(
            "listen \"127.0.0.1:{port}\"\nagents \"{}\"\ncache \"{}\"\ntasks {{ path \"{}\"; }}\n{}",
            dir.path().display(),
            test_cache_dir().display(),
            dir.path().join("tasks.db").display(),
            cluster_kdl(nats, name, extra, "3s", inside)
        );
        let file = dir.path().join("wharf.kdl");
        std::fs::write(&file, kdl).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_wharf"))
            .args(["serve", "--config"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let health = format!("{base}/healthz");
        wait_until(&format!("{name} serves"), || {
            let health = health.clone();
            async move { get_status(&health).await == Some(StatusCode::OK) }
        })
        .await;
        Process {
            child,
            base,
            _dir: dir,
        }
    }

    /// SIGKILL (what `Child::kill` sends on Unix): no drain, no goodbye.
    pub(crate) fn kill(&mut self) {
        self.child.kill().unwrap();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn get_status(url: &str) -> Option<StatusCode> {
    let req = http::Request::get(url)
        .body(http_body_util::Full::new(Bytes::new()))
        .unwrap();
    client().request(req).await.ok().map(|r| r.status())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_killed_under_load_fails_only_what_was_in_flight_on_it() {
    let nats = Nats::start().await;
    let entry = Process::start(&nats, "entry", &["hello"], "", "").await;
    let mut doomed = Process::start(&nats, "doomed", &["counter"], "", "").await;
    let _survivor = Process::start(&nats, "survivor", &["counter"], "", "").await;
    let view = format!("{}/cluster", entry.base);
    wait_until("three nodes serving", || {
        let view = view.clone();
        async move {
            let v = get(&view).await.json();
            v["nodes"].as_array().map_or(0, |n| n.len()) == 3
        }
    })
    .await;
    const CLIENTS: usize = 8;
    let kill = async {
        doomed.kill();
    };
    let statuses = load_while(&entry.base, "counter", "busy 20", CLIENTS, 300, kill).await;
    let failed: Vec<_> = statuses.iter().filter(|s| **s != StatusCode::OK).collect();
    // Each client had at most one request in flight when the node died;
    // those may fail (no answer: 504 after forward-timeout), nothing else.
    assert!(
        failed.len() <= CLIENTS,
        "{} failed: {failed:?}",
        failed.len()
    );
    assert!(
        failed.iter().all(|s| **s == StatusCode::GATEWAY_TIMEOUT),
        "{failed:?}"
    );
    assert_eq!(statuses.len(), 300);
    // After it, everything is answered by the survivor.
    for _ in 0..10 {
        let reply = post(&format!("{}/agents/counter", entry.base), "").await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(answered_by(&reply), "survivor");
    }
}
