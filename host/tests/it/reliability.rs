//! Short versions of the reliability suite (`scripts/reliability/stress.sh`,
//! `scripts/reliability/flood.sh`, `scripts/reliability/soak.sh` run them for minutes): the same
//! drivers (`tools/load`), over real sockets, for seconds. They assert
//! what must hold at any speed (no request lost or failed, good clients
//! served through floods, limits answered with their status), never a
//! timing.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wharf_load::binary::Addr;
use wharf_load::flood::{self, Flood};
use wharf_load::load::{self, Plan, Target};

use crate::common::*;

fn plan(target: Target, connections: usize, depth: usize, expect: &[u16]) -> Plan {
    Plan {
        target,
        connections,
        depth,
        duration: Duration::from_millis(1500),
        body: 1024,
        expect: expect.to_vec(),
        sessions: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stepped_load_over_http_and_the_binary_transport_loses_nothing() {
    let dir = agents_dir(&["echo", "counter"]);
    let sockets = tempfile::tempdir().unwrap();
    let socket = sockets.path().join("w.sock");
    let kdl = format!(
        "binary {{ unix \"{}\" }}\nagent \"counter\" {{ instances {{ mode \"warm\"; max 2 }}; affinity {{ header \"x-session-id\" }} }}",
        socket.display()
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    let http: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    for connections in [4, 32] {
        let web = Target::Http {
            addr: http,
            path: "/agents/echo".into(),
        };
        let bin = Target::Binary {
            addr: Addr::Unix(socket.clone()),
            agent: "echo".into(),
        };
        let mut warm = plan(
            Target::Binary {
                addr: Addr::Unix(socket.clone()),
                agent: "counter".into(),
            },
            connections / 4,
            4,
            &[200],
        );
        warm.sessions = true;
        let (web, bin, warm) = tokio::join!(
            load::run(plan(web, connections, 1, &[200])),
            load::run(plan(bin, connections, 8, &[200])),
            load::run(warm),
        );
        for (what, report) in [("http", web), ("binary", bin), ("binary warm", warm)] {
            assert!(
                report.requests > 0,
                "{what} at c={connections} made no request"
            );
            assert_eq!(
                report.errors,
                0,
                "{what} at c={connections}: {}",
                report.json()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_idle_and_dropped_connections_never_lock_out_good_clients() {
    let dir = agents_dir(&["echo"]);
    // A small limit, so that the flood is many times over it.
    let server = Server::start(config(
        dir.path(),
        "server { connections 32; header-timeout \"30s\" }",
    ))
    .await;
    let http = server.base.trim_start_matches("http://").parse().unwrap();
    let outcome = flood::run(Flood {
        addr: http,
        stalled: 100,
        idle: 100,
        churn_per_sec: 50,
        good: 4,
        path: "/agents/echo".into(),
        duration: Duration::from_secs(2),
    })
    .await;
    assert_eq!(outcome.stalled_opened, 100);
    assert!(outcome.churned > 0);
    let good = &outcome.good;
    assert!(good.requests > 0, "{}", outcome.json());
    assert_eq!(good.errors, 0, "good clients failed: {}", outcome.json());
    let evicted = metric(
        &server,
        "wharf_connections_evicted_total{listener=\"http\"}",
    )
    .await;
    assert!(evicted > 0.0, "idle connections made room");
    // A stalled connection that was evicted is closed, not left hanging.
    assert_eq!(
        post(&server.url("/agents/echo"), "after").await.text(),
        "after"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_past_max_head_is_431_and_the_host_keeps_serving() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "server { max-head \"16KiB\" }")).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let big = "a".repeat(200 << 10);
    let head = format!("GET /agents/echo HTTP/1.1\r\nhost: x\r\nx-big: {big}\r\n\r\n");
    let _ = s.write_all(head.as_bytes()).await;
    let mut answer = vec![0u8; 256];
    let n = s.read(&mut answer).await.unwrap();
    let status = String::from_utf8_lossy(&answer[..n]);
    assert!(status.starts_with("HTTP/1.1 431"), "{status}");
    // Just under the limit is fine.
    let near = "b".repeat(12 << 10);
    let reply = send(
        &client(),
        http::Method::POST,
        &server.url("/agents/echo"),
        &[("x-big", near.as_str())],
        "ok",
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.text(), "ok");
}

/// The KDL text setting `key` to `value` where it belongs.
fn place(key: &str, value: &str) -> String {
    let v = value;
    match key {
        "concurrency" | "retries" | "request-body" | "response-body" | "memory" | "deadline" => {
            format!("limits {{ {key} {v} }}")
        }
        "connections" | "header-timeout" | "request-timeout" | "shutdown-grace"
        | "component-size" | "max-head" | "streams" | "streams-per-client" | "write-timeout"
        | "idle-memory" | "instance-slots" => {
            format!("server {{ {key} {v} }}")
        }
        "in-flight" | "max-frame" | "frame-timeout" => {
            format!("binary {{ tcp \"127.0.0.1:0\"; {key} {v} }}")
        }
        "max" | "max-uses" | "queue" | "max-memory" | "unload-after" => {
            format!("instances {{ mode \"warm\"; {key} {v} }}")
        }
        // Fresh instances made ahead: the echo agent runs fresh here.
        "ahead" => format!("agent \"echo\" {{ instances {{ mode \"fresh\"; ahead {v} }} }}"),
        "unhealthy-after" | "interval" | "idle-interval" => format!("health {{ {key} {v} }}"),
        "failures" | "cool-down" => format!("breaker {{ {key} {v} }}"),
        "capacity" | "ttl" => format!("affinity {{ header \"x-s\"; {key} {v} }}"),
        "requests" | "per" | "burst" => format!("rate-limit {{ {key} {v} }}"),
        "attempts" | "max-configs" | "backoff" => {
            format!("push {{ allow \"127.0.0.1\"; {key} {v} }}")
        }
        "timeout" => format!("push {{ allow \"127.0.0.1\"; timeout {v} }}"),
        "max-tasks" | "max-age" | "max-waiting" | "max-open-per-owner" => {
            format!("tasks {{ {key} {v} }}")
        }
        "max-payload" | "max-hops" => format!("topics {{ {key} {v} }}"),
        "keep" | "for" => format!("topic \"kept.>\" {{ {key} {v} }}"),
        "queue-bytes" => {
            format!("agent \"sub\" {{ subscribe \"t.>\" {{ queue-bytes {v} }} }}")
        }
        // No NATS server listens there: the node serves alone until one does.
        "pin-ttl" | "heartbeat" | "forward-timeout" => {
            format!("cluster {{ nats \"nats://127.0.0.1:9\"; node \"n1\"; {key} {v} }}")
        }
        // A top-level value: a block of its own below.
        "call-depth" => format!("call-depth {v} {{}}"),
        "body-limit" => format!("filter \"allow\" {{ body-limit {v} }}"),
        "max-body" => {
            format!("agent \"other\" {{ outbound {{ allow \"127.0.0.1\"; max-body {v} }} }}")
        }
        other => panic!("no place for `{other}` in this test"),
    }
}

/// Every number a configuration may hold, at the top and the bottom of
/// its range: `wharf check` accepts it, Wharf starts, and it answers
/// (with a documented status when the value leaves the agent no room).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extreme_values_that_check_accepts_start_and_serve() {
    let dir = agents_dir(&["echo", "allow"]);
    for (end, statuses) in [
        ("top", &[200u16][..]),
        ("bottom", &[200, 404, 408, 413, 500, 503, 504][..]),
    ] {
        let mut blocks: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (key, low, high) in wharf::config::extremes() {
            let value = if end == "top" { high } else { low };
            let text = place(key, &value);
            let (head, body) = text.split_once('{').unwrap();
            blocks
                .entry(head.to_string())
                .or_default()
                .push(body.trim_end_matches('}').trim().to_string());
        }
        let kdl: String = blocks
            .iter()
            .map(|(head, bodies)| {
                // Blocks given twice (push's allow, binary's tcp) keep their first line once.
                let mut lines: Vec<String> = Vec::new();
                for body in bodies {
                    for part in body.split(';').map(str::trim).filter(|p| !p.is_empty()) {
                        if !lines.iter().any(|l| l == part) {
                            lines.push(part.to_string());
                        }
                    }
                }
                if lines.is_empty() {
                    return format!("{}\n", head.trim());
                }
                format!("{head}{{ {} }}\n", lines.join("; "))
            })
            .collect();
        let parsed = wharf::config::Config::parse("extremes.kdl", &kdl, dir.path());
        let mut config = match parsed {
            Ok(_) => config(dir.path(), &kdl),
            Err(err) => panic!("{end} values refused:\n{kdl}\n{}", err.plain()),
        };
        config.binary.as_mut().unwrap().tcp = Some("127.0.0.1:0".parse().unwrap());
        let server = Server::start(config).await;
        eprintln!("{end} values:\n{kdl}");
        assert_eq!(get(&server.url("/healthz")).await.status, 200, "{end}");
        let reply = post(&server.url("/agents/echo"), "x").await;
        assert!(
            statuses.contains(&reply.status.as_u16()),
            "{end} values: echo answered {} {}\n{kdl}",
            reply.status,
            reply.text()
        );
        if end == "top" {
            assert_eq!(reply.text(), "x");
        }
        server.stop().await;
    }
}

/// The soak's mix for seconds: fresh and warm agents over both transports,
/// a trapping agent and one cut off at its deadline (their breakers open
/// after a few failures: 503); only the statuses each stream expects come
/// back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_traffic_with_faults_gets_only_expected_answers() {
    let dir = agents_dir(&["echo", "counter", "trap", "spin"]);
    let sockets = tempfile::tempdir().unwrap();
    let socket = sockets.path().join("w.sock");
    let kdl = format!(
        "binary {{ unix \"{}\" }}\n\
         agent \"counter\" {{ instances {{ mode \"warm\"; max 2 }}; affinity {{ header \"x-session-id\" }} }}\n\
         agent \"spin\" {{ deadline \"100ms\"; retries 0 }}\n\
         agent \"trap\" {{ retries 0 }}",
        socket.display()
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    let http: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let web = |agent: &str| Target::Http {
        addr: http,
        path: format!("/agents/{agent}"),
    };
    let bin = |agent: &str| Target::Binary {
        addr: Addr::Unix(socket.clone()),
        agent: agent.into(),
    };
    let mut warm = plan(bin("counter"), 2, 4, &[200]);
    warm.sessions = true;
    let mut warm_http = plan(web("counter"), 2, 1, &[200]);
    warm_http.sessions = true;
    let streams = [
        ("http echo", plan(web("echo"), 4, 1, &[200])),
        ("http counter", warm_http),
        ("http trap", plan(web("trap"), 1, 1, &[500, 503])),
        ("binary echo", plan(bin("echo"), 2, 8, &[200])),
        ("binary counter", warm),
        ("binary spin", plan(bin("spin"), 1, 2, &[504, 503])),
    ];
    let runs: Vec<_> = streams
        .into_iter()
        .map(|(name, p)| (name, tokio::spawn(load::run(p))))
        .collect();
    for (name, run) in runs {
        let report = run.await.unwrap();
        assert!(report.requests > 0, "{name} made no request");
        assert_eq!(report.errors, 0, "{name}: {}", report.json());
    }
    // Everything still answers afterwards.
    assert_eq!(
        post(&server.url("/agents/echo"), "after").await.text(),
        "after"
    );
}
