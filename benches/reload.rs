//! Hot reload, from a component file landing in a served agents directory
//! to its first answer, for the echo agent in each guest language. The
//! baseline in the same run is loading the same kind of file with
//! `load_dir` alone (read, checks, compile, `describe()`): the difference
//! is what watching, settling and publishing add. Every iteration lands a
//! component no one compiled before (a custom section carries a counter),
//! so both sides compile, as a newly built file would.
//!
//! `cargo bench --bench reload`

#[path = "common.rs"]
mod common;

/// The allocator the `wharf` binary serves with (`host/src/cli/main.rs`),
/// so this bench measures what the binary does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use wharf::app::App;
use wharf::config::{Cache, Config};
use wharf::runtime::{EngineSettings, Runtime};

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// `bytes` with a custom section appended that holds `n`: the same
/// component, a new digest.
fn variant(bytes: &[u8], n: u64) -> Vec<u8> {
    let name = b"wharf-bench";
    let payload = n.to_le_bytes();
    let mut out = bytes.to_vec();
    out.push(0);
    out.push((1 + name.len() + payload.len()) as u8);
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out.extend_from_slice(&payload);
    out
}

/// Writes through a hidden temporary file and a rename, as deploy tools do.
fn land(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    let path = dir.join(format!("{name}.wasm"));
    std::fs::rename(&tmp, &path).unwrap();
    path
}

async fn status(client: &HttpClient, url: &str) -> u16 {
    let req = http::Request::post(url)
        .body(Full::new(Bytes::from_static(b"ping")))
        .unwrap();
    match client.request(req).await {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let _ = resp.into_body().collect().await;
            status
        }
        Err(_) => 0,
    }
}

/// Polls `url` every 10 ms until it answers `want`.
async fn until(client: &HttpClient, url: &str, want: u16) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while status(client, url).await != want {
        assert!(Instant::now() < deadline, "{url} never answered {want}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn config(agents: &Path, cache: &Path) -> Config {
    let mut config = Config::parse("bench.kdl", "audit #false\n", agents).unwrap();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.agents_dir = agents.to_path_buf();
    config.cache = Cache::Dir(cache.to_path_buf());
    config.tasks.path = Some(cache.join("tasks.db"));
    config
}

fn reload(c: &mut Criterion) {
    let built = common::guests_dir();
    let lang = common::lang_dir(&built);
    let echoes = [
        ("rust", built.join("echo.wasm")),
        ("c", lang.join("echo-c.wasm")),
        ("go", lang.join("echo-go.wasm")),
        ("python", lang.join("echo-py.wasm")),
        ("javascript", lang.join("echo-js.wasm")),
    ];
    let agents = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cfg = config(agents.path(), cache.path());
    let base = rt.block_on(async {
        let app = App::start(cfg.clone(), EngineSettings::default())
            .await
            .unwrap();
        let base = format!("http://{}", app.local_addr());
        tokio::spawn(app.serve(std::future::pending()));
        base
    });
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    // The baseline's own runtime and cache, built as `App::start` builds its.
    let mut runtime = Runtime::new(&EngineSettings::default()).unwrap();
    runtime.use_cache(&cache.path().join("baseline")).unwrap();
    let counter = AtomicU64::new(0);

    let mut group = c.benchmark_group("reload");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(1));
    group.measurement_time(Duration::from_secs(5));
    for (lang, file) in &echoes {
        let bytes = std::fs::read(file).unwrap();
        group.bench_function(BenchmarkId::new("file_to_first_answer", lang), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let n = counter.fetch_add(1, Ordering::Relaxed);
                    let name = format!("echo{n}");
                    let url = format!("{base}/agents/{name}");
                    let component = variant(&bytes, n);
                    let started = Instant::now();
                    let path = land(agents.path(), &name, &component);
                    rt.block_on(until(&client, &url, 200));
                    total += started.elapsed();
                    std::fs::remove_file(path).unwrap();
                    rt.block_on(until(&client, &url, 404));
                }
                total
            })
        });
        group.bench_function(BenchmarkId::new("load_dir_baseline", lang), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let n = counter.fetch_add(1, Ordering::Relaxed);
                    let dir = tempfile::tempdir().unwrap();
                    land(dir.path(), "echo", &variant(&bytes, n));
                    let started = Instant::now();
                    let snapshot = wharf::registry::load_dir(&runtime, &cfg, dir.path()).unwrap();
                    total += started.elapsed();
                    assert!(snapshot.agent("echo").is_some(), "{:?}", snapshot.refused);
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, reload);
criterion_main!(benches);
