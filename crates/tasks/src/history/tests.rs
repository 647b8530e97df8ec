//! The history on a real file: ids, retention by count and age, reads by
//! cursor, time and content, the scan bound, and a reopen.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::*;

fn keep(pattern: &str, n: u64) -> TopicKeep {
    TopicKeep {
        pattern: pattern.into(),
        keep: n,
        age: None,
    }
}

fn open(dir: &tempfile::TempDir, keeps: Vec<TopicKeep>) -> Arc<History> {
    Arc::new(History::open(&dir.path().join("topics.db"), keeps, DEFAULT_MAX_BACKLOG).unwrap())
}

fn put(h: &History, keep: &str, topic: &str, payload: &str) -> u64 {
    h.append(
        &Arc::from(keep),
        topic,
        &Bytes::from(payload.to_string()),
        0,
    )
    .unwrap()
    .0
}

fn texts(page: &Page) -> Vec<String> {
    page.messages
        .iter()
        .map(|m| String::from_utf8(m.payload.clone()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_by_cursor_order_topic_and_content() {
    let dir = tempfile::tempdir().unwrap();
    let h = open(&dir, vec![keep("a.>", 100)]);
    let mut ids = Vec::new();
    for n in 0..10 {
        let topic = if n % 2 == 0 { "a.even" } else { "a.odd.x" };
        ids.push(put(
            &h,
            "a.>",
            topic,
            &format!("m{n} {}", if n == 7 { "needle" } else { "hay" }),
        ));
    }
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");

    let all = h.read(Query::new("a.>", 4)).await.unwrap();
    assert_eq!(texts(&all), ["m0 hay", "m1 hay", "m2 hay", "m3 hay"]);
    assert_eq!(all.next, Some(ids[3]));
    let mut q = Query::new("a.>", 4);
    q.after = all.next;
    assert_eq!(texts(&h.read(q).await.unwrap())[0], "m4 hay");

    let mut newest = Query::new("a.>", 2);
    newest.newest_first = true;
    let page = h.read(newest.clone()).await.unwrap();
    assert_eq!(texts(&page), ["m9 hay", "m8 hay"]);
    newest.before = page.next;
    assert_eq!(
        texts(&h.read(newest).await.unwrap()),
        ["m7 needle", "m6 hay"]
    );

    let mut odd = Query::new("a.*.x", 100);
    odd.contains = Some(b"needle".to_vec());
    assert_eq!(texts(&h.read(odd).await.unwrap()), ["m7 needle"]);
    let mut even = Query::new("a.even", 100);
    even.regex = Some(regex::bytes::Regex::new(r"^m[2-4] ").unwrap());
    assert_eq!(texts(&h.read(even).await.unwrap()), ["m2 hay", "m4 hay"]);
    assert!(
        h.read(Query::new("b.>", 10))
            .await
            .unwrap()
            .messages
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_time_range_is_the_messages_published_within_it() {
    let dir = tempfile::tempdir().unwrap();
    let h = open(&dir, vec![keep("t", 100)]);
    put(&h, "t", "t", "early");
    tokio::time::sleep(Duration::from_millis(30)).await;
    let since = now_ms();
    put(&h, "t", "t", "middle");
    tokio::time::sleep(Duration::from_millis(30)).await;
    let until = now_ms();
    tokio::time::sleep(Duration::from_millis(5)).await;
    put(&h, "t", "t", "late");
    let mut q = Query::new("t", 100);
    q.since_ms = Some(since);
    q.until_ms = Some(until);
    assert_eq!(texts(&h.read(q.clone()).await.unwrap()), ["middle"]);
    q.until_ms = None;
    assert_eq!(texts(&h.read(q.clone()).await.unwrap()), ["middle", "late"]);
    q.since_ms = Some(now_ms() + 60_000);
    assert!(h.read(q).await.unwrap().messages.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn retention_keeps_the_newest_per_pattern_and_says_what_it_lost() {
    let dir = tempfile::tempdir().unwrap();
    let h = open(&dir, vec![keep("a", 3), keep("b", 100)]);
    let a: Vec<u64> = (0..5).map(|n| put(&h, "a", "a", &n.to_string())).collect();
    let b = put(&h, "b", "b", "kept");
    h.settled_through(b).await.unwrap();
    // The writer trims a pattern over its `keep` after each batch, on its
    // own; asking makes sure it has.
    h.retain_now().unwrap();
    assert_eq!(
        texts(&h.read(Query::new("a", 10)).await.unwrap()),
        ["2", "3", "4"]
    );
    assert_eq!(texts(&h.read(Query::new("b", 10)).await.unwrap()), ["kept"]);
    assert_eq!(h.lost_after(0, |k| k == "a"), Some(a[1]));
    assert_eq!(h.lost_after(a[1], |k| k == "a"), None);
    assert_eq!(h.lost_after(0, |k| k == "b"), None);

    // A pattern dropped from the configuration loses what it kept.
    h.set_keeps(vec![keep("a", 3)]).unwrap();
    h.retain_now().unwrap();
    assert!(
        h.read(Query::new("b", 10))
            .await
            .unwrap()
            .messages
            .is_empty()
    );
    assert_eq!(h.lost_after(0, |k| k == "b"), Some(b));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_age_limit_deletes_older_messages() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = keep("a", 100);
    old.age = Some(Duration::from_millis(200));
    let h = open(&dir, vec![old]);
    put(&h, "a", "a", "old");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let young = put(&h, "a", "a", "young");
    h.settled_through(young).await.unwrap();
    h.retain_now().unwrap();
    assert_eq!(
        texts(&h.read(Query::new("a", 10)).await.unwrap()),
        ["young"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_examines_a_bounded_number_of_messages_and_says_where_to_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let h = open(&dir, vec![keep("a", 1_000_000)]);
    let total = MAX_SCAN + 10;
    let mut last = 0;
    for n in 0..total {
        last = put(&h, "a", "a", if n == total - 1 { "needle" } else { "hay" });
    }
    let mut q = Query::new("a", 10);
    q.contains = Some(b"needle".to_vec());
    let first = h.read(q.clone()).await.unwrap();
    assert!(first.messages.is_empty());
    let next = first.next.expect("a cursor past the scan bound");
    assert!(next < last);
    q.after = Some(next);
    let second = h.read(q).await.unwrap();
    assert_eq!(texts(&second), ["needle"]);
    assert_eq!(second.next, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reopened_history_keeps_its_messages_and_never_reuses_an_id() {
    let dir = tempfile::tempdir().unwrap();
    let first = {
        let h = open(&dir, vec![keep("a", 2)]);
        let ids: Vec<u64> = (0..3).map(|n| put(&h, "a", "a", &n.to_string())).collect();
        h.settled_through(ids[2]).await.unwrap();
        h.retain_now().unwrap();
        h.ack("audit", "a", ids[1]).unwrap();
        h.ack("audit", "a", ids[0]).unwrap(); // a cursor never goes back
        assert_eq!(h.cursor("audit", "a"), Some(ids[1]));
        ids
    };
    let h = open(&dir, vec![keep("a", 2)]);
    assert_eq!(h.cursor("audit", "a"), Some(first[1]));
    assert_eq!(h.cursor("audit", "b"), None);
    assert_eq!(
        texts(&h.read(Query::new("a", 10)).await.unwrap()),
        ["1", "2"]
    );
    assert_eq!(h.lost_after(0, |_| true), Some(first[0]));
    assert!(put(&h, "a", "a", "3") > first[2]);
    // A second process cannot open it meanwhile.
    let err = History::open(&dir.path().join("topics.db"), vec![], 1).err();
    assert!(matches!(err, Some(HistoryError::Held { .. })), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn appends_past_the_backlog_are_refused_not_held() {
    let dir = tempfile::tempdir().unwrap();
    let h = History::open(&dir.path().join("topics.db"), vec![keep("a", 10)], 8).unwrap();
    let big = Bytes::from(vec![b'x'; 9]);
    let err = h.append(&Arc::from("a"), "a", &big, 0).unwrap_err();
    assert!(matches!(err, HistoryError::Backlog { max: 8, .. }), "{err}");
    assert!(
        h.append(&Arc::from("a"), "a", &Bytes::from_static(b"ok"), 0)
            .is_ok()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_copy_takes_the_ids_it_is_given_and_starts_over_for_another_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("copy.db");
    let h = History::open_copy(&path, vec![keep("a.>", 100)], DEFAULT_MAX_BACKLOG).unwrap();
    assert_eq!(
        h.last_id(),
        0,
        "an empty copy starts before the log's first id"
    );
    let keep_a: Arc<str> = Arc::from("a.>");
    let add =
        |id: u64, ms: i64| h.append_at(&keep_a, "a.x", &Bytes::from_static(b"m"), 0, (id, ms));
    assert_eq!(add(3, 1_000).unwrap(), (3, 1_000));
    // A time that goes backwards is raised to the one before.
    assert_eq!(add(7, 900).unwrap(), (7, 1_000));
    // An id at or below the last is refused.
    assert!(matches!(add(7, 2_000), Err(HistoryError::Database(_))));
    let h = Arc::new(h);
    let ids: Vec<u64> = h
        .read(Query::new("a.>", 10))
        .await
        .unwrap()
        .messages
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, [3, 7]);
    assert_eq!(h.origin(), None);
    h.start_over("stream 2").unwrap();
    assert_eq!(h.last_id(), 0);
    assert_eq!(h.origin().as_deref(), Some("stream 2"));
    assert!(
        h.read(Query::new("a.>", 10))
            .await
            .unwrap()
            .messages
            .is_empty()
    );
    assert_eq!(add_again(&h), 1);
    drop(h);
    // Reopened, it goes on after what it holds.
    let h = History::open_copy(&path, vec![keep("a.>", 100)], DEFAULT_MAX_BACKLOG).unwrap();
    assert_eq!(h.last_id(), 1);
    assert_eq!(h.origin().as_deref(), Some("stream 2"));
}

fn add_again(h: &History) -> u64 {
    h.append_at(&Arc::from("a.>"), "a.x", &Bytes::new(), 0, (1, 5))
        .unwrap()
        .0
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_is_bounded_in_bytes_and_held_in_the_read_budget() {
    let dir = tempfile::tempdir().unwrap();
    let h = open(&dir, vec![keep("big", 1000)]);
    let mib = "x".repeat(1 << 20);
    let ids: Vec<u64> = (0..10).map(|_| put(&h, "big", "big", &mib)).collect();
    // Ten messages of 1 MiB, a page of a thousand asked: four MiB answered,
    // and `next` goes on after the fourth.
    let page = h.read(Query::new("big", 1000)).await.unwrap();
    assert_eq!(page.messages.len(), 4);
    assert_eq!(page.bytes(), 4 << 20);
    assert_eq!(page.next, Some(ids[3]));
    assert_eq!(page.hold.kib(), 4096);
    drop(page);
    // Newest first, with fewer bytes asked.
    let mut q = Query::new("big", 1000);
    q.newest_first = true;
    q.max_bytes = 2 << 20;
    let page = h.read(q).await.unwrap();
    assert_eq!(
        page.messages.iter().map(|m| m.id).collect::<Vec<_>>(),
        [ids[9], ids[8]]
    );
    assert_eq!(page.next, Some(ids[8]));
    drop(page);
    // A message larger than the page's bytes is answered alone.
    let mut q = Query::new("big", 1000);
    q.max_bytes = 1000;
    let page = h.read(q).await.unwrap();
    assert_eq!(page.messages.len(), 1);
    assert_eq!(page.hold.kib(), 1024);
    drop(page);

    // Pages held take the budget: with all of it held, a read waits, and
    // goes on once a page is dropped.
    let mut held = Vec::new();
    while held.iter().map(|p: &Page| p.hold.kib()).sum::<usize>() < READ_BUDGET >> 10 {
        held.push(h.read(Query::new("big", 1000)).await.unwrap());
    }
    let waiting = tokio::spawn({
        let h = h.clone();
        async move { h.read(Query::new("big", 1)).await.unwrap().messages.len() }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "a read past the budget waits");
    drop(held.pop());
    assert_eq!(waiting.await.unwrap(), 1);
}
