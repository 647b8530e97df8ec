//! Task store benchmarks, in the A2A SDK's shapes: save, get and list at
//! 1k, 10k and 100k stored tasks, beside an in-memory map store (what the
//! SDKs' `InMemoryTaskStore` is) in the same run; a retention pass at each
//! size; group commit under concurrent saves; new tasks committed with
//! random ids beside ids that sort by time; memory per unfinished task
//! held in memory.
//!
//! Run with `cargo bench -p wharf-tasks --bench tasks`; results go in
//! BENCHMARKS.md.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use wharf_tasks::{
    Durability, ListQuery, Message, Part, Retention, Role, SqliteStore, StoreOptions, Task,
    TaskState, TaskStatus, TaskStore,
};

/// A task shaped like an A2A SDK benchmark's: a two-turn history.
fn task(id: &str, state: TaskState) -> Task {
    let message = |n: usize, role| Message {
        message_id: format!("{id}-m{n}"),
        context_id: Some("ctx".into()),
        task_id: Some(id.into()),
        role,
        parts: vec![Part::text("What is the weather in Lisbon tomorrow?")],
        metadata: None,
        extensions: vec![],
        reference_task_ids: vec![],
    };
    Task {
        id: id.into(),
        context_id: "ctx".into(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: Some("2026-11-22T10:00:00.000Z".into()),
        },
        artifacts: vec![],
        history: vec![message(0, Role::User), message(1, Role::Agent)],
        metadata: None,
        owner: String::new(),
    }
}

/// A store holding `n` finished tasks (`t0` … ), committed.
fn filled(dir: &std::path::Path, n: usize) -> SqliteStore {
    let mut options = StoreOptions::new(dir.join(format!("tasks-{n}.db")));
    options.durability = Durability::Queued;
    let store = SqliteStore::open(options).unwrap();
    for i in 0..n {
        let _ = store.save("bench", &task(&format!("t{i}"), TaskState::Completed));
    }
    store.sync().unwrap();
    store
}

/// The in-memory baseline: a map behind a lock, values cloned in and out.
#[derive(Default)]
struct MapStore(RwLock<HashMap<String, Task>>);

impl MapStore {
    fn save(&self, task: &Task) {
        self.0
            .write()
            .unwrap()
            .insert(task.id.clone(), task.clone());
    }
    fn get(&self, id: &str) -> Option<Task> {
        self.0.read().unwrap().get(id).cloned()
    }
}

/// Counts the bytes allocated and not yet freed, for memory per task.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, only counting sizes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn store(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("tasks");
    let baseline = MapStore::default();
    for i in 0..1000 {
        baseline.save(&task(&format!("t{i}"), TaskState::Completed));
    }
    let one = task("t1", TaskState::Working);
    g.bench_function("baseline_map/save", |b| b.iter(|| baseline.save(&one)));
    g.bench_function("baseline_map/get", |b| {
        b.iter(|| black_box(baseline.get("t500")))
    });

    for n in [1_000usize, 10_000, 100_000] {
        let store = filled(dir.path(), n);
        let live = task("live", TaskState::Working);
        store.save("bench", &live).wait_blocking().unwrap();
        g.bench_with_input(BenchmarkId::new("get_live", n), &n, |b, _| {
            b.iter(|| black_box(store.get("bench", "live").unwrap()))
        });
        let mid = format!("t{}", n / 2);
        g.bench_with_input(BenchmarkId::new("get_stored", n), &n, |b, _| {
            b.iter(|| black_box(store.get("bench", &mid).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("list_first_page_50", n), &n, |b, _| {
            b.iter(|| black_box(store.list("bench", &ListQuery::default()).unwrap()))
        });
        let mut k = 0u64;
        g.bench_with_input(BenchmarkId::new("save_queued", n), &n, |b, _| {
            b.iter(|| {
                k += 1;
                let t = task(&format!("q{}", k % 1000), TaskState::Completed);
                store.save("bench", &t).wait_blocking().unwrap();
            })
        });
        store.sync().unwrap();
        // A retention pass under the host's default limits (finished tasks
        // kept 30 days, waiting ones 7), none due: what the writer pays
        // every second while it is busy.
        drop(store);
        let mut options = StoreOptions::new(dir.path().join(format!("tasks-{n}.db")));
        options.durability = Durability::Queued;
        options.retention = Retention {
            max_age: Some(Duration::from_secs(30 * 86_400)),
            max_tasks: None,
            max_waiting: Some(Duration::from_secs(7 * 86_400)),
        };
        let store = SqliteStore::open(options).unwrap();
        g.bench_with_input(BenchmarkId::new("retention_pass", n), &n, |b, _| {
            b.iter(|| assert_eq!(store.retain_now().unwrap(), 0))
        });
    }
    g.finish();
}

/// `iters` saves of the tasks `make(thread, i)` gives, each waited for,
/// from `threads` threads at once: the time per save, for all the saves
/// made.
fn committed_saves(
    store: &Arc<SqliteStore>,
    threads: usize,
    iters: u64,
    make: impl Fn(usize, usize) -> Task + Copy + Send + 'static,
) -> Duration {
    let per_thread = (iters as usize).div_ceil(threads);
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    store.save("bench", &make(t, i)).wait_blocking().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    started
        .elapsed()
        .mul_f64(iters as f64 / (per_thread * threads) as f64)
}

/// Saves that each wait for their commit (fsync), from `threads` threads
/// at once: the writer commits what is queued together.
fn group_commit(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(StoreOptions::new(dir.path().join("gc.db"))).unwrap());
    let mut g = c.benchmark_group("tasks_save_committed");
    g.sample_size(10);
    for threads in [1usize, 4, 16, 64] {
        g.bench_with_input(
            BenchmarkId::new("per_save", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    committed_saves(&store, threads, iters, |t, i| {
                        task(&format!("c{t}-{}", i % 500), TaskState::Completed)
                    })
                })
            },
        );
    }
    g.finish();
}

/// New tasks, each in a context of its own (a send without a
/// `contextId`), saved and waited for from `threads` threads at once, over
/// 20,000 tasks already kept: with random (v4) ids and contexts, each task
/// of a group commit lands on its own page of the two indexes keyed by
/// them; with ids that sort by time (v7, what Wharf makes), on the last.
fn new_tasks_committed(c: &mut Criterion) {
    let mut g = c.benchmark_group("tasks_new_committed");
    g.sample_size(10);
    for (name, make) in [
        ("random_ids", uuid::Uuid::new_v4 as fn() -> uuid::Uuid),
        ("time_ordered_ids", uuid::Uuid::now_v7),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        let fresh = move || {
            let mut t = task(&make().to_string(), TaskState::Completed);
            t.context_id = make().to_string();
            t
        };
        {
            let mut options = StoreOptions::new(&path);
            options.durability = Durability::Queued;
            let store = SqliteStore::open(options).unwrap();
            for _ in 0..20_000 {
                let _ = store.save("bench", &fresh());
            }
            store.sync().unwrap();
        }
        let store = Arc::new(SqliteStore::open(StoreOptions::new(&path)).unwrap());
        for threads in [1usize, 16] {
            g.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &threads| {
                b.iter_custom(|iters| committed_saves(&store, threads, iters, move |_, _| fresh()))
            });
        }
    }
    g.finish();
}

/// Memory per unfinished task held in memory: heap bytes before and after
/// a reopen loads 100k of them (SQLite's own page cache included).
fn memory(_: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.db");
    {
        let mut options = StoreOptions::new(&path);
        options.durability = Durability::Queued;
        let store = SqliteStore::open(options).unwrap();
        for i in 0..100_000 {
            let _ = store.save("bench", &task(&format!("w{i}"), TaskState::Working));
        }
    }
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let store = SqliteStore::open(StoreOptions::new(&path)).unwrap();
    let after = LIVE_BYTES.load(Ordering::Relaxed);
    eprintln!(
        "memory: {} unfinished tasks in memory, {:.0} heap bytes each; db file {} MiB ({} bytes a task)",
        store.live_tasks(),
        (after.saturating_sub(before)) as f64 / store.live_tasks() as f64,
        std::fs::metadata(&path).map_or(0, |m| m.len()) >> 20,
        std::fs::metadata(&path).map_or(0, |m| m.len()) / 100_000,
    );
}

criterion_group! {
    name = tasks;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = store, group_commit, new_tasks_committed, memory
}
criterion_main!(tasks);
