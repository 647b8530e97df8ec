//! A2A tasks across the nodes of a cluster, on a real NATS server and a
//! real PostgreSQL server (both started here on loopback): a task started
//! on one node is read, listed, streamed and canceled on another, and
//! followed from a third across a turn that runs on a second; a node
//! that starts fails only the turns it left running itself; and a node
//! killed (SIGKILL) while tasks are being written loses none that was
//! answered, the turn it was running is marked failed by a survivor, and
//! its sessions re-pin.

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::a2a::{JSON, V1, call, get_task, rpc, send_params, send_text};
use crate::cluster::{Nats, Process, WARM_COUNTER, answered_by, cluster_kdl, hears};
use crate::common::*;
use crate::pg_store::Postgres;
use wharf_tasks::TaskStore as _;

/// An in-process node serving scribe, its tasks in `pg`.
async fn tasks_node(nats: &Nats, pg: &Postgres, name: &str) -> (Server, tempfile::TempDir) {
    let dir = agents_dir(&["scribe"]);
    let inside = format!("postgres \"{}\"", pg.url);
    let extra = "agent \"scribe\" { deadline \"60s\" }";
    let kdl = cluster_kdl(nats, name, extra, "30s", &inside);
    let server = Server::start(config(dir.path(), &kdl)).await;
    (server, dir)
}

/// A JSON-RPC call to scribe at `base`; the reply's `result`.
async fn rpc_at(base: &str, method: &str, params: Value) -> Value {
    let url = format!("{base}/a2a/scribe");
    let reply = send(
        &client(),
        Method::POST,
        &url,
        &[V1, JSON],
        call(method, params),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{method}: {}", reply.text());
    let body = reply.json();
    assert!(body.get("error").is_none(), "{method}: {body}");
    body["result"].clone()
}

/// Starts `spin` (works until canceled) and answers at once: its id.
async fn spin(base: &str) -> String {
    let mut params = send_params("spin");
    params["configuration"] = json!({"returnImmediately": true});
    let task = rpc_at(base, "SendMessage", params).await["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
    task["id"].as_str().unwrap().to_string()
}

/// `SubscribeToTask` on `server`: the stream's head, its body unread.
async fn subscribe(server: &Server, id: &str) -> http::Response<hyper::body::Incoming> {
    let body = call("SubscribeToTask", json!({"id": id}));
    let req = http::Request::post(server.url("/a2a/scribe"))
        .header(V1.0, V1.1)
        .header(JSON.0, JSON.1)
        .body(http_body_util::Full::new(Bytes::from(body)))
        .unwrap();
    let resp = client().request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    resp
}

/// The `result` of each server-sent event in `text`.
fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str::<Value>(d.trim()).unwrap()["result"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_started_on_one_node_is_read_streamed_and_canceled_on_another() {
    let nats = Nats::start().await;
    let pg = Postgres::start().await;
    let (n1, _d1) = tasks_node(&nats, &pg, "n1").await;
    let (n2, _d2) = tasks_node(&nats, &pg, "n2").await;
    let (n3, _d3) = tasks_node(&nats, &pg, "n3").await;
    hears(&n1, 3).await;
    // Read and listed elsewhere: a finished task, with its artifact.
    let done = send_text(&n1, "across the nodes").await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let id = done["id"].as_str().unwrap();
    assert_eq!(get_task(&n2, id).await, done);
    let listed = rpc(&n3, "scribe", &[V1, JSON], &call("ListTasks", json!({}))).await;
    let tasks = listed.json()["result"]["tasks"].clone();
    assert!(
        tasks.as_array().unwrap().iter().any(|t| t["id"] == id),
        "{tasks}"
    );
    // Streamed on n2 and canceled on n3 while its turn runs on n1.
    let running = spin(&n1.base).await;
    let mut stream = subscribe(&n2, &running).await;
    let first = next_chunk(stream.body_mut()).await.unwrap().unwrap();
    let first = events(std::str::from_utf8(&first).unwrap());
    assert_eq!(first[0]["task"]["id"], running.as_str(), "{first:?}");
    assert_eq!(first[0]["task"]["status"]["state"], "TASK_STATE_WORKING");
    let canceled = rpc_at(&n3.base, "CancelTask", json!({"id": running})).await;
    assert_eq!(
        canceled["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let calls = r#"wharf_cluster_task_calls_total{op="cancel",outcome="ok"}"#;
    assert_eq!(metric(&n3, calls).await, 1.0);
    let mut rest = String::new();
    while let Some(chunk) = next_chunk(stream.body_mut()).await.unwrap() {
        rest.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let last = events(&rest).pop().expect("the stream ends with an event");
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED",
        "{rest}"
    );
    assert_eq!(
        get_task(&n1, &running).await["status"]["state"],
        "TASK_STATE_CANCELED"
    );
    // A finished task cannot be canceled, from any node: the protocol's error.
    let again = rpc(
        &n2,
        "scribe",
        &[V1, JSON],
        &call("CancelTask", json!({"id": running})),
    )
    .await;
    assert_eq!(again.json()["error"]["code"], -32002, "{}", again.text());
    // A follow-up to a task waiting for input runs on the node it reaches.
    let asking = send_text(&n1, " ").await;
    assert_eq!(
        asking["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asking}"
    );
    // A subscriber on a third node follows it across that turn: the
    // stream stays open while the task waits and ends when it finishes.
    let mut watching = subscribe(&n3, asking["id"].as_str().unwrap()).await;
    let head = next_chunk(watching.body_mut()).await.unwrap().unwrap();
    let head = events(std::str::from_utf8(&head).unwrap());
    assert_eq!(
        head[0]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let mut params = send_params("finished elsewhere");
    params["message"]["taskId"] = asking["id"].clone();
    let followed = rpc_at(&n2.base, "SendMessage", params).await["task"].clone();
    let mut seen = String::new();
    while let Some(chunk) = next_chunk(watching.body_mut()).await.unwrap() {
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let last = events(&seen)
        .pop()
        .expect("the follower heard the next turn");
    let state = last["statusUpdate"]["status"]["state"]
        .as_str()
        .or(last["task"]["status"]["state"].as_str());
    assert_eq!(state, Some("TASK_STATE_COMPLETED"), "{seen}");
    assert_eq!(
        followed["status"]["state"], "TASK_STATE_COMPLETED",
        "{followed}"
    );
    let asking_id = asking["id"].as_str().unwrap();
    assert_eq!(get_task(&n3, asking_id).await, followed);
    // Turns of a node no longer there (it never answers on NATS): a cancel
    // from any node cancels the task in the store, a subscribe gets the
    // task as stored and ends.
    let url = pg.url.clone();
    tokio::task::spawn_blocking(move || {
        let ghost = wharf_tasks::PgStore::open(crate::pg_store::options(&url, "ghost")).unwrap();
        for id in ["ghost-1", "ghost-2"] {
            let mut task = crate::pg_store::task(id, "c");
            task.set_status(wharf_tasks::TaskState::Working, None)
                .unwrap();
            ghost.save("scribe", &task).wait_blocking().unwrap();
        }
    })
    .await
    .unwrap();
    let canceled = rpc_at(&n2.base, "CancelTask", json!({"id": "ghost-1"})).await;
    assert_eq!(
        canceled["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let mut stream = subscribe(&n3, "ghost-2").await;
    let mut all = String::new();
    while let Some(chunk) = next_chunk(stream.body_mut()).await.unwrap() {
        all.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let got = events(&all);
    assert_eq!(got.len(), 1, "{all}");
    assert_eq!(got[0]["task"]["status"]["state"], "TASK_STATE_WORKING");
    // A node that starts fails only the turns it left running itself.
    let other = spin(&n1.base).await;
    let (n4, _d4) = tasks_node(&nats, &pg, "n4").await;
    assert_eq!(
        get_task(&n4, &other).await["status"]["state"],
        "TASK_STATE_WORKING"
    );
    rpc_at(&n4.base, "CancelTask", json!({"id": other})).await;
    assert_eq!(
        get_task(&n1, &other).await["status"]["state"],
        "TASK_STATE_CANCELED"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_killed_while_writing_tasks_loses_none_that_was_answered() {
    let nats = Nats::start().await;
    let pg = Postgres::start().await;
    let inside = format!("postgres \"{}\"", pg.url);
    let agents = ["scribe", "counter"];
    let mut doomed = Process::start(&nats, "doomed", &agents, WARM_COUNTER, &inside).await;
    let survivor = Process::start(&nats, "survivor", &agents, WARM_COUNTER, &inside).await;
    // A session pinned to the doomed node, asked through both.
    let bob = |base: &str| {
        let url = format!("{base}/agents/counter");
        async move {
            send(
                &client(),
                Method::POST,
                &url,
                &[("x-session-id", "bob")],
                "",
            )
            .await
        }
    };
    let first = bob(&doomed.base).await;
    assert_eq!(
        (first.text(), answered_by(&first)),
        ("bob 1".into(), "doomed".into())
    );
    let base = survivor.base.clone();
    wait_until("the survivor hears the doomed node", || {
        let base = base.clone();
        async move {
            let view = get(&format!("{base}/cluster")).await.json();
            view["nodes"].as_array().is_some_and(|n| n.len() == 2)
        }
    })
    .await;
    let second = bob(&survivor.base).await;
    assert_eq!(
        (second.text(), answered_by(&second)),
        ("bob 2".into(), "doomed".into())
    );
    let running = spin(&doomed.base).await;
    // Eight clients write tasks through the doomed node; it dies under them.
    let answered = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut clients = Vec::new();
    for c in 0..8 {
        let (base, answered, sent) = (doomed.base.clone(), answered.clone(), sent.clone());
        clients.push(tokio::spawn(async move {
            for i in 0.. {
                sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let url = format!("{base}/a2a/scribe");
                let body = call("SendMessage", send_params(&format!("client {c} task {i}")));
                let req = http::Request::post(&url)
                    .header(V1.0, V1.1)
                    .header(JSON.0, JSON.1)
                    .body(http_body_util::Full::new(Bytes::from(body)))
                    .unwrap();
                let Ok(resp) = client().request(req).await else {
                    return;
                };
                let Ok(body) = http_body_util::BodyExt::collect(resp.into_body()).await else {
                    return;
                };
                let reply: Value = serde_json::from_slice(&body.to_bytes()).unwrap();
                answered
                    .lock()
                    .unwrap()
                    .push(reply["result"]["task"].clone());
            }
        }));
    }
    let progress = sent.clone();
    wait_until("40 tasks sent", || {
        let n = progress.load(std::sync::atomic::Ordering::Relaxed);
        async move { n >= 40 }
    })
    .await;
    doomed.kill();
    for c in clients {
        c.await.unwrap();
    }
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() >= 30, "only {} answered", answered.len());
    // Every task the doomed node answered is there, as it was answered.
    for task in &answered {
        let id = task["id"].as_str().unwrap();
        let read = rpc_at(&survivor.base, "GetTask", json!({"id": id})).await;
        assert_eq!(&read, task, "task {id} as answered");
    }
    // Its running turn died with it: the survivor marks the task failed.
    let base = survivor.base.clone();
    let orphans = move |base: String| async move {
        let text = get(&format!("{base}/metrics")).await.text();
        text.lines()
            .find_map(|l| l.strip_prefix("wharf_cluster_orphaned_tasks_total "))
            .and_then(|v| v.parse::<f64>().ok())
    };
    // Counted once every such task is saved failed.
    wait_until("the dead node's turns are marked failed", || {
        let base = base.clone();
        async move { orphans(base).await.is_some() }
    })
    .await;
    // The session re-pins to the survivor (a new instance: its count starts
    // again) and stays there.
    for n in 1..=2 {
        let reply = bob(&survivor.base).await;
        assert_eq!(
            (reply.text(), answered_by(&reply)),
            (format!("bob {n}"), "survivor".into())
        );
    }
    let metrics = get(&format!("{}/metrics", survivor.base)).await.text();
    let repinned = r#"wharf_cluster_pins_total{outcome="repinned"} 1"#;
    assert!(metrics.lines().any(|l| l == repinned), "{metrics}");
    // Every task whose turn died with the node (the spinning one, and any
    // whose send was in flight) was failed once, and counted.
    let gone = "the node running this task (doomed) went away";
    let (mut orphaned, mut token) = (0, String::new());
    loop {
        let page = rpc_at(
            &survivor.base,
            "ListTasks",
            json!({"pageSize": 100, "pageToken": token}),
        )
        .await;
        for task in page["tasks"].as_array().unwrap() {
            assert_ne!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
            if task["status"]["message"]["parts"][0]["text"] == gone {
                orphaned += 1;
            }
        }
        token = page["nextPageToken"].as_str().unwrap_or("").to_string();
        if token.is_empty() {
            break;
        }
    }
    assert!(orphaned >= 1);
    assert_eq!(orphans(base).await, Some(orphaned as f64));
    let failed = rpc_at(&survivor.base, "GetTask", json!({"id": running})).await;
    let said = failed["status"]["message"]["parts"][0]["text"].clone();
    assert_eq!(
        said, "the node running this task (doomed) went away",
        "{failed}"
    );
}
