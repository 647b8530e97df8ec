//! Topic benchmarks: matching a topic against 10 to 10,000 subscriptions
//! (a quarter with wildcards) in Wharf's token index beside a linear scan
//! of the same patterns, and a publish that queues one event for 1,000
//! subscribers beside cloning the payload into 1,000 vectors; a publish to
//! a kept topic (queued for the history's writer) beside one to a topic
//! nothing keeps, on the same bus. With a `nats-server` (the one
//! `scripts/setup/test-clients.sh` installs, else on PATH), two buses
//! joined as a cluster: a kept publish on the caller's path (queued for
//! NATS), the same until the stream acknowledged it, and a kept publish
//! until a watcher on the other node has it, each beside the NATS client
//! alone doing the same (a publish into the stream until acknowledged;
//! a message from one client to another's subscription); none of these
//! without a server.
//! Run with `cargo bench --bench topics`; results go in BENCHMARKS.md.

use std::hint::black_box;
use std::sync::Arc;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use wharf::metrics::Metrics;
use wharf::topics::{Bus, Index, Pattern};

/// `n` patterns: three exact ones for every wildcard one, spread over
/// services, regions and events.
fn patterns(n: usize) -> Vec<Pattern> {
    (0..n)
        .map(|i| {
            let (service, region, event) = (i % 97, i % 13, i % 7);
            let text = match i % 4 {
                0 => format!("svc{service}.*.event{event}"),
                _ => format!("svc{service}.region{region}.event{event}.{i}"),
            };
            Pattern::parse(&text).unwrap()
        })
        .collect()
}

fn matching(c: &mut Criterion) {
    let mut g = c.benchmark_group("topic_match");
    let topic = "svc42.region3.event0";
    for n in [10usize, 100, 1_000, 10_000] {
        let patterns = patterns(n);
        let mut index = Index::default();
        for (i, p) in patterns.iter().enumerate() {
            index.insert(p, i);
        }
        let mut out = Vec::with_capacity(64);
        g.bench_with_input(BenchmarkId::new("index", n), &n, |b, _| {
            b.iter(|| {
                out.clear();
                index.matches(black_box(topic), &mut out);
                black_box(out.len())
            })
        });
        g.bench_with_input(BenchmarkId::new("scan", n), &n, |b, _| {
            b.iter(|| {
                patterns
                    .iter()
                    .filter(|p| p.matches(black_box(topic)))
                    .count()
            })
        });
    }
    g.finish();
}

fn fan_out(c: &mut Criterion) {
    let mut g = c.benchmark_group("topic_fan_out");
    let payload = Bytes::from(vec![b'x'; 1024]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let bus = Arc::new(Bus::new(Metrics::new()));
    // 1,000 watchers on one pattern; each queue holds 16 events and drops
    // the oldest, so the queues stay full and every publish evicts.
    let watches: Vec<_> = (0..1_000)
        .map(|_| bus.watch("orders.*", 16, usize::MAX).unwrap())
        .collect();
    g.bench_function("publish_1000", |b| {
        b.iter(|| {
            black_box(
                bus.publish("orders.created", payload.clone(), 0, None)
                    .unwrap(),
            )
        })
    });
    g.bench_function("copy_1000", |b| {
        b.iter(|| {
            let copies: Vec<Vec<u8>> = (0..1_000).map(|_| payload.to_vec()).collect();
            black_box(copies.len())
        })
    });
    drop(watches);
    g.finish();
}

fn kept(c: &mut Criterion) {
    use std::time::{Duration, Instant};
    use wharf::config::TopicKeep;
    use wharf_tasks::history::{DEFAULT_MAX_BACKLOG, History};
    let mut g = c.benchmark_group("topic_kept");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let dir = tempfile::tempdir().unwrap();
    let keeps = vec![TopicKeep {
        pattern: "orders.>".into(),
        keep: 100_000,
        age: None,
    }];
    let history = History::open(
        &dir.path().join("topics.db"),
        keeps.clone(),
        DEFAULT_MAX_BACKLOG,
    );
    let history = Arc::new(history.unwrap());
    let bus = Arc::new(Bus::new(Metrics::new()));
    bus.attach_history(history.clone());
    bus.set_keeps(&keeps);
    let payload = Bytes::from(vec![b'x'; 100]);
    for (name, topic) in [
        ("publish_unkept", "news.today"),
        ("publish_kept", "orders.created"),
    ] {
        // Only the publishes are timed; the writer catches up between
        // batches, untimed.
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let batch = left.min(10_000);
                    let start = Instant::now();
                    for _ in 0..batch {
                        black_box(bus.publish(topic, payload.clone(), 0, None).unwrap());
                    }
                    spent += start.elapsed();
                    rt.block_on(history.settled_through(history.last_id()))
                        .unwrap();
                    left -= batch;
                }
                spent
            })
        });
    }
    g.finish();
}

/// A NATS server with JetStream on a free port (its store in a
/// temporary directory), killed on drop.
struct Nats {
    child: std::process::Child,
    _store: tempfile::TempDir,
    url: String,
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nats() -> Option<Nats> {
    let installed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/toolchains/a2a-client/bin/nats-server"
    );
    let server = if std::path::Path::new(installed).is_file() {
        installed
    } else {
        "nats-server"
    };
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let conf = dir.path().join("nats.conf");
    let store = dir.path().join("js").display().to_string();
    std::fs::write(
        &conf,
        format!("listen: 127.0.0.1:{port}\njetstream {{ store_dir: {store:?} }}\n"),
    )
    .unwrap();
    let mut child = std::process::Command::new(server)
        .arg("-c")
        .arg(&conf)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let addr = format!("127.0.0.1:{port}");
    for _ in 0..500 {
        if std::net::TcpStream::connect(&addr).is_ok() {
            return Some(Nats {
                child,
                _store: dir,
                url: format!("nats://{addr}"),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn cluster(c: &mut Criterion) {
    use std::time::{Duration, Instant};
    use wharf::config::TopicKeep;
    use wharf::topics::Published;
    use wharf_tasks::history::{DEFAULT_MAX_BACKLOG, History};
    let Some(nats) = nats() else {
        eprintln!(
            "topic_cluster: no nats-server here (scripts/setup/test-clients.sh installs one): not measured"
        );
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let keeps = vec![TopicKeep {
        pattern: "orders.>".into(),
        keep: 1_000_000,
        age: None,
    }];
    let dir = tempfile::tempdir().unwrap();
    let node = |name: &str| {
        let path = dir.path().join(format!("{name}.db"));
        let history =
            Arc::new(History::open_copy(&path, keeps.clone(), DEFAULT_MAX_BACKLOG).unwrap());
        let client = rt.block_on(async_nats::connect(&nats.url)).unwrap();
        let bus = Arc::new(Bus::new(Metrics::new()));
        bus.attach_history(history);
        bus.set_keeps(&keeps);
        bus.share(wharf::cluster::topics::Topics::new(client, name));
        bus
    };
    let (n1, n2) = (node("n1"), node("n2"));
    let payload = Bytes::from(vec![b'x'; 100]);
    let send = |bus: &Bus| match bus
        .publish_sent("orders.created", payload.clone(), 0, None)
        .unwrap()
    {
        Published::Cluster(sent) => sent,
        Published::Here(_) => unreachable!("the buses are in a cluster"),
    };
    // The stream is made by the nodes as they start.
    rt.block_on(async {
        while send(&n1).await.unwrap().is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let mut g = c.benchmark_group("topic_cluster");
    // The caller's path: queued for NATS; the acks are awaited untimed.
    g.bench_function("publish_kept_queued", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let batch = left.min(1_000);
                let start = Instant::now();
                let sent: Vec<_> = (0..batch).map(|_| send(&n1)).collect();
                spent += start.elapsed();
                rt.block_on(async {
                    for s in sent {
                        s.await.unwrap().unwrap();
                    }
                });
                left -= batch;
            }
            spent
        })
    });
    // One publish until the stream acknowledged it (what a client's
    // `POST /topics/…` waits for).
    g.bench_function("publish_kept_acked", |b| {
        b.to_async(&rt)
            .iter(|| async { send(&n1).await.unwrap().unwrap() })
    });
    // One publish on n1 until n2's watcher has it.
    let watch = n2.watch("orders.>", 1024, usize::MAX).unwrap();
    g.bench_function("kept_to_other_node", |b| {
        b.to_async(&rt).iter(|| async {
            drop(send(&n1));
            black_box(watch.next().await.unwrap());
        })
    });
    // The floors: the NATS client alone, the same 100 bytes into the same
    // stream until acknowledged, and from one client to another's
    // subscription.
    let (alone, other) = rt.block_on(async {
        let a = async_nats::connect(&nats.url).await.unwrap();
        let b = async_nats::connect(&nats.url).await.unwrap();
        (a, b)
    });
    let js = async_nats::jetstream::new(alone.clone());
    g.bench_function("nats_alone_acked", |b| {
        b.to_async(&rt).iter(|| async {
            let ack = js
                .publish("wharf.kept.floor.orders.raw", payload.clone())
                .await;
            black_box(ack.unwrap().await.unwrap())
        })
    });
    let mut sub = rt.block_on(other.subscribe("floor.raw")).unwrap();
    rt.block_on(other.flush()).unwrap();
    g.bench_function("nats_alone_to_other_client", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    alone.publish("floor.raw", payload.clone()).await.unwrap();
                    black_box(futures_util::StreamExt::next(&mut sub).await.unwrap());
                }
                start.elapsed()
            })
        })
    });
    g.finish();
    drop(watch);
}

criterion_group!(benches, matching, fan_out, kept, cluster);
criterion_main!(benches);
