//! Topic benchmarks: matching a topic against 10 to 10,000 subscriptions
//! (a quarter with wildcards) in Wharf's token index beside a linear scan
//! of the same patterns, and a publish that queues one event for 1,000
//! subscribers beside cloning the payload into 1,000 vectors; a publish to
//! a kept topic (queued for the history's writer) beside one to a topic
//! nothing keeps, on the same bus.
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

criterion_group!(benches, matching, fan_out, kept);
criterion_main!(benches);
