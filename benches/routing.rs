//! Routing benchmarks: health reads, affinity lookups (alone and contended),
//! and the whole in-process request path in fresh and warm modes.
//! Run with `cargo bench --bench routing`; results go in BENCHMARKS.md.

mod common;

/// The allocator the `wharf` binary serves with (`host/src/cli/main.rs`),
/// so this bench measures what the binary does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use http::Method;
use wharf::config::Config;
use wharf::metrics::Metrics;
use wharf::registry::load_dir;
use wharf::request::Request;
use wharf::router::{AffinityTable, HealthCell, Routes};
use wharf::runtime::{EngineSettings, Runtime};

fn health(c: &mut Criterion) {
    let mut g = c.benchmark_group("health_read");
    let cell = HealthCell::new(3);
    g.bench_function("atomic", |b| {
        b.iter(|| black_box(black_box(&cell).is_healthy()))
    });
    let locked = RwLock::new(true);
    g.bench_function("rwlock", |b| {
        b.iter(|| black_box(*black_box(&locked).read().unwrap()))
    });
    g.finish();
}

fn affinity(c: &mut Criterion) {
    let mut g = c.benchmark_group("affinity_lookup");
    for size in [10usize, 100, 1_000, 10_000] {
        let table = Arc::new(AffinityTable::new(Duration::from_secs(3600), size));
        for i in 0..size {
            table.pin(&format!("session-{i:08}"), i as u64);
        }
        let hit = format!("session-{:08}", size / 2);
        let miss = "session-absent".to_string();
        g.bench_with_input(BenchmarkId::new("hit", size), &hit, |b, key| {
            b.iter(|| black_box(table.lookup(black_box(key))))
        });
        g.bench_with_input(BenchmarkId::new("miss", size), &miss, |b, key| {
            b.iter(|| black_box(table.lookup(black_box(key))))
        });
        // A second thread looks up other keys in the same table meanwhile.
        g.bench_with_input(BenchmarkId::new("hit_contended", size), &hit, |b, key| {
            let stop = Arc::new(AtomicBool::new(false));
            let other = {
                let (table, stop) = (table.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut i = 0usize;
                    while !stop.load(Ordering::Relaxed) {
                        black_box(table.lookup(&format!("session-{:08}", i % size)));
                        i += 1;
                    }
                })
            };
            b.iter(|| black_box(table.lookup(black_box(key))));
            stop.store(true, Ordering::Relaxed);
            other.join().unwrap();
        });
    }
    g.finish();
}

fn path(c: &mut Criterion) {
    let guests = common::guests_dir();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(guests.join("echo.wasm"), dir.path().join("echo.wasm")).unwrap();
    std::fs::copy(guests.join("echo.wasm"), dir.path().join("warm.wasm")).unwrap();
    let kdl = r#"
        agent "warm" {
            instances { mode "warm"; max 2 }
            affinity { header "x-session-id" }
        }
    "#;
    let mut config = Config::parse("bench.kdl", kdl, dir.path()).unwrap();
    config.agents_dir = dir.path().to_path_buf();
    let runtime = Runtime::new(&EngineSettings::default()).unwrap();
    let snapshot = load_dir(&runtime, &config, dir.path()).unwrap();
    let routes = Routes::build(&snapshot, &Metrics::new());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let routes = Arc::new(routes);
    let mut g = c.benchmark_group("request_path_1KiB");
    for (label, agent) in [("fresh", "echo"), ("warm_affinity", "warm")] {
        let mut req = Request::new(Method::POST, "/");
        req.body = Bytes::from(vec![0x5a; 1 << 10]);
        req.affinity = Some("session-1".into());
        g.bench_function(label, |b| {
            // The loop runs in a task on a runtime worker, as a connection's
            // requests do in the server.
            b.iter_custom(|iters| {
                let (routes, req) = (routes.clone(), req.clone());
                let task = rt.spawn(async move {
                    let route = routes.get(agent).unwrap().clone();
                    let started = Instant::now();
                    for _ in 0..iters {
                        let mut req = req.clone();
                        req.id = wharf::request::next_request_id();
                        black_box(route.dispatch(req).await.unwrap());
                    }
                    started.elapsed()
                });
                rt.block_on(task).unwrap()
            })
        });
    }
    // The same warm echo through the path an agent that imports `streaming`
    // takes (a sink, and waiting for a head or the whole answer), answering
    // whole; then streaming its 1 KiB in 4 chunks, the body read to its end.
    for (label, chunks) in [
        ("warm_affinity_streamable", None),
        ("warm_affinity_streamed_4", Some("4")),
    ] {
        let mut req = Request::new(Method::POST, "/");
        req.body = Bytes::from(vec![0x5a; 1 << 10]);
        req.affinity = Some("session-1".into());
        if let Some(n) = chunks {
            req.headers
                .insert("x-echo-chunks", http::HeaderValue::from_static(n));
        }
        g.bench_function(label, |b| {
            b.iter_custom(|iters| {
                let (routes, req) = (routes.clone(), req.clone());
                let task = rt.spawn(async move {
                    let route = routes.get("warm").unwrap().clone();
                    let started = Instant::now();
                    for _ in 0..iters {
                        let mut req = req.clone();
                        req.id = wharf::request::next_request_id();
                        let resp = wharf::stream::dispatch(&route, req).await.unwrap();
                        if let Some(mut body) = resp.stream {
                            while let Some(chunk) = futures_util::StreamExt::next(&mut body).await {
                                black_box(chunk.unwrap());
                            }
                        }
                        black_box(resp.body);
                    }
                    started.elapsed()
                });
                rt.block_on(task).unwrap()
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = routing;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = health, affinity, path
}
criterion_main!(routing);
