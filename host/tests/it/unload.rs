//! Idle agents unloaded (`instances { unload-after }`): their code comes
//! back from the compile cache, else from their file if it is unchanged,
//! never from a file that changed; probes leave an unloaded agent alone;
//! and a request to one is answered as before.

use std::sync::atomic::Ordering;
use std::time::Duration;

use http::Method;
use wharf::request::Request;
use wharf::runtime::{CallError, Runtime};

use crate::common::*;

/// Every file in `dir` removed (a cache emptied under a running host).
fn empty(dir: &std::path::Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
}

fn echo_request(body: &str) -> Request {
    let mut req = Request::new(Method::POST, "/");
    req.body = body.to_string().into();
    req
}

#[test]
fn an_unloaded_agent_comes_back_from_the_cache_or_its_unchanged_file_only() {
    let agents = agents_dir(&["echo", "scribe"]);
    let cache = tempfile::tempdir().unwrap();
    let mut runtime = Runtime::new(&test_engine()).unwrap();
    runtime.use_cache(cache.path()).unwrap();
    let cfg = config(agents.path(), "");
    let snapshot = wharf::registry::load_dir(&runtime, &cfg, agents.path()).unwrap();
    assert!(snapshot.refused.is_empty(), "{:?}", snapshot.refused);
    let stats = &runtime.cache().unwrap().stats;
    let echo = &snapshot.agent("echo").unwrap().image;
    let answer = |image: &wharf::runtime::AgentImage| {
        let reply = image.handle_fresh(&echo_request("hello"))?;
        Ok::<_, CallError>(String::from_utf8(reply.body.to_vec()).unwrap())
    };
    let before = answer(echo).unwrap();
    assert!(before.contains("hello"), "{before}");

    // From the cache: one more hit, the same answers.
    assert!(echo.unloadable());
    assert!(
        echo.unload().is_some(),
        "a loaded agent with a cache unloads"
    );
    assert!(!echo.is_loaded());
    assert!(
        echo.unload().is_none(),
        "an unloaded agent is not unloaded twice"
    );
    let hits = stats.hits.load(Ordering::Relaxed);
    assert_eq!(answer(echo).unwrap(), before);
    assert!(echo.is_loaded());
    assert_eq!(stats.hits.load(Ordering::Relaxed), hits + 1);

    // An A2A agent keeps its shape, and its A2A exports come back with it.
    let scribe = &snapshot.agent("scribe").unwrap().image;
    assert!(scribe.unload().is_some());
    assert!(scribe.serves_a2a(), "known without its code");
    let mut live = scribe.instantiate().unwrap();
    assert!(!live.describe().unwrap().name.is_empty());

    // The cache lost it: compiled again from the file, which still holds
    // the bytes that were loaded, and stored again.
    assert!(echo.unload().is_some());
    empty(cache.path());
    let stores = stats.stores.load(Ordering::Relaxed);
    assert_eq!(answer(echo).unwrap(), before);
    assert_eq!(stats.stores.load(Ordering::Relaxed), stores + 1);

    // The file changed as well: other code is never served under the
    // digest that was checked, and the error says why.
    assert!(echo.unload().is_some());
    empty(cache.path());
    std::fs::copy(guest("classify"), agents.path().join("echo.wasm")).unwrap();
    match answer(echo) {
        Err(CallError::Instantiate(why)) => {
            assert!(why.contains("changed since it was loaded"), "{why}")
        }
        other => panic!("a changed file was loaded: {other:?}"),
    }
    assert!(!echo.is_loaded());
}

#[test]
fn without_a_compile_cache_an_agent_stays_loaded() {
    let agents = agents_dir(&["echo"]);
    // No `use_cache`: compiled at load, so unloading would mean compiling again.
    let runtime = Runtime::new(&test_engine()).unwrap();
    let cfg = config(agents.path(), "");
    let snapshot = wharf::registry::load_dir(&runtime, &cfg, agents.path()).unwrap();
    let echo = &snapshot.agent("echo").unwrap().image;
    assert!(!echo.unloadable());
    assert!(echo.unload().is_none());
    assert!(echo.is_loaded());
    assert!(echo.handle_fresh(&echo_request("x")).is_ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_agents_are_unloaded_left_unprobed_and_answer_their_next_request() {
    let dir = agents_dir(&["echo", "counter", "http_echo"]);
    let kdl = r#"
        instances { unload-after "1s" }
        health { interval "100ms"; idle-interval "100ms" }
        agent "counter" { instances { mode "warm"; max 2 } }
        agent "kept" { instances { unload-after #false } }
    "#;
    copy_guest(dir.path(), "echo", "kept");
    let server = Server::start(config(dir.path(), kdl)).await;
    let ask = |agent: &'static str| {
        let url = server.url(&format!("/agents/{agent}"));
        async move { post(&url, "ping").await }
    };
    let mut first = Vec::new();
    for agent in ["echo", "counter", "http_echo", "kept"] {
        let reply = ask(agent).await;
        assert_eq!(reply.status, 200, "{agent}: {}", reply.text());
        first.push(reply.text());
    }
    let unloads = "wharf_agent_unloads_total";
    wait_until_within(
        "three idle agents unloaded",
        Duration::from_secs(30),
        || async { metric(&server, unloads).await >= 3.0 },
    )
    .await;
    // Probes every 100 ms would have loaded them again: they are skipped.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(metric(&server, "wharf_agent_reloads_total").await, 0.0);
    assert_eq!(metric(&server, unloads).await, 3.0, "`kept` stays loaded");
    let loaded = |agent: &'static str| {
        let url = server.url(&format!("/agents/{agent}/health"));
        async move { get(&url).await.json()["code_loaded"].as_bool() }
    };
    assert_eq!(loaded("echo").await, Some(false));
    assert_eq!(loaded("kept").await, Some(true));
    let idle = r#"wharf_instances_retired_total{agent="counter",reason="idle"}"#;
    assert_eq!(metric(&server, idle).await, 1.0, "the warm instance went");
    for (agent, before) in ["echo", "counter", "http_echo", "kept"].iter().zip(&first) {
        let reply = ask(agent).await;
        assert_eq!(reply.status, 200, "{agent}: {}", reply.text());
        // The counter starts again: its instance was retired with its code.
        if *agent != "counter" {
            assert_eq!(&reply.text(), before, "{agent}");
        }
    }
    assert_eq!(metric(&server, "wharf_agent_reloads_total").await, 3.0);
    assert_eq!(loaded("echo").await, Some(true));
    server.stop().await;
}
