//! The filter pipeline over real sockets, with the `probe` fixture (a
//! filter scripted by a request header) copied under several names and the
//! `mirror` agent (which answers with what it received): every phase, every
//! decision and mutation, metadata, per-route config, detect mode, body
//! limits, failure modes and bad verdicts, and the audit log.

use std::path::Path;

use http::Method;

use crate::common::*;

/// An agents directory with the named agents and `probe` copied as each
/// of `filters`.
fn dir_with(agents: &[&str], filters: &[&str]) -> tempfile::TempDir {
    let dir = agents_dir(agents);
    for f in filters {
        std::fs::copy(guest("probe"), dir.path().join(format!("{f}.wasm"))).unwrap();
    }
    dir
}

/// `filter "NAME" { config { name "NAME" } … }` for each probe, plus `extra`.
fn kdl(filters: &[&str], extra: &str) -> String {
    let mut out = String::new();
    for f in filters {
        out.push_str(&format!(
            "filter \"{f}\" {{\n    config {{ name \"{f}\" }}\n}}\n"
        ));
    }
    out + extra
}

async fn start(dir: &Path, text: &str) -> Server {
    Server::start(config(dir, text)).await
}

async fn call(server: &Server, agent: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let url = server.url(&format!("/agents/{agent}/p?q=1"));
    send(&client(), Method::POST, &url, headers, body.to_string()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn phases_run_in_order_on_one_instance_and_bodies_only_when_asked() {
    let dir = dir_with(&["mirror"], &["a", "b"]);
    let server = start(dir.path(), &kdl(&["a", "b"], "filters \"a\" \"b\"\n")).await;

    // No filter asks for a body: only the header phases run.
    let reply = call(&server, "mirror", &[], "hello").await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.headers["x-probe-a-seen"], "rh,sh");
    assert_eq!(reply.headers["x-probe-b-seen"], "rh,sh");
    assert_eq!(reply.json()["body"], "hello");
    assert_eq!(reply.json()["meta"], serde_json::json!({}));

    // `a` asks for both bodies; `b` for none. One instance of `a` saw every
    // phase; the body lengths it saw travel as metadata to the agent.
    let reply = call(
        &server,
        "mirror",
        &[("x-probe-a", "rh:want-body;sh:want-body")],
        "hello",
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.headers["x-probe-a-seen"], "rh,rb,sh");
    assert_eq!(reply.headers["x-probe-b-seen"], "rh,sh");
    assert_eq!(reply.json()["meta"]["a.rb-len"], "5");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn decisions_and_mutations_apply_in_every_phase() {
    let dir = dir_with(&["mirror"], &["a", "b"]);
    let server = start(dir.path(), &kdl(&["a", "b"], "filters \"a\" \"b\"\n")).await;

    // Request header ops and metadata reach the agent; response ops reach the client.
    let script = "rh:set-req:x-added:yes;rh:rm-req:x-drop;rh:meta:auth.sub:alice;rh:add-resp:x-from-rh:1;sh:rm-resp:x-secret;sh:set-resp:x-from-sh:2";
    let reply = call(
        &server,
        "mirror",
        &[("x-probe-a", script), ("x-drop", "gone")],
        "",
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = reply.json();
    assert_eq!(seen["headers"]["x-added"], "yes");
    assert!(seen["headers"].get("x-drop").is_none(), "{seen}");
    assert_eq!(seen["meta"]["auth.sub"], "alice");
    assert_eq!(reply.headers["x-from-rh"], "1");
    assert_eq!(reply.headers["x-from-sh"], "2");
    assert!(
        reply.headers.get("x-secret").is_none(),
        "the response filter removed it"
    );

    // A request-body replacement is what the agent gets.
    let reply = call(
        &server,
        "mirror",
        &[("x-probe-a", "rh:want-body;rb:replace:clean")],
        "dirty",
    )
    .await;
    assert_eq!(reply.json()["body"], "clean");

    // A response-body replacement (redaction) is what the client gets.
    let reply = call(
        &server,
        "mirror",
        &[("x-probe-b", "sh:want-body;sb:replace:[redacted]")],
        "x",
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.text(), "[redacted]");

    // Block in the request-headers phase: the agent and later filters do
    // not run; earlier filters still see the response.
    let reply = call(&server, "mirror", &[("x-probe-b", "rh:block:403")], "x").await;
    assert_eq!(reply.status, 403);
    assert_eq!(reply.json()["blocked_by"], "b");
    assert_eq!(
        reply.headers["x-probe-a-seen"], "rh,sh",
        "a saw the block response"
    );
    assert!(
        reply.headers.get("x-probe-b-seen").is_none(),
        "the blocking filter's chain ended"
    );

    let reply = call(&server, "mirror", &[("x-probe-a", "rh:block:401")], "x").await;
    assert_eq!(reply.status, 401);
    assert!(
        reply.headers.get("x-probe-b-seen").is_none(),
        "b never saw the request"
    );

    // Block after reading the body; redirect; block in the response phase.
    let reply = call(
        &server,
        "mirror",
        &[("x-probe-a", "rh:want-body;rb:block:422")],
        "x",
    )
    .await;
    assert_eq!(reply.status, 422);
    let reply = call(
        &server,
        "mirror",
        &[("x-probe-a", "rh:redirect:307:/login?next=/x")],
        "",
    )
    .await;
    assert_eq!(reply.status, 307);
    assert_eq!(reply.headers["location"], "/login?next=/x");
    let reply = call(&server, "mirror", &[("x-probe-a", "sh:block:502")], "").await;
    assert_eq!(reply.status, 502);
    assert_eq!(reply.json()["blocked_by"], "a");

    // A 204 answered by a filter (a CORS preflight, say) is a block too.
    let reply = call(&server, "mirror", &[("x-probe-a", "rh:block:204")], "").await;
    assert_eq!(reply.status, 204);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn chains_are_per_agent_and_config_is_per_route() {
    let dir = dir_with(&["mirror", "echo"], &["a", "b"]);
    let text = kdl(
        &["a", "b"],
        r#"
filters "a"
agent "echo" { filters #false }
agent "mirror" {
    filters "b" "a"
    filter-config "a" { level "high" }
}
"#,
    );
    // `a` also has a config of its own, which the route's value overrides.
    let text = text.replacen(
        "config { name \"a\" }",
        "config { name \"a\"; level \"low\" }",
        1,
    );
    let server = start(dir.path(), &text).await;
    let reply = call(&server, "mirror", &[("x-probe-a", "rh:cfg:level")], "").await;
    assert_eq!(reply.json()["meta"]["a.cfg"], "high");
    assert!(reply.headers.contains_key("x-probe-b-seen"));
    let reply = call(&server, "echo", &[("x-probe-a", "rh:block:403")], "plain").await;
    assert_eq!(reply.status, 200, "echo runs no filters");
    assert_eq!(reply.text(), "plain");

    let agents = get(&server.url("/agents")).await.json();
    let mirror = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "mirror")
        .unwrap();
    assert_eq!(mirror["filters"], serde_json::json!(["b", "a"]));
    let a = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "a")
        .unwrap();
    assert_eq!(a["world"], "filter");
    assert_eq!(a["phases"].as_array().unwrap().len(), 4);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn detect_mode_records_but_applies_nothing() {
    let dir = dir_with(&["mirror"], &["a"]);
    let audit = dir.path().join("audit.jsonl");
    let text = format!(
        "filter \"a\" {{\n  mode \"detect\"\n  config {{ name \"a\" }}\n}}\nfilters \"a\"\naudit \"{}\"\n",
        audit.display()
    );
    let server = start(dir.path(), &text).await;
    let script = "rh:block:403;rh:rule:942100:SQL injection;rh:tag:attack-sqli;rh:set-req:x-added:1;rh:meta:score:5";
    let reply = call(&server, "mirror", &[("x-probe-a", script)], "").await;
    assert_eq!(reply.status, 200, "detect mode blocks nothing");
    let seen = reply.json();
    assert!(
        seen["headers"].get("x-added").is_none(),
        "no mutation applied"
    );
    assert_eq!(
        seen["meta"]["score"], "5",
        "metadata is information, passed on"
    );
    let line = read_audit(&audit, 1).await.remove(0);
    let v = &line["verdicts"][0];
    assert_eq!(v["decision"], "block");
    assert_eq!(v["enforced"], false);
    assert_eq!(v["rule_ids"][0], "942100");
    assert_eq!(v["reason"], "SQL injection");
    assert_eq!(v["tags"][0], "attack-sqli");
    assert_eq!(line["agent"], "mirror");
    assert_eq!(line["status"], 200);
    assert_eq!(line["metadata"]["score"], "5");

    let metrics = get(&server.url("/metrics")).await.text();
    assert!(metrics.contains(
        r#"wharf_filter_decisions_total{filter="a",phase="request_headers",decision="block",enforced="false"} 1"#
    ), "{metrics}");
    assert!(metrics.contains(r#"wharf_filter_rule_hits_total{filter="a",rule="942100"} 1"#));
    server.stop().await;
}

/// Waits for `n` lines in the audit file (it is written by a background thread).
pub(crate) async fn read_audit(path: &Path, n: usize) -> Vec<serde_json::Value> {
    for _ in 0..500 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= n {
            return lines;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("fewer than {n} audit lines in {}", path.display());
}

#[tokio::test(flavor = "multi_thread")]
async fn body_limits_reject_pass_or_inspect_a_prefix() {
    let dir = dir_with(&["mirror"], &["r", "p", "x"]);
    let text = r#"
filter "r" { body-limit 4 past="reject"; config { name "r"; phases "rb" } }
filter "p" { body-limit 4 past="pass"; config { name "p"; phases "rb" } }
filter "x" { body-limit 4 past="inspect-prefix"; config { name "x"; phases "rb" } }
agent "mirror" { filters "p" "x" }
"#;
    let server = start(dir.path(), text).await;
    // `p` passes the long body uninspected; `x` sees its first 4 bytes.
    let reply = call(&server, "mirror", &[], "0123456789").await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = reply.json();
    assert!(seen["meta"].get("p.rb-len").is_none(), "{seen}");
    assert_eq!(seen["meta"]["x.rb-len"], "4");
    assert_eq!(seen["body"], "0123456789", "the agent gets the whole body");
    // Under the limit both inspect it whole.
    let seen = call(&server, "mirror", &[], "012").await.json();
    assert_eq!(seen["meta"]["p.rb-len"], "3");
    // A replacement of a body seen only in part is refused (closed: 503).
    let reply = call(
        &server,
        "mirror",
        &[("x-probe-x", "rb:replace:z")],
        "0123456789",
    )
    .await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.error_code(), "filter_failed");
    server.stop().await;

    let text = text.replace("filters \"p\" \"x\"", "filters \"r\"");
    let server = start(dir.path(), &text).await;
    let reply = call(&server, "mirror", &[], "0123456789").await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.error_code(), "body_too_large");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("filter `r`")
    );
    assert_eq!(call(&server, "mirror", &[], "0123").await.status, 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_are_classified_and_the_failure_mode_applies() {
    let dir = dir_with(&["mirror"], &["c", "o"]);
    let text = r#"
filter "c" { deadline "300ms"; memory "16MiB"; config { name "c" } }
filter "o" { failure "open"; deadline "300ms"; memory "16MiB"; config { name "o" } }
agent "mirror" { filters "o" "c" }
"#;
    let server = start(dir.path(), text).await;
    let cases: &[(&str, u16, &str)] = &[
        ("rh:trap", 503, "filter_failed"),
        ("rh:spin", 504, "filter_deadline"),
        ("rh:oom", 503, "filter_failed"),
        ("rh:bad-header", 503, "filter_failed"),
        ("rh:bad-value", 503, "filter_failed"),
        ("rh:host-header", 503, "filter_failed"),
        ("rh:bad-meta", 503, "filter_failed"),
        ("rh:block-status:302", 503, "filter_failed"),
        ("rh:block-status:99", 503, "filter_failed"),
        ("rh:redirect:200:/x", 503, "filter_failed"),
        ("rh:body-in-headers", 503, "filter_failed"),
        ("sh:req-op-in-response", 503, "filter_failed"),
    ];
    for (script, status, code) in cases {
        // Closed: the request fails with the failure's status, nothing internal shown.
        let reply = call(&server, "mirror", &[("x-probe-c", script)], "x").await;
        assert_eq!(reply.status.as_u16(), *status, "{script}: {}", reply.text());
        assert_eq!(reply.error_code(), *code, "{script}");
        let text = reply.text();
        assert!(
            !text.contains("panicked") && !text.contains("wasm"),
            "{script}: {text}"
        );
        // Open: the failing filter is skipped and the request is served.
        let reply = call(&server, "mirror", &[("x-probe-o", script)], "x").await;
        assert_eq!(reply.status, 200, "{script} (open): {}", reply.text());
        assert_eq!(reply.json()["body"], "x");
    }
    // And the host keeps serving cleanly afterwards.
    let reply = call(&server, "mirror", &[], "fine").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.headers["x-probe-c-seen"], "rh,sh");
    let metrics = get(&server.url("/metrics")).await.text();
    for kind in ["trap", "deadline", "memory", "invalid_verdict"] {
        assert!(
            metrics.contains(&format!(
                r#"wharf_filter_failures_total{{filter="o",kind="{kind}"}}"#
            )),
            "{kind}"
        );
    }
    assert!(
        metrics.contains(r#"wharf_filter_skipped_total{filter="o",reason="failed_open"} 12"#),
        "{metrics}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn warm_filters_reuse_instances_and_a_chain_naming_a_missing_filter_refuses_the_agent() {
    let dir = dir_with(&["mirror", "echo"], &["w"]);
    let text = r#"
filter "w" { instances { mode "warm"; max 1 }; config { name "w" } }
agent "mirror" { filters "w" }
agent "echo" { filters "w" "absent" }
"#;
    let server = start(dir.path(), text).await;
    let mut calls = Vec::new();
    for _ in 0..3 {
        let reply = call(&server, "mirror", &[], "").await;
        calls.push(
            reply.headers["x-probe-w-calls"]
                .to_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(
        calls,
        ["2", "4", "6"],
        "one warm instance served every request"
    );
    // A trap retires the warm instance; the next request gets a new one.
    let reply = call(&server, "mirror", &[("x-probe-w", "rh:trap")], "").await;
    assert_eq!(reply.status, 503);
    let reply = call(&server, "mirror", &[], "").await;
    assert_eq!(reply.headers["x-probe-w-calls"], "2");
    // The agent whose chain names a filter that is not there is not
    // served, and says why.
    let reply = call(&server, "echo", &[], "x").await;
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.error_code(), "agent_refused");
    let refused = server.pipeline().registry().snapshot().refused.clone();
    assert!(
        refused
            .iter()
            .any(|r| r.reason.contains("`absent`") && r.reason.contains("agent `echo`")),
        "{refused:?}"
    );
    server.stop().await;
}
