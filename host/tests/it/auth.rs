//! The shipped `auth` policy over real sockets, with tokens signed by a
//! real JWT library (jsonwebtoken) with HS256, RS256, ES256 and EdDSA
//! keys: valid tokens pass with their claims as metadata, every way a token
//! can be wrong is a 401 with `WWW-Authenticate`, API keys are checked
//! against their stored hashes, and the credential does not reach the agent;
//! a token a warm instance remembers as verified is not used past its
//! `exp` or a change of keys; a verified credential presented again is
//! answered by the host from the verdict it remembered, without a call,
//! except on a route that overrides the filter's config.

use std::path::Path;

use http::Method;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::json;

use crate::common::*;

fn key_file(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/jwt")
            .join(name),
    )
    .unwrap()
}

fn signing_key(alg: Algorithm) -> EncodingKey {
    match alg {
        Algorithm::HS256 => EncodingKey::from_secret(b"a shared secret of decent length"),
        Algorithm::RS256 => EncodingKey::from_rsa_pem(&key_file("rsa.key")).unwrap(),
        Algorithm::ES256 => EncodingKey::from_ec_pem(&key_file("ec.key")).unwrap(),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(&key_file("ed.key")).unwrap(),
        other => panic!("no test key for {other:?}"),
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn token(alg: Algorithm, kid: Option<&str>, claims: serde_json::Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_string);
    encode(&header, &claims, &signing_key(alg)).unwrap()
}

fn good_claims() -> serde_json::Value {
    json!({ "sub": "alice", "iss": "https://issuer.example", "aud": "wharf", "exp": now() + 600, "scope": "read write" })
}

/// A JWKS with the EC and Ed25519 public keys (by kid); the RSA key comes
/// as a PEM and the HS256 secret as a string.
fn jwks() -> String {
    let ec = Jwk::from_encoding_key(&signing_key(Algorithm::ES256), Algorithm::ES256).unwrap();
    let ed = Jwk::from_encoding_key(&signing_key(Algorithm::EdDSA), Algorithm::EdDSA).unwrap();
    let mut keys = Vec::new();
    for (mut jwk, kid) in [(ec, "ec-1"), (ed, "ed-1")] {
        jwk.common.key_id = Some(kid.into());
        keys.push(jwk);
    }
    serde_json::to_string(&JwkSet { keys }).unwrap()
}

fn kdl_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

async fn auth_server(dir: &Path) -> Server {
    // sha256("k-123") for the API key `ci`.
    let text = format!(
        r#"filters "auth"
filter "auth" {{
    config {{
        secret "a shared secret of decent length"
        public-key {}
        jwks {}
        issuer "https://issuer.example"
        audience "wharf"
        leeway 5
        api-keys "ci:{}"
    }}
}}
"#,
        kdl_string(&String::from_utf8(key_file("rsa.pub")).unwrap()),
        kdl_string(&jwks()),
        sha256_hex(b"k-123"),
    );
    Server::start(config(dir, &text)).await
}

async fn with_bearer(server: &Server, token: &str) -> Reply {
    let value = format!("Bearer {token}");
    send(
        &client(),
        Method::GET,
        &server.url("/agents/mirror"),
        &[("authorization", &value)],
        "",
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn valid_tokens_of_every_algorithm_pass_with_their_claims() {
    let dir = agents_dir(&["mirror", "auth"]);
    let server = auth_server(dir.path()).await;
    for (alg, kid) in [
        (Algorithm::HS256, None),
        (Algorithm::RS256, None),
        (Algorithm::ES256, Some("ec-1")),
        (Algorithm::EdDSA, Some("ed-1")),
    ] {
        let reply = with_bearer(&server, &token(alg, kid, good_claims())).await;
        assert_eq!(reply.status, 200, "{alg:?}: {}", reply.text());
        let seen = reply.json();
        assert_eq!(seen["meta"]["auth.sub"], "alice", "{alg:?}");
        assert_eq!(seen["meta"]["auth.scope"], "read write");
        assert_eq!(seen["meta"]["auth.method"], "jwt");
        assert!(
            seen["headers"].get("authorization").is_none(),
            "the credential stops at the filter"
        );
    }
    // A claim past 1 KiB is cut at a character boundary, not mid-letter
    // (which trapped the filter).
    let mut claims = good_claims();
    claims["sub"] = json!(format!("{}é and more", "a".repeat(1023)));
    let reply = with_bearer(&server, &token(Algorithm::HS256, None, claims)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["meta"]["auth.sub"], "a".repeat(1023));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_wrong_token_is_a_401_with_a_challenge() {
    let dir = agents_dir(&["mirror", "auth"]);
    let server = auth_server(dir.path()).await;
    let claims = |patch: serde_json::Value| {
        let mut c = good_claims();
        c.as_object_mut()
            .unwrap()
            .extend(patch.as_object().unwrap().clone());
        c
    };
    let other_secret = encode(
        &Header::new(Algorithm::HS256),
        &good_claims(),
        &EncodingKey::from_secret(b"wrong"),
    )
    .unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            token(Algorithm::RS256, None, claims(json!({ "exp": now() - 60 }))),
            "jwt-expired",
        ),
        (
            "not yet valid",
            token(
                Algorithm::RS256,
                None,
                claims(json!({ "nbf": now() + 600 })),
            ),
            "jwt-not-yet-valid",
        ),
        (
            "wrong issuer",
            token(
                Algorithm::HS256,
                None,
                claims(json!({ "iss": "https://evil.example" })),
            ),
            "jwt-issuer",
        ),
        (
            "wrong audience",
            token(
                Algorithm::ES256,
                Some("ec-1"),
                claims(json!({ "aud": "other" })),
            ),
            "jwt-audience",
        ),
        ("wrong key", other_secret, "jwt-signature"),
        (
            "unknown kid",
            token(Algorithm::ES256, Some("nope"), good_claims()),
            "jwt-unknown-key",
        ),
        ("garbage", "not.a.token".to_string(), "jwt-malformed"),
        (
            "critical extension",
            {
                // Correctly signed, but it says a receiver must understand
                // an extension this host does not (RFC 7515 §4.1.11).
                let mut header = Header::new(Algorithm::HS256);
                header.crit = Some(vec!["exp-by-moon".into()]);
                header.extras.insert("exp-by-moon", "full");
                encode(
                    &header,
                    &good_claims(),
                    &EncodingKey::from_secret(b"a shared secret of decent length"),
                )
                .unwrap()
            },
            "jwt-crit",
        ),
    ];
    for (what, token, rule) in cases {
        let reply = with_bearer(&server, &token).await;
        assert_eq!(reply.status, 401, "{what}: {}", reply.text());
        let challenge = reply.headers["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.starts_with("Bearer realm=\"wharf\""),
            "{what}: {challenge}"
        );
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
        assert_eq!(reply.error_code(), "unauthorized", "{what}");
        let metrics = get(&server.url("/metrics")).await.text();
        assert!(
            metrics.contains(&format!("rule=\"{rule}\"")),
            "{what}: rule {rule} not counted"
        );
    }
    // Within the leeway an expired token still passes.
    let reply = with_bearer(
        &server,
        &token(Algorithm::RS256, None, claims(json!({ "exp": now() - 2 }))),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    // No credentials at all: a bare challenge.
    let reply = get(&server.url("/agents/mirror")).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.headers["www-authenticate"], "Bearer realm=\"wharf\"");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn api_keys_match_their_stored_hashes_and_auth_refuses_before_the_upload() {
    let dir = agents_dir(&["mirror", "auth"]);
    let server = auth_server(dir.path()).await;
    let url = server.url("/agents/mirror");
    let reply = send(
        &client(),
        Method::POST,
        &url,
        &[("x-api-key", "k-123")],
        "payload",
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = reply.json();
    assert_eq!(seen["meta"]["auth.key"], "ci");
    assert!(seen["headers"].get("x-api-key").is_none());
    let reply = send(
        &client(),
        Method::POST,
        &url,
        &[("x-api-key", "k-124")],
        "payload",
    )
    .await;
    assert_eq!(reply.status, 401);

    // A refused request's body is never read: a 100 MiB upload declared in
    // its head is answered 401 at once, not 413 after the upload.
    let mut stream = tokio::net::TcpStream::connect(
        url.trim_start_matches("http://").split('/').next().unwrap(),
    )
    .await
    .unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream
        .write_all(b"POST /agents/mirror HTTP/1.1\r\nhost: x\r\ncontent-length: 104857600\r\n\r\n")
        .await
        .unwrap();
    let mut head = vec![0u8; 512];
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut head))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&head[..n]);
    assert!(text.starts_with("HTTP/1.1 401"), "{text}");
    server.stop().await;
}

/// A site whose `auth` filter runs one warm instance (so its cache of
/// verified tokens is kept between requests) with `secret`, no leeway.
fn cache_site(root: &Path, secret: &str) {
    write_site(
        root,
        &format!(
            "filters \"auth\"\n\
             filter \"auth\" {{ instances {{ mode \"warm\"; max 1; }}; config {{ secret {secret:?}; leeway 0; }} }}\n"
        ),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remembered_token_is_never_used_past_its_exp_or_a_key_change() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("agents")).unwrap();
    for name in ["mirror", "auth"] {
        copy_guest(&root.path().join("agents"), name, name);
    }
    let secret = "a shared secret of decent length";
    cache_site(root.path(), secret);
    let server = Server::start_file(&root.path().join("wharf.kdl")).await;

    // The same token twice: verified, then remembered, with the same
    // claims passed on both times.
    let lasting = token(Algorithm::HS256, None, good_claims());
    for _ in 0..2 {
        let reply = with_bearer(&server, &lasting).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.json()["meta"]["auth.sub"], "alice");
        assert_eq!(reply.json()["meta"]["auth.scope"], "read write");
    }
    // The cache is keyed by the whole token: the remembered one with one
    // character of its signature changed is checked, and refused.
    let at = lasting.len() - 5;
    let swap = if &lasting[at..=at] == "A" { "B" } else { "A" };
    let forged = format!("{}{swap}{}", &lasting[..at], &lasting[at + 1..]);
    let reply = with_bearer(&server, &forged).await;
    assert_eq!(reply.status, 401, "{}", reply.text());
    assert!(reply.text().contains("signature"), "{}", reply.text());
    // A token past the 4 KiB the cache keeps per entry is not remembered
    // (the cache's memory stays bounded) and is checked every time.
    let long = token(
        Algorithm::HS256,
        None,
        json!({ "sub": "carol", "exp": now() + 3600, "pad": "x".repeat(5000) }),
    );
    for _ in 0..2 {
        let reply = with_bearer(&server, &long).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.json()["meta"]["auth.sub"], "carol");
    }

    // A token expiring in two seconds passes, and is refused once its
    // `exp` has passed although the instance remembers it verified.
    let exp = now() + 2;
    let brief = token(Algorithm::HS256, None, json!({ "sub": "bob", "exp": exp }));
    let reply = with_bearer(&server, &brief).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(with_bearer(&server, &brief).await.status, 200);
    while now() <= exp {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let reply = with_bearer(&server, &brief).await;
    assert_eq!(reply.status, 401, "{}", reply.text());
    assert!(reply.text().contains("expired"), "{}", reply.text());

    // The secret changes (a revoked key): the remembered token is checked
    // against the new one, and refused.
    cache_site(root.path(), "another secret, the old one revoked");
    wait_until("the reloaded filter refuses the old token", || async {
        with_bearer(&server, &lasting).await.status == 401
    })
    .await;
    let reply = with_bearer(&server, &lasting).await;
    assert!(reply.text().contains("signature"), "{}", reply.text());
    server.stop().await;
}

const CALLS: &str = r#"wharf_filter_calls_total{filter="auth",phase="request_headers"}"#;
const REMEMBERED: &str = r#"wharf_filter_remembered_total{filter="auth"}"#;
const ALLOWED: &str = r#"wharf_filter_decisions_total{filter="auth",phase="request_headers",decision="allow",enforced="true"}"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_verified_credential_is_answered_by_the_host_without_a_call() {
    let dir = agents_dir(&["mirror", "auth"]);
    let server = auth_server(dir.path()).await;
    // A JWT: verified by a call, then given again by the host from the
    // verdict it remembered. The agent sees the same request byte for
    // byte (claims as metadata, the credential removed) either way, and
    // every answer is counted as the filter's decision.
    let jwt = token(Algorithm::HS256, None, good_claims());
    let first = with_bearer(&server, &jwt).await;
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(first.json()["meta"]["auth.sub"], "alice");
    assert!(first.json()["headers"].get("authorization").is_none());
    for n in 1..=3 {
        let again = with_bearer(&server, &jwt).await;
        assert_eq!(again.status, 200, "{}", again.text());
        assert_eq!(
            again.body, first.body,
            "the agent saw what it saw after the call"
        );
        assert_eq!(metric(&server, REMEMBERED).await, f64::from(n));
    }
    assert_eq!(metric(&server, CALLS).await, 1.0, "one call, for the first");
    assert_eq!(metric(&server, ALLOWED).await, 4.0);

    // Another token is a call of its own; a refused one is never
    // remembered (an unsigned token cannot fill the host's memory).
    let other = token(Algorithm::RS256, None, good_claims());
    assert_eq!(with_bearer(&server, &other).await.status, 200);
    let at = jwt.len() - 5;
    let swap = if &jwt[at..=at] == "A" { "B" } else { "A" };
    let forged = format!("{}{swap}{}", &jwt[..at], &jwt[at + 1..]);
    for _ in 0..2 {
        assert_eq!(with_bearer(&server, &forged).await.status, 401);
    }
    assert_eq!(metric(&server, CALLS).await, 4.0);

    // An API key likewise: one call, then the host's answer, the key
    // removed both times; a wrong key is called and refused every time.
    let url = server.url("/agents/mirror");
    let with_key = |key: &'static str| {
        let url = url.clone();
        async move { send(&client(), Method::POST, &url, &[("x-api-key", key)], "p").await }
    };
    let first = with_key("k-123").await;
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(first.json()["meta"]["auth.key"], "ci");
    let again = with_key("k-123").await;
    assert_eq!(again.body, first.body);
    assert!(again.json()["headers"].get("x-api-key").is_none());
    for _ in 0..2 {
        assert_eq!(with_key("k-124").await.status, 401);
    }
    assert_eq!(metric(&server, CALLS).await, 7.0);
    assert_eq!(metric(&server, REMEMBERED).await, 4.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_route_with_its_own_auth_config_is_called_every_time() {
    let dir = agents_dir(&["auth"]);
    copy_guest(dir.path(), "mirror", "a");
    copy_guest(dir.path(), "mirror", "b");
    let kdl = r#"
filter "auth" { config { secret "a shared secret of decent length"; audience "wharf" } }
agent "a" { filters "auth"; }
agent "b" {
    filters "auth"
    filter-config "auth" { audience "b-only" }
}
"#;
    let server = Server::start(config(dir.path(), kdl)).await;
    let jwt = token(Algorithm::HS256, None, good_claims());
    let bearer = format!("Bearer {jwt}");
    let to = |agent: &str| {
        let url = server.url(&format!("/agents/{agent}"));
        let bearer = bearer.clone();
        async move {
            send(
                &client(),
                Method::GET,
                &url,
                &[("authorization", &bearer)],
                "",
            )
            .await
        }
    };
    // `a` remembers the token under the filter's own config; `b`, whose
    // audience differs, refuses it, although the same token was remembered.
    assert_eq!(to("a").await.status, 200);
    assert_eq!(to("a").await.status, 200);
    for _ in 0..2 {
        let reply = to("b").await;
        assert_eq!(reply.status, 401, "{}", reply.text());
        assert!(reply.text().contains("audience"), "{}", reply.text());
    }
    assert_eq!(metric(&server, REMEMBERED).await, 1.0);
    assert_eq!(metric(&server, CALLS).await, 3.0);
    server.stop().await;
}
