//! `counter`: keeps a count per session (the request's affinity key) in the
//! instance's memory and answers with it, so a session that stays on one
//! warm instance sees its count grow. Sessions never see each other's
//! counts. For tests: a body of `trap` traps, `grow N` keeps N more KiB,
//! `sick` makes this instance report itself unhealthy from then on, and
//! `busy N` computes for N milliseconds before answering.

use std::cell::RefCell;
use std::collections::HashMap;

use wharf_guest::{Card, Error, Health, Request, Response, Skill};

thread_local! {
    static COUNTS: RefCell<HashMap<String, u64>> = RefCell::new(HashMap::new());
    static HOARD: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    static SICK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

struct Counter;

impl wharf_guest::Guest for Counter {
    fn handle(req: Request) -> Result<Response, Error> {
        let head = wharf_guest::Head::decode(&req.head)
            .map_err(|e| Error::BadRequest(format!("unreadable request head: {e}")))?;
        match req.body.as_slice() {
            b"trap" => panic!("asked to trap"),
            b"sick" => SICK.with(|s| s.set(true)),
            body if body.starts_with(b"busy ") => {
                let ms: u64 = std::str::from_utf8(&body[5..])
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .ok_or_else(|| Error::BadRequest("busy takes milliseconds".into()))?;
                let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
                while std::time::Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
            body if body.starts_with(b"grow ") => {
                let kib: usize = std::str::from_utf8(&body[5..])
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .ok_or_else(|| Error::BadRequest("grow takes a number of KiB".into()))?;
                HOARD.with(|h| h.borrow_mut().push(vec![1u8; kib << 10]));
            }
            _ => {}
        }
        let session = if head.affinity.is_empty() {
            "-"
        } else {
            head.affinity.as_str()
        };
        let count = COUNTS.with(|c| {
            let mut counts = c.borrow_mut();
            let n = counts.entry(session.to_string()).or_insert(0);
            *n += 1;
            *n
        });
        Ok(Response::new(200, format!("{session} {count}")))
    }

    fn describe() -> Card {
        Card {
            name: "counter".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Counts requests per session in a warm instance".into(),
            skills: vec![Skill {
                id: "count".into(),
                name: "Count".into(),
                description: "Answers with how many requests this session has made".into(),
                tags: vec!["stateful".into()],
            }],
        }
    }

    fn health() -> Health {
        if SICK.with(|s| s.get()) {
            Health::Unhealthy("asked to be sick".into())
        } else {
            Health::Ok
        }
    }
}

wharf_guest::export_agent!(Counter);
