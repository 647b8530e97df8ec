//! Topic history benchmarks, in the shapes issue 36 names: an append on
//! the publisher's path (queued for the writer), a thousand appends until
//! written, and reads over 100,000 kept messages: the newest 100, a time
//! range, a regular-expression and a substring search that scan them all;
//! beside each, in the same run, its floor: the same SQL straight on the
//! file (no cursor, filters or page), and the same expression over the
//! payloads held in memory. Prints the disk each kept message takes.
//!
//! Run with `cargo bench -p wharf-tasks --bench history`; results go in
//! BENCHMARKS.md.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use wharf_tasks::history::{DEFAULT_MAX_BACKLOG, History, Query, TopicKeep};

const KEPT: usize = 100_000;

/// A payload shaped like an order event, ~100 bytes, numbered.
fn payload(n: usize) -> Bytes {
    Bytes::from(format!(
        r#"{{"order":{n},"customer":"c{}","items":3,"total":"{}.{:02}","region":"eu-west"}}"#,
        n % 977,
        n % 500,
        n % 100
    ))
}

fn open(dir: &tempfile::TempDir, keep: u64) -> Arc<History> {
    let keeps = vec![TopicKeep {
        pattern: "orders.>".into(),
        keep,
        age: None,
    }];
    Arc::new(History::open(&dir.path().join("topics.db"), keeps, DEFAULT_MAX_BACKLOG).unwrap())
}

fn writes(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let history = open(&dir, KEPT as u64);
    let keep: Arc<str> = Arc::from("orders.>");
    let body = payload(1);
    let mut g = c.benchmark_group("history");
    // Only the appends are timed; the writer is let catch up between
    // batches, untimed, so no batch meets a full backlog.
    g.bench_function("append_100B", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let batch = left.min(10_000);
                let start = Instant::now();
                for _ in 0..batch {
                    black_box(history.append(&keep, "orders.created", &body, 0).unwrap());
                }
                spent += start.elapsed();
                rt.block_on(history.settled_through(history.last_id()))
                    .unwrap();
                left -= batch;
            }
            spent
        })
    });
    g.bench_function("write_1000", |b| {
        b.iter(|| {
            for _ in 0..1000 {
                history.append(&keep, "orders.created", &body, 0).unwrap();
            }
            rt.block_on(history.settled_through(history.last_id()))
                .unwrap();
        })
    });
    g.finish();
}

fn reads(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let history = open(&dir, KEPT as u64);
    let keep: Arc<str> = Arc::from("orders.>");
    let mut times = Vec::with_capacity(KEPT);
    for n in 0..KEPT {
        let topic = if n % 2 == 0 { "orders.eu" } else { "orders.us" };
        let (_, ms) = history.append(&keep, topic, &payload(n), 0).unwrap();
        times.push(ms);
        if n % 10_000 == 9_999 {
            // Spread the messages over time, as a day's traffic would be.
            std::thread::sleep(Duration::from_millis(5));
            rt.block_on(history.settled_through(history.last_id()))
                .unwrap();
        }
    }
    rt.block_on(history.settled_through(history.last_id()))
        .unwrap();
    let file = std::fs::metadata(dir.path().join("topics.db"))
        .unwrap()
        .len()
        + std::fs::metadata(dir.path().join("topics.db-wal")).map_or(0, |m| m.len());
    eprintln!(
        "history: {KEPT} kept messages of ~{} B: {} bytes on disk with the WAL, {} per message",
        payload(KEPT / 2).len(),
        file,
        file / KEPT as u64
    );
    let read = |q: Query| rt.block_on(history.read(q)).unwrap();

    let mut g = c.benchmark_group("history_100k");
    let mut last = Query::new("orders.>", 100);
    last.newest_first = true;
    assert_eq!(read(last.clone()).messages.len(), 100);
    g.bench_function("read_last_100", |b| {
        b.iter(|| black_box(read(last.clone())))
    });
    let raw = rusqlite::Connection::open_with_flags(
        dir.path().join("topics.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    g.bench_function("raw_sqlite_last_100", |b| {
        b.iter(|| {
            let mut stmt = raw
                .prepare_cached(
                    "SELECT id, topic, published_ms, payload FROM messages ORDER BY id DESC LIMIT 100",
                )
                .unwrap();
            let rows: Vec<(i64, String, i64, Vec<u8>)> = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            black_box(rows)
        })
    });

    // From the 50,000th message's time: a page of 1,000 (the most a page
    // holds) out of the 100,000.
    let mut range = Query::new("orders.>", 1000);
    range.since_ms = Some(times[KEPT / 2]);
    range.until_ms = Some(times[KEPT - 1] + 1);
    assert_eq!(read(range.clone()).messages.len(), 1000);
    g.bench_function("time_range_page_1000", |b| {
        b.iter(|| black_box(read(range.clone())))
    });

    // One message of 100,000 matches: the search reads them all.
    let mut regex = Query::new("orders.>", 100);
    regex.regex = Some(regex::bytes::Regex::new(r#""order":99999,"customer":"c\d+""#).unwrap());
    assert_eq!(read(regex.clone()).messages.len(), 1);
    g.bench_function("regex_scan_100k", |b| {
        b.iter(|| black_box(read(regex.clone())))
    });
    let held: Vec<Bytes> = (0..KEPT).map(payload).collect();
    let expression = regex.regex.clone().unwrap();
    g.bench_function("regex_in_memory_100k", |b| {
        b.iter(|| black_box(held.iter().filter(|p| expression.is_match(p)).count()))
    });
    let mut contains = Query::new("orders.>", 100);
    contains.contains = Some(br#""order":99999,"#.to_vec());
    assert_eq!(read(contains.clone()).messages.len(), 1);
    g.bench_function("contains_scan_100k", |b| {
        b.iter(|| black_box(read(contains.clone())))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5));
    targets = writes, reads
}
criterion_main!(benches);
