//! `waf`: a web application firewall filter around Wharf's own SecLang
//! engine (`policies/seclang`). It runs Wharf's baseline rules, the
//! embedded OWASP Core Rule Set 4 (`ruleset "crs"`) or rule files granted
//! at `/files`; the four phases map onto ModSecurity's phases 1–4 on one
//! transaction per request. This file is the adapter: the host's head,
//! headers and bodies in, verdicts out.
//!
//! Config (per filter, overridable per route; docs/filters.md):
//! - `ruleset`: `"baseline"` (the default without `rules`), `"crs"`, or
//!   `"none"` (the default with `rules`);
//! - `rules`: rule files below `/files`, loaded after the rule set;
//! - `paranoia` (1–4), `detection-paranoia`, `anomaly-threshold`;
//! - `max-arguments`, `max-body`, `max-depth`, `max-time-ms` and
//!   `past-limit` (`"block"`, the default, or `"pass"`);
//! - `engine`: `"on"` (the rule set's own `SecRuleEngine` otherwise),
//!   `"detection-only"` (every rule runs, nothing is decided) or `"off"`;
//! - `response`: `"on"` inspects responses too (phases 3 and 4).

mod engine;
mod report;

use std::cell::RefCell;
use std::rc::Rc;

use engine::{Engine, fail};
use seclang::{Scratch, Transaction};
use wharf_guest::filter::{Decision, Phases, Verdict};
use wharf_guest::{Head, config, header_pairs};

/// The current request's transaction and how many of its matches the
/// filter has reported, from its first phase to its last.
struct Current {
    _engine: Rc<Engine>,
    tx: Transaction,
    reported: usize,
    /// Whether the decision was reported already (a filter in detect
    /// mode is called for the later phases too).
    decided: bool,
}

thread_local! {
    static TX: RefCell<Option<Current>> = const { RefCell::new(None) };
    /// The buffers of the transaction before, for the next one (a warm
    /// instance then grows them once, not on every request).
    static SPARE: RefCell<Scratch> = RefCell::default();
}

/// A new transaction of `engine`, in the memory of the one before.
fn transaction(engine: &Engine) -> Transaction {
    let spare = TX
        .with(|t| t.borrow_mut().take())
        .map(|cur| cur.tx.into_scratch())
        .unwrap_or_else(|| SPARE.take());
    Transaction::reusing(engine.rules.clone(), engine.limits, spare)
}

/// Starts the request's transaction: connection, request line, headers.
fn begin(engine: &Rc<Engine>, head: &Head, headers: &[u8]) -> Result<Transaction, String> {
    let mut tx = transaction(engine);
    if !head.id.is_empty() {
        tx.set_unique_id(&head.id);
    }
    let (ip, port) = head.client.rsplit_once(':').unwrap_or((&head.client, "0"));
    tx.connection(
        ip.trim_matches(['[', ']']),
        port.parse().unwrap_or(0),
        "127.0.0.1",
        0,
    );
    let uri = if head.query.is_empty() {
        head.path.clone()
    } else {
        format!("{}?{}", head.path, head.query)
    };
    tx.request_line(&head.method, &uri, "HTTP/1.1");
    for (name, value) in header_pairs(headers).map_err(|e| format!("headers: {e}"))? {
        tx.request_header(name.as_bytes(), value);
    }
    Ok(tx)
}

/// Runs `step` on the request's transaction and reports what it found
/// since the last report.
fn step(f: impl FnOnce(&mut Transaction)) -> Verdict {
    TX.with(|t| {
        let mut slot = t.borrow_mut();
        let Some(cur) = slot.as_mut() else {
            return Verdict::allow();
        };
        f(&mut cur.tx);
        let matched = cur.tx.matched();
        let v = report::verdict(&cur.tx, &matched[cur.reported..], !cur.decided);
        cur.reported = matched.len();
        cur.decided |= cur.tx.intervention().is_some();
        v
    })
}

/// Whether a body comes (otherwise phase 2 runs at once): as the host
/// knows it, else as the headers announce it.
fn has_body(head: &Head, headers: &[u8]) -> bool {
    if let Some(known) = head.has_body {
        return known;
    }
    header_pairs(headers)
        .unwrap_or_default()
        .iter()
        .any(|(n, v)| (*n == "content-length" && *v != b"0") || *n == "transfer-encoding")
}

struct Waf;

unsafe extern "C" {
    /// wasi-libc's: forgets the preopened directories it has looked up.
    fn __wasilibc_reset_preopens();
}

impl wharf_guest::filter::PreinitGuest for Waf {
    /// Compiles the rule set of the filter's own config at load time; the
    /// host snapshots the instance, so no instance compiles it again.
    fn preinit() {
        warm_up(&engine::current());
        // The preopens wasi-libc looked up are handles of this instance,
        // stale in the snapshot: later rule loads must look them up anew.
        unsafe { __wasilibc_reset_preopens() }
    }

    fn phases() -> Phases {
        let mut p = Phases::REQUEST_HEADERS | Phases::REQUEST_BODY;
        if config("response").as_deref() == Some("on") {
            p |= Phases::RESPONSE_HEADERS | Phases::RESPONSE_BODY;
        }
        p
    }

    fn on_request_headers(head: Vec<u8>, headers: Vec<u8>) -> Verdict {
        let head = Head::decode(&head).unwrap_or_else(|e| fail(&format!("head: {e}")));
        let engine = engine::for_route(&head.agent);
        let tx = begin(&engine, &head, &headers).unwrap_or_else(|e| fail(&e));
        TX.with(|t| {
            *t.borrow_mut() = Some(Current {
                _engine: engine,
                tx,
                reported: 0,
                decided: false,
            });
        });
        let v = step(|tx| {
            tx.process_request_headers();
        });
        if !matches!(v.decision, Decision::Allow) {
            return v;
        }
        if has_body(&head, &headers) {
            return report::merge(v, Verdict::allow().want_body());
        }
        // No body: phase 2 (where the ARGS rules live) runs now.
        report::merge(
            v,
            step(|tx| {
                tx.process_request_body();
            }),
        )
    }

    fn on_request_body(_head: Vec<u8>, _headers: Vec<u8>, body: Vec<u8>) -> Verdict {
        step(|tx| {
            tx.request_body(&body);
            tx.process_request_body();
        })
    }

    fn on_response_headers(
        _head: Vec<u8>,
        _headers: Vec<u8>,
        status: u16,
        resp: Vec<u8>,
    ) -> Verdict {
        step(|tx| {
            tx.response_status(status, "HTTP/1.1");
            for (name, value) in header_pairs(&resp).unwrap_or_default() {
                tx.response_header(name.as_bytes(), value);
            }
            tx.process_response_headers();
        })
        .want_body()
    }

    fn on_response_body(
        _head: Vec<u8>,
        _headers: Vec<u8>,
        _status: u16,
        _resp: Vec<u8>,
        body: Vec<u8>,
    ) -> Verdict {
        step(|tx| {
            tx.response_body(&body);
            tx.process_response_body();
        })
    }
}

/// Inputs `preinit` runs through the engine: one clean request, then one
/// of each attack class. Matching builds each regex's lazy search state;
/// run here, that state is in the snapshot instead of being built by
/// every fresh instance.
const WARM_UP: &[&str] = &[
    "wharf",
    "1' OR '1'='1",
    "<script>alert(1)</script>",
    "../../../../etc/passwd",
    "; cat /etc/passwd",
    "${jndi:ldap://x/a}",
];

/// Runs the [`WARM_UP`] inputs as query and form values through every
/// phase, each in its own transaction.
fn warm_up(engine: &Engine) {
    for input in WARM_UP {
        let encoded: String = input
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'_' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let body = format!("name=wharf&q={encoded}");
        let mut tx = transaction(engine);
        tx.connection("127.0.0.1", 40000, "127.0.0.1", 0);
        tx.request_line("POST", &format!("/warm-up?q={encoded}"), "HTTP/1.1");
        let length = body.len().to_string();
        for (name, value) in [
            ("host", "localhost"),
            ("user-agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0"),
            ("accept", "*/*"),
            ("content-type", "application/x-www-form-urlencoded"),
            ("content-length", length.as_str()),
            ("cookie", "session=wharf"),
        ] {
            tx.request_header(name.as_bytes(), value.as_bytes());
        }
        tx.process_request_headers();
        tx.request_body(body.as_bytes());
        tx.process_request_body();
        tx.response_status(200, "HTTP/1.1");
        tx.response_header(b"content-type", b"text/plain");
        tx.process_response_headers();
        tx.response_body(b"warm");
        tx.process_response_body();
        tx.process_logging();
        SPARE.set(tx.into_scratch());
    }
}

wharf_guest::export_filter_preinit!(Waf);
