//! What an operator sees of a running Wharf: every answer counted with the
//! stage that gave it, `# HELP` on every family, filters labelled
//! `filter=`, build and process figures; 405s in JSON with `Allow`; the
//! pipelines in `GET /agents`; an agent refused at load answering 503 with
//! the reason; open streams closed with an event at shutdown.

use std::time::Duration;

use http::Method;

use crate::common::*;

#[tokio::test(flavor = "multi_thread")]
async fn every_answer_is_counted_with_the_stage_that_gave_it() {
    let dir = agents_dir(&["echo", "sleeper", "waf"]);
    let kdl = "filters \"waf\"\nserver { request-timeout \"1s\" }\n\
               agent \"echo\" { request-body \"1KiB\" }\n";
    let server = Server::start(config(dir.path(), kdl)).await;

    assert_eq!(post(&server.url("/agents/echo"), "hello").await.status, 200);
    let blocked = get(&server.url("/agents/echo?q=1%27%20OR%20%271%27=%271")).await;
    assert_eq!(blocked.status, 403);
    let big = post(&server.url("/agents/echo"), vec![b'x'; 4096]).await;
    assert_eq!(big.status, 413);
    assert_eq!(get(&server.url("/agents/nobody")).await.status, 404);
    assert_eq!(get(&server.url("/nowhere")).await.status, 404);
    let slow = post(&server.url("/agents/sleeper"), "5").await;
    assert_eq!(slow.status, 408);
    let not_allowed = send(&client(), Method::POST, &server.url("/metrics"), &[], "").await;
    assert_eq!(not_allowed.status, 405);

    // Each answer once, under the stage that gave it; an unknown name adds
    // no series of its own.
    for (labels, n) in [
        (r#"agent="echo",stage="agent",status="200""#, 1.0),
        (r#"agent="echo",stage="filter",status="403""#, 1.0),
        (r#"agent="echo",stage="transport",status="413""#, 1.0),
        (r#"agent="",stage="router",status="404""#, 1.0),
        (r#"agent="",stage="transport",status="404""#, 1.0),
        (r#"agent="",stage="transport",status="408""#, 1.0),
        (r#"agent="",stage="transport",status="405""#, 1.0),
    ] {
        let sample = format!("wharf_requests_total{{{labels}}}");
        assert_eq!(metric(&server, &sample).await, n, "{sample}");
    }

    let text = get(&server.url("/metrics")).await.text();
    assert!(!text.contains("agent=\"nobody\""), "{text}");
    // Every family has its HELP, and is typed.
    let typed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert!(typed.len() > 20, "{text}");
    for family in typed {
        assert!(
            text.contains(&format!("# HELP {family} ")),
            "{family} has no HELP line"
        );
    }
    // A filter's instances are labelled as a filter's (a fresh filter has
    // its state gauges; its pool's gauges come with a warm pool).
    assert!(
        text.contains("wharf_instance_memory_max_bytes{filter=\"waf\"}"),
        "{text}"
    );
    assert!(!text.contains("agent=\"waf\""), "{text}");
    // Which build, and the process's own figures.
    let build = format!(
        "wharf_build_info{{version=\"{}\",commit=\"{}\"}} 1",
        wharf::VERSION,
        wharf::COMMIT
    );
    assert!(text.contains(&build), "{text}");
    assert!(metric(&server, "process_resident_memory_bytes").await > 0.0);
    assert!(metric(&server, "process_open_fds").await > 0.0);
    assert!(metric(&server, "wharf_connections_open{listener=\"http\"}").await >= 1.0);
    assert!(text.contains("# TYPE wharf_streams_open gauge"), "{text}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn method_not_allowed_is_json_with_allow_and_health_is_get_only() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "")).await;
    for (method, path) in [(Method::POST, "/metrics"), (Method::DELETE, "/agents")] {
        let reply = send(&client(), method.clone(), &server.url(path), &[], "").await;
        assert_eq!(reply.status, 405, "{method} {path}");
        assert_eq!(reply.error_code(), "method_not_allowed", "{method} {path}");
        assert_eq!(reply.headers["allow"], "GET,HEAD", "{method} {path}");
        assert!(
            reply.headers.contains_key("x-request-id"),
            "{method} {path}"
        );
        assert!(
            reply.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("GET")
        );
    }
    // GET of an agent's health is the host's; other methods reach the agent.
    let health = get(&server.url("/agents/echo/health")).await;
    assert_eq!(health.json()["healthy"], true);
    let echoed = post(&server.url("/agents/echo/health"), "to the agent").await;
    assert_eq!(echoed.status, 200);
    assert_eq!(echoed.text(), "to the agent");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_lists_pipelines_with_their_steps_and_health() {
    let dir = agents_dir(&["echo", "hello"]);
    let kdl = "pipeline \"twice\" {\n    sequential {\n        step \"hello\"\n        step \"echo\"\n    }\n}\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let list = get(&server.url("/agents")).await.json();
    let twice = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "twice")
        .unwrap_or_else(|| panic!("no pipeline in {list}"));
    assert_eq!(twice["kind"], "pipeline");
    assert_eq!(twice["steps"], serde_json::json!(["hello", "echo"]));
    assert_eq!(twice["health"]["healthy"], true);
    let kinds: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["agent", "agent", "pipeline"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_refused_at_load_answers_503_with_the_reason() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "filters \"wafx\"\n")).await;
    let reply = get(&server.url("/agents/echo")).await;
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.error_code(), "agent_refused");
    let message = reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("wafx"), "{message}");
    // A name nothing was ever loaded under is still unknown.
    assert_eq!(
        get(&server.url("/agents/other")).await.error_code(),
        "agent_not_found"
    );
    let health = get(&server.url("/agents/echo/health")).await;
    assert_eq!(health.error_code(), "agent_refused");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn open_streams_end_with_a_close_event_at_shutdown() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "")).await;
    let client = client();
    let resp = open(&client, Method::GET, &server.url("/topics/news.%3E"), "").await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    let stopping = tokio::spawn(server.stop());
    let mut seen = Vec::new();
    let read = async {
        while let Ok(Some(chunk)) = next_chunk(&mut body).await {
            seen.extend_from_slice(&chunk);
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the stream ends at shutdown");
    let seen = String::from_utf8_lossy(&seen);
    assert!(seen.ends_with(wharf::streams::CLOSE_EVENT), "{seen:?}");
    tokio::time::timeout(Duration::from_secs(30), stopping)
        .await
        .expect("the server stops without waiting out its grace")
        .unwrap();
}
