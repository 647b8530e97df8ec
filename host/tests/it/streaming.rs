//! Streamed answers of plain `handle` calls (the `scribe` agents' HTTP
//! side, in all five languages) over real sockets, HTTP/1.1 and
//! h2c: the head and first chunk
//! reach the client while the call is still running, server-sent events
//! arrive one by one, and every way a streaming call can go wrong (a
//! deadline after the head, a body past its limit, a failure after the
//! head, misuse of the calls) cuts the answer off or says why, while the
//! host keeps serving.

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;

use crate::common::*;

/// What a request whose answer is cut off gets: the bytes received before
/// the cut (none when it came before the head: an HTTP/2 reset may
/// overtake the stream's queued frames).
async fn cut_off(client: &HttpClient, url: &str) -> Vec<u8> {
    let req = http::Request::get(url)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = match client.request(req).await {
        Ok(resp) => resp,
        Err(_) => return Vec::new(),
    };
    assert_eq!(resp.status(), StatusCode::OK);
    let (body, clean) = rest(&mut resp.into_body()).await;
    assert!(!clean, "{url}: a cut-off answer must not look whole");
    body
}

/// Everything left of `body`, and whether it ended cleanly.
async fn rest(body: &mut hyper::body::Incoming) -> (Vec<u8>, bool) {
    let mut all = Vec::new();
    loop {
        match next_chunk(body).await {
            Ok(Some(chunk)) => all.extend_from_slice(&chunk),
            Ok(None) => return (all, true),
            Err(_) => return (all, false),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handle_call_streams_its_answer_over_http1_and_h2() {
    let dir = agents_dir(&["scribe"]);
    let kdl = "agent \"scribe\" { deadline \"2s\"; response-body \"256KiB\" }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let url = server.url("/agents/scribe");

    for (client, h2) in [(client(), false), (h2c_client(), true)] {
        // Server-sent events, one per word, then the body `handle` returned.
        let resp = open(&client, Method::POST, &url, "streams are fun").await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        assert!(resp.headers().get("content-length").is_none());
        let (body, clean) = rest(&mut resp.into_body()).await;
        assert!(clean);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            "data: \"streams\"\n\ndata: \"are\"\n\ndata: \"fun\"\n\nevent: done\ndata: {}\n\n"
        );

        // The head and first chunk arrive though the call never returns:
        // it works until its deadline, which then cuts the answer off.
        let resp = open(&client, Method::GET, &server.url("/agents/scribe/spin"), "").await;
        assert_eq!(resp.status(), StatusCode::OK);
        let mut body = resp.into_body();
        assert_eq!(
            next_chunk(&mut body).await.unwrap().unwrap(),
            "data: started\n\n"
        );
        let (_, clean) = rest(&mut body).await;
        assert!(
            !clean,
            "an answer cut off by its deadline must not look whole"
        );

        // Past the response-body limit: cut off, never more than the limit.
        let body = cut_off(&client, &server.url("/agents/scribe/overflow")).await;
        assert!(body.len() <= 256 * 1024, "{} bytes", body.len());

        // A failure after the head: what was written before it (over
        // HTTP/1.1 always; an HTTP/2 reset may overtake it), then cut off.
        let body = cut_off(&client, &server.url("/agents/scribe/fail")).await;
        if h2 {
            assert!(b"partial\n".starts_with(&body), "{body:?}");
        } else {
            assert_eq!(body, b"partial\n");
        }

        // Misuse gets errors that say why; the first head wins, and the
        // returned body ends the answer.
        let reply = send(
            &client,
            Method::GET,
            &server.url("/agents/scribe/misuse"),
            &[],
            "",
        )
        .await;
        assert_eq!(reply.status, StatusCode::CREATED);
        assert_eq!(
            reply.text(),
            "call `start` before `write`\nthe response has already started\nignored status, kept body\n"
        );

        // An agent that does not start answers whole, as before.
        let reply = send(
            &client,
            Method::GET,
            &server.url("/agents/scribe/plain"),
            &[],
            "",
        )
        .await;
        assert_eq!(
            (reply.status, reply.text().as_str()),
            (StatusCode::OK, "not streamed\n")
        );
        assert_eq!(reply.headers["content-length"], "13");
    }

    // Cut-off answers were counted where they happened.
    let metrics = get(&server.url("/metrics")).await.text();
    let deadlines = metrics
        .lines()
        .find(|l| l.starts_with("wharf_deadline_exceeded_total{agent=\"scribe\"}"))
        .unwrap_or_default()
        .to_string();
    assert!(deadlines.ends_with(" 2"), "{deadlines}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn response_filters_see_a_streamed_head() {
    let dir = agents_dir(&["scribe", "probe"]);
    let kdl = "filters \"probe\"\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let resp = open(
        &client(),
        Method::POST,
        &server.url("/agents/scribe"),
        "one two",
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let seen = resp.headers().get("x-probe-probe-seen").cloned();
    let (body, clean) = rest(&mut resp.into_body()).await;
    assert!(clean);
    assert!(
        String::from_utf8(body)
            .unwrap()
            .starts_with("data: \"one\"")
    );
    let seen = seen.expect("the response-headers filter ran on the streamed head");
    assert!(seen.to_str().unwrap().contains("sh"), "{seen:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_language_streams_events_as_rust_does() {
    let scribes = ["scribe", "scribe-c", "scribe-go", "scribe-py", "scribe-js"];
    let dir = agents_dir(&scribes);
    let server = Server::start(config(dir.path(), "")).await;
    let mut first = None;
    for agent in scribes {
        let url = server.url(&format!("/agents/{agent}"));
        let resp = open(&client(), Method::POST, &url, "one two three").await;
        assert_eq!(resp.status(), StatusCode::OK, "{agent}");
        assert_eq!(
            resp.headers()["content-type"],
            "text/event-stream",
            "{agent}"
        );
        let (body, clean) = rest(&mut resp.into_body()).await;
        assert!(clean, "{agent}");
        match &first {
            None => first = Some(body),
            Some(rust) => assert_eq!(rust, &body, "{agent}: differs from the Rust scribe"),
        }
    }
    server.stop().await;
}
