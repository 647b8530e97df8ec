//! Guests in every language: the echo contract run through HTTP against the
//! Rust, C, Go, Python and JavaScript echo agents (identical answers), the
//! classify agent in all five, and each toolchain's known hazard.

use http::{Method, StatusCode};
use wharf::runtime::Health;

use crate::common::*;

/// The echo agents, Rust first: every other answer is compared with its.
const ECHOES: [&str; 5] = ["echo", "echo-c", "echo-go", "echo-py", "echo-js"];
const CLASSIFIERS: [&str; 5] = [
    "classify",
    "classify-c",
    "classify-go",
    "classify-py",
    "classify-js",
];

/// One contract case: method, path below the agent, headers, body.
struct Case {
    name: &'static str,
    method: Method,
    path: &'static str,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

fn cases() -> Vec<Case> {
    let case = |name, method, path, body| Case {
        name,
        method,
        path,
        headers: Vec::new(),
        body,
    };
    let mut many = case("many headers", Method::POST, "/", b"h".to_vec());
    many.headers = (0..60)
        .map(|i| (format!("x-h-{i}"), format!("value {i}{}", "v".repeat(i))))
        .collect();
    let mut typed = case("content type", Method::PUT, "/doc", b"{}".to_vec());
    typed.headers = vec![("content-type".into(), "application/json".into())];
    vec![
        case("empty body", Method::POST, "/", Vec::new()),
        case("one byte", Method::POST, "/", b"x".to_vec()),
        case("1 KiB", Method::POST, "/kib", pattern(1024)),
        case("1 MiB", Method::POST, "/mib", pattern(1 << 20)),
        case(
            "binary",
            Method::POST,
            "/bin",
            (0..=255u8).cycle().take(1024).collect(),
        ),
        many,
        typed,
        case(
            "non-ASCII path",
            Method::GET,
            "/h%C3%A9llo/w%C3%B6rld/%E2%9C%93",
            Vec::new(),
        ),
        case("GET root", Method::GET, "/", Vec::new()),
    ]
}

/// What a reply must show, with the parts that differ per request removed.
fn essence(reply: &Reply) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
    let mut headers: Vec<(String, String)> = reply
        .headers
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "date" | "x-request-id"))
        .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
        .collect();
    headers.sort();
    (reply.status, headers, reply.body.to_vec())
}

#[tokio::test(flavor = "multi_thread")]
async fn every_language_keeps_the_echo_contract() {
    let dir = agents_dir(&ECHOES);
    let server = Server::start(config(dir.path(), "")).await;
    let client = client();
    for case in cases() {
        let headers: Vec<(&str, &str)> = case
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let mut first = None;
        for agent in ECHOES {
            let url = server.url(&format!("/agents/{agent}{}", case.path));
            let reply = send(
                &client,
                case.method.clone(),
                &url,
                &headers,
                case.body.clone(),
            )
            .await;
            let what = format!("{agent}, {}", case.name);
            assert_eq!(reply.status, StatusCode::OK, "{what}: {}", reply.text());
            assert!(reply.body == case.body, "{what}: body differs");
            assert_eq!(
                reply.headers["x-echo-method"],
                case.method.as_str(),
                "{what}"
            );
            assert_eq!(reply.headers["x-echo-path"], case.path, "{what}");
            assert_eq!(
                reply.headers["content-length"],
                case.body.len().to_string().as_str(),
                "{what}"
            );
            for (name, value) in &case.headers {
                assert_eq!(
                    reply.headers[name.as_str()],
                    value.as_str(),
                    "{what}: {name}"
                );
            }
            let essence = essence(&reply);
            match &first {
                None => first = Some(essence),
                Some(rust) => assert!(*rust == essence, "{what}: differs from the Rust echo"),
            }
        }
    }

    // describe: each card is listed; health: the host reports each healthy.
    let list = get(&server.url("/agents")).await.json();
    let cards: Vec<(&str, &str)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap(),
                a["card"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(&str, &str)> = {
        let mut names = ECHOES.to_vec();
        names.sort();
        names.into_iter().map(|n| (n, "echo")).collect()
    };
    assert_eq!(cards, expected);
    for agent in ECHOES {
        let health = get(&server.url(&format!("/agents/{agent}/health"))).await;
        assert_eq!(health.status, StatusCode::OK, "{agent}");
        assert_eq!(health.json()["healthy"], true, "{agent}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_language_streams_the_echo_when_asked() {
    let dir = agents_dir(&ECHOES);
    let server = Server::start(config(dir.path(), "")).await;
    let body = pattern(10_000);
    let mut first = None;
    for agent in ECHOES {
        let url = server.url(&format!("/agents/{agent}/streamed"));
        let headers = [("x-echo-chunks", "4"), ("x-custom", "kept")];
        let reply = send(&client(), Method::POST, &url, &headers, body.clone()).await;
        assert_eq!(reply.status, StatusCode::OK, "{agent}: {}", reply.text());
        assert!(reply.body == body, "{agent}: the streamed body differs");
        assert_eq!(reply.headers["x-echo-path"], "/streamed", "{agent}");
        assert_eq!(reply.headers["x-custom"], "kept", "{agent}");
        assert_eq!(reply.headers["transfer-encoding"], "chunked", "{agent}");
        assert!(reply.headers.get("content-length").is_none(), "{agent}");
        let essence = essence(&reply);
        match &first {
            None => first = Some(essence),
            Some(rust) => assert!(*rust == essence, "{agent}: differs from the Rust echo"),
        }
        let bad = [("x-echo-chunks", "0")];
        let reply = send(&client(), Method::POST, &url, &bad, "x").await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{agent}");
        assert!(
            reply.text().contains("x-echo-chunks must be 1 to 64"),
            "{agent}: {}",
            reply.text()
        );
    }
    server.stop().await;
}

#[test]
fn every_language_answers_describe_and_health_itself() {
    let names = [ECHOES, CLASSIFIERS].concat();
    let (_runtime, snapshot, _dir) = load_guests(&names);
    for name in names {
        let entry = snapshot.agent(name).unwrap();
        let mut live = entry.image.instantiate().unwrap();
        let card = live.describe().unwrap();
        let family = name.split('-').next().unwrap();
        assert_eq!(card.name, family, "{name}");
        assert!(!card.description.is_empty(), "{name}");
        assert!(matches!(live.health().unwrap(), Health::Ok), "{name}");
    }
}

/// The classify contract, computed independently of any guest.
fn classify(text: &str) -> serde_json::Value {
    const LABELS: [(&str, [&str; 5]); 3] = [
        (
            "billing",
            ["invoice", "refund", "charge", "payment", "price"],
        ),
        ("outage", ["down", "error", "outage", "timeout", "crash"]),
        (
            "security",
            ["password", "breach", "phishing", "leak", "hacked"],
        ),
    ];
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let hits: Vec<usize> = LABELS
        .iter()
        .map(|(_, keys)| words.iter().filter(|w| keys.contains(&w.as_str())).count())
        .collect();
    let total: usize = hits.iter().sum();
    let mut order: Vec<usize> = (0..3).filter(|&l| hits[l] > 0).collect();
    order.sort_by_key(|&l| std::cmp::Reverse(hits[l]));
    let labels: Vec<serde_json::Value> = order
        .iter()
        .map(|&l| serde_json::json!({"label": LABELS[l].0, "hits": hits[l], "score": hits[l] * 1000 / total}))
        .collect();
    serde_json::json!({"words": words.len(), "labels": labels})
}

#[tokio::test(flavor = "multi_thread")]
async fn every_language_classifies_alike() {
    let dir = agents_dir(&CLASSIFIERS);
    let server = Server::start(config(dir.path(), "")).await;
    let long = "The invoice PRICE is wrong; refund me. ".repeat(500);
    let texts = [
        "",
        "nothing to see here",
        "My INVOICE was charged twice; refund? Also the site is down (error 500) — password?",
        "Crash! Timeout... outage; DOWN down down. Phishing & a leak: hacked, breach.",
        "café refund naïve payment — über price ✓ 42 invoice",
        "supercalifragilisticexpialidocious invoice",
        long.as_str(),
    ];
    for agent in CLASSIFIERS {
        for text in texts {
            let reply = post(&server.url(&format!("/agents/{agent}/")), text.to_string()).await;
            assert_eq!(reply.status, StatusCode::OK, "{agent}: {}", reply.text());
            assert_eq!(reply.headers["content-type"], "application/json", "{agent}");
            assert_eq!(reply.json(), classify(text), "{agent} on {text:.40}");
        }
        // Bad input: a clear 400 with the guest's reason, and it keeps serving.
        for bad in [
            &b"\xff\xfe"[..],
            b"ok \xc3\x28",
            b"\xed\xa0\x80",
            b"\xf0\x9f\x98",
        ] {
            let reply = post(&server.url(&format!("/agents/{agent}/")), bad.to_vec()).await;
            assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{agent} on {bad:?}");
            assert_eq!(reply.json()["error"]["message"], "body is not UTF-8");
        }
        let reply = post(&server.url(&format!("/agents/{agent}/")), "leak").await;
        assert_eq!(reply.json(), classify("leak"), "{agent}");
    }
    server.stop().await;
}

/// The same filter written in C, Go, Python and JavaScript, each in a
/// chain in front of `mirror`: it blocks an admin path naming its rule,
/// passes metadata to the agent and marks the response.
#[tokio::test(flavor = "multi_thread")]
async fn filters_in_every_language_keep_the_filter_contract() {
    let dir = agents_dir(&["mirror", "filter-c", "filter-go", "filter-py", "filter-js"]);
    for lang in LANGS {
        let filter = format!("filter-{lang}");
        let text = format!("filters \"{filter}\"\nfilter \"{filter}\" {{ deadline \"5s\" }}\n");
        let server = Server::start(config(dir.path(), &text)).await;
        let refused = &server.pipeline().registry().snapshot().refused;
        assert!(refused.is_empty(), "{filter}: {refused:?}");
        let reply = get(&server.url("/agents/mirror/admin/users")).await;
        assert_eq!(reply.status, 403, "{filter}: {}", reply.text());
        assert_eq!(reply.json()["error"]["code"], "forbidden");
        let label = if lang == "py" { "python" } else { lang };
        assert!(
            reply.headers.get("x-filtered-by").is_none(),
            "the deciding filter's chain ended"
        );
        let reply = post(&server.url("/agents/mirror/ok"), "x").await;
        assert_eq!(reply.status, 200, "{filter}: {}", reply.text());
        assert_eq!(
            reply.json()["meta"][format!("{lang}.method")],
            "POST",
            "{filter}"
        );
        assert_eq!(reply.headers["x-filtered-by"], label);
        let metrics = get(&server.url("/metrics")).await.text();
        let hit =
            format!("wharf_filter_rule_hits_total{{filter=\"{filter}\",rule=\"admin-path\"}} 1");
        assert!(metrics.contains(&hit), "{filter}: {metrics}");
        server.stop().await;
    }
}

/// Every language's echo calls another agent and publishes to a topic
/// through the host (its helper library's `peers` wrappers): allowed by
/// its block, refused otherwise, with the same answers in every language.
#[tokio::test(flavor = "multi_thread")]
async fn every_language_calls_and_publishes_through_the_host() {
    let mut guests = ECHOES.to_vec();
    guests.push("hello");
    let dir = agents_dir(&guests);
    let kdl: String = ECHOES
        .iter()
        .map(|e| format!("agent \"{e}\" {{ calls \"hello\"; publishes \"lang.>\"; }}\n"))
        .collect();
    let server = Server::start(config(dir.path(), &kdl)).await;
    let client = client();
    let watch = open(&client, Method::GET, &server.url("/topics/lang.%3E"), "").await;
    let mut events = watch.into_body();
    next_chunk(&mut events).await.unwrap().unwrap();
    for agent in ECHOES {
        let url = server.url(&format!("/agents/{agent}"));
        let call = async |to: &str| {
            send(
                &client,
                Method::POST,
                &url,
                &[("x-echo-call", to)],
                "Ishmael",
            )
            .await
        };
        let reply = call("hello").await;
        assert_eq!(
            (reply.status.as_u16(), reply.text().as_str()),
            (200, "Hello, Ishmael!\n"),
            "{agent}"
        );
        let denied = call("echo").await;
        assert_eq!(denied.status, 403, "{agent}: {}", denied.text());
        assert!(
            denied
                .text()
                .starts_with(&format!("denied: `{agent}` may not call `echo`")),
            "{agent}: {}",
            denied.text()
        );
        let topic = format!("lang.{}", agent.replace('-', "_"));
        let published = send(
            &client,
            Method::POST,
            &url,
            &[("x-echo-publish", &topic)],
            "hi",
        )
        .await;
        assert_eq!(published.headers["x-echo-queued"], "1", "{agent}");
        assert_eq!(published.text(), "hi", "{agent}");
        let event = next_chunk(&mut events).await.unwrap().unwrap();
        let event = String::from_utf8_lossy(&event).into_owned();
        assert!(
            event.contains(&format!("\"topic\":\"{topic}\"")),
            "{agent}: {event}"
        );
        let refused = send(
            &client,
            Method::POST,
            &url,
            &[("x-echo-publish", "news.x")],
            "",
        )
        .await;
        assert_eq!(refused.headers["x-echo-queued"], "refused", "{agent}");
    }
    server.stop().await;
}
