//! The binary transport beside HTTP, on real loopback sockets, the same
//! `echo` agent (fresh and warm) behind each: one 1 KiB round trip at a
//! time, and what the server allocates per request on each transport. The
//! server runs on its own runtime whose threads count their allocations
//! (a counting `#[global_allocator]` over mimalloc, the binary's
//! allocator); the clients' threads do not count.
//! Run with `cargo bench --bench binary`; results go in BENCHMARKS.md.
#![allow(unsafe_code)] // the counting allocator

mod common;

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use wharf::app::App;
use wharf::config::Config;
use wharf::runtime::EngineSettings;
use wharf_load::binary::{self, Addr};

struct Counting;

/// What the `wharf` binary allocates with (`host/src/cli/main.rs`).
static INNER: mimalloc::MiMalloc = mimalloc::MiMalloc;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static SERVER: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if SERVER.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        unsafe { INNER.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { INNER.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if SERVER.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        }
        unsafe { INNER.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Wharf on loopback with HTTP and a binary Unix socket; its runtime's
/// threads count their allocations.
struct Served {
    http: std::net::SocketAddr,
    socket: std::path::PathBuf,
    _server: tokio::runtime::Runtime,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn serve() -> Served {
    let built = common::guests_dir();
    let agents = tempfile::tempdir().unwrap();
    for (file, name) in [("echo", "echo"), ("echo", "warm")] {
        let to = agents.path().join(format!("{name}.wasm"));
        std::fs::copy(built.join(format!("{file}.wasm")), to).unwrap();
    }
    let run = tempfile::tempdir().unwrap();
    let socket = run.path().join("w.sock");
    let kdl = format!(
        "audit #false\nbinary {{ unix \"{}\" }}\ntasks {{ path \"{}\" }}\n\
         agent \"warm\" {{ instances {{ mode \"warm\"; max 4 }} }}\n",
        socket.display(),
        run.path().join("tasks.db").display()
    );
    let mut config = Config::parse("bench.kdl", &kdl, agents.path()).unwrap();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.agents_dir = agents.path().to_path_buf();
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .on_thread_start(|| SERVER.with(|s| s.set(true)))
        .enable_all()
        .build()
        .unwrap();
    let http = server.block_on(async {
        let app = App::start(config, EngineSettings::default()).await.unwrap();
        let http = app.local_addr();
        tokio::spawn(app.serve(std::future::pending()));
        http
    });
    Served {
        http,
        socket,
        _server: server,
        _dirs: (agents, run),
    }
}

/// A keep-alive HTTP/1.1 connection.
async fn http_conn(
    addr: std::net::SocketAddr,
) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

async fn http_echo(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    path: &str,
    body: &Bytes,
) {
    sender.ready().await.unwrap();
    let req = http::Request::post(path)
        .header("host", "bench")
        .body(Full::new(body.clone()))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let got = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(got.len(), body.len());
}

fn transports(c: &mut Criterion) {
    let served = serve();
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = Bytes::from(vec![b'x'; 1024]);
    let mut g = c.benchmark_group("transport_1k_echo");
    for agent in ["echo", "warm"] {
        let path = format!("/agents/{agent}");
        let mut sender = client.block_on(http_conn(served.http));
        g.bench_function(format!("http_{agent}"), |b| {
            b.iter(|| client.block_on(http_echo(&mut sender, &path, &body)))
        });
        let (mut rd, mut wr) = client
            .block_on(binary::connect(&Addr::Unix(served.socket.clone())))
            .unwrap();
        let mut buf = BytesMut::new();
        let mut id = 0;
        let mut bin_echo = || {
            id += 1;
            let req = binary::Request {
                id,
                agent,
                affinity: None,
                body: &body,
            };
            let answer = binary::call(&mut rd, &mut wr, &mut buf, &req);
            let answer = client.block_on(answer).unwrap();
            assert_eq!((answer.status, answer.body.len()), (200, 1024));
        };
        g.bench_function(format!("binary_{agent}"), |b| b.iter(&mut bin_echo));

        // Allocations per request on the server, for each transport.
        const N: u64 = 2000;
        let counted = |run: &mut dyn FnMut()| {
            run(); // warm up
            let (a, b) = (
                ALLOCS.load(Ordering::Relaxed),
                BYTES.load(Ordering::Relaxed),
            );
            run();
            let a = (ALLOCS.load(Ordering::Relaxed) - a) as f64 / N as f64;
            let b = (BYTES.load(Ordering::Relaxed) - b) as f64 / N as f64;
            (a, b)
        };
        // An idle keep-alive connection is closed after `header-timeout`
        // (10 s): the criterion runs above may have outlasted it.
        let mut sender = client.block_on(http_conn(served.http));
        let (http_allocs, http_bytes) = counted(&mut || {
            client.block_on(async {
                for _ in 0..N {
                    http_echo(&mut sender, &path, &body).await;
                }
            })
        });
        let (bin_allocs, bin_bytes) = counted(&mut || {
            for _ in 0..N {
                bin_echo();
            }
        });
        eprintln!(
            "server allocations per 1 KiB {agent} request: http {http_allocs:.1} ({http_bytes:.0} B), \
             binary {bin_allocs:.1} ({bin_bytes:.0} B)"
        );
    }
    g.finish();
}

criterion_group!(binary_transport, transports);
criterion_main!(binary_transport);
