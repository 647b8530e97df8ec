//! Per-language costs of the same echo agent (Rust, C, Go, Python,
//! JavaScript) beside a native Rust echo: instantiation, a no-op call
//! (`health`) and a 1 KiB echo per call (criterion), plus one-shot compile
//! time, load time from the compile cache, compiled size and memory per
//! instance, printed as a table.
//! Run with `scripts/bench/lang-numbers.sh` (adds build times and .wasm sizes);
//! results go in BENCHMARKS.md.

mod common;

/// The allocator the `wharf` binary serves with (`host/src/cli/main.rs`),
/// so this bench measures what the binary does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue, Method};
use wharf::config::Config;
use wharf::registry::{AgentEntry, load_dir};
use wharf::request::Request;
use wharf::runtime::{EngineSettings, Live, Runtime};

const LANGS: [(&str, &str); 5] = [
    ("rust", "echo"),
    ("c", "echo-c"),
    ("go", "echo-go"),
    ("python", "echo-py"),
    ("js", "echo-js"),
];

/// Memory past which the 1 KiB echo bench replaces its instance.
const RECYCLE_AT: u64 = 48 << 20;

struct Agent {
    lang: &'static str,
    entry: Arc<AgentEntry>,
}

fn request() -> Request {
    let mut req = Request::new(Method::POST, "/");
    req.body = Bytes::from(vec![b'x'; 1024]);
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("text/plain"));
    headers.insert("x-trace", HeaderValue::from_static("abc"));
    req.headers = headers;
    req
}

/// Native baseline: what the echo does, in plain Rust (copy the body and
/// headers out, add two headers).
fn native_echo(req: &Request) -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
    let mut headers: Vec<(String, Vec<u8>)> = req
        .headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
        .collect();
    headers.push(("x-echo-method".into(), req.method.as_str().into()));
    headers.push(("x-echo-path".into(), req.path.as_bytes().to_vec()));
    (req.body.to_vec(), headers)
}

fn load(runtime: &Runtime) -> Vec<Agent> {
    let rust = common::guests_dir();
    let lang = common::lang_dir(&rust);
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let mut cached = Runtime::new(&EngineSettings {
        max_instances: 10,
        ..EngineSettings::default()
    })
    .unwrap();
    cached.use_cache(cache_dir.path()).unwrap();
    println!(
        "\n| language | .wasm size | compile (Cranelift) | load from cache | compiled size | memory per instance | growth per 1 KiB echo |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut agents = Vec::new();
    for (lang_name, file) in LANGS {
        let src = if lang_name == "rust" { &rust } else { &lang };
        let path = src.join(format!("{file}.wasm"));
        let bytes = std::fs::read(&path).unwrap();
        let started = Instant::now();
        let (component, _) = runtime.compile(&bytes).unwrap();
        let compile = started.elapsed();
        let compiled = component.serialize().unwrap().len();
        cached.compile(&bytes).unwrap();
        let started = Instant::now();
        let (_, outcome) = cached.compile(&bytes).unwrap();
        let from_cache = started.elapsed();
        assert_eq!(outcome, wharf::runtime::CacheOutcome::Hit);
        std::fs::copy(&path, dir.path().join(format!("{file}.wasm"))).unwrap();
        let config = Config {
            agents_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        let snapshot = load_dir(runtime, &config, dir.path()).unwrap();
        let entry = snapshot.agent(file).expect("the echo loads").clone();
        let mut live = entry.image.instantiate().unwrap();
        live.handle(&request()).unwrap();
        let memory = live.memory_bytes();
        let (calls, req) = (2000, request());
        for _ in 0..calls {
            live.handle(&req).unwrap();
        }
        let growth = (live.memory_bytes() - memory) as f64 / calls as f64;
        println!(
            "| {lang_name} | {:.1} KiB | {:.1} ms | {:.1} ms | {:.1} KiB | {:.1} MiB | {:.0} B |",
            bytes.len() as f64 / 1024.0,
            compile.as_secs_f64() * 1e3,
            from_cache.as_secs_f64() * 1e3,
            compiled as f64 / 1024.0,
            memory as f64 / (1 << 20) as f64,
            growth,
        );
        std::fs::remove_file(dir.path().join(format!("{file}.wasm"))).unwrap();
        agents.push(Agent {
            lang: lang_name,
            entry,
        });
    }
    println!();
    agents
}

/// The instance, replaced first when it has grown past [`RECYCLE_AT`], as a
/// warm pool with `max-memory` would: Python and JavaScript guests grow with
/// every call.
fn recycled<'a>(live: &'a mut Live, agent: &Agent) -> &'a mut Live {
    if live.memory_bytes() > RECYCLE_AT {
        *live = agent.entry.image.instantiate().unwrap();
    }
    live
}

fn benches(c: &mut Criterion) {
    let runtime = Runtime::new(&EngineSettings {
        max_instances: 100,
        ..EngineSettings::default()
    })
    .unwrap();
    let agents = load(&runtime);
    let req = request();

    let mut group = c.benchmark_group("lang/instantiate");
    for agent in &agents {
        group.bench_function(BenchmarkId::from_parameter(agent.lang), |b| {
            b.iter(|| black_box(agent.entry.image.instantiate().unwrap()))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("lang/noop");
    group.bench_function(BenchmarkId::from_parameter("native"), |b| {
        b.iter(|| black_box(Some(black_box(0u8))))
    });
    for agent in &agents {
        let mut live = agent.entry.image.instantiate().unwrap();
        group.bench_function(BenchmarkId::from_parameter(agent.lang), |b| {
            b.iter(|| black_box(recycled(&mut live, agent).health().unwrap()))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("lang/echo_1k");
    group.bench_function(BenchmarkId::from_parameter("native"), |b| {
        b.iter(|| black_box(native_echo(black_box(&req))))
    });
    for agent in &agents {
        let mut live = agent.entry.image.instantiate().unwrap();
        group.bench_function(BenchmarkId::from_parameter(agent.lang), |b| {
            b.iter(|| black_box(recycled(&mut live, agent).handle(black_box(&req)).unwrap()))
        });
    }
    group.finish();
}

criterion_group! {
    name = languages;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2))
        .sample_size(40);
    targets = benches
}
criterion_main!(languages);
