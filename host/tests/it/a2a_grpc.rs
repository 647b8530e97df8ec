//! The A2A gRPC binding over real h2c sockets, with hand-made calls: every
//! malformed or hostile call a client can make answered with its gRPC
//! status while the host keeps serving, a message past the limit refused,
//! and the filter chain and task scoping applied as for the JSON bindings
//! (the official Python SDK's gRPC client runs the method scenarios in
//! `a2a.rs`).

use bytes::Bytes;
use http::{HeaderMap, Method};
use http_body_util::{BodyExt, Full};
use prost::Message as _;
use wharf_a2a_proto::v1;

use crate::common::*;

/// What a gRPC call got: its HTTP status, head, body and trailers.
struct GrpcReply {
    http: http::StatusCode,
    head: HeaderMap,
    body: Bytes,
    trailers: HeaderMap,
}

impl GrpcReply {
    /// `grpc-status`: in the trailers, or in the head of a status-only answer.
    fn code(&self) -> i32 {
        self.trailers
            .get("grpc-status")
            .or_else(|| self.head.get("grpc-status"))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1)
    }

    fn message(&self) -> String {
        let raw = self
            .trailers
            .get("grpc-message")
            .or_else(|| self.head.get("grpc-message"))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        percent_decode(raw)
    }

    /// The one response message, decoded.
    fn decode<M: prost::Message + Default>(&self) -> M {
        assert_eq!(self.code(), OK, "{}", self.message());
        assert!(self.body.len() >= 5, "a framed message");
        let len = u32::from_be_bytes(self.body[1..5].try_into().unwrap()) as usize;
        assert_eq!(self.body.len(), 5 + len, "exactly one message");
        M::decode(&self.body[5..]).expect("the method's message")
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = s
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn framed(message: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// A gRPC call of `method` with `body` as sent, and `headers` besides
/// the content type.
async fn grpc_raw(
    server: &Server,
    method: &str,
    content_type: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> GrpcReply {
    let mut builder = http::Request::builder()
        .method(Method::POST)
        .uri(server.url(&format!("/lf.a2a.v1.A2AService/{method}")))
        .header("content-type", content_type)
        .header("te", "trailers");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let req = builder.body(Full::new(Bytes::from(body))).unwrap();
    let resp = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        h2c_client().request(req),
    )
    .await
    .expect("an answer within 60 s")
    .expect("the call is answered at the HTTP level");
    let (parts, body) = resp.into_parts();
    let collected = body.collect().await.expect("a whole answer");
    let trailers = collected.trailers().cloned().unwrap_or_default();
    GrpcReply {
        http: parts.status,
        head: parts.headers,
        body: collected.to_bytes(),
        trailers,
    }
}

/// A well-formed call of `method` with `message`, as A2A 1.0.
async fn grpc(
    server: &Server,
    method: &str,
    headers: &[(&str, &str)],
    message: &impl prost::Message,
) -> GrpcReply {
    let mut all = vec![("a2a-version", "1.0")];
    all.extend_from_slice(headers);
    grpc_raw(
        server,
        method,
        "application/grpc",
        &all,
        framed(&message.encode_to_vec()),
    )
    .await
}

fn send_request(tenant: &str, text: &str) -> v1::SendMessageRequest {
    v1::SendMessageRequest {
        tenant: tenant.into(),
        message: Some(v1::Message {
            message_id: format!("m-{text}"),
            role: v1::Role::User as i32,
            parts: vec![v1::Part {
                content: Some(v1::part::Content::Text(text.into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

const OK: i32 = 0;
const INVALID_ARGUMENT: i32 = 3;
const NOT_FOUND: i32 = 5;
const PERMISSION_DENIED: i32 = 7;
const RESOURCE_EXHAUSTED: i32 = 8;
const UNIMPLEMENTED: i32 = 12;
const INTERNAL: i32 = 13;
const UNAUTHENTICATED: i32 = 16;

#[tokio::test(flavor = "multi_thread")]
async fn bad_grpc_calls_get_their_status_and_the_host_keeps_serving() {
    let dir = agents_dir(&["scribe"]);
    let kdl = "limits { request-body \"4KiB\" }\na2a { default \"scribe\" }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let v1 = [("a2a-version", "1.0")];
    let hello = framed(&send_request("scribe", "hello").encode_to_vec());

    // Not typed gRPC: told so in HTTP, as the gRPC protocol asks.
    let reply = grpc_raw(
        &server,
        "SendMessage",
        "application/json",
        &v1,
        hello.clone(),
    )
    .await;
    assert_eq!(reply.http, http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // No such method.
    let reply = grpc_raw(
        &server,
        "Frobnicate",
        "application/grpc",
        &v1,
        hello.clone(),
    )
    .await;
    assert_eq!(reply.code(), UNIMPLEMENTED, "{}", reply.message());
    assert!(
        reply.message().contains("Frobnicate"),
        "{}",
        reply.message()
    );
    // Framing: cut short, two messages in a unary call, compressed.
    for body in [
        vec![0, 0, 0],
        [hello.clone(), hello.clone()].concat(),
        [vec![1], hello[1..].to_vec()].concat(),
    ] {
        let reply = grpc_raw(&server, "SendMessage", "application/grpc", &v1, body).await;
        assert_eq!(reply.code(), INTERNAL, "{}", reply.message());
        assert!(reply.message().contains("malformed"), "{}", reply.message());
    }
    let gzip = [("a2a-version", "1.0"), ("grpc-encoding", "gzip")];
    let reply = grpc_raw(
        &server,
        "SendMessage",
        "application/grpc",
        &gzip,
        hello.clone(),
    )
    .await;
    assert_eq!(reply.code(), UNIMPLEMENTED, "{}", reply.message());
    // Bytes that are no message of the method.
    let reply = grpc_raw(
        &server,
        "SendMessage",
        "application/grpc",
        &v1,
        framed(&[0xff; 16]),
    )
    .await;
    assert_eq!(reply.code(), INVALID_ARGUMENT, "{}", reply.message());
    // Past the request-body limit: refused before it is all read.
    let big = send_request("scribe", &"x".repeat(64 * 1024));
    let reply = grpc(&server, "SendMessage", &[], &big).await;
    assert_eq!(reply.code(), RESOURCE_EXHAUSTED, "{}", reply.message());
    // No version: 0.3, not spoken; the A2A error keeps its ErrorInfo.
    let reply = grpc_raw(
        &server,
        "SendMessage",
        "application/grpc",
        &[],
        hello.clone(),
    )
    .await;
    assert_eq!(reply.code(), UNIMPLEMENTED, "{}", reply.message());
    assert!(reply.head.contains_key("grpc-status-details-bin"));
    // A tenant that is no agent here; a task that does not exist; no id.
    let reply = grpc(&server, "SendMessage", &[], &send_request("nobody", "hi")).await;
    assert_eq!(reply.code(), NOT_FOUND, "{}", reply.message());
    let missing = v1::GetTaskRequest {
        id: "nope".into(),
        ..Default::default()
    };
    let reply = grpc(&server, "GetTask", &[], &missing).await;
    assert_eq!(reply.code(), NOT_FOUND, "{}", reply.message());
    let reply = grpc(&server, "GetTask", &[], &v1::GetTaskRequest::default()).await;
    assert_eq!(reply.code(), INVALID_ARGUMENT, "{}", reply.message());

    // Still serving: a send completes, to the default agent when no
    // tenant is named, and the task is there to get.
    let sent: v1::SendMessageResponse =
        grpc(&server, "SendMessage", &[], &send_request("", "count 3"))
            .await
            .decode();
    let Some(v1::send_message_response::Payload::Task(task)) = sent.payload else {
        panic!("a task: {sent:?}");
    };
    assert_eq!(
        task.status.as_ref().map(|s| s.state),
        Some(v1::TaskState::Completed as i32)
    );
    let get = v1::GetTaskRequest {
        tenant: "scribe".into(),
        id: task.id.clone(),
        history_length: Some(1),
    };
    let got: v1::Task = grpc(&server, "GetTask", &[], &get).await.decode();
    assert_eq!(got.id, task.id);
    assert_eq!(got.history.len(), 1, "historyLength reaches the task store");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn grpc_calls_pass_the_filter_chain_and_reach_only_their_callers_tasks() {
    let dir = agents_dir(&["scribe", "auth"]);
    let kdl = format!(
        "filters \"auth\"\n\
         filter \"auth\" {{ config {{ api-keys \"alice:{} bob:{}\" }} }}\n",
        sha256_hex(b"k-alice"),
        sha256_hex(b"k-bob"),
    );
    let server = Server::start(config(dir.path(), &kdl)).await;
    // No credentials: the auth filter answers, mapped to its gRPC code.
    let reply = grpc(&server, "SendMessage", &[], &send_request("scribe", "hi")).await;
    assert_eq!(reply.code(), UNAUTHENTICATED, "{}", reply.message());
    let reply = grpc(
        &server,
        "SendMessage",
        &[("x-api-key", "k-mallory")],
        &send_request("scribe", "hi"),
    )
    .await;
    assert!(
        [UNAUTHENTICATED, PERMISSION_DENIED].contains(&reply.code()),
        "{} {}",
        reply.code(),
        reply.message()
    );
    // Alice's task is hers: Bob gets what a missing task gets.
    let sent: v1::SendMessageResponse = grpc(
        &server,
        "SendMessage",
        &[("x-api-key", "k-alice")],
        &send_request("scribe", "   "),
    )
    .await
    .decode();
    let Some(v1::send_message_response::Payload::Task(task)) = sent.payload else {
        panic!("a task: {sent:?}");
    };
    let get = v1::GetTaskRequest {
        tenant: "scribe".into(),
        id: task.id.clone(),
        history_length: None,
    };
    let hers: v1::Task = grpc(&server, "GetTask", &[("x-api-key", "k-alice")], &get)
        .await
        .decode();
    assert_eq!(hers.id, task.id);
    let reply = grpc(&server, "GetTask", &[("x-api-key", "k-bob")], &get).await;
    assert_eq!(reply.code(), NOT_FOUND, "{}", reply.message());
    let listed: v1::ListTasksResponse = grpc(
        &server,
        "ListTasks",
        &[("x-api-key", "k-bob")],
        &v1::ListTasksRequest {
            tenant: "scribe".into(),
            ..Default::default()
        },
    )
    .await
    .decode();
    assert!(listed.tasks.is_empty(), "{listed:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_waf_reads_grpc_messages_as_it_reads_json_ones() {
    let dir = agents_dir(&["scribe"]);
    std::fs::copy(guest("waf"), dir.path().join("waf.wasm")).unwrap();
    let server = Server::start(config(dir.path(), "filters \"waf\"\n")).await;
    // The protobuf bytes reach the filters as the message's JSON, so the
    // rules that read A2A's JSON bindings read this call too.
    let attack = send_request("scribe", "1' OR '1'='1");
    let reply = grpc(&server, "SendMessage", &[], &attack).await;
    assert_eq!(reply.code(), PERMISSION_DENIED, "{}", reply.message());
    let clean = send_request("scribe", "a perfectly ordinary sentence");
    let sent: v1::SendMessageResponse = grpc(&server, "SendMessage", &[], &clean).await.decode();
    let Some(v1::send_message_response::Payload::Task(task)) = sent.payload else {
        panic!("a task: {sent:?}");
    };
    assert_eq!(
        task.status.map(|s| s.state),
        Some(v1::TaskState::Completed as i32)
    );
    server.stop().await;
}
