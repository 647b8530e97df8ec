//! A directory of a thousand distinct agents (copies of `tenant` whose
//! data names each one): every one loads, is listed, and answers as itself,
//! and what their instances leave resident stays within `idle-memory`. A
//! start that loads agents while serving answers each one once it is
//! loaded, never with a 404, and always through its filters.

use crate::common::*;
use futures_util::StreamExt;
use http::Method;

/// Agents in the directory: the size docs/instances.md (Many agents)
/// says the test command serves.
const AGENTS: usize = 1000;

/// `server { idle-memory }` in MiB for this test: small enough that slots
/// left dirty would exceed it.
const IDLE_MIB: usize = 64;

/// Agents sent a request that dirties most of their first megabyte.
const DIRTIED: usize = 300;

/// Writes `count` distinct copies of `tenant` into `dir` as `t-000000.wasm`
/// …, the twelve digits after its marker rewritten to each copy's number
/// (as scripts/lib/tenants.py does for the benchmark; written again here
/// so that the test command needs no Python).
fn write_tenants(dir: &std::path::Path, count: usize) {
    const MARKER: &[u8] = b"wharf-tenant:";
    let bytes = std::fs::read(guest("tenant")).unwrap();
    let found: Vec<usize> = bytes
        .windows(MARKER.len())
        .enumerate()
        .filter(|(_, w)| *w == MARKER)
        .map(|(i, _)| i + MARKER.len())
        .collect();
    assert_eq!(found.len(), 1, "the marker appears once in tenant.wasm");
    let at = found[0];
    for i in 0..count {
        let mut copy = bytes.clone();
        copy[at..at + 12].copy_from_slice(format!("{i:012}").as_bytes());
        std::fs::write(dir.join(format!("t-{i:06}.wasm")), copy).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_distinct_agents_answer_as_themselves_within_the_idle_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    write_tenants(dir.path(), AGENTS);
    // Compiled code of its own: a thousand entries would crowd the shared cache.
    let cache = tempfile::tempdir().unwrap();
    let mut cfg = config(
        dir.path(),
        &format!("server {{ idle-memory \"{IDLE_MIB}MiB\" }}"),
    );
    cfg.cache = wharf::config::Cache::Dir(cache.path().to_path_buf());
    let server = Server::start(cfg).await;
    assert!(
        server.pipeline().registry().snapshot().refused.is_empty(),
        "{:?}",
        server.pipeline().registry().snapshot().refused
    );

    // Every copy is a distinct component: a thousand digests.
    let listed = get(&server.url("/agents")).await.json();
    let digests: std::collections::BTreeSet<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "agent")
        .map(|a| a["digest"].as_str().unwrap())
        .collect();
    assert_eq!(digests.len(), AGENTS);

    // Each answers with its own number and the body, sixteen at a time.
    let client = client();
    let answers = futures_util::stream::iter(0..AGENTS)
        .map(|i| {
            let (client, url) = (client.clone(), server.url(&format!("/agents/t-{i:06}/")));
            async move {
                let body = format!("hello {i}");
                let reply = send(&client, Method::POST, &url, &[], body.clone()).await;
                (i, body, reply)
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    for (i, body, reply) in answers {
        assert_eq!(reply.status, 200, "t-{i:06}: {}", reply.text());
        assert_eq!(reply.headers["x-tenant"], format!("{i:012}"), "t-{i:06}");
        assert_eq!(reply.text(), body);
    }
    // The card says which one it is too; a name past the last is not served.
    let last = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == format!("t-{:06}", AGENTS - 1))
        .unwrap();
    assert_eq!(
        last["card"]["description"],
        format!("Tenant {:012}", AGENTS - 1)
    );
    let missing = post(&server.url(&format!("/agents/t-{AGENTS:06}/")), "x").await;
    assert_eq!(missing.status, 404, "{}", missing.text());

    // The worst a client can leave behind: every request to a different
    // agent, each dirtying 900 KiB, so that every pool slot is freed dirty
    // and tied to its agent. The test engine has 128 memory slots; kept
    // whole they would hold over 110 MiB. Within the budget each keeps
    // 448 KiB of its dirty pages, and the rest go back to the kernel.
    let dirtied = futures_util::stream::iter(0..DIRTIED)
        .map(|i| {
            let (client, url) = (client.clone(), server.url(&format!("/agents/t-{i:06}/")));
            async move { send(&client, Method::POST, &url, &[], "dirty").await }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    assert!(dirtied.iter().all(|r| r.status == 200));
    let kept = metric(&server, "wharf_pool_idle_resident_bytes").await;
    let budget = (IDLE_MIB << 20) as f64;
    assert!(
        kept <= budget,
        "{kept} bytes kept, over the {budget} budget"
    );
    assert!(
        kept >= budget / 2.0,
        "{kept} bytes kept: the slots were not left dirty, so this is not the worst case"
    );
    // And the host serves on.
    let reply = post(&server.url("/agents/t-000007/"), "after").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.text(), "after");
    server.stop().await;
}

/// Agents in the directory of the start that loads while serving: enough
/// that, compiled on a cold cache, they are still loading when the
/// requests arrive.
const WHILE_SERVING: usize = 200;

#[tokio::test(flavor = "multi_thread")]
async fn a_start_that_loads_while_serving_answers_every_agent_through_its_filters_never_404() {
    let dir = tempfile::tempdir().unwrap();
    write_tenants(dir.path(), WHILE_SERVING);
    copy_guest(dir.path(), "probe", "probe");
    std::fs::write(dir.path().join("t-broken.wasm"), b"not a component").unwrap();
    // A cold cache of its own: every agent compiles while serving.
    let cache = tempfile::tempdir().unwrap();
    let mut cfg = config(
        dir.path(),
        "server { load \"while-serving\" }\nfilters \"probe\"\n",
    );
    cfg.cache = wharf::config::Cache::Dir(cache.path().to_path_buf());
    let server = Server::start(cfg).await;

    // The last agent in name order first, then every one, sixteen at a
    // time: each waits for its agent (asked for first), passes the
    // filter, and answers as itself.
    let client = client();
    let order = std::iter::once(WHILE_SERVING - 1).chain(0..WHILE_SERVING - 1);
    let answers = futures_util::stream::iter(order)
        .map(|i| {
            let (client, url) = (client.clone(), server.url(&format!("/agents/t-{i:06}/")));
            async move {
                let reply = send(&client, Method::POST, &url, &[], format!("hi {i}")).await;
                (i, reply)
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    for (i, reply) in answers {
        assert_eq!(reply.status, 200, "t-{i:06}: {}", reply.text());
        assert_eq!(reply.headers["x-tenant"], format!("{i:012}"), "t-{i:06}");
        assert_eq!(reply.headers["x-probe-probe-seen"], "rh,sh", "t-{i:06}");
        assert_eq!(reply.text(), format!("hi {i}"));
    }
    // A name that is not in the directory is not waited for.
    let missing = post(&server.url("/agents/nobody/"), "x").await;
    assert_eq!(missing.status, 404, "{}", missing.text());

    // The file that does not load ends refused, as at any start, and
    // nothing is left pending.
    let broken = post(&server.url("/agents/t-broken/"), "x").await;
    assert_eq!(broken.status, 503, "{}", broken.text());
    assert!(broken.text().contains("agent_refused"), "{}", broken.text());
    let snapshot = server.pipeline().registry().snapshot();
    assert!(snapshot.pending.is_empty(), "{:?}", snapshot.pending);
    assert_eq!(snapshot.agents.len(), WHILE_SERVING);
    assert_eq!(metric(&server, "wharf_agents_pending").await, 0.0);
    server.stop().await;
}
