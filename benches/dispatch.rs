//! Call-overhead benchmarks: Wharf's dispatch against a raw wasmtime typed
//! call of the same export and against native Rust, record shapes, and
//! instantiation with each allocator and concurrency setting.
//! Run with `cargo bench --bench dispatch`; results go in BENCHMARKS.md.

mod common;

/// The allocator the `wharf` binary serves with (`host/src/cli/main.rs`),
/// so this bench measures what the binary does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue, Method};
use wasmtime::component::{ComponentType, Lift, Lower};
use wharf::config::Config;
use wharf::registry::{AgentEntry, load_dir};
use wharf::request::{Request, Response};
use wharf::runtime::{EngineSettings, Health, Runtime, encode_headers};

struct Loaded {
    runtime: Runtime,
    echo: Arc<AgentEntry>,
}

fn load(guests: &Path, pooling: bool, concurrency: bool) -> Loaded {
    load_with(
        guests,
        EngineSettings {
            pooling,
            concurrency,
            ..EngineSettings::default()
        },
    )
}

fn load_with(guests: &Path, settings: EngineSettings) -> Loaded {
    let pooling = settings.pooling;
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(guests.join("echo.wasm"), dir.path().join("echo.wasm")).unwrap();
    let config = Config {
        agents_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    let settings = EngineSettings {
        max_instances: 100,
        ..settings
    };
    let runtime = Runtime::new(&settings).unwrap();
    let expected = if pooling { "pooling" } else { "on-demand" };
    assert_eq!(runtime.allocation().as_str(), expected, "allocator in use");
    let snapshot = load_dir(&runtime, &config, dir.path()).unwrap();
    let echo = snapshot.agent("echo").expect("echo loads").clone();
    Loaded { runtime, echo }
}

fn request(body_len: usize) -> Request {
    let mut req = Request::new(Method::POST, "/bench");
    req.headers.insert(
        "content-type",
        HeaderValue::from_static("application/octet-stream"),
    );
    req.headers
        .insert("x-session", HeaderValue::from_static("3f2a9c"));
    req.body = Bytes::from(vec![0x5a; body_len]);
    req
}

/// The native baseline: what an echo costs without a sandbox — one copy of
/// the body in, headers cloned.
#[inline(never)]
fn native_echo(req: &Request) -> Response {
    Response::new(
        http::StatusCode::OK,
        req.headers.clone(),
        Bytes::copy_from_slice(&req.body),
    )
}

fn noop(c: &mut Criterion, off: &Loaded, on: &Loaded, guests: &Path) {
    let mut g = c.benchmark_group("noop");
    // Raw floor: the same `health` export through a bare TypedFunc.
    {
        let (mut store, instance) = common::raw_instance(&off.runtime, &guests.join("echo.wasm"));
        let health = instance
            .get_typed_func::<(), (Health,)>(&mut store, "health")
            .unwrap();
        g.bench_function("raw_typed_call", |b| {
            b.iter(|| black_box(health.call(&mut store, ()).unwrap()))
        });
    }
    for (label, loaded) in [
        ("wharf_dispatch", off),
        ("wharf_dispatch_concurrency_on", on),
    ] {
        let mut live = loaded.echo.image.instantiate().unwrap();
        g.bench_function(label, |b| b.iter(|| black_box(live.health().unwrap())));
    }
    // The smallest possible component call: `func()` with no values.
    {
        let (mut store, instance) = common::raw_instance(&off.runtime, &guests.join("shapes.wasm"));
        let f = instance
            .get_typed_func::<(), ()>(&mut store, "noop")
            .unwrap();
        g.bench_function("raw_empty_func", |b| {
            b.iter(|| f.call(&mut store, ()).unwrap())
        });
    }
    g.finish();
}

fn echo(c: &mut Criterion, off: &Loaded) {
    let mut g = c.benchmark_group("echo");
    for (label, size) in [
        ("64B", 64),
        ("1KiB", 1 << 10),
        ("64KiB", 64 << 10),
        ("1MiB", 1 << 20),
    ] {
        let req = request(size);
        g.throughput(Throughput::Bytes(size as u64));
        let mut live = off.echo.image.instantiate().unwrap();
        assert_eq!(live.handle(&req).unwrap().body.len(), size);
        g.bench_with_input(BenchmarkId::new("wharf", label), &req, |b, req| {
            b.iter(|| black_box(live.handle(req).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("native", label), &req, |b, req| {
            b.iter(|| black_box(native_echo(black_box(req))))
        });
    }
    g.finish();
}

#[derive(ComponentType, Lower)]
#[component(record)]
struct NaiveRequest<'a> {
    method: &'a str,
    path: &'a str,
    query: &'a str,
    headers: &'a [(&'a str, &'a str)],
    body: &'a [u8],
}

#[derive(ComponentType, Lift)]
#[component(record)]
struct NaiveResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

#[derive(ComponentType, Lower)]
#[component(record)]
struct PackedRequest<'a> {
    head: &'a [u8],
    headers: &'a [u8],
    body: &'a [u8],
}

#[derive(ComponentType, Lower)]
#[component(record)]
struct CompactRequest<'a> {
    head: &'a [u8],
    body: &'a [u8],
}

#[derive(ComponentType, Lift)]
#[component(record)]
struct PackedResponse {
    status: u16,
    headers: Vec<u8>,
    body: Vec<u8>,
}

const SHAPE_HEADERS: &[(&str, &str)] = &[
    ("host", "agents.example"),
    ("content-type", "application/json"),
    ("accept", "*/*"),
    ("x-session", "3f2a9c"),
];

fn shape(c: &mut Criterion, off: &Loaded, guests: &Path) {
    let mut g = c.benchmark_group("shape");
    let (mut store, instance) = common::raw_instance(&off.runtime, &guests.join("shapes.wasm"));
    let body = vec![0x5a_u8; 1 << 10];

    let naive = instance
        .get_typed_func::<(NaiveRequest<'_>,), (NaiveResponse,)>(&mut store, "echo-naive")
        .unwrap();
    let check = NaiveRequest {
        method: "POST",
        path: "/bench",
        query: "",
        headers: SHAPE_HEADERS,
        body: &body,
    };
    let (echoed,) = naive.call(&mut store, (check,)).unwrap();
    assert_eq!(
        (echoed.status, echoed.headers.len(), echoed.body.len()),
        (200, 4, 1 << 10)
    );
    g.bench_function("naive_record_1KiB_4_headers", |b| {
        b.iter(|| {
            let req = NaiveRequest {
                method: "POST",
                path: "/bench",
                query: "",
                headers: SHAPE_HEADERS,
                body: &body,
            };
            black_box(naive.call(&mut store, (req,)).unwrap())
        })
    });

    let packed = instance
        .get_typed_func::<(PackedRequest<'_>,), (PackedResponse,)>(&mut store, "echo-packed")
        .unwrap();
    let mut map = HeaderMap::new();
    for (k, v) in SHAPE_HEADERS {
        map.insert(*k, HeaderValue::from_static(v));
    }
    let mut req = request(0);
    req.headers = map;
    let check_headers = encode_headers(&req.headers);
    let check = PackedRequest {
        head: b"",
        headers: &check_headers,
        body: &body,
    };
    let (echoed,) = packed.call(&mut store, (check,)).unwrap();
    assert_eq!(
        (echoed.status, echoed.headers, echoed.body.len()),
        (200, check_headers, 1 << 10)
    );
    g.bench_function("packed_record_1KiB_4_headers", |b| {
        b.iter(|| {
            // Encoding is part of the shape's cost: done per call, as Wharf does.
            let head = rmp_serde::to_vec(&[("method", "POST"), ("path", "/bench")]).unwrap();
            let headers = encode_headers(&req.headers);
            let r = PackedRequest {
                head: &head,
                headers: &headers,
                body: &body,
            };
            black_box(packed.call(&mut store, (r,)).unwrap())
        })
    });

    let compact = instance
        .get_typed_func::<(CompactRequest<'_>,), (PackedResponse,)>(&mut store, "echo-compact")
        .unwrap();
    g.bench_function("compact_record_1KiB_4_headers", |b| {
        b.iter(|| {
            // Headers encoded inside the head blob: one list fewer to lower.
            let mut head = encode_headers(&req.headers);
            head.extend_from_slice(
                &rmp_serde::to_vec(&[("method", "POST"), ("path", "/bench")]).unwrap(),
            );
            let r = CompactRequest {
                head: &head,
                body: &body,
            };
            black_box(compact.call(&mut store, (r,)).unwrap())
        })
    });

    let raw = instance
        .get_typed_func::<(&[u8],), (Vec<u8>,)>(&mut store, "echo-body")
        .unwrap();
    g.bench_function("body_only_1KiB", |b| {
        b.iter(|| black_box(raw.call(&mut store, (&body[..],)).unwrap()))
    });
    g.finish();
}

fn instantiate(c: &mut Criterion, all: &[(&str, &Loaded)]) {
    let mut g = c.benchmark_group("instantiate");
    for (label, loaded) in all {
        g.bench_function(*label, |b| {
            b.iter(|| black_box(loaded.echo.image.instantiate().unwrap()))
        });
    }
    let req = request(1 << 10);
    for (label, loaded) in all.iter().filter(|(l, _)| l.ends_with("concurrency_off")) {
        let label = label.replace("echo", "fresh_request_1KiB");
        g.bench_function(label, |b| {
            b.iter(|| black_box(loaded.echo.image.handle_fresh(&req).unwrap()))
        });
    }
    g.finish();
}

/// The pooling allocator's slot-reset knobs: a whole fresh 1 KiB request
/// (instantiate, `handle`, drop and the slot's reset), so the pages the
/// call dirtied are part of it.
fn slot_reset(c: &mut Criterion, guests: &Path) {
    let mut g = c.benchmark_group("slot_reset");
    let variants = [
        ("madvise_only", 0, false),
        ("keep_resident_1MiB_memset", 1 << 20, false),
        ("keep_resident_1MiB_pagemap_scan", 1 << 20, true),
        ("keep_resident_64KiB_pagemap_scan", 64 << 10, true),
        // What each of the default 2,000 memory slots keeps within the
        // default `idle-memory` of 512 MiB (this bench's pool is smaller).
        ("keep_resident_228KiB_pagemap_scan", 57 << 12, true),
    ];
    let req = request(1 << 10);
    for (label, keep_resident, pagemap_scan) in variants {
        let loaded = load_with(
            guests,
            EngineSettings {
                keep_resident,
                // No idle budget in the way: each variant keeps what it names.
                idle_resident: usize::MAX / 2,
                pagemap_scan,
                ..EngineSettings::default()
            },
        );
        g.bench_function(label, |b| {
            b.iter(|| black_box(loaded.echo.image.handle_fresh(&req).unwrap()))
        });
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    let guests = common::guests_dir();
    let pooling_off = load(&guests, true, false);
    let pooling_on = load(&guests, true, true);
    let ondemand_off = load(&guests, false, false);
    let ondemand_on = load(&guests, false, true);
    slot_reset(c, &guests);
    noop(c, &pooling_off, &pooling_on, &guests);
    echo(c, &pooling_off);
    shape(c, &pooling_off, &guests);
    instantiate(
        c,
        &[
            ("echo_pooling_concurrency_off", &pooling_off),
            ("echo_pooling_concurrency_on", &pooling_on),
            ("echo_ondemand_concurrency_off", &ondemand_off),
            ("echo_ondemand_concurrency_on", &ondemand_on),
        ],
    );
}

criterion_group! {
    name = dispatch;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = benches
}
criterion_main!(dispatch);
