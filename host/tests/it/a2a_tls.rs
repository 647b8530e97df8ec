//! A2A push notifications over TLS: a webhook receiver on loopback with a
//! certificate from a CA made in the test. With the CA named in the `push`
//! block every update arrives over TLS; a host that does not trust the CA
//! sends nothing over the unverified connection and counts the failure;
//! an `https://` webhook outside the allow-list is refused as before.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::a2a::{JSON, V1, call, rpc, webhook_app};
use crate::common::*;
use crate::tls::{Leaf, TestCa};

/// An HTTPS webhook receiver on loopback: its URL, and the JSON bodies
/// posted to it.
async fn tls_webhook(leaf: &Leaf) -> (String, mpsc::UnboundedReceiver<Value>) {
    let config = leaf.server_config(&[b"http/1.1"]);
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let (app, rx) = webhook_app();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                // A client that does not trust the certificate ends here.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (url, rx)
}

/// Sends "count 2" to scribe with a webhook at `url`; the finished task.
async fn send_with_webhook(server: &Server, url: &str) -> Value {
    let params = json!({
        "message": {"messageId": "m-tls", "role": "ROLE_USER", "parts": [{"text": "count 2"}]},
        "configuration": {"taskPushNotificationConfig": {"url": url, "token": "tok"}},
    });
    rpc(server, "scribe", &[V1, JSON], &call("SendMessage", params))
        .await
        .json()
}

async fn pushed(server: &Server, outcome: &str) -> f64 {
    metric(
        server,
        &format!("wharf_a2a_push_total{{outcome=\"{outcome}\"}}"),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn webhooks_over_https_are_verified_against_the_configured_ca() {
    let ca = TestCa::new();
    let (url, mut received) = tls_webhook(&ca.leaf()).await;
    let dir = agents_dir(&["scribe"]);
    let ca_file = dir.path().join("hooks-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();

    // Trusted: every update arrives, over TLS, in order.
    let kdl = format!(
        "push {{ allow \"127.0.0.1\"; backoff \"20ms\"; attempts 2; ca {:?} }}\n",
        ca_file.display().to_string()
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    let answer = send_with_webhook(&server, &url).await;
    let task_id = answer["result"]["task"]["id"]
        .as_str()
        .expect("a task")
        .to_string();
    let mut got = Vec::new();
    while got.len() < 3 {
        let event = tokio::time::timeout(Duration::from_secs(20), received.recv())
            .await
            .expect("the webhook was called over TLS")
            .unwrap();
        got.push(event);
    }
    assert_eq!(got[0]["artifactUpdate"]["taskId"], task_id.as_str());
    assert_eq!(
        got[1]["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "1\n"
    );
    assert_eq!(
        got[2]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    wait_until("three deliveries counted", || async {
        pushed(&server, "delivered").await == 3.0
    })
    .await;
    assert_eq!(pushed(&server, "failed").await, 0.0);
    // An https:// webhook is still held to the allow-list.
    let refused = send_with_webhook(&server, "https://10.0.0.1/hook").await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    server.stop().await;

    // Not trusted (no `ca`): nothing goes over the unverified connection,
    // and the failure is counted once the attempts are spent.
    let kdl = "push { allow \"127.0.0.1\"; backoff \"20ms\"; attempts 2 }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    send_with_webhook(&server, &url).await;
    wait_until("the untrusted webhook's failures counted", || async {
        pushed(&server, "failed").await == 3.0
    })
    .await;
    assert_eq!(pushed(&server, "delivered").await, 0.0);
    assert!(received.try_recv().is_err(), "nothing reached the receiver");
    server.stop().await;
}

#[test]
fn a_ca_file_that_is_missing_or_holds_no_certificate_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "no certificates here\n").unwrap();
    for (file, why) in [
        ("missing.pem", "cannot read it"),
        ("empty.pem", "no certificate"),
    ] {
        let kdl = format!("push {{ allow \"127.0.0.1\"; ca \"{file}\" }}\n");
        let err = wharf::config::Config::parse("wharf.kdl", &kdl, dir.path())
            .expect_err("a bad `ca` is refused");
        let text = err.plain();
        assert!(text.contains(why), "{file}: {text}");
        assert!(text.contains(file), "{file}: the file is named: {text}");
    }
}
