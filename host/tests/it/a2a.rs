//! A2A over real sockets with the `scribe` (streaming) and `booking`
//! (multi-turn, in Rust and in Python) agents: the official Python SDK's
//! client over both bindings, the JavaScript SDK's streaming, every
//! protocol error a hostile or careless client can cause (each answered
//! in the binding's form while the host keeps serving),
//! push notifications to the SDK script's webhooks and across a restart,
//! tasks kept across a restart, a turn cut off by a restart marked failed,
//! filters on A2A calls, and a turn's bounds (deadline, event count).

use std::path::Path;
use std::process::Command;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::*;

pub(crate) const V1: (&str, &str) = ("a2a-version", "1.0");
pub(crate) const JSON: (&str, &str) = ("content-type", "application/json");

/// Runs the SDK scenarios of `tests/a2a/sdk_client.py` over `binding`,
/// with `booking` as the multi-turn agent and `scribe` the streaming one,
/// those whose name holds `only`.
async fn sdk_scenarios(base: &str, binding: &str, booking: &str, only: &str, scribe: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a/sdk_client.py");
    let mut cmd = Command::new(client_python());
    cmd.arg(script)
        .arg(base)
        .arg(binding)
        .arg(booking)
        .arg(only)
        .arg(scribe);
    run_client(cmd, &format!("the Python SDK over {binding}")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_python_sdk_drives_every_method_over_every_binding() {
    let scribes = ["scribe-c", "scribe-go", "scribe-py", "scribe-js"];
    let mut agents = vec!["scribe", "booking", "booking-py"];
    agents.extend(scribes);
    let dir = agents_dir(&agents);
    // `spin` turns end by cancel in these scenarios, not by the deadline,
    // however slow the machine. Webhooks go to the script's own receiver.
    let kdl = "agent \"scribe\" { deadline \"30s\" }\n\
               push { allow \"127.0.0.1\"; backoff \"50ms\" }\n\
               a2a { default \"scribe\" }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    sdk_scenarios(&server.base, "JSONRPC", "booking", "", "scribe").await;
    sdk_scenarios(&server.base, "HTTP+JSON", "booking", "", "scribe").await;
    sdk_scenarios(&server.base, "GRPC", "booking", "", "scribe").await;
    // The same conversation with the Python build of the multi-turn agent,
    // and the same streams from the streaming agent in every language.
    sdk_scenarios(
        &server.base,
        "JSONRPC",
        "booking-py",
        "multi_turn",
        "scribe",
    )
    .await;
    for scribe in scribes {
        for only in ["card", "stream_delivers", "direct_reply", "failures"] {
            sdk_scenarios(&server.base, "HTTP+JSON", "booking", only, scribe).await;
        }
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_javascript_sdk_streams_over_both_bindings() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sdk = root.join("target/toolchains/a2a-js");
    assert!(
        sdk.join("node_modules/@a2a-js/sdk").is_dir(),
        "the A2A JavaScript SDK is not installed at {}: run scripts/setup/test-clients.sh",
        sdk.display()
    );
    // ES modules find their packages beside the script.
    let script = sdk.join("stream.mjs");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a/js/stream.mjs"),
        &script,
    )
    .unwrap();
    let dir = agents_dir(&["scribe"]);
    let server = Server::start(config(dir.path(), "")).await;
    let mut cmd = Command::new("node");
    cmd.arg(&script).arg(&server.base);
    run_client(cmd, "the JavaScript SDK").await;
    server.stop().await;
}

/// The card as `wharf.kdl` describes it (`description`, `max-age`).
fn card_site(root: &Path, description: &str) {
    write_site(
        root,
        &format!(
            "a2a {{ default \"scribe\" }}\n\
             agent \"scribe\" {{ card {{ description {description:?}; max-age \"90s\" }} }}\n"
        ),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cards_are_cacheable_and_change_when_their_agent_is_reloaded() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("agents")).unwrap();
    std::fs::copy(guest("scribe"), root.path().join("agents/scribe.wasm")).unwrap();
    card_site(root.path(), "First");
    let server = Server::start_file(&root.path().join("wharf.kdl")).await;
    let url = server.url("/a2a/scribe/.well-known/agent-card.json");
    let fetch = |headers: Vec<(&'static str, String)>| {
        let url = url.clone();
        async move {
            let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            send(&client(), Method::GET, &url, &pairs, "").await
        }
    };
    let header = |reply: &Reply, name: &str| {
        reply
            .headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name}"))
            .to_str()
            .unwrap()
            .to_string()
    };

    let first = fetch(vec![]).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.json()["description"], "First");
    assert_eq!(header(&first, "cache-control"), "public, max-age=90");
    let etag = header(&first, "etag");
    let modified = header(&first, "last-modified");
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert!(modified.ends_with(" GMT"), "{modified}");

    // The client's copy still holds: 304, no body, the same validators.
    let again = fetch(vec![("if-none-match", etag.clone())]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.body.is_empty());
    assert_eq!(header(&again, "etag"), etag);
    let weak = fetch(vec![("if-none-match", format!("\"other\", W/{etag}"))]).await;
    assert_eq!(weak.status, StatusCode::NOT_MODIFIED);
    let by_date = fetch(vec![("if-modified-since", modified.clone())]).await;
    assert_eq!(by_date.status, StatusCode::NOT_MODIFIED);
    let stale = fetch(vec![("if-none-match", "\"other\"".into())]).await;
    assert_eq!(stale.status, StatusCode::OK);
    assert_eq!(stale.body, first.body);
    // The card is served whatever name the client used, and says so: a
    // card reached by another name is another card, with another tag.
    let named = fetch(vec![
        ("host", "agents.example".into()),
        ("if-none-match", etag.clone()),
    ])
    .await;
    assert_eq!(named.status, StatusCode::OK);
    assert_ne!(header(&named, "etag"), etag);
    // The host's card is the default agent's, validators and all.
    let host_card = send(
        &client(),
        Method::GET,
        &server.url("/.well-known/agent-card.json"),
        &[("if-none-match", &etag)],
        "",
    )
    .await;
    assert_eq!(host_card.status, StatusCode::NOT_MODIFIED);

    // The agent reloaded with another card: the old tag no longer holds.
    card_site(root.path(), "Second");
    wait_until("the reloaded card", || async {
        fetch(vec![]).await.json()["description"] == "Second"
    })
    .await;
    let changed = fetch(vec![("if-none-match", etag.clone())]).await;
    assert_eq!(changed.status, StatusCode::OK);
    assert_eq!(changed.json()["description"], "Second");
    assert_ne!(header(&changed, "etag"), etag);
    let since = |h: &str| httpdate::parse_http_date(h).unwrap();
    assert!(since(&header(&changed, "last-modified")) >= since(&modified));
    server.stop().await;
}

pub(crate) async fn rpc(
    server: &Server,
    agent: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let url = server.url(&format!("/a2a/{agent}"));
    send(&client(), Method::POST, &url, headers, body.to_string()).await
}

pub(crate) fn send_params(text: &str) -> Value {
    json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}})
}

pub(crate) fn call(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}).to_string()
}

/// The JSON-RPC error code of a reply, checking the envelope.
fn rpc_code(reply: &Reply) -> i64 {
    let body = reply.json();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {body}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_calls_get_the_bindings_errors_and_the_host_keeps_serving() {
    let dir = agents_dir(&["scribe", "echo"]);
    let kdl = "agent \"scribe\" {\n\
                   request-body \"4KiB\"\n\
                   card {\n\
                       description \"Writes it back\"\n\
                       input-modes \"text/plain\"\n\
                       provider \"Example Corp\" url=\"https://example.com\"\n\
                       documentation-url \"https://example.com/docs\"\n\
                   }\n\
               }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let both = [V1, JSON];

    // The card: describe() with what the KDL block adds; no push block, so
    // no push notifications.
    let card = get(&server.url("/a2a/scribe/.well-known/agent-card.json"))
        .await
        .json();
    assert_eq!(card["name"], "scribe");
    assert_eq!(card["description"], "Writes it back");
    assert_eq!(card["defaultInputModes"], json!(["text/plain"]));
    assert_eq!(
        card["defaultOutputModes"],
        json!(["text/plain", "application/json"])
    );
    assert_eq!(
        card["provider"],
        json!({"organization": "Example Corp", "url": "https://example.com"})
    );
    assert_eq!(card["documentationUrl"], "https://example.com/docs");
    assert_eq!(card["capabilities"]["pushNotifications"], false);
    assert_eq!(card["skills"][0]["id"], "write");

    // JSON-RPC: parse errors, bad envelopes, unknown methods, bad params.
    let reply = rpc(&server, "scribe", &both, "{\"jsonrpc\":").await;
    assert_eq!((reply.status, rpc_code(&reply)), (StatusCode::OK, -32700));
    assert_eq!(reply.json()["id"], Value::Null);
    let reply = rpc(&server, "scribe", &both, "[1,2,3]").await;
    assert_eq!(rpc_code(&reply), -32600);
    let reply = rpc(&server, "scribe", &both, &call("Frobnicate", json!({}))).await;
    assert_eq!(rpc_code(&reply), -32601);
    assert_eq!(reply.json()["error"]["data"]["method"], "Frobnicate");
    assert_eq!(reply.json()["id"], 9, "the request's id is echoed");
    let reply = rpc(&server, "scribe", &both, &call("GetTask", json!({"id": 5}))).await;
    assert_eq!(rpc_code(&reply), -32602);
    let no_parts = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}});
    let reply = rpc(&server, "scribe", &both, &call("SendMessage", no_parts)).await;
    assert_eq!(rpc_code(&reply), -32602);
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at least one part")
    );
    let with_push = json!({"message": send_params("x")["message"],
        "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/hook"}}});
    let reply = rpc(&server, "scribe", &both, &call("SendMessage", with_push)).await;
    assert_eq!(
        rpc_code(&reply),
        -32003,
        "a push config is refused, not ignored"
    );
    // A2A errors carry ErrorInfo.
    let reply = rpc(
        &server,
        "scribe",
        &both,
        &call("GetTask", json!({"id": "nope"})),
    )
    .await;
    assert_eq!(rpc_code(&reply), -32001);
    let info = &reply.json()["error"]["data"][0];
    assert_eq!(info["reason"], "TASK_NOT_FOUND");
    assert_eq!(info["domain"], "a2a-protocol.org");
    assert_eq!(info["metadata"]["taskId"], "nope");
    // Versions: none means 0.3, which is refused; 1.x is served.
    let reply = rpc(
        &server,
        "scribe",
        &[JSON],
        &call("GetTask", json!({"id": "x"})),
    )
    .await;
    assert_eq!(rpc_code(&reply), -32009);
    assert_eq!(
        reply.json()["error"]["data"][0]["metadata"]["requested"],
        "0.3"
    );
    let reply = rpc(&server, "scribe", &[JSON, ("a2a-version", "2.0")], "{}").await;
    assert_eq!(rpc_code(&reply), -32600, "the envelope is checked first");
    // Content types and methods.
    let plain = [V1, ("content-type", "text/plain")];
    let reply = rpc(
        &server,
        "scribe",
        &plain,
        &call("GetTask", json!({"id": "x"})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(rpc_code(&reply), -32005);
    let info = &reply.json()["error"]["data"][0];
    assert_eq!(info["reason"], "CONTENT_TYPE_NOT_SUPPORTED", "{info}");
    assert_eq!(info["metadata"]["contentType"], "text/plain");
    let reply = send(
        &client(),
        Method::GET,
        &server.url("/a2a/scribe"),
        &both,
        "",
    )
    .await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    // Too large: the agent's body limit, before any parsing.
    let big = call("SendMessage", send_params(&"x".repeat(8192)));
    let reply = rpc(&server, "scribe", &both, &big).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    // Agents that do not serve A2A, and agents that do not exist.
    let reply = rpc(&server, "echo", &both, &call("GetTask", json!({"id": "x"}))).await;
    assert_eq!(
        (reply.status, reply.error_code().as_str()),
        (StatusCode::NOT_FOUND, "not_a2a")
    );
    let reply = get(&server.url("/a2a/nobody/.well-known/agent-card.json")).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    // No default agent named: the host has no card of its own.
    let reply = get(&server.url("/.well-known/agent-card.json")).await;
    assert_eq!(
        (reply.status, reply.error_code().as_str()),
        (StatusCode::NOT_FOUND, "no_default_agent")
    );

    // HTTP+JSON: the same errors with HTTP statuses and AIP-193 bodies.
    let url = |p: &str| server.url(&format!("/a2a/scribe{p}"));
    let reply = send(&client(), Method::GET, &url("/tasks/nope"), &[V1], "").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let err = &reply.json()["error"];
    assert_eq!(
        (err["code"].as_i64(), err["status"].as_str()),
        (Some(404), Some("NOT_FOUND"))
    );
    assert_eq!(err["details"][0]["reason"], "TASK_NOT_FOUND");
    let reply = send(
        &client(),
        Method::POST,
        &url("/message:send"),
        &both,
        "{oops",
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let reply = send(&client(), Method::POST, &url("/message:send"), &[V1], "{}").await;
    assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        reply.json()["error"]["details"][0]["reason"],
        "CONTENT_TYPE_NOT_SUPPORTED"
    );
    let reply = send(&client(), Method::GET, &url("/tasks?pageSize=0"), &[V1], "").await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pageSize")
    );
    let reply = send(&client(), Method::GET, &url("/tasks"), &[], "").await;
    assert_eq!(
        reply.json()["error"]["details"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );
    let reply = send(&client(), Method::POST, &url("/no/such:thing"), &[V1], "").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let reply = send(&client(), Method::POST, &url("/tasks/x:cancel"), &[V1], "").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);

    // After all that, both the agent and its neighbour still answer (and
    // empty ids, as clients that send proto defaults write them, are no ids).
    let reply = rpc(
        &server,
        "scribe",
        &both,
        &call(
            "SendMessage",
            json!({"message": {"messageId": "m-2", "role": "ROLE_USER", "taskId": "",
                "contextId": "", "parts": [{"text": "still here"}]}}),
        ),
    )
    .await;
    assert_eq!(
        reply.json()["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(post(&server.url("/agents/echo"), "ok").await.text(), "ok");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_direct_reply_after_progress_is_a_message_unless_a_stream_showed_the_task() {
    let dir = agents_dir(&["scribe"]);
    let server = Server::start(config(dir.path(), "")).await;
    // Blocking: the working update reached no one, so the reply is the
    // answer and no task is kept.
    let slowly = send_params("ping slowly");
    let reply = rpc(
        &server,
        "scribe",
        &[V1, JSON],
        &call("SendMessage", slowly.clone()),
    )
    .await;
    let result = &reply.json()["result"];
    assert_eq!(result["message"]["parts"][0]["text"], "pong", "{result}");
    assert_eq!(result["message"]["role"], "ROLE_AGENT", "{result}");
    assert!(result.get("task").is_none(), "{result}");
    assert_eq!(total_tasks(&server).await, 0);
    // Streamed: the working update showed the task, so the reply ends it
    // completed, with the reply as its answer, and it is kept.
    let reply = rpc(
        &server,
        "scribe",
        &[V1, JSON],
        &call("SendStreamingMessage", slowly),
    )
    .await;
    let events: Vec<Value> = reply
        .text()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).unwrap()["result"].clone())
        .collect();
    assert_eq!(
        events[0]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{events:?}"
    );
    let last = &events.last().unwrap()["statusUpdate"]["status"];
    assert_eq!(last["state"], "TASK_STATE_COMPLETED", "{events:?}");
    assert_eq!(last["message"]["parts"][0]["text"], "pong", "{events:?}");
    assert_eq!(total_tasks(&server).await, 1);
    server.stop().await;
}

/// Sends `text` to scribe over JSON-RPC and returns the task.
pub(crate) async fn send_text(server: &Server, text: &str) -> Value {
    let reply = rpc(
        server,
        "scribe",
        &[V1, JSON],
        &call("SendMessage", send_params(text)),
    )
    .await;
    reply.json()["result"]["task"].clone()
}

pub(crate) async fn get_task(server: &Server, id: &str) -> Value {
    let reply = rpc(
        server,
        "scribe",
        &[V1, JSON],
        &call("GetTask", json!({"id": id})),
    )
    .await;
    reply.json()["result"].clone()
}

/// How many tasks scribe has, by `ListTasks`.
async fn total_tasks(server: &Server) -> u64 {
    let reply = rpc(server, "scribe", &[V1, JSON], &call("ListTasks", json!({}))).await;
    reply.json()["result"]["totalSize"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_survive_a_restart_and_a_turn_cut_off_by_one_ends_failed() {
    let dir = agents_dir(&["scribe"]);
    let store = tempfile::tempdir().unwrap();
    let path = store.path().join("tasks.db");
    let (hook_url, mut hooked) = webhook().await;
    let kdl = format!(
        "tasks {{ path \"{}\" }}\npush {{ allow \"127.0.0.1\" }}\n",
        path.display()
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    let done = send_text(&server, "kept across restarts").await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
    // Ids Wharf makes are UUIDv7 (the version digit), and a later task's
    // sorts after: what keeps the store's indexes growing at their end.
    let later = send_text(&server, "made after").await;
    for value in [&done["id"], &done["contextId"], &later["id"]] {
        let id = value.as_str().unwrap();
        assert_eq!((id.len(), id.as_bytes()[14]), (36, b'7'), "{id}");
    }
    assert!(later["id"].as_str() > done["id"].as_str(), "{done} {later}");
    server.stop().await;

    // What a process killed in the middle of a turn leaves behind: a task
    // saved as working, whose turn no longer runs.
    let cut_off: wharf_tasks::Task = serde_json::from_value(json!({
        "id": "cut-off", "contextId": "c",
        "status": {"state": "TASK_STATE_WORKING"},
        "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "spin"}]}],
    }))
    .unwrap();
    let at = path.clone();
    tokio::task::spawn_blocking(move || {
        use wharf_tasks::TaskStore as _;
        let killed = wharf_tasks::SqliteStore::open(wharf_tasks::StoreOptions::new(at)).unwrap();
        killed.save("scribe", &cut_off).wait_blocking().unwrap();
        let config = wharf_tasks::TaskPushNotificationConfig {
            tenant: String::new(),
            id: "hook".into(),
            task_id: "cut-off".into(),
            url: hook_url,
            token: "t".into(),
            authentication: None,
        };
        killed
            .put_push_config("scribe", &config)
            .wait_blocking()
            .unwrap();
    })
    .await
    .unwrap();

    let server = Server::start(config(dir.path(), &kdl)).await;
    let again = get_task(&server, done["id"].as_str().unwrap()).await;
    assert_eq!(again, done, "the finished task is back as it was");
    let cut = get_task(&server, "cut-off").await;
    assert_eq!(cut["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(
        cut["status"]["message"]["parts"][0]["text"],
        "the host restarted while this task was running"
    );
    assert_eq!(total_tasks(&server).await, 3);
    // The task's webhook outlived the restart and hears how it ended.
    let pushed = tokio::time::timeout(std::time::Duration::from_secs(20), hooked.recv())
        .await
        .expect("the webhook was called")
        .unwrap();
    assert_eq!(pushed["statusUpdate"]["taskId"], "cut-off");
    assert_eq!(
        pushed["statusUpdate"]["status"]["state"],
        "TASK_STATE_FAILED"
    );
    // Counted once the receiver's answer is read.
    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = get(&server.url("/metrics")).await.text();
        if metrics.contains("wharf_a2a_push_total{outcome=\"delivered\"} 1") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        metrics.contains("wharf_a2a_push_total{outcome=\"delivered\"} 1"),
        "{metrics}"
    );
    server.stop().await;
}

/// A webhook receiver's routes: `POST /hook`, whose JSON bodies arrive on
/// the receiver.
pub(crate) fn webhook_app() -> (axum::Router, tokio::sync::mpsc::UnboundedReceiver<Value>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let _ = tx.send(body);
            async { StatusCode::NO_CONTENT }
        }),
    );
    (app, rx)
}

/// A webhook receiver on loopback: its URL, and the JSON bodies posted to it.
async fn webhook() -> (String, tokio::sync::mpsc::UnboundedReceiver<Value>) {
    let (app, rx) = webhook_app();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

#[tokio::test(flavor = "multi_thread")]
async fn filters_see_a2a_calls_and_a_turn_is_bounded() {
    let dir = agents_dir(&["scribe"]);
    std::fs::copy(guest("probe"), dir.path().join("gate.wasm")).unwrap();
    let kdl = "filter \"gate\" { config { name \"gate\" } }\n\
               filters \"gate\"\n\
               agent \"scribe\" { deadline \"2s\" }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let body = call("SendMessage", send_params("through the chain"));

    // The filter runs on the A2A call: it can block it before the agent
    // runs, and it sees (and stamps) the answer.
    let blocked = rpc(
        &server,
        "scribe",
        &[V1, JSON, ("x-probe-gate", "rh:block:401")],
        &body,
    )
    .await;
    assert_eq!(blocked.status, StatusCode::UNAUTHORIZED);
    let passed = rpc(&server, "scribe", &[V1, JSON], &body).await;
    assert_eq!(passed.headers["x-probe-gate-seen"], "rh,sh");
    assert_eq!(
        passed.json()["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(
        total_tasks(&server).await,
        1,
        "the blocked call made no task"
    );

    // A turn that outruns its deadline fails with the reason.
    let spun = send_text(&server, "spin").await;
    assert_eq!(spun["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(
        spun["status"]["message"]["parts"][0]["text"],
        "the agent did not finish within its deadline"
    );
    // A turn that reports more events than allowed fails, and nothing of
    // the guest's internals shows.
    let flooded = send_text(&server, "flood").await;
    assert_eq!(flooded["status"]["state"], "TASK_STATE_FAILED");
    let why = flooded["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(why.contains("more than 10000 events"), "{why}");

    // The turns went through the agent's route: its metrics counted them
    // (three turns, one cut off at its deadline), and every answer the
    // client had is counted with the stage that gave it.
    let turns = r#"wharf_request_duration_seconds_count{agent="scribe"}"#;
    assert_eq!(metric(&server, turns).await, 3.0);
    let cut = r#"wharf_deadline_exceeded_total{agent="scribe"}"#;
    assert_eq!(metric(&server, cut).await, 1.0);
    let answered = |stage: &str, status: &str| {
        format!(r#"wharf_requests_total{{agent="scribe",stage="{stage}",status="{status}"}}"#)
    };
    assert_eq!(metric(&server, &answered("filter", "401")).await, 1.0);
    // Three sends and the list of tasks, each answered 200 on the agent's route.
    assert_eq!(metric(&server, &answered("agent", "200")).await, 4.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_waf_reads_a2a_messages_too() {
    let dir = agents_dir(&["scribe"]);
    std::fs::copy(guest("waf"), dir.path().join("waf.wasm")).unwrap();
    let server = Server::start(config(dir.path(), "filters \"waf\"\n")).await;
    let attack = call("SendMessage", send_params("1' OR '1'='1"));
    let reply = rpc(&server, "scribe", &[V1, JSON], &attack).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.text());
    assert_eq!(reply.error_code(), "blocked");
    assert_eq!(total_tasks(&server).await, 0, "no task was made for it");
    let clean = send_text(&server, "a perfectly ordinary sentence").await;
    assert_eq!(clean["status"]["state"], "TASK_STATE_COMPLETED");
    server.stop().await;
}
