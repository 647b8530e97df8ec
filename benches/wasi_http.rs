//! A wasi:http component beside a Wharf agent doing the same work (a 1 KiB
//! echo: `guests/http-echo`, written with the Rust `wasi` crate, and
//! `guests/echo`), and a WASIp3 one (`guests/http-p3`, the `wasip3` crate,
//! on the engine with concurrency support), in process, through the same
//! runtime: a call on a live instance, and a fresh instance made and called
//! once. The difference is what wasi:http's resource calls cost.
//! Run with `cargo bench --bench wasi_http`; results go in BENCHMARKS.md.

mod common;

/// The allocator the `wharf` binary serves with (`host/src/cli/main.rs`),
/// so this bench measures what the binary does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http::Method;
use wharf::config::Config;
use wharf::registry::load_dir;
use wharf::request::Request;
use wharf::runtime::{EngineSettings, Runtime};

fn calls(c: &mut Criterion) {
    let guests = common::guests_dir();
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("http_echo.wasm", "http"),
        ("echo.wasm", "agent"),
        ("http_p3.wasm", "http_p3"),
    ];
    for (file, name) in files {
        std::fs::copy(guests.join(file), dir.path().join(format!("{name}.wasm"))).unwrap();
    }
    let config = Config::parse("bench.kdl", "", dir.path()).unwrap();
    let runtime = Runtime::new(&EngineSettings::default()).unwrap();
    let snapshot = load_dir(&runtime, &config, dir.path()).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut req = Request::new(Method::POST, "/");
    req.body = Bytes::from(vec![b'x'; 1024]);

    let mut g = c.benchmark_group("wasi_http_1KiB");
    for name in ["agent", "http", "http_p3"] {
        let image = &snapshot.agent(name).unwrap().image;
        let mut live = rt.block_on(image.instantiate_async()).unwrap();
        g.bench_function(format!("{name}/warm_call"), |b| {
            b.iter(|| rt.block_on(live.call_async(&req)).unwrap())
        });
        g.bench_function(format!("{name}/fresh_instance_and_call"), |b| {
            b.iter(|| {
                rt.block_on(async {
                    let mut live = image.instantiate_async().await.unwrap();
                    live.call_async(&req).await.unwrap()
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, calls);
criterion_main!(benches);
