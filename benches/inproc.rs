//! What the in-process benchmarks share: a pipeline over copies of built
//! guests, a runtime shaped like the server's, and timing requests through
//! the pipeline as a connection's requests run.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wharf::config::Config;
use wharf::filter::AuditLog;
use wharf::metrics::Metrics;
use wharf::pipeline::Pipeline;
use wharf::registry::load_dir;
use wharf::request::{Body, Request};
use wharf::runtime::{EngineSettings, Runtime};

use super::common;

/// A pipeline over copies of `guests` (name, built file) with `kdl`.
pub fn pipeline(guests: &[(&str, &str)], kdl: &str) -> (Arc<Pipeline>, tempfile::TempDir) {
    pipeline_with(guests, kdl, &EngineSettings::default())
}

/// [`pipeline`], on an engine with `settings`.
#[allow(dead_code)]
pub fn pipeline_with(
    guests: &[(&str, &str)],
    kdl: &str,
    settings: &EngineSettings,
) -> (Arc<Pipeline>, tempfile::TempDir) {
    let built = common::guests_dir();
    let dir = tempfile::tempdir().unwrap();
    for (name, file) in guests {
        std::fs::copy(
            built.join(format!("{file}.wasm")),
            dir.path().join(format!("{name}.wasm")),
        )
        .unwrap();
    }
    let mut config = Config::parse("bench.kdl", kdl, dir.path()).unwrap();
    config.agents_dir = dir.path().to_path_buf();
    let runtime = Runtime::new(settings).unwrap();
    let started = Instant::now();
    let snapshot = load_dir(&runtime, &config, dir.path()).unwrap();
    eprintln!("loaded in {:?}", started.elapsed());
    assert!(snapshot.refused.is_empty(), "{:?}", snapshot.refused);
    let pipeline = Pipeline::new(
        snapshot,
        Metrics::new(),
        AuditLog::off(),
        wharf::streams::Streams::new(512, 32),
    );
    (pipeline, dir)
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Times `iters` requests to `agent`, in a task on a runtime worker as a
/// connection's requests run in the server; every answer must be `status`.
pub fn run(
    rt: &tokio::runtime::Runtime,
    pipeline: &Arc<Pipeline>,
    agent: &'static str,
    req: &Request,
    status: u16,
    iters: u64,
) -> Duration {
    let (pipeline, req) = (pipeline.clone(), req.clone());
    let task = rt.spawn(async move {
        let started = Instant::now();
        for _ in 0..iters {
            let (req, body) = prepared(&req);
            let resp = pipeline.handle(agent, req, body).await.unwrap();
            assert_eq!(resp.status.as_u16(), status);
            black_box(resp);
        }
        started.elapsed()
    });
    rt.block_on(task).unwrap()
}

/// A copy of `req` with a new id, and its body, as a connection hands
/// them to the pipeline.
fn prepared(req: &Request) -> (Request, Body) {
    let mut req = req.clone();
    req.id = wharf::request::next_request_id();
    let body = Body::Ready(std::mem::take(&mut req.body));
    (req, body)
}

/// [`run`], with the data caches swept before each request: one byte in
/// every `stride` bytes of a buffer of `sweep` bytes is written (a
/// stride of 64 writes every cache line, one of 4096 every page: the
/// TLB swept, little of the caches), outside the timed part, so each
/// request finds the host's and the guests' data as a request over a
/// socket finds it after the kernel and the client ran in between. Only
/// the requests are timed.
#[allow(dead_code)]
pub fn run_swept(
    rt: &tokio::runtime::Runtime,
    pipeline: &Arc<Pipeline>,
    agent: &'static str,
    req: &Request,
    (sweep, stride): (usize, usize),
    iters: u64,
) -> Duration {
    let (pipeline, req) = (pipeline.clone(), req.clone());
    let task = rt.spawn(async move {
        let mut buffer = vec![0u8; sweep];
        let mut timed = Duration::ZERO;
        for i in 0..iters {
            for line in buffer.chunks_mut(stride) {
                line[0] = line[0].wrapping_add(i as u8 | 1);
            }
            black_box(&mut buffer);
            let (req, body) = prepared(&req);
            let started = Instant::now();
            let resp = pipeline.handle(agent, req, body).await.unwrap();
            timed += started.elapsed();
            assert_eq!(resp.status.as_u16(), 200);
            black_box(resp);
        }
        timed
    });
    rt.block_on(task).unwrap()
}
