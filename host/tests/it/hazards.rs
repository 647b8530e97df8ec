//! Each guest toolchain's known hazard, handled: Go's collector on a
//! long-lived instance, and componentize-py's per-call growth recycled by a
//! warm pool's memory cap.

use bytes::Bytes;
use http::{Method, StatusCode};
use wharf::request::Request;

use crate::common::*;

/// Go's collector reads the wall clock; left automatic it can start while
/// the host allocates inside the guest and trap the instance after ~12.5k
/// calls ("cannot leave component instance"). The Go guests pace it.
#[test]
fn go_guests_survive_fifty_thousand_calls_on_one_instance() {
    let (_runtime, snapshot, _dir) = load_guests(&["echo-go", "classify-go"]);
    let text = "an invoice, a refund and a timeout ".repeat(30);
    for (name, body) in [
        ("echo-go", Bytes::from(vec![7u8; 1024])),
        ("classify-go", Bytes::from(text)),
    ] {
        let entry = snapshot.agent(name).unwrap();
        let mut live = entry.image.instantiate().unwrap();
        let mut req = Request::new(Method::POST, "/");
        req.body = body;
        let mut first = None;
        for i in 0..50_000 {
            let reply = live
                .handle(&req)
                .unwrap_or_else(|e| panic!("{name}: call {i} failed: {e}"));
            assert_eq!(reply.status, StatusCode::OK, "{name}: call {i}");
            match &first {
                None => first = Some(reply.body),
                Some(body) => assert_eq!(&reply.body, body, "{name}: call {i}"),
            }
        }
        // Collections ran: memory stayed far below the 64 MiB limit.
        let memory = live.memory_bytes();
        assert!(memory < 32 << 20, "{name}: {memory} bytes after 50k calls");
    }
}

/// componentize-py guests grow by about one body per call for bodies of
/// 1 KiB and more. A warm pool with `max-memory` retires an instance once it
/// passes the cap, so memory stays bounded while every request succeeds.
#[tokio::test(flavor = "multi_thread")]
async fn python_guests_are_recycled_and_memory_stays_bounded() {
    const CAP: u64 = 40 << 20;
    const BODY: usize = 64 << 10;
    const CALLS: usize = 5000;
    let dir = agents_dir(&["echo-py"]);
    let kdl = format!(
        r#"agent "echo-py" {{
            instances {{ mode "warm"; max 1; max-memory "{}MiB" }}
        }}"#,
        CAP >> 20
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    let client = client();
    let url = server.url("/agents/echo-py/");
    let body = Bytes::from(vec![b'p'; BODY]);
    for i in 0..CALLS {
        let reply = send(&client, Method::POST, &url, &[], body.clone()).await;
        assert_eq!(reply.status, StatusCode::OK, "call {i}: {}", reply.text());
        assert_eq!(reply.body.len(), BODY, "call {i}");
    }
    let metrics = get(&server.url("/metrics")).await.text();
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
    };
    // Without recycling, 5k calls would leave one instance holding more than
    // 300 MiB (it would hit the 64 MiB limit and trap long before).
    let recycled = value(r#"wharf_instances_retired_total{agent="echo-py",reason="memory"}"#);
    let peak = value(r#"wharf_instance_memory_max_bytes{agent="echo-py"}"#);
    assert!(recycled >= 3.0, "{recycled} recycled");
    assert!(
        peak <= (CAP + (8 << 20)) as f64,
        "peak {peak} bytes over a {CAP}-byte cap"
    );
    // No trap: its series is made when the first one is counted.
    assert!(
        !metrics.contains(r#"wharf_traps_total{agent="echo-py"}"#),
        "{metrics}"
    );
    server.stop().await;
}
