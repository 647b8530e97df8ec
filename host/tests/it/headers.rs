//! The shipped `headers` policy over real sockets: a browser's CORS
//! preflight answered by the filter, CORS on actual responses, security
//! headers on every answer (a block by a later filter included), request
//! header deny, strip and allow lists, and head size limits.

use http::Method;

use crate::common::*;

const CONFIG: &str = r#"
filters "headers" "auth"
filter "auth" { config { api-keys "ci:a4c1b5b4c9b9e19bb0dd6a3b3c8d3d3b3f1b1b0e4d0b5f4f3b8f0b0d5e0e1f00" } }
filter "headers" {
    config {
        cors-origins "https://app.example"
        cors-methods "GET, POST"
        deny-headers "x-original-url"
        strip-headers "x-debug"
        max-headers 20
    }
}
agent "echo" { filters "headers" }
agent "mirror" {
    filters "headers"
    filter-config "headers" { allow-headers "accept x-keep" }
}
"#;

/// What Chromium sends before a cross-origin POST with JSON and a token.
const PREFLIGHT: &[(&str, &str)] = &[
    ("accept", "*/*"),
    ("access-control-request-method", "POST"),
    (
        "access-control-request-headers",
        "authorization,content-type",
    ),
    ("origin", "https://app.example"),
    ("sec-fetch-mode", "cors"),
    ("sec-fetch-site", "cross-site"),
    ("sec-fetch-dest", "empty"),
    ("referer", "https://app.example/"),
    (
        "user-agent",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
    ),
    ("accept-language", "en-US,en;q=0.9"),
];

#[tokio::test(flavor = "multi_thread")]
async fn cors_preflights_are_answered_by_the_filter() {
    let dir = agents_dir(&["echo", "mirror", "headers", "auth"]);
    let server = Server::start(config(dir.path(), CONFIG)).await;
    let url = server.url("/agents/echo/api");
    let reply = send(&client(), Method::OPTIONS, &url, PREFLIGHT, "").await;
    assert_eq!(reply.status, 204, "{}", reply.text());
    assert_eq!(
        reply.headers["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(reply.headers["access-control-allow-methods"], "GET, POST");
    assert_eq!(
        reply.headers["access-control-allow-headers"],
        "authorization,content-type"
    );
    assert!(
        reply.body.is_empty(),
        "the echo agent never saw the preflight"
    );

    let mut other = PREFLIGHT.to_vec();
    other[3] = ("origin", "https://evil.example");
    let reply = send(&client(), Method::OPTIONS, &url, &other, "").await;
    assert_eq!(reply.status, 403);

    // The actual request carries CORS and the security headers.
    let reply = send(
        &client(),
        Method::POST,
        &url,
        &[("origin", "https://app.example")],
        "hi",
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.headers["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(reply.headers["x-content-type-options"], "nosniff");
    assert_eq!(reply.headers["x-frame-options"], "DENY");
    assert!(reply.headers.contains_key("content-security-policy"));
    let reply = send(
        &client(),
        Method::POST,
        &url,
        &[("origin", "https://evil.example")],
        "hi",
    )
    .await;
    assert!(reply.headers.get("access-control-allow-origin").is_none());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_limits_and_headers_on_a_later_filters_block() {
    let dir = agents_dir(&["echo", "mirror", "headers", "auth", "hello"]);
    let server = Server::start(config(dir.path(), CONFIG)).await;
    // `hello` runs the default chain: auth refuses, and the headers filter,
    // which saw the request first, still dresses the 401.
    let reply = get(&server.url("/agents/hello")).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.headers["x-content-type-options"], "nosniff");

    let url = server.url("/agents/mirror");
    let reply = send(
        &client(),
        Method::GET,
        &url,
        &[("x-original-url", "/admin")],
        "",
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.error_code(), "headers-denied");
    let headers = [
        ("x-keep", "1"),
        ("x-drop", "2"),
        ("x-debug", "3"),
        ("accept", "*/*"),
    ];
    let seen = send(&client(), Method::GET, &url, &headers, "")
        .await
        .json();
    assert_eq!(seen["headers"]["x-keep"], "1");
    assert!(
        seen["headers"].get("x-drop").is_none(),
        "not on the allow list: {seen}"
    );
    assert!(seen["headers"].get("x-debug").is_none(), "stripped: {seen}");
    let many: Vec<(String, String)> = (0..25)
        .map(|i| (format!("x-h{i}"), "v".to_string()))
        .collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let reply = send(&client(), Method::GET, &url, &many, "").await;
    assert_eq!(reply.status, 431);
    server.stop().await;
}
