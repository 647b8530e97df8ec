//! A2A over loopback, in the shapes the A2A SDKs publish: a SendMessage
//! round trip on one connection (JSON-RPC and HTTP+JSON, both store
//! durabilities, payloads 64 B … 1 MiB), sends in flight at once, a stream
//! drained (3, 27, 252 events) and its first event, independent clients
//! each sending as soon as answered, and the error paths.
//! The baseline in the same run is the plain HTTP echo through the same
//! server: a request with no task, no store and no JSON. Round trips are
//! timed twice: with hyper's client (what an application would use) and
//! with a raw HTTP/1.1 writer-reader, whose own cost is near nothing, so
//! that figure is the server's.
//!
//! `cargo bench --bench a2a`

#[path = "common.rs"]
mod common;

/// The allocator the `wharf` binary serves with (`host/src/cli/main.rs`),
/// so this bench measures what the binary does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::json;
use wharf::app::App;
use wharf::config::Config;
use wharf::runtime::EngineSettings;

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A Wharf serving `echo` and `scribe` on loopback, with tasks kept at
/// the given durability.
struct Bench {
    rt: tokio::runtime::Runtime,
    base: String,
    client: HttpClient,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl Bench {
    fn start(durability: &str) -> Bench {
        let built = common::guests_dir();
        let agents = tempfile::tempdir().unwrap();
        for name in ["echo", "scribe"] {
            let file = format!("{name}.wasm");
            std::fs::copy(built.join(&file), agents.path().join(&file)).unwrap();
        }
        let store = tempfile::tempdir().unwrap();
        let kdl = format!(
            "instances {{ mode \"warm\"; max 4 }}\n\
             tasks {{ path \"{}\"; durability \"{durability}\" }}\n\
             audit #false\n",
            store.path().join("tasks.db").display()
        );
        let mut config = Config::parse("bench.kdl", &kdl, agents.path()).unwrap();
        config.listen = "127.0.0.1:0".parse().unwrap();
        config.agents_dir = agents.path().to_path_buf();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let base = rt.block_on(async {
            let app = App::start(config, EngineSettings::default()).await.unwrap();
            let base = format!("http://{}", app.local_addr());
            tokio::spawn(app.serve(std::future::pending()));
            base
        });
        let client = Client::builder(TokioExecutor::new()).build_http();
        Bench {
            rt,
            base,
            client,
            _dirs: (agents, store),
        }
    }

    fn request(&self, method: Method, path: &str, body: impl Into<Bytes>) -> Request<Full<Bytes>> {
        Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("a2a-version", "1.0")
            .header("content-type", "application/json")
            .body(Full::new(body.into()))
            .unwrap()
    }
}

/// Sends and reads the whole answer; the status must be `status`.
async fn round_trip(client: &HttpClient, req: Request<Full<Bytes>>, status: StatusCode) -> Bytes {
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.status(), status);
    resp.into_body().collect().await.unwrap().to_bytes()
}

fn send_body(text: &str) -> Vec<u8> {
    let params =
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}});
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}),
    )
    .unwrap()
}

fn rest_body(text: &str) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}}),
    )
    .unwrap()
}

/// Times `iters` requests made by `make`, one after another on one connection.
fn sequential(
    b: &Bench,
    iters: u64,
    make: impl Fn() -> Request<Full<Bytes>>,
    check: impl Fn(&Bytes),
) -> Duration {
    b.rt.block_on(async {
        let started = Instant::now();
        for _ in 0..iters {
            let body = round_trip(&b.client, make(), StatusCode::OK).await;
            check(&body);
            black_box(body);
        }
        started.elapsed()
    })
}

/// Sends of `body` to `path`, one after another, each answered with a
/// completed task.
fn send_loop<'a>(
    b: &'a Bench,
    path: &'a str,
    body: &'a [u8],
) -> impl FnMut(&mut criterion::Bencher<'_>) + 'a {
    move |bch| {
        bch.iter_custom(|n| {
            sequential(
                b,
                n,
                || b.request(Method::POST, path, body.to_vec()),
                completed,
            )
        })
    }
}

fn completed(body: &Bytes) {
    assert!(
        memchr(body, b"TASK_STATE_COMPLETED"),
        "{}",
        String::from_utf8_lossy(body)
    );
}

fn memchr(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// An HTTP/1.1 request as bytes, for the raw client.
fn raw_request(b: &Bench, path: &str, body: &[u8]) -> Vec<u8> {
    let host = b.base.trim_start_matches("http://");
    let mut out = format!(
        "POST {path} HTTP/1.1\r\nhost: {host}\r\na2a-version: 1.0\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// Times `iters` round trips of `request` on one kept-alive connection
/// with the least client there is: write the bytes, read until the
/// response's `content-length` is in. What it measures is the server.
fn raw_sequential(b: &Bench, iters: u64, request: &[u8], expect: &[u8]) -> Duration {
    b.rt.block_on(async {
        let mut conn = raw_connect(b).await;
        let started = Instant::now();
        raw_round_trips(&mut conn, iters, request, expect).await;
        started.elapsed()
    })
}

async fn raw_connect(b: &Bench) -> tokio::net::TcpStream {
    let addr = b.base.trim_start_matches("http://").to_string();
    let conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.set_nodelay(true).unwrap();
    conn
}

/// `iters` round trips of `request` on `conn`, each answer a 200 holding
/// `expect`.
async fn raw_round_trips(
    conn: &mut tokio::net::TcpStream,
    iters: u64,
    request: &[u8],
    expect: &[u8],
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::with_capacity(64 << 10);
    for _ in 0..iters {
        conn.write_all(request).await.unwrap();
        buf.clear();
        let (head, len) = loop {
            let mut chunk = [0u8; 16 << 10];
            let n = conn.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the server closed the connection");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map(|v| v.trim().parse().unwrap())
                    .unwrap();
                break (end + 4, len);
            }
        };
        while buf.len() < head + len {
            let mut chunk = [0u8; 16 << 10];
            let n = conn.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the server closed the connection");
            buf.extend_from_slice(&chunk[..n]);
        }
        assert!(
            buf.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&buf)
        );
        assert!(memchr(&buf[head..], expect));
    }
}

/// `clients` raw clients on their own connections, each making `iters`
/// round trips of `request` as fast as its answers come, none waiting for
/// another: the time until the last is done.
fn raw_clients(b: &Bench, clients: usize, iters: u64, request: &[u8], expect: &[u8]) -> Duration {
    b.rt.block_on(async {
        let mut conns = Vec::with_capacity(clients);
        for _ in 0..clients {
            conns.push(raw_connect(b).await);
        }
        let request: Arc<[u8]> = request.into();
        let expect: Arc<[u8]> = expect.into();
        let started = Instant::now();
        let loops: Vec<_> = conns
            .into_iter()
            .map(|mut conn| {
                let (request, expect) = (request.clone(), expect.clone());
                tokio::spawn(async move {
                    raw_round_trips(&mut conn, iters, &request, &expect).await;
                })
            })
            .collect();
        for done in loops {
            done.await.unwrap();
        }
        started.elapsed()
    })
}

fn round_trips(c: &mut Criterion) {
    let queued = Bench::start("queued");
    let commit = Bench::start("commit");
    let mut g = c.benchmark_group("a2a/raw_round_trip");
    let echo = raw_request(&queued, "/agents/echo", &[b'x'; 1024]);
    g.bench_function("http_echo_1KiB_baseline", |bch| {
        bch.iter_custom(|n| raw_sequential(&queued, n, &echo, b"xxxx"))
    });
    let send = raw_request(&queued, "/a2a/scribe", &send_body("hello brave new world"));
    g.bench_function("jsonrpc_send_queued", |bch| {
        bch.iter_custom(|n| raw_sequential(&queued, n, &send, b"TASK_STATE_COMPLETED"))
    });
    let rest = raw_request(
        &queued,
        "/a2a/scribe/message:send",
        &rest_body("hello brave new world"),
    );
    g.bench_function("rest_send_queued", |bch| {
        bch.iter_custom(|n| raw_sequential(&queued, n, &rest, b"TASK_STATE_COMPLETED"))
    });
    let send_commit = raw_request(&commit, "/a2a/scribe", &send_body("hello brave new world"));
    g.bench_function("jsonrpc_send_commit", |bch| {
        bch.iter_custom(|n| raw_sequential(&commit, n, &send_commit, b"TASK_STATE_COMPLETED"))
    });
    g.finish();

    let mut g = c.benchmark_group("a2a/round_trip");
    let echo = vec![b'x'; 1024];
    g.bench_function("http_echo_1KiB_baseline", |bch| {
        bch.iter_custom(|n| {
            sequential(
                &queued,
                n,
                || queued.request(Method::POST, "/agents/echo", echo.clone()),
                |b| assert_eq!(b.len(), 1024),
            )
        })
    });
    let body = send_body("hello brave new world");
    g.bench_function(
        "jsonrpc_send_queued",
        send_loop(&queued, "/a2a/scribe", &body),
    );
    let rest = rest_body("hello brave new world");
    g.bench_function(
        "rest_send_queued",
        send_loop(&queued, "/a2a/scribe/message:send", &rest),
    );
    g.bench_function(
        "jsonrpc_send_commit",
        send_loop(&commit, "/a2a/scribe", &body),
    );
    g.finish();

    let mut g = c.benchmark_group("a2a/payload");
    for size in [64usize, 1024, 64 << 10, 1 << 20] {
        let body = send_body(&"x".repeat(size));
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_function(
            BenchmarkId::new("jsonrpc_send_queued", size),
            send_loop(&queued, "/a2a/scribe", &body),
        );
    }
    g.finish();

    // Sends in flight at once; with `commit`, those that arrive together
    // share one fsync (group commit).
    let mut g = c.benchmark_group("a2a/in_flight");
    let body = send_body("hello brave new world");
    let shapes = [
        ("jsonrpc_send_queued", &queued, &[1usize, 4, 16, 64][..]),
        ("jsonrpc_send_commit", &commit, &[1usize, 16][..]),
    ];
    for (name, server, widths) in shapes {
        for &n in widths {
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new(name, n), &n, |bch, &n| {
                bch.iter_custom(|iters| {
                    server.rt.block_on(async {
                        let started = Instant::now();
                        for _ in 0..iters {
                            let calls = (0..n).map(|_| {
                                let req = server.request(Method::POST, "/a2a/scribe", body.clone());
                                round_trip(&server.client, req, StatusCode::OK)
                            });
                            for body in futures_util::future::join_all(calls).await {
                                completed(&body);
                            }
                        }
                        started.elapsed()
                    })
                })
            });
        }
    }
    g.finish();

    // Independent clients, each on its own connection with the raw client,
    // sending again as soon as it has its answer: no client waits for
    // another, as separate users do. With `commit`, the sends waiting at
    // one moment share one fsync.
    let mut g = c.benchmark_group("a2a/clients");
    for (name, server) in [
        ("jsonrpc_send_queued", &queued),
        ("jsonrpc_send_commit", &commit),
    ] {
        let send = raw_request(server, "/a2a/scribe", &send_body("hello brave new world"));
        for n in [1usize, 16] {
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new(name, n), &n, |bch, &n| {
                bch.iter_custom(|iters| {
                    raw_clients(server, n, iters, &send, b"TASK_STATE_COMPLETED")
                })
            });
        }
    }
    g.finish();

    let mut g = c.benchmark_group("a2a/errors");
    g.bench_function("invalid_json", |bch| {
        bch.iter_custom(|n| {
            sequential(
                &queued,
                n,
                || queued.request(Method::POST, "/a2a/scribe", "{oops"),
                |b| assert!(memchr(b, b"-32700")),
            )
        })
    });
    let missing = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "none"}}),
    )
    .unwrap();
    g.bench_function("task_not_found", |bch| {
        bch.iter_custom(|n| {
            sequential(
                &queued,
                n,
                || queued.request(Method::POST, "/a2a/scribe", missing.clone()),
                |b| assert!(memchr(b, b"-32001")),
            )
        })
    });
    g.finish();
}

/// Reads a stream to its end; returns the time to its first event and the
/// number of events.
async fn drain(client: &HttpClient, req: Request<Full<Bytes>>) -> (Duration, usize) {
    let started = Instant::now();
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let mut first = None;
    let mut events = 0;
    // `data: ` may straddle two frames: keep the last bytes of the one before.
    let mut carry: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.unwrap();
        if let Some(data) = frame.data_ref() {
            carry.extend_from_slice(data);
            let n = carry.windows(6).filter(|w| w == b"data: ").count();
            if n > 0 && first.is_none() {
                first = Some(started.elapsed());
            }
            events += n;
            let keep = carry.len().min(5);
            carry.drain(..carry.len() - keep);
        }
    }
    (first.unwrap(), events)
}

fn streams(c: &mut Criterion) {
    let b = Arc::new(Bench::start("queued"));
    let mut g = c.benchmark_group("a2a/stream");
    for n in [3usize, 27, 252] {
        let body = rest_body(&format!("count {n}"));
        g.bench_with_input(BenchmarkId::new("drain", n), &body, |bch, body| {
            bch.iter_custom(|iters| {
                b.rt.block_on(async {
                    let started = Instant::now();
                    for _ in 0..iters {
                        let req =
                            b.request(Method::POST, "/a2a/scribe/message:stream", body.clone());
                        let (_, events) = drain(&b.client, req).await;
                        // The task, one event per chunk, the final status.
                        assert_eq!(events, n + 2);
                    }
                    started.elapsed()
                })
            })
        });
        g.bench_with_input(BenchmarkId::new("first_event", n), &body, |bch, body| {
            bch.iter_custom(|iters| {
                b.rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let req =
                            b.request(Method::POST, "/a2a/scribe/message:stream", body.clone());
                        total += drain(&b.client, req).await.0;
                    }
                    total
                })
            })
        });
        let blocking = rest_body(&format!("count {n}"));
        g.bench_function(
            BenchmarkId::new("not_streamed", n),
            send_loop(&b, "/a2a/scribe/message:send", &blocking),
        );
    }
    g.finish();
}

criterion_group! {
    name = a2a;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = round_trips, streams
}
criterion_main!(a2a);
