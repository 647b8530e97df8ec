//! The shared task store on a real PostgreSQL server (started here on
//! loopback with a throwaway data directory by `scripts/lib/postgres.sh`,
//! which installs Debian's package when missing): the same saves, reads,
//! lists, pages and push configs as the SQLite store, each task owned by
//! the node that saved it last, clear errors when the server is not
//! there, and a store that goes on by itself when the server comes back.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use wharf_tasks::{
    Durability, ListQuery, Message, PgOptions, PgStore, Retention, Role, StoreError, Task,
    TaskPushNotificationConfig, TaskState, TaskStore,
};

use crate::cluster::free_port;
use crate::common::wait_until_within;

/// A PostgreSQL server in a temporary directory, stopped on drop.
pub struct Postgres {
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Postgres {
    pub async fn start() -> Postgres {
        let dir = tempfile::Builder::new()
            .prefix("wharf-pg")
            .tempdir()
            .unwrap();
        let port = free_port();
        let url = format!("postgres://wharf@127.0.0.1:{port}/postgres");
        let child = spawn(dir.path(), &url).await;
        Postgres {
            url,
            child,
            _dir: dir,
        }
    }

    /// Stops the server (fast shutdown: clients are disconnected).
    fn stop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        for _ in 0..200 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again on the same data and port.
    async fn start_again(&mut self) {
        self.child = spawn(self._dir.path(), &self.url).await;
    }
}

/// `scripts/lib/postgres.sh` on `dir`, serving `url`'s port, once it
/// answers.
async fn spawn(dir: &std::path::Path, url: &str) -> Child {
    let port = url.rsplit(':').next().unwrap().split('/').next().unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/lib/postgres.sh");
    let child = Command::new(script)
        .arg(dir)
        .arg(port)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("scripts/lib/postgres.sh runs");
    // initdb and a first start: on a busy 2-core machine (every test
    // running at once) this has taken over a minute.
    let limit = Duration::from_secs(180);
    wait_until_within("PostgreSQL accepts connections", limit, || {
        let probe = url.to_string();
        async move {
            tokio::task::spawn_blocking(move || PgStore::open(options(&probe, "probe")).is_ok())
                .await
                .unwrap()
        }
    })
    .await;
    child
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn options(url: &str, node: &str) -> PgOptions {
    PgOptions {
        url: url.to_string(),
        node: node.to_string(),
        durability: Durability::Commit,
        retention: Retention::default(),
        batch_max: 256,
    }
}

fn message(text: &str) -> Message {
    Message {
        message_id: format!("m-{text}"),
        context_id: None,
        task_id: None,
        role: Role::User,
        parts: vec![wharf_tasks::Part::text(text)],
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    }
}

pub(crate) fn task(id: &str, context: &str) -> Task {
    Task::submitted(id.to_string(), context.to_string(), message(id))
}

fn webhook(id: &str, task: &str, url: &str) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        tenant: String::new(),
        id: id.into(),
        task_id: task.into(),
        url: url.into(),
        token: String::new(),
        authentication: None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_push_configs_and_pages_live_in_postgres_with_their_node() {
    let pg = Postgres::start().await;
    let url = pg.url.clone();
    tokio::task::spawn_blocking(move || {
        let pg_a = PgStore::open(options(&url, "a")).unwrap();
        let pg_b = PgStore::open(options(&url, "b")).unwrap();
        // 25 tasks saved on a, one of them changed again; read on b.
        for i in 0..25 {
            let mut t = task(&format!("t{i:02}"), if i % 2 == 0 { "even" } else { "odd" });
            t.set_status(TaskState::Working, None).unwrap();
            if i < 20 {
                t.set_status(TaskState::Completed, None).unwrap();
            }
            pg_a.save("scribe", &t).wait_blocking().unwrap();
        }
        let got = pg_b
            .get("scribe", "t03")
            .unwrap()
            .expect("b reads a's task");
        assert_eq!(got.status.state, TaskState::Completed);
        assert_eq!(got.history.len(), 1);
        assert_eq!(
            pg_b.get("other", "t03").unwrap(),
            None,
            "tasks are per agent"
        );
        assert_eq!(pg_b.node_of("scribe", "t03").unwrap().as_deref(), Some("a"));
        // Pages of 10, newest first, every task once.
        let mut seen = Vec::new();
        let mut token = None;
        loop {
            let query = ListQuery {
                page_size: 10,
                page_token: token.clone(),
                ..ListQuery::default()
            };
            let page = pg_b.list("scribe", &query).unwrap();
            assert_eq!(page.total_size, 25);
            seen.extend(page.tasks.iter().map(|t| t.id.clone()));
            if page.next_page_token.is_empty() {
                break;
            }
            token = Some(page.next_page_token);
        }
        let expected: Vec<String> = (0..25).rev().map(|i| format!("t{i:02}")).collect();
        assert_eq!(seen, expected);
        // Filters: by context and by state.
        let odd = ListQuery {
            context_id: Some("odd".into()),
            ..ListQuery::default()
        };
        assert_eq!(pg_b.list("scribe", &odd).unwrap().total_size, 12);
        let working = ListQuery {
            state: Some(TaskState::Working),
            ..ListQuery::default()
        };
        assert_eq!(pg_b.list("scribe", &working).unwrap().total_size, 5);
        let bad = ListQuery {
            page_token: Some("not-a-token".into()),
            ..ListQuery::default()
        };
        assert_eq!(pg_b.list("scribe", &bad), Err(StoreError::InvalidPageToken));
        // Unfinished tasks are the node's own: b saved none.
        assert_eq!(pg_a.unfinished().unwrap().len(), 5);
        assert!(pg_b.unfinished().unwrap().is_empty());
        // b takes one over by saving it: now it is b's.
        let mut taken = pg_b.get("scribe", "t22").unwrap().unwrap();
        taken.set_status(TaskState::Canceled, None).unwrap();
        pg_b.save("scribe", &taken).wait_blocking().unwrap();
        assert_eq!(pg_a.node_of("scribe", "t22").unwrap().as_deref(), Some("b"));
        assert_eq!(pg_a.unfinished().unwrap().len(), 4);
        // Push configs: replaced by id, listed oldest first, deleted.
        let hook = |id: &str, url: &str| webhook(id, "t24", url);
        pg_a.put_push_config("scribe", &hook("h1", "http://one"))
            .wait_blocking()
            .unwrap();
        pg_a.put_push_config("scribe", &hook("h2", "http://two"))
            .wait_blocking()
            .unwrap();
        pg_b.put_push_config("scribe", &hook("h1", "http://uno"))
            .wait_blocking()
            .unwrap();
        let hooks = pg_a.push_configs("scribe", "t24").unwrap();
        let urls: Vec<_> = hooks.iter().map(|h| h.url.as_str()).collect();
        assert_eq!(urls, ["http://uno", "http://two"]);
        pg_b.delete_push_config("scribe", "t24", "h1")
            .wait_blocking()
            .unwrap();
        pg_b.delete_push_config("scribe", "t24", "gone")
            .wait_blocking()
            .unwrap();
        assert_eq!(pg_a.push_configs("scribe", "t24").unwrap().len(), 1);
        // A store reopened (a restart) finds everything.
        drop(pg_a);
        let again = PgStore::open(options(&url, "a")).unwrap();
        assert_eq!(
            again
                .list("scribe", &ListQuery::default())
                .unwrap()
                .total_size,
            25
        );
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn retention_deletes_only_finished_tasks_and_their_push_configs() {
    let pg = Postgres::start().await;
    let url = pg.url.clone();
    tokio::task::spawn_blocking(move || {
        let mut opts = options(&url, "a");
        opts.retention.max_tasks = Some(3);
        let store = PgStore::open(opts).unwrap();
        for i in 0..6 {
            let mut t = task(&format!("r{i}"), "c");
            if i % 2 == 0 {
                t.set_status(TaskState::Completed, None).unwrap();
            }
            store.save("scribe", &t).wait_blocking().unwrap();
        }
        let hook = webhook("h", "r0", "http://x");
        store
            .put_push_config("scribe", &hook)
            .wait_blocking()
            .unwrap();
        // Six tasks, at most three kept: the three finished ones go, the
        // unfinished stay whatever the limit says.
        assert_eq!(store.retain_now().unwrap(), 3);
        let left = store.list("scribe", &ListQuery::default()).unwrap();
        let mut ids: Vec<_> = left.tasks.iter().map(|t| t.id.as_str()).collect();
        ids.sort();
        assert_eq!(ids, ["r1", "r3", "r5"]);
        assert!(store.push_configs("scribe", "r0").unwrap().is_empty());
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn each_task_keeps_its_owner_across_nodes_and_lists_filter_by_it() {
    let pg = Postgres::start().await;
    let url = pg.url.clone();
    tokio::task::spawn_blocking(move || {
        let a = PgStore::open(options(&url, "a")).unwrap();
        let b = PgStore::open(options(&url, "b")).unwrap();
        for (i, owner) in ["alice", "bob", "alice", ""].iter().enumerate() {
            let mut t = task(&format!("o{i}"), "c");
            t.owner = owner.to_string();
            a.save("scribe", &t).wait_blocking().unwrap();
        }
        assert_eq!(b.get("scribe", "o1").unwrap().unwrap().owner, "bob");
        let owned = |owner: &str| {
            let query = ListQuery {
                owner: Some(owner.into()),
                ..ListQuery::default()
            };
            let page = b.list("scribe", &query).unwrap();
            let mut ids: Vec<String> = page.tasks.iter().map(|t| t.id.clone()).collect();
            ids.sort();
            (ids, page.total_size)
        };
        assert_eq!(owned("alice"), (vec!["o0".into(), "o2".into()], 2));
        assert_eq!(owned(""), (vec!["o3".into()], 1));
        assert_eq!(owned("mallory"), (vec![], 0));
        assert_eq!(b.open_tasks("scribe", "alice").unwrap(), 2);
        assert_eq!(b.open_tasks("scribe", "mallory").unwrap(), 0);
        let left = b.unfinished_of("a").unwrap();
        assert!(left.iter().any(|(_, t)| t.id == "o1" && t.owner == "bob"));
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_is_not_there_is_a_clear_error() {
    let port = free_port();
    let url = format!("postgres://wharf:secret@127.0.0.1:{port}/postgres");
    let err = tokio::task::spawn_blocking(move || PgStore::open(options(&url, "a")).err())
        .await
        .unwrap()
        .expect("no server, no store");
    let text = err.to_string();
    assert!(text.starts_with("cannot open the task store"), "{text}");
    assert!(
        text.contains(&format!("wharf:***@127.0.0.1:{port}")),
        "{text}"
    );
    assert!(
        !text.contains("secret"),
        "the password is not shown: {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_gone_is_an_error_and_back_the_store_goes_on_losing_nothing() {
    let mut pg = Postgres::start().await;
    let url = pg.url.clone();
    let store = tokio::task::spawn_blocking(move || PgStore::open(options(&url, "a")).unwrap());
    let store = std::sync::Arc::new(store.await.unwrap());
    let s = store.clone();
    tokio::task::spawn_blocking(move || {
        let mut t = task("before", "c");
        t.set_status(TaskState::Completed, None).unwrap();
        s.save("scribe", &t).wait_blocking().unwrap();
    })
    .await
    .unwrap();
    pg.stop();
    let s = store.clone();
    let (saved, read) = tokio::task::spawn_blocking(move || {
        let saved = s.save("scribe", &task("during", "c")).wait_blocking();
        (saved, s.get("scribe", "before"))
    })
    .await
    .unwrap();
    assert!(matches!(saved, Err(StoreError::Database(_))), "{saved:?}");
    assert!(matches!(read, Err(StoreError::Database(_))), "{read:?}");
    pg.start_again().await;
    let s = store.clone();
    tokio::task::spawn_blocking(move || {
        // The store reconnects by itself: what was committed is there.
        let before = s.get("scribe", "before").unwrap().expect("kept");
        assert_eq!(before.status.state, TaskState::Completed);
        s.save("scribe", &task("after", "c"))
            .wait_blocking()
            .unwrap();
        assert!(s.get("scribe", "after").unwrap().is_some());
        assert_eq!(
            s.failed_writes.load(std::sync::atomic::Ordering::Relaxed),
            1
        );
    })
    .await
    .unwrap();
}
