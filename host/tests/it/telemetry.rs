//! OpenTelemetry traces, exported over OTLP/gRPC to a receiver built on
//! the official `opentelemetry-proto` service: one trace per request,
//! continued from the client's `traceparent`, with a span for the request,
//! each filter, each agent, calls between agents, topic deliveries and
//! outbound requests, each linked to its parent; guests see the trace as
//! a `traceparent` header, and so do the servers they call. The spans
//! still waiting when the server stops are sent before it ends.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http::Method;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;

use crate::common::*;

/// One exported span, with the service it came from.
#[derive(Debug, Clone)]
struct Got {
    service: String,
    span: Span,
}

impl Got {
    fn attr(&self, key: &str) -> Option<String> {
        text(&self.span.attributes, key)
    }
}

fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    match &value.value {
        Some(any_value::Value::StringValue(s)) => Some(s.clone()),
        Some(any_value::Value::IntValue(i)) => Some(i.to_string()),
        _ => None,
    }
}

/// An OTLP/gRPC receiver keeping every span it is sent.
#[derive(Clone, Default)]
struct Receiver(Arc<Mutex<Vec<Got>>>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut kept = self.0.lock().unwrap();
        for resource in request.into_inner().resource_spans {
            let attributes = resource.resource.map(|r| r.attributes).unwrap_or_default();
            let service = text(&attributes, "service.name").unwrap_or_default();
            for scope in resource.scope_spans {
                for span in scope.spans {
                    let service = service.clone();
                    kept.push(Got { service, span });
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

impl Receiver {
    async fn start() -> (Receiver, SocketAddr) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let receiver = Receiver::default();
        let service = TraceServiceServer::new(receiver.clone());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        (receiver, addr)
    }

    fn spans(&self) -> Vec<Got> {
        self.0.lock().unwrap().clone()
    }
}

/// The one span called `name` whose `key` attribute is `value`.
fn one<'a>(spans: &'a [Got], name: &str, key: &str, value: &str) -> &'a Got {
    let found: Vec<&Got> = spans
        .iter()
        .filter(|g| g.span.name == name && g.attr(key).as_deref() == Some(value))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one `{name}` span with {key}={value}; spans: {:#?}",
        names(spans)
    );
    found[0]
}

fn names(spans: &[Got]) -> Vec<String> {
    spans
        .iter()
        .map(|g| {
            let who = [
                "wharf.agent",
                "wharf.filter",
                "wharf.callee",
                "wharf.subscriber",
            ]
            .iter()
            .find_map(|k| g.attr(k))
            .unwrap_or_default();
            format!(
                "{} {who} id={} parent={}",
                g.span.name,
                hex::encode(&g.span.span_id),
                hex::encode(&g.span.parent_span_id)
            )
        })
        .collect()
}

/// Asserts that `child`'s parent is `parent`.
fn under(child: &Got, parent: &Got) {
    assert_eq!(
        hex::encode(&child.span.parent_span_id),
        hex::encode(&parent.span.span_id),
        "`{}` ({:?}) is under `{}` ({:?})",
        child.span.name,
        child.span.attributes.first().map(|a| &a.value),
        parent.span.name,
        parent.span.attributes.first().map(|a| &a.value),
    );
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// An agents directory and configuration: `front` (a relay, behind the
/// `probe` filter) may call `mirror`, publish to `news.*` (which `ear`,
/// another relay, hears); `fetcher` fetches over wasi:http; `scribe`
/// serves A2A.
fn traced_site(
    receiver: SocketAddr,
    upstream: SocketAddr,
    sampling: &str,
) -> (wharf::config::Config, tempfile::TempDir) {
    let dir = agents_dir(&["mirror", "probe", "scribe"]);
    copy_guest(dir.path(), "relay", "front");
    copy_guest(dir.path(), "relay", "ear");
    copy_guest(dir.path(), "http_faults", "fetcher");
    let kdl = format!(
        r#"
        telemetry {{
            endpoint "http://{receiver}"
            sampling {sampling}
            service "wharf-under-test"
        }}
        agent "front" {{
            filters "probe"
            calls "mirror"
            publishes "news.*"
        }}
        agent "ear" {{ subscribe "news.>"; }}
        agent "fetcher" {{
            outbound {{ allow "127.0.0.1:{}"; }}
        }}
        "#,
        upstream.port()
    );
    (config(dir.path(), &kdl), dir)
}

#[tokio::test(flavor = "multi_thread")]
async fn one_request_through_a_filter_and_two_agents_is_one_trace_under_the_clients_span() {
    let (receiver, at) = Receiver::start().await;
    let upstream = crate::wasi_http::upstream().await;
    let (site, _dir) = traced_site(at, upstream, "1");
    let server = Server::start(site).await;
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");

    let reply = send(
        &client(),
        Method::POST,
        &server.url("/agents/front/call/mirror/hello"),
        &[("traceparent", traceparent.as_str())],
        "hi",
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = reply.json()["headers"]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("mirror saw a traceparent: {}", reply.text()))
        .to_string();
    // The agent sees the trace, under a span of the host's, sampled.
    let parts: Vec<&str> = seen.split('-').collect();
    assert_eq!(
        (parts[0], parts[1], parts[3]),
        ("00", TRACE, "01"),
        "{seen}"
    );
    assert_ne!(parts[2], CLIENT_SPAN);

    // A guest's outbound request carries the trace to the server it calls.
    let fetched = send(
        &client(),
        Method::GET,
        &server.url(&format!(
            "/agents/fetcher/fetch?http://{upstream}/traceparent"
        )),
        &[("traceparent", traceparent.as_str())],
        "",
    )
    .await;
    assert_eq!(fetched.status, 200, "{}", fetched.text());
    let upstream_saw = fetched.text();
    assert!(
        upstream_saw.starts_with(&format!("00-{TRACE}-")),
        "{upstream_saw}"
    );

    // An A2A turn is traced under its request's agent span.
    let sent = crate::a2a::rpc(
        &server,
        "scribe",
        &[
            ("traceparent", traceparent.as_str()),
            ("a2a-version", "1.0"),
            ("content-type", "application/json"),
        ],
        &crate::a2a::call("SendMessage", crate::a2a::send_params("traced words")),
    )
    .await;
    assert_eq!(
        sent.json()["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{}",
        sent.text()
    );
    let task_id = sent.json()["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();

    // A published event's delivery is traced under its publisher.
    let published = post(&server.url("/agents/front/publish/news.today"), "extra").await;
    assert_eq!(published.status, 200, "{}", published.text());
    wait_until("the event reaches `ear`", || async {
        metric(
            &server,
            r#"wharf_topic_events_total{subscriber="ear",outcome="delivered"}"#,
        )
        .await
            >= 1.0
    })
    .await;

    // Stopping sends what is still waiting: nothing is lost.
    server.stop().await;
    let spans = receiver.spans();
    assert!(
        spans.iter().all(|g| g.service == "wharf-under-test"),
        "{:?}",
        names(&spans)
    );

    // The call: front's request (under the client's span) → the filter and
    // front's agent span → the call → mirror's request → mirror's agent.
    let in_trace: Vec<Got> = spans
        .iter()
        .filter(|g| hex::encode(&g.span.trace_id) == TRACE)
        .cloned()
        .collect();
    let front = one(&in_trace, "wharf.request", "wharf.agent", "front");
    assert_eq!(hex::encode(&front.span.parent_span_id), CLIENT_SPAN);
    assert_eq!(
        front.attr("http.response.status_code").as_deref(),
        Some("200")
    );
    // The filter, once for each phase it runs in.
    for phase in ["request_headers", "response_headers"] {
        let filter = one(&in_trace, "wharf.filter", "wharf.phase", phase);
        under(filter, front);
        assert_eq!(filter.attr("wharf.filter").as_deref(), Some("probe"));
        assert_eq!(filter.attr("wharf.decision").as_deref(), Some("allow"));
    }
    let front_agent = one(&in_trace, "wharf.agent", "wharf.agent", "front");
    under(front_agent, front);
    let call = one(&in_trace, "wharf.call", "wharf.callee", "mirror");
    under(call, front_agent);
    let mirror = one(&in_trace, "wharf.request", "wharf.agent", "mirror");
    under(mirror, call);
    let mirror_agent = one(&in_trace, "wharf.agent", "wharf.agent", "mirror");
    under(mirror_agent, mirror);
    assert_eq!(
        hex::encode(&mirror_agent.span.span_id),
        parts[2],
        "the span mirror was told of"
    );

    // The fetch: fetcher's agent span → the outbound request, whose span
    // the upstream was told of.
    let fetcher = one(&in_trace, "wharf.agent", "wharf.agent", "fetcher");
    let outbound = one(&in_trace, "wharf.outbound", "server.address", "127.0.0.1");
    under(outbound, fetcher);
    assert_eq!(
        upstream_saw,
        format!("00-{TRACE}-{}-01", hex::encode(&outbound.span.span_id))
    );

    let scribe = one(&in_trace, "wharf.agent", "wharf.agent", "scribe");
    let turn = one(&in_trace, "wharf.a2a.turn", "a2a.task.id", &task_id);
    under(turn, scribe);
    assert_eq!(
        turn.attr("a2a.task.state").as_deref(),
        Some("TASK_STATE_COMPLETED")
    );

    // The publish, in a trace of its own (no traceparent was sent): the
    // delivery under the publishing agent, ear's request under it.
    let publisher = spans
        .iter()
        .find(|g| {
            g.span.name == "wharf.agent"
                && g.attr("wharf.agent").as_deref() == Some("front")
                && hex::encode(&g.span.trace_id) != TRACE
        })
        .expect("the publishing request's agent span");
    assert!(
        spans.iter().any(|g| g.span.name == "wharf.request"
            && g.span.parent_span_id.is_empty()
            && g.span.trace_id == publisher.span.trace_id),
        "a request without traceparent starts a trace: {:#?}",
        names(&spans)
    );
    let delivery = one(&spans, "wharf.deliver", "wharf.subscriber", "ear");
    under(delivery, publisher);
    assert_eq!(
        delivery.attr("messaging.destination.name").as_deref(),
        Some("news.today")
    );
    let ear = one(&spans, "wharf.request", "wharf.agent", "ear");
    under(ear, delivery);
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_zero_exports_nothing_and_still_tells_guests_the_trace() {
    let (receiver, at) = Receiver::start().await;
    let upstream = crate::wasi_http::upstream().await;
    let (site, _dir) = traced_site(at, upstream, "0");
    let server = Server::start(site).await;
    for _ in 0..5 {
        let reply = post(&server.url("/agents/front/call/mirror/x"), "hi").await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let seen = reply.json()["headers"]["traceparent"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            seen.starts_with("00-") && seen.ends_with("-00"),
            "not sampled: {seen}"
        );
    }
    // A client's sampled trace is followed, whatever the ratio.
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let reply = send(
        &client(),
        Method::POST,
        &server.url("/agents/mirror/"),
        &[("traceparent", traceparent.as_str())],
        "",
    )
    .await;
    assert_eq!(reply.status, 200);
    server.stop().await;
    let spans = receiver.spans();
    assert!(!spans.is_empty(), "the client's sampled trace is exported");
    assert!(
        spans.iter().all(|g| hex::encode(&g.span.trace_id) == TRACE),
        "only the client's sampled trace: {:#?}",
        names(&spans)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_receiver_that_is_down_loses_spans_not_requests() {
    // A port nothing listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let upstream = crate::wasi_http::upstream().await;
    let (site, _dir) = traced_site(closed, upstream, "1");
    let server = Server::start(site).await;
    for _ in 0..20 {
        let reply = post(&server.url("/agents/front/call/mirror/x"), "hi").await;
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    tokio::time::timeout(std::time::Duration::from_secs(30), server.stop())
        .await
        .expect("the server stops although its receiver is down");
}

#[test]
fn the_telemetry_block_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "telemetry { sampling 0.5; }",
            "`telemetry` names no `endpoint`",
        ),
        (
            r#"telemetry { endpoint "https://collector:4317"; }"#,
            "TLS to the receiver is not supported",
        ),
        (
            r#"telemetry { endpoint "grpc://collector"; }"#,
            "is not an http:// URL with a host",
        ),
        (
            r#"telemetry { endpoint "http://c:4317"; sampling 1.5; }"#,
            "must be from 0 (none) to 1",
        ),
        (
            r#"telemetry { endpoint "http://c:4317"; sampling "all"; }"#,
            "expects a number from 0 to 1",
        ),
        (
            r#"telemetry { endpoint "http://c:4317"; service ""; }"#,
            "1 to 255 characters",
        ),
        (
            r#"telemetry { endpoint "http://c:4317"; ratio 1; }"#,
            "ratio",
        ),
    ];
    for (kdl, says) in cases {
        let err = wharf::config::Config::parse("t.kdl", kdl, dir.path())
            .expect_err(kdl)
            .plain();
        assert!(err.contains(says), "{kdl}: {err}");
    }
    let ok = wharf::config::Config::parse(
        "t.kdl",
        r#"telemetry { endpoint "http://127.0.0.1:4317"; }"#,
        dir.path(),
    )
    .unwrap();
    let telemetry = ok.telemetry.unwrap();
    assert_eq!(
        (telemetry.sampling, telemetry.service.as_str()),
        (1.0, "wharf")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_forwarded_to_another_node_continues_its_trace_there() {
    let (receiver, at) = Receiver::start().await;
    let nats = crate::cluster::Nats::start().await;
    let telemetry =
        |node: &str| format!("telemetry {{ endpoint \"http://{at}\"; service \"{node}\"; }}");
    let (n1, _d1) = crate::cluster::node(&nats, "n1", &["hello"], &telemetry("n1")).await;
    let (n2, _d2) = crate::cluster::node(&nats, "n2", &["echo"], &telemetry("n2")).await;
    for n in [&n1, &n2] {
        crate::cluster::hears(n, 2).await;
    }
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let reply = send(
        &client(),
        Method::POST,
        &n1.url("/agents/echo/"),
        &[("traceparent", traceparent.as_str())],
        "across",
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(crate::cluster::answered_by(&reply), "n2");
    // echo answers with the headers it was given.
    let seen = reply.headers["traceparent"].to_str().unwrap().to_string();
    n1.stop().await;
    n2.stop().await;

    let spans = receiver.spans();
    let on = |node: &str, name: &str| -> Got {
        let found: Vec<&Got> = spans
            .iter()
            .filter(|g| g.service == node && g.span.name == name)
            .collect();
        assert_eq!(found.len(), 1, "one {name} on {node}: {:#?}", names(&spans));
        found[0].clone()
    };
    let entry = on("n1", "wharf.request");
    assert_eq!(hex::encode(&entry.span.parent_span_id), CLIENT_SPAN);
    let forward = on("n1", "wharf.forward");
    under(&forward, &entry);
    let there = on("n2", "wharf.request");
    under(&there, &forward);
    let agent = on("n2", "wharf.agent");
    under(&agent, &there);
    assert!(spans.iter().all(|g| hex::encode(&g.span.trace_id) == TRACE));
    assert_eq!(
        seen,
        format!("00-{TRACE}-{}-01", hex::encode(&agent.span.span_id))
    );
}

/// A server started and dropped without serving (a test, a start that
/// failed later) stops its exporter without blocking the runtime it is
/// dropped on: on a single-threaded runtime, blocking would hang it.
#[test]
fn a_server_dropped_without_serving_does_not_block_its_runtime() {
    let dir = agents_dir(&["echo"]);
    let tasks = tempfile::tempdir().unwrap();
    let mut site = config(
        dir.path(),
        r#"telemetry { endpoint "http://127.0.0.1:4317"; }"#,
    );
    site.tasks.path = Some(tasks.path().join("tasks.db"));
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let app = wharf::app::App::start(site, test_engine())
                .await
                .expect("starts");
            drop(app);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        });
        let _ = done.send(());
    });
    finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the runtime went on after the server was dropped");
}
