//! Agents working together through the host, over real sockets with real
//! guests: calls between agents (allowed by KDL, bounded by depth, cycles
//! and the caller's deadline, through the callee's filters, counted per
//! edge) and `pipeline` blocks (sequential, parallel, fallback,
//! conditional, nested), and the mistakes a configuration can make.

use http::Method;

use crate::common::*;

/// An agents directory with the named guests, and `relay` copied under
/// each of `relays`.
fn dir_with_relays(guests: &[&str], relays: &[&str]) -> tempfile::TempDir {
    let dir = agents_dir(guests);
    for name in relays {
        copy_guest(dir.path(), "relay", name);
    }
    dir
}

const CALLS: &str = r#"
call-depth 3
agent "ra" {
    deadline "300ms"
    retries 0
    calls "rb" "echo" "nope" "spin" "seq"
}
agent "rb" { calls "rc" "ra" }
agent "rc" { calls "rd" }
agent "echo" { filters "probe" }
agent "spin" {
    deadline "1h"
    retries 0
}
pipeline "seq" {
    sequential {
        step "rd"
        step "echo"
    }
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn agents_call_agents_only_as_their_blocks_allow() {
    let dir = dir_with_relays(
        &["echo", "hello", "spin", "probe"],
        &["ra", "rb", "rc", "rd"],
    );
    let server = Server::start(config(dir.path(), CALLS)).await;
    let url = |p: &str| server.url(&format!("/agents/{p}"));

    // Allowed: the callee's answer comes back, through its own filters.
    let reply = post(&url("ra/call/echo"), "hi").await;
    assert_eq!((reply.status.as_u16(), reply.text().as_str()), (200, "hi"));
    assert!(
        reply.headers.contains_key("x-probe-probe-seen"),
        "echo's filter chain ran on the call: {:?}",
        reply.headers
    );
    // A pipeline is called like an agent.
    let reply = post(&url("ra/call/seq"), "x").await;
    assert_eq!(reply.text(), "rd: x");

    // Not in `calls`, and no `calls` at all: denied, and the host says why.
    let reply = post(&url("ra/call/hello"), "").await;
    assert_eq!(reply.status, 403);
    assert!(
        reply
            .text()
            .starts_with("denied: `ra` may not call `hello`"),
        "{}",
        reply.text()
    );
    let reply = post(&url("rd/call/echo"), "").await;
    assert_eq!(reply.status, 403);
    assert!(reply.text().contains("allows no calls"), "{}", reply.text());
    // Allowed but not loaded.
    let reply = post(&url("ra/call/nope"), "").await;
    assert_eq!(reply.status, 404);
    assert!(reply.text().contains("no agent or pipeline named `nope`"));

    // A cycle: ra → rb → ra.
    let reply = post(&url("ra/call/rb/call/ra"), "").await;
    assert_eq!(reply.status, 508);
    assert_eq!(
        reply.text(),
        "loop: `ra` is already on the call path: ra → rb → ra"
    );
    // Depth: three agents may be on the path, not four.
    let reply = post(&url("ra/call/rb/call/rc"), "deep").await;
    assert_eq!(
        (reply.status.as_u16(), reply.text().as_str()),
        (200, "rc: deep")
    );
    let reply = post(&url("ra/call/rb/call/rc/call/rd"), "").await;
    assert_eq!(reply.status, 508);
    assert!(
        reply
            .text()
            .contains("depth limit of 3 agents: ra → rb → rc → rd"),
        "{}",
        reply.text()
    );

    // The callee gets what the caller has left: spin's own deadline is an
    // hour, ra's 300 ms; spin is interrupted and ra answers 504.
    let reply = post(&url("ra/call/spin"), "").await;
    assert_eq!(reply.status, 504, "{}", reply.text());
    wait_until("spin cut off at the caller's deadline", || async {
        metric(&server, r#"wharf_deadline_exceeded_total{agent="spin"}"#).await >= 1.0
    })
    .await;

    // Every edge is counted by outcome.
    let edge = |callee: &str, outcome: &str| {
        format!(r#"wharf_agent_calls_total{{caller="ra",callee="{callee}",outcome="{outcome}"}}"#)
    };
    assert_eq!(metric(&server, &edge("echo", "ok")).await, 1.0);
    assert_eq!(metric(&server, &edge("hello", "refused")).await, 1.0);
    assert_eq!(metric(&server, &edge("spin", "failed")).await, 1.0);
    assert_eq!(
        metric(
            &server,
            r#"wharf_agent_calls_total{caller="rb",callee="ra",outcome="refused"}"#
        )
        .await,
        1.0
    );
    // The host kept serving throughout.
    assert_eq!(post(&url("echo"), "still").await.text(), "still");
    server.stop().await;
}

const PIPELINES: &str = r#"
agent "ra" { config { name "A" } }
agent "rb" { config { name "B" } }
agent "trap" {
    retries 0
    breaker { failures 10000; }
    health { unhealthy-after 1000; }
}
agent "spin" {
    retries 0
    deadline "30s"
}
pipeline "seq" {
    sequential {
        step "ra"
        step "rb"
        step "echo"
    }
}
pipeline "par" {
    parallel {
        step "ra"
        step "rb"
        step "trap"
    }
}
pipeline "first" {
    parallel merge="first" {
        step "spin"
        step "trap"
        step "rb"
    }
}
pipeline "bounded" {
    parallel deadline="200ms" {
        step "spin"
        step "ra"
    }
}
pipeline "fb" {
    fallback {
        step "trap"
        step "ra"
    }
}
pipeline "fb-5xx" {
    fallback on="5xx" {
        step "ra"
        step "rb"
    }
}
pipeline "fb-any" {
    fallback on="error" {
        step "ra"
        step "echo"
    }
}
pipeline "route" {
    conditional {
        when header="x-lang" equals="fr" {
            step "ra"
        }
        when path-prefix="/b" {
            step "rb"
        }
        when method="GET" {
            step "hello"
        }
        when classifier="cls" equals="cls: refund" {
            step "echo"
        }
        otherwise {
            step "seq"
        }
    }
}
pipeline "strict" {
    conditional {
        when header="x-yes" {
            step "ra"
        }
    }
}
pipeline "nest" {
    sequential {
        step "ra"
        parallel {
            step "rb"
            step "fb"
        }
    }
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn pipelines_compose_agents_in_every_pattern() {
    let dir = dir_with_relays(&["echo", "hello", "trap", "spin"], &["ra", "rb", "cls"]);
    let server = Server::start(config(dir.path(), PIPELINES)).await;
    let url = |p: &str| server.url(&format!("/agents/{p}"));

    // Sequential: each answer is the next request.
    assert_eq!(post(&url("seq"), "hi").await.text(), "B: A: hi");

    // Parallel, merged as a JSON array in branch order; a failed branch
    // is an entry with its status and no internals.
    let reply = post(&url("par"), "x").await;
    assert_eq!(reply.status, 200);
    let merged = reply.json();
    assert_eq!(
        merged[0],
        serde_json::json!({"status": 200, "body": "A: x"})
    );
    assert_eq!(
        merged[1],
        serde_json::json!({"status": 200, "body": "B: x"})
    );
    assert_eq!(merged[2]["status"], 500);
    assert!(!merged[2]["error"].as_str().unwrap().contains("fixture"));
    // The first success wins and the others are dropped.
    assert_eq!(post(&url("first"), "y").await.text(), "B: y");
    // A per-branch deadline: spin is cut off, ra's answer is kept.
    let merged = post(&url("bounded"), "z").await.json();
    assert_eq!(merged[0]["status"], 504);
    assert_eq!(merged[1]["body"], "A: z");

    // Fallback: the trap fails, ra answers.
    assert_eq!(post(&url("fb"), "f").await.text(), "A: f");
    // What counts as failure: ra's 403 (it may call no one) ends a
    // fallback on 5xx, and moves an `on="error"` one to the next try.
    let reply = post(&url("fb-5xx/call/x"), "").await;
    assert_eq!(reply.status, 403);
    let reply = post(&url("fb-any/call/x"), "e").await;
    assert_eq!((reply.status.as_u16(), reply.text().as_str()), (200, "e"));

    // Conditional: by header, path, method, a classifier's answer, else.
    let fr = send(
        &client(),
        Method::POST,
        &url("route"),
        &[("x-lang", "fr")],
        "c",
    )
    .await;
    assert_eq!(fr.text(), "A: c");
    assert_eq!(post(&url("route/b"), "c").await.text(), "B: c");
    assert_eq!(get(&url("route")).await.text(), "Hello, world!\n");
    assert_eq!(post(&url("route"), "refund").await.text(), "refund");
    assert_eq!(post(&url("route"), "other").await.text(), "B: A: other");
    let none = post(&url("strict"), "").await;
    assert_eq!(none.status, 404);
    assert!(none.text().contains("no branch of pipeline `strict`"));

    // Nested blocks and pipelines as steps.
    let merged = post(&url("nest"), "n").await.json();
    assert_eq!(merged[0]["body"], "B: A: n");
    assert_eq!(merged[1]["body"], "A: A: n");
    server.stop().await;
}

#[test]
fn pipeline_mistakes_are_refused_with_their_place() {
    let parse =
        |kdl: &str| match wharf::config::Config::parse("p.kdl", kdl, std::path::Path::new("/")) {
            Ok(_) => panic!("accepted:\n{kdl}"),
            Err(err) => err.plain(),
        };
    let cycle = parse(
        "pipeline \"a\" { sequential { step \"x\"; step \"b\" } }\npipeline \"b\" { step \"a\" }\n",
    );
    assert!(cycle.contains("p.kdl:2:"), "{cycle}");
    assert!(
        cycle.contains("pipeline `a` calls itself: a → b → a"),
        "{cycle}"
    );
    let empty = parse("pipeline \"e\" {}\n");
    assert!(empty.contains("pipeline `e` is empty"), "{empty}");
    let typo = parse("pipeline \"t\" { sequentail { step \"a\" } }\n");
    assert!(
        typo.contains("unknown node `sequentail` in a pipeline"),
        "{typo}"
    );
    let merge = parse("pipeline \"m\" { parallel merge=\"sum\" { step \"a\" } }\n");
    assert!(merge.contains("unknown merge `sum`"), "{merge}");
    let fallback = parse("pipeline \"f\" { fallback { step \"a\" } }\n");
    assert!(
        fallback.contains("`fallback` needs at least 2"),
        "{fallback}"
    );
    let when = parse(
        "pipeline \"w\" { conditional { when method=\"GET\" equals=\"x\" { step \"a\" } } }\n",
    );
    assert!(
        when.contains("`equals` does not apply to method="),
        "{when}"
    );
    let classifier =
        parse("pipeline \"c\" { conditional { when classifier=\"k\" { step \"a\" } } }\n");
    assert!(classifier.contains("needs equals="), "{classifier}");
    let both = parse("agent \"x\" {}\npipeline \"x\" { step \"a\" }\n");
    assert!(
        both.contains("`x` is both an agent block and a pipeline"),
        "{both}"
    );
    let topic = parse("agent \"x\" { subscribe \"a.>.b\" }\n");
    assert!(topic.contains("`>` before its last token"), "{topic}");

    // Steps are checked against what loaded: an unknown agent, a filter,
    // and a pipeline resting on a refused one are refused with the place.
    let dir = agents_dir(&["echo", "allow"]);
    let kdl = "pipeline \"u\" {\n  sequential {\n    step \"echo\"\n    step \"ghost\"\n  }\n}\npipeline \"f\" { step \"allow\" }\npipeline \"on-u\" { step \"u\" }\npipeline \"ok\" { step \"echo\" }\n";
    let cfg = wharf::config::Config::parse("p.kdl", kdl, dir.path()).unwrap();
    let runtime = wharf::runtime::Runtime::new(&test_engine()).unwrap();
    let snapshot = wharf::registry::load_dir(&runtime, &cfg, dir.path()).unwrap();
    let refused: Vec<String> = snapshot.refused.iter().map(|r| r.to_string()).collect();
    let has = |what: &str| {
        assert!(
            refused.iter().any(|r| r.contains(what)),
            "{what}\n{refused:#?}"
        )
    };
    has("refused `p.kdl:4:");
    has("pipeline `u` is not served: no agent or pipeline named `ghost` is loaded");
    has("refused `p.kdl:7:");
    has("pipeline `f` is not served: `allow` is a filter, not an agent");
    has("pipeline `on-u` is not served: pipeline `u` is not served");
    assert_eq!(snapshot.compositions.keys().collect::<Vec<_>>(), ["ok"]);
}

/// What the README shows on the embedded default: its pipelines and its
/// topic subscriber, through its filters.
#[tokio::test(flavor = "multi_thread")]
async fn the_embedded_default_composes_and_subscribes() {
    let dir = agents_dir(&["echo", "hello", "headers", "waf"]);
    copy_guest(dir.path(), "relay", "audit");
    let server = Server::start(config(dir.path(), wharf::config::EMBEDDED_DEFAULT)).await;
    let reply = post(&server.url("/agents/hello-twice"), "Ishmael").await;
    assert_eq!(
        reply.text(),
        "Hello from Wharf, Hello from Wharf, Ishmael!!\n"
    );
    assert_eq!(reply.headers["x-content-type-options"], "nosniff");
    let merged = post(&server.url("/agents/both"), "Ishmael").await.json();
    assert_eq!(merged[0]["body"], "Hello from Wharf, Ishmael!\n");
    assert_eq!(merged[1]["body"], "Ishmael");

    let watch = open(&client(), Method::GET, &server.url("/topics/audit.%3E"), "").await;
    let mut body = watch.into_body();
    next_chunk(&mut body).await.unwrap().unwrap();
    let reply = post(&server.url("/topics/orders.created"), r#"{"id":1}"#).await;
    assert_eq!(reply.json()["queued"], 1);
    let event = next_chunk(&mut body).await.unwrap().unwrap();
    let event = std::str::from_utf8(&event).unwrap();
    assert!(
        event.contains(r#""topic":"audit.orders.created""#),
        "{event}"
    );
    // orders.> is kept: read back, newest first.
    let kept = get(&server.url("/topics/orders.%3E/messages?order=newest")).await;
    let kept = kept.json();
    assert_eq!(kept["messages"][0]["payload"], r#"{"id":1}"#);
    assert_eq!(kept["messages"][0]["topic"], "orders.created");
    // The WAF stands in front of topics too.
    let sqli = post(
        &server.url("/topics/orders.created?q=1%27%20OR%20%271%27=%271"),
        "",
    )
    .await;
    assert_eq!(sqli.status, 403);
    server.stop().await;
}
