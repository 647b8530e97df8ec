//! Tracing's cost on the request path, in process: a warm echo behind the
//! warm `allow` filter (three spans a request: the request, the filter,
//! the agent), untraced (no `telemetry` block) and traced with every trace
//! kept (`sampling 1`) or none (`sampling 0`). Kept spans leave over
//! OTLP/gRPC, in batches from a task of the same runtime, to a receiver in
//! this process that counts them (printed at the end, so a run that
//! exported nothing shows it).
//!
//! Run with `cargo bench --bench telemetry`; results go in BENCHMARKS.md.

mod common;
mod inproc;

/// The allocator the `wharf` binary serves with (`host/src/cli/main.rs`),
/// so this bench measures what the binary does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http::Method;
use inproc::{pipeline, run, runtime};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use wharf::config::Telemetry;
use wharf::request::Request;
use wharf::telemetry::Tracing;

/// An OTLP/gRPC receiver that counts the spans it is sent.
#[derive(Clone, Default)]
struct Counting(Arc<AtomicUsize>);

#[tonic::async_trait]
impl TraceService for Counting {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let spans: usize = request
            .into_inner()
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum();
        self.0.fetch_add(spans, Ordering::Relaxed);
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

fn tracing(c: &mut Criterion) {
    let kdl = r#"
        instances { mode "warm"; max 2 }
        filter "allow" { instances { mode "warm"; max 2 } }
        agent "warm" { filters "allow" }
    "#;
    let guests = [("warm", "echo"), ("allow", "allow")];
    let rt = runtime();
    let received = Counting::default();
    let addr = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        let server = tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(received.clone()))
            .serve_with_incoming(incoming);
        tokio::spawn(server);
        addr
    });
    let mut req = Request::new(Method::POST, "/");
    req.body = Bytes::from(vec![0x5a; 1 << 10]);
    let mut g = c.benchmark_group("tracing_1KiB");
    for (label, sampling) in [
        ("off", None),
        ("sampled", Some(1.0)),
        ("unsampled", Some(0.0)),
    ] {
        let (pipeline, _dir) = pipeline(&guests, kdl);
        let tracing = sampling.map(|sampling| {
            let _in = rt.enter();
            let settings = Telemetry {
                endpoint: format!("http://{addr}"),
                sampling,
                service: "bench".into(),
            };
            let tracing = Tracing::start(&settings).unwrap();
            pipeline.trace_with(tracing.tracer().clone());
            tracing
        });
        g.bench_function(label, |b| {
            b.iter_custom(|n| run(&rt, &pipeline, "warm", &req, 200, n))
        });
        if let Some(tracing) = tracing {
            rt.block_on(tracing.shutdown());
        }
    }
    g.finish();
    eprintln!(
        "spans the receiver was sent: {}",
        received.0.load(Ordering::Relaxed)
    );
}

criterion_group! {
    name = telemetry;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = tracing
}
criterion_main!(telemetry);
