//! The SQLite task store against a real database file: tasks survive a
//! reopen, pages and filters, history and artifact trimming, retention,
//! concurrent saves under group commit, push configs kept with their task,
//! and files it must refuse.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use wharf_tasks::{
    Artifact, Durability, ListQuery, Message, Part, Retention, Role, SqliteStore, StoreError,
    StoreOptions, Task, TaskPushNotificationConfig, TaskState, TaskStatus, TaskStore,
};

fn task(id: &str, context: &str, state: TaskState) -> Task {
    Task {
        id: id.into(),
        context_id: context.into(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: Some("2026-11-22T10:00:00.000Z".into()),
        },
        artifacts: vec![Artifact {
            artifact_id: format!("{id}-a"),
            name: Some("answer".into()),
            description: None,
            parts: vec![Part::text("42")],
            metadata: None,
            extensions: vec![],
        }],
        history: (0..3)
            .map(|n| Message {
                message_id: format!("{id}-m{n}"),
                context_id: Some(context.into()),
                task_id: Some(id.into()),
                role: if n % 2 == 0 { Role::User } else { Role::Agent },
                parts: vec![Part::text(format!("turn {n}"))],
                metadata: None,
                extensions: vec![],
                reference_task_ids: vec![],
            })
            .collect(),
        metadata: None,
        owner: String::new(),
    }
}

/// How many of `echo`'s tasks are in `state`, as a list answers it.
fn total_in(store: &SqliteStore, state: TaskState) -> u64 {
    let query = ListQuery {
        state: Some(state),
        ..ListQuery::default()
    };
    store.list("echo", &query).unwrap().total_size
}

fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(StoreOptions::new(path)).unwrap()
}

#[test]
fn a_reopened_store_has_every_task_and_serves_unfinished_ones_from_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data/tasks.db");
    {
        let store = open(&path);
        for (n, state) in TaskState::ALL.into_iter().enumerate() {
            let t = task(&format!("t{n}"), "c", state);
            store.save("echo", &t).wait_blocking().unwrap();
        }
        // The same id under another agent is another task.
        store
            .save("other", &task("t0", "x", TaskState::Completed))
            .wait_blocking()
            .unwrap();
        assert_eq!(store.get("echo", "t3").unwrap().unwrap().id, "t3");
    }
    let store = open(&path);
    for (n, state) in TaskState::ALL.into_iter().enumerate() {
        let got = store.get("echo", &format!("t{n}")).unwrap().unwrap();
        assert_eq!(got, task(&format!("t{n}"), "c", state));
    }
    assert_eq!(store.get("other", "t0").unwrap().unwrap().context_id, "x");
    assert_eq!(store.get("echo", "absent").unwrap(), None);
    assert_eq!(store.get("absent", "t0").unwrap(), None);
    // Submitted, working, input-required, auth-required and unspecified.
    assert_eq!(store.live_tasks(), 5);
}

#[test]
fn lists_page_filter_and_trim() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("tasks.db"));
    for n in 0..120 {
        let state = if n % 3 == 0 {
            TaskState::Working
        } else {
            TaskState::Completed
        };
        let context = if n % 2 == 0 { "even" } else { "odd" };
        let _ = store.save("echo", &task(&format!("t{n:03}"), context, state));
    }
    let mut query = ListQuery::default();
    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    loop {
        let page = store.list("echo", &query).unwrap();
        assert_eq!(page.total_size, 120);
        sizes.push(page.tasks.len());
        seen.extend(page.tasks.iter().map(|t| t.id.clone()));
        for t in &page.tasks {
            assert!(t.artifacts.is_empty(), "artifacts only when asked");
            assert_eq!(t.history.len(), 3);
        }
        if page.next_page_token.is_empty() {
            break;
        }
        query.page_token = Some(page.next_page_token);
    }
    assert_eq!(sizes, [50, 50, 20]);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 120, "every task once");

    let query = ListQuery {
        context_id: Some("even".into()),
        state: Some(TaskState::Working),
        page_size: 500,
        history_length: Some(1),
        include_artifacts: true,
        ..ListQuery::default()
    };
    let page = store.list("echo", &query).unwrap();
    assert_eq!(page.page_size, 100, "capped at the protocol's maximum");
    assert_eq!(page.total_size, 20);
    assert_eq!(page.tasks.len(), 20);
    for t in &page.tasks {
        assert_eq!(t.context_id, "even");
        assert_eq!(t.status.state, TaskState::Working);
        assert_eq!(t.history.len(), 1);
        assert!(t.history[0].message_id.ends_with("-m2"), "the most recent");
        assert_eq!(t.artifacts.len(), 1);
    }
    let query = ListQuery {
        updated_after_ms: Some(i64::MAX),
        ..ListQuery::default()
    };
    assert_eq!(store.list("echo", &query).unwrap().total_size, 0);
    for bad in ["%%%", "bm90LWEtdG9rZW4", ""] {
        let query = ListQuery {
            page_token: Some(bad.into()),
            ..ListQuery::default()
        };
        assert_eq!(
            store.list("echo", &query).unwrap_err(),
            StoreError::InvalidPageToken,
            "{bad:?}"
        );
    }
}

#[test]
fn retention_deletes_only_finished_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = StoreOptions::new(dir.path().join("tasks.db"));
    options.retention = Retention {
        max_age: None,
        max_tasks: Some(10),
        max_waiting: None,
    };
    let store = SqliteStore::open(options.clone()).unwrap();
    for n in 0..30 {
        let state = if n < 5 {
            TaskState::InputRequired
        } else {
            TaskState::Completed
        };
        store
            .save("echo", &task(&format!("t{n:02}"), "c", state))
            .wait_blocking()
            .unwrap();
    }
    assert_eq!(store.retain_now().unwrap(), 20);
    let page = store.list("echo", &ListQuery::default()).unwrap();
    assert_eq!(page.total_size, 10);
    let mut ids: Vec<String> = page.tasks.into_iter().map(|t| t.id).collect();
    ids.sort();
    let mut expected: Vec<String> = (0..5).chain(25..30).map(|n| format!("t{n:02}")).collect();
    expected.sort();
    assert_eq!(
        ids, expected,
        "unfinished tasks and the newest finished ones stay"
    );
    for (state, n) in [
        (TaskState::Completed, 5),
        (TaskState::InputRequired, 5),
        (TaskState::Working, 0),
    ] {
        assert_eq!(total_in(&store, state), n, "{state:?}");
    }
    drop(store);

    options.retention = Retention {
        max_age: Some(Duration::ZERO),
        max_tasks: None,
        max_waiting: None,
    };
    let store = SqliteStore::open(options.clone()).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(store.retain_now().unwrap(), 5);
    assert_eq!(
        store
            .list("echo", &ListQuery::default())
            .unwrap()
            .total_size,
        5
    );
    drop(store);

    // Tasks left waiting for input go after `max_waiting`, from memory too.
    options.retention = Retention {
        max_age: None,
        max_tasks: None,
        max_waiting: Some(Duration::ZERO),
    };
    let store = SqliteStore::open(options).unwrap();
    assert_eq!(store.live_tasks(), 5);
    assert_eq!(store.open_tasks("echo", "").unwrap(), 5);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(store.retain_now().unwrap(), 5);
    assert_eq!(store.live_tasks(), 0);
    assert_eq!(store.open_tasks("echo", "").unwrap(), 0);
    assert!(store.get("echo", "t00").unwrap().is_none());
}

#[test]
fn concurrent_saves_are_all_committed_and_a_later_save_wins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = Arc::new(open(&path));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for n in 0..250 {
                    let id = format!("t{t}-{n}");
                    store
                        .save("echo", &task(&id, "c", TaskState::Working))
                        .wait_blocking()
                        .unwrap();
                    store
                        .save("echo", &task(&id, "c", TaskState::Completed))
                        .wait_blocking()
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        store.live_tasks(),
        0,
        "finished and committed: out of memory"
    );
    // Each task was counted working, then moved to completed.
    for (state, n) in [(TaskState::Working, 0), (TaskState::Completed, 2000)] {
        assert_eq!(total_in(&store, state), n, "{state:?}");
    }
    drop(store);
    let store = open(&path);
    assert_eq!(total_in(&store, TaskState::Completed), 2000);
    assert_eq!(
        store
            .list("echo", &ListQuery::default())
            .unwrap()
            .total_size,
        2000
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn queued_saves_are_committed_before_the_store_closes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let mut options = StoreOptions::new(&path);
    options.durability = Durability::Queued;
    let store = SqliteStore::open(options).unwrap();
    for n in 0..500 {
        store
            .save("echo", &task(&format!("t{n}"), "c", TaskState::Completed))
            .wait()
            .await
            .unwrap();
    }
    drop(store);
    let store = open(&path);
    assert_eq!(
        store
            .list("echo", &ListQuery::default())
            .unwrap()
            .total_size,
        500
    );
}

/// Runs `f` on its own thread; a call that has not returned within a
/// minute fails the test rather than hanging it (a linger of an hour
/// would hold it that long).
fn returns<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not return"))
}

fn lingering(path: &Path, durability: Durability) -> SqliteStore {
    let mut options = StoreOptions::new(path);
    options.durability = durability;
    options.linger = Duration::from_secs(3600);
    SqliteStore::open(options).unwrap()
}

#[test]
fn queued_saves_that_arrive_apart_share_one_transaction_until_someone_waits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(lingering(&dir.path().join("tasks.db"), Durability::Queued));
    for n in 0..50 {
        store
            .save("echo", &task(&format!("t{n}"), "c", TaskState::Completed))
            .wait_blocking()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        store.commits(),
        0,
        "nobody waited: the writer still gathers"
    );
    let synced = store.clone();
    returns("sync", move || synced.sync()).unwrap();
    assert_eq!(store.commits(), 1, "fifty saves, one transaction");
    assert_eq!(total_in(&store, TaskState::Completed), 50);
}

#[test]
fn a_save_someone_waits_for_is_committed_at_once_whatever_the_linger() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(lingering(&dir.path().join("tasks.db"), Durability::Commit));
    for n in 0..3 {
        let saving = store.clone();
        returns("a committed save", move || {
            saving
                .save("echo", &task(&format!("t{n}"), "c", TaskState::Completed))
                .wait_blocking()
        })
        .unwrap();
    }
    assert_eq!(store.commits(), 3);
}

#[test]
fn a_lingering_batch_is_committed_when_the_store_closes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = lingering(&path, Durability::Queued);
    for n in 0..10 {
        store
            .save("echo", &task(&format!("t{n}"), "c", TaskState::Completed))
            .wait_blocking()
            .unwrap();
    }
    returns("closing the store", move || drop(store));
    let store = open(&path);
    assert_eq!(total_in(&store, TaskState::Completed), 10);
}

fn hook(task_id: &str, id: &str, url: &str) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        tenant: String::new(),
        id: id.into(),
        task_id: task_id.into(),
        url: url.into(),
        token: format!("token-{id}"),
        authentication: None,
    }
}

#[test]
fn push_configs_are_kept_replaced_deleted_and_go_with_their_task() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = open(&path);
    store
        .save("echo", &task("t1", "c", TaskState::Completed))
        .wait_blocking()
        .unwrap();
    for config in [
        hook("t1", "a", "http://127.0.0.1:9/one"),
        hook("t1", "b", "http://127.0.0.1:9/two"),
        hook("t1", "a", "http://127.0.0.1:9/three"),
    ] {
        store
            .put_push_config("echo", &config)
            .wait_blocking()
            .unwrap();
    }
    let urls = |store: &SqliteStore| -> Vec<(String, String)> {
        let configs = store.push_configs("echo", "t1").unwrap();
        configs.into_iter().map(|c| (c.id, c.url)).collect()
    };
    let expected = vec![
        ("a".to_string(), "http://127.0.0.1:9/three".to_string()),
        ("b".to_string(), "http://127.0.0.1:9/two".to_string()),
    ];
    assert_eq!(
        urls(&store),
        expected,
        "a config of the same id is replaced"
    );
    assert!(store.push_configs("other", "t1").unwrap().is_empty());
    drop(store);

    let mut options = StoreOptions::new(&path);
    options.retention.max_age = Some(Duration::ZERO);
    let store = SqliteStore::open(options).unwrap();
    assert_eq!(urls(&store), expected, "configs survive a reopen");
    for _ in 0..2 {
        store
            .delete_push_config("echo", "t1", "b")
            .wait_blocking()
            .unwrap();
    }
    assert_eq!(
        urls(&store),
        expected[..1],
        "deleting twice is deleting once"
    );
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(store.retain_now().unwrap(), 1);
    assert!(
        urls(&store).is_empty(),
        "a deleted task's configs are deleted"
    );
}

#[test]
fn files_it_cannot_use_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![0x42; 8192]).unwrap();
    let err = SqliteStore::open(StoreOptions::new(&junk))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("junk.db"), "{err}");
    assert!(err.contains("not a database"), "{err}");

    let newer = dir.path().join("newer.db");
    rusqlite_user_version(&newer, 99);
    let err = SqliteStore::open(StoreOptions::new(&newer))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("newer Wharf (schema 99"), "{err}");

    let blocked = dir.path().join("file");
    std::fs::write(&blocked, b"x").unwrap();
    let err = SqliteStore::open(StoreOptions::new(blocked.join("tasks.db")))
        .err()
        .unwrap();
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
}

/// A database whose schema version is `version`, made the way a newer
/// Wharf would leave it.
fn rusqlite_user_version(path: &Path, version: i64) {
    let store = open(path);
    drop(store);
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "user_version", version).unwrap();
}

#[test]
fn each_task_keeps_its_owner_and_a_list_by_owner_shows_only_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = open(&path);
    for (i, owner) in ["alice", "bob", "alice", ""].iter().enumerate() {
        let mut t = task(&format!("o{i}"), "c", TaskState::Completed);
        t.owner = owner.to_string();
        store.save("echo", &t).wait_blocking().unwrap();
    }
    // A later save with another owner does not move the task.
    let mut moved = task("o0", "c", TaskState::Completed);
    moved.owner = "mallory".into();
    store.save("echo", &moved).wait_blocking().unwrap();
    let owned = |store: &SqliteStore, owner: &str, state: Option<TaskState>| {
        let query = ListQuery {
            owner: Some(owner.into()),
            state,
            ..ListQuery::default()
        };
        let page = store.list("echo", &query).unwrap();
        let mut ids: Vec<String> = page.tasks.iter().map(|t| t.id.clone()).collect();
        ids.sort();
        assert!(page.tasks.iter().all(|t| t.owner == owner));
        (ids, page.total_size)
    };
    // As saved, then reopened (the first closed: one process at a time).
    let mut first = Some(store);
    for reopened in [false, true] {
        let store = match first.take() {
            Some(store) if !reopened => store,
            _ => open(&path),
        };
        assert_eq!(store.get("echo", "o1").unwrap().unwrap().owner, "bob");
        assert_eq!(store.get("echo", "o0").unwrap().unwrap().owner, "alice");
        assert_eq!(
            owned(&store, "alice", None),
            (vec!["o0".into(), "o2".into()], 2)
        );
        assert_eq!(
            owned(&store, "alice", Some(TaskState::Completed)),
            (vec!["o0".into(), "o2".into()], 2)
        );
        assert_eq!(owned(&store, "", None), (vec!["o3".into()], 1));
        assert_eq!(owned(&store, "mallory", None), (vec![], 0));
        assert_eq!(
            store
                .list("echo", &ListQuery::default())
                .unwrap()
                .total_size,
            4
        );
    }
}

#[test]
fn a_store_from_before_owners_gains_the_column_and_its_tasks_are_anonymous() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE tasks (agent TEXT NOT NULL, id TEXT NOT NULL, context_id TEXT NOT NULL,
                state INTEGER NOT NULL, updated_ms INTEGER NOT NULL, body BLOB NOT NULL,
                UNIQUE (agent, id));
             CREATE TABLE push_configs (agent TEXT NOT NULL, task_id TEXT NOT NULL,
                id TEXT NOT NULL, body BLOB NOT NULL, UNIQUE (agent, task_id, id));
             PRAGMA user_version = 2;",
        )
        .unwrap();
        let body = serde_json::to_vec(&task("old", "c", TaskState::InputRequired)).unwrap();
        conn.execute(
            "INSERT INTO tasks VALUES ('echo', 'old', 'c', 6, 1, ?1)",
            [body],
        )
        .unwrap();
    }
    let store = open(&path);
    assert_eq!(store.get("echo", "old").unwrap().unwrap().owner, "");
    let anonymous = ListQuery {
        owner: Some(String::new()),
        ..ListQuery::default()
    };
    assert_eq!(store.list("echo", &anonymous).unwrap().total_size, 1);
    let unfinished = store.unfinished().unwrap();
    assert_eq!(unfinished.len(), 1, "the waiting task is still known");
}

#[test]
fn a_store_open_elsewhere_is_refused_naming_its_holder_until_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let first = SqliteStore::open(StoreOptions::new(path.clone())).unwrap();
    let Err(err) = SqliteStore::open(StoreOptions::new(path.clone())) else {
        panic!("a second open of a held store succeeded");
    };
    assert_eq!(
        err,
        StoreError::Held {
            path: path.clone(),
            holder: Some(std::process::id())
        }
    );
    assert!(
        err.to_string().contains("in use by another Wharf process"),
        "{err}"
    );
    drop(first);
    SqliteStore::open(StoreOptions::new(path)).expect("free again once closed");
}
