//! Declared effects over real sockets: the `headers` policy declares what
//! it does the same way on every request, and the host applies it without
//! calling the filter. Every answer is compared, status, headers in order
//! and body, with the same filter loaded with `declare "off"` (every phase
//! a call), and the filter calls are counted to show which path ran.

use http::Method;

use crate::common::*;

/// One policy config, `declared` and `called` built from it, each in front
/// of its own copy of `echo` (which answers with the request's headers, so
/// a request can play an agent that sets its own security headers).
fn pair_config(settings: &str) -> String {
    format!(
        r#"
filter "declared" {{ config {{ {settings} }} }}
filter "called" {{ config {{ {settings}; declare "off" }} }}
agent "a" {{ filters "declared" }}
agent "b" {{ filters "called" }}
"#
    )
}

/// Status, headers in order (less `date` and `x-request-id`, which differ
/// between any two answers) and body.
type Answer = (u16, Vec<(String, Vec<u8>)>, Vec<u8>);

async fn answer(url: &str, method: Method, headers: &[(&str, &str)]) -> Answer {
    let body = if method == Method::POST { "hi" } else { "" };
    let reply = send(&client(), method, url, headers, body).await;
    let headers = reply
        .headers
        .iter()
        .filter(|(name, _)| *name != "date" && *name != "x-request-id")
        .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()))
        .collect();
    (reply.status.as_u16(), headers, reply.body.to_vec())
}

const ORIGIN: (&str, &str) = ("origin", "https://app.example");
const ASK_POST: (&str, &str) = ("access-control-request-method", "POST");

/// The requests every pair is asked, with what each should get from the
/// filter's first settings (the other settings are checked by equality).
fn requests() -> Vec<(Method, Vec<(&'static str, &'static str)>)> {
    let many: Vec<(&str, &str)> = (0..14).map(|_| ("x-many", "1")).collect();
    let long = Box::leak("v".repeat(700).into_boxed_str());
    vec![
        (Method::GET, vec![]),
        (Method::POST, vec![ORIGIN]),
        (Method::POST, vec![("origin", "HTTPS://APP.EXAMPLE")]),
        (Method::POST, vec![("origin", "https://evil.example")]),
        (
            Method::POST,
            vec![ORIGIN, ("x-frame-options", "SAMEORIGIN")],
        ),
        (Method::POST, vec![("x-original-url", "/admin")]),
        (
            Method::OPTIONS,
            vec![ORIGIN, ASK_POST, ("access-control-request-headers", "x-a")],
        ),
        (Method::OPTIONS, vec![ORIGIN, ASK_POST]),
        (
            Method::OPTIONS,
            vec![("origin", "https://evil.example"), ASK_POST],
        ),
        (Method::OPTIONS, vec![ORIGIN]),
        (Method::GET, many),
        (Method::GET, vec![("x-long", long)]),
    ]
}

/// Asks both agents every request; answers that differ fail the test.
/// Returns the declared side's answers.
async fn same_answers(server: &Server) -> Vec<Answer> {
    let mut answers = Vec::new();
    for (method, headers) in requests() {
        let a = answer(&server.url("/agents/a/p"), method.clone(), &headers).await;
        let b = answer(&server.url("/agents/b/p"), method.clone(), &headers).await;
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let shown = |x: &Answer| {
            let headers: Vec<(String, String)> =
                x.1.iter().map(|(n, v)| (n.clone(), text(v))).collect();
            (x.0, headers, text(&x.2))
        };
        assert_eq!(
            shown(&a),
            shown(&b),
            "{method} with {headers:?}: declared (left) and called (right) differ"
        );
        answers.push(a);
    }
    answers
}

async fn calls(server: &Server, filter: &str) -> f64 {
    let mut n = 0.0;
    for phase in ["request_headers", "response_headers"] {
        let sample = format!("wharf_filter_calls_total{{filter=\"{filter}\",phase=\"{phase}\"}}");
        n += metric(server, &sample).await;
    }
    n
}

async fn serve(settings: &str) -> (tempfile::TempDir, Server) {
    let dir = agents_dir(&[]);
    copy_guest(dir.path(), "headers", "declared");
    copy_guest(dir.path(), "headers", "called");
    copy_guest(dir.path(), "echo", "a");
    copy_guest(dir.path(), "echo", "b");
    let server = Server::start(config(dir.path(), &pair_config(settings))).await;
    (dir, server)
}

fn header<'a>(answer: &'a Answer, name: &str) -> Option<&'a [u8]> {
    answer
        .1
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_slice())
}

#[tokio::test(flavor = "multi_thread")]
async fn declared_cors_limits_and_headers_answer_as_the_calls_do() {
    let (_dir, server) = serve(
        r#"cors-origins "https://app.example https://b.example"; cors-methods "GET, POST"; max-headers 12; max-header-bytes 600; hsts "max-age=63072000""#,
    )
    .await;
    let answers = same_answers(&server).await;
    let statuses: Vec<u16> = answers.iter().map(|a| a.0).collect();
    assert_eq!(
        statuses,
        [200, 200, 200, 200, 200, 200, 204, 204, 403, 200, 431, 431],
        "what each request got"
    );
    assert_eq!(header(&answers[0], "x-frame-options"), Some(&b"DENY"[..]));
    assert_eq!(
        header(&answers[4], "x-frame-options"),
        Some(&b"SAMEORIGIN"[..]),
        "a header the agent set is left alone"
    );
    assert_eq!(
        header(&answers[1], "access-control-allow-origin"),
        Some(&b"https://app.example"[..])
    );
    assert_eq!(header(&answers[3], "access-control-allow-origin"), None);
    assert_eq!(
        header(&answers[6], "access-control-allow-headers"),
        Some(&b"x-a"[..])
    );
    // Every answer of `declared` was the host's; `called` was asked in
    // both phases of each request that reached it.
    assert_eq!(calls(&server, "declared").await, 0.0);
    assert!(calls(&server, "called").await >= 12.0);
    // Refusals made from the declaration are counted and audited like
    // the guest's own.
    let hits = "wharf_filter_rule_hits_total{filter=\"declared\",rule=\"headers-too-many\"}";
    assert_eq!(metric(&server, hits).await, 1.0);
    // The listing says which phases are still calls.
    let listed = get(&server.url("/agents")).await.json();
    let called_in = |name: &str| {
        let filter = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name);
        filter.unwrap()["called_in"].clone()
    };
    assert_eq!(called_in("declared"), serde_json::json!([]));
    assert_eq!(
        called_in("called"),
        serde_json::json!(["request_headers", "response_headers"])
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn any_origin_with_credentials_and_no_security_headers_answer_alike() {
    let (_dir, server) = serve(
        r#"cors-origins "*"; cors-credentials "true"; cors-headers "x-a, x-b"; cors-max-age "60"; security "off""#,
    )
    .await;
    let answers = same_answers(&server).await;
    assert_eq!(
        header(&answers[3], "access-control-allow-origin"),
        Some(&b"https://evil.example"[..]),
        "any origin, echoed since credentials are allowed"
    );
    assert_eq!(header(&answers[0], "x-frame-options"), None);
    assert_eq!(calls(&server, "declared").await, 0.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deny_list_keeps_the_request_phase_a_call() {
    let (_dir, server) = serve(r#"deny-headers "x-original-url"; max-headers 12"#).await;
    let answers = same_answers(&server).await;
    assert_eq!(answers[5].0, 400, "the denied header is refused");
    assert_eq!(answers[10].0, 431);
    // Only the response phase is declared.
    let sample = "wharf_filter_calls_total{filter=\"declared\",phase=\"response_headers\"}";
    assert_eq!(metric(&server, sample).await, 0.0);
    let sample = "wharf_filter_calls_total{filter=\"declared\",phase=\"request_headers\"}";
    assert_eq!(metric(&server, sample).await, 12.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_route_that_overrides_the_config_is_served_by_calls() {
    let dir = agents_dir(&["headers"]);
    copy_guest(dir.path(), "echo", "a");
    let kdl = r#"
filter "headers" { config { cors-origins "https://app.example" } }
agent "a" {
    filters "headers"
    filter-config "headers" { cors-origins "https://other.example" }
}
"#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let url = server.url("/agents/a/p");
    let ok = answer(&url, Method::POST, &[("origin", "https://other.example")]).await;
    assert_eq!(
        header(&ok, "access-control-allow-origin"),
        Some(&b"https://other.example"[..]),
        "the route's own origins apply, not the declared ones"
    );
    let refused = answer(&url, Method::OPTIONS, &[ORIGIN, ASK_POST]).await;
    assert_eq!(refused.0, 403);
    assert!(calls(&server, "headers").await >= 2.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declaration_that_breaks_the_contract_refuses_the_filter() {
    let dir = agents_dir(&["echo"]);
    let cases = [
        ("bad-header", "`Bad Name` is not a lower-case header name"),
        (
            "allow-refusal",
            "its `too-many` answer is not a block with nothing but an audit",
        ),
        (
            "extra-phase",
            "effects() keeps the request_body phase, which phases() does not register",
        ),
        (
            "many-defaults",
            "257 default response headers, more than 256",
        ),
        ("trap", "effects() failed"),
    ];
    let mut kdl = String::from("filter \"fine\" {}\nagent \"echo\" { filters \"fine\" }\n");
    copy_guest(dir.path(), "probe", "fine");
    for (name, _) in cases {
        copy_guest(dir.path(), "probe", name);
        kdl.push_str(&format!(
            "filter \"{name}\" {{ config {{ phases \"rh\"; declare \"{name}\" }} }}\n"
        ));
    }
    let server = Server::start(config(dir.path(), &kdl)).await;
    let refused = server.pipeline().registry().snapshot().refused.clone();
    for (name, reason) in cases {
        let found = refused.iter().find(|r| r.name.as_deref() == Some(name));
        assert!(
            found.is_some_and(|r| r.reason.contains(reason)),
            "{name}: {found:?}"
        );
    }
    // A probe that declares nothing loads, and the host keeps serving.
    let reply = post(&server.url("/agents/echo"), "x").await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn more_origins_than_the_host_takes_are_left_to_calls() {
    // 1,025 origins: past what a declaration may list, so the policy
    // declares nothing for the request phase and still loads and answers.
    let mut origins: Vec<String> = (0..1024).map(|i| format!("https://o{i}.example")).collect();
    origins.push("https://app.example".into());
    let (_dir, server) = serve(&format!("cors-origins \"{}\"", origins.join(" "))).await;
    let answers = same_answers(&server).await;
    assert_eq!(answers[6].0, 204, "the last origin's preflight is answered");
    let sample = "wharf_filter_calls_total{filter=\"declared\",phase=\"request_headers\"}";
    assert_eq!(metric(&server, sample).await, 12.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn in_detect_mode_declared_verdicts_are_recorded_not_applied() {
    let dir = agents_dir(&["headers"]);
    copy_guest(dir.path(), "echo", "a");
    let audit = dir.path().join("audit.jsonl");
    let kdl = format!(
        "filter \"headers\" {{ mode \"detect\"; config {{ max-headers 3 }} }}\n\
         agent \"a\" {{ filters \"headers\" }}\naudit \"{}\"\n",
        audit.display()
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    let many: Vec<(&str, &str)> = (0..5).map(|_| ("x-many", "1")).collect();
    let reply = answer(&server.url("/agents/a/p"), Method::GET, &many).await;
    assert_eq!(reply.0, 200, "detect mode refuses nothing");
    assert_eq!(header(&reply, "x-frame-options"), None, "nor adds headers");
    let line = crate::filters::read_audit(&audit, 1).await.remove(0);
    let v = &line["verdicts"][0];
    assert_eq!(v["decision"], "block");
    assert_eq!(v["enforced"], false);
    assert_eq!(v["rule_ids"][0], "headers-too-many");
    let sample = "wharf_filter_decisions_total{filter=\"headers\",phase=\"request_headers\",decision=\"block\",enforced=\"false\"}";
    assert_eq!(metric(&server, sample).await, 1.0);
    assert_eq!(calls(&server, "headers").await, 0.0);
    server.stop().await;
}
