//! The requests the engine benchmarks run, and how they are run: a clean
//! 1 KiB form, a form with one 60 KiB text field, 64 KiB of ~4,700 short
//! fields, a prose form from 1 KiB to 1 MiB (the linearity curve), and an
//! attack; each through Wharf's engine settings and either CRS at
//! paranoia level 1 or Wharf's baseline rules.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use seclang::{Limits, RuleSet, Scratch, Transaction};

/// One request: URI, headers, body (always a POST).
pub struct Req {
    pub name: String,
    pub uri: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// A file of the `waf` policy (`policies/waf/rules/NAME`).
pub fn waf_rules(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../waf/rules")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The rule set the `waf` filter runs: its engine settings, then CRS at
/// paranoia level 1 or the baseline.
pub fn rules(crs: bool) -> RuleSet {
    let engine = waf_rules("wharf-engine.conf");
    if crs {
        seclang::crs::rule_set(&engine, &seclang::crs::Settings::default(), "").unwrap()
    } else {
        RuleSet::from_text(&format!("{engine}\n{}", waf_rules("wharf-baseline.conf"))).unwrap()
    }
}

/// Runs `r` through phases 1, 2 and 5; whether it was blocked. Never
/// inlined, so a profiler can count what it costs.
#[inline(never)]
pub fn run(rules: &Arc<RuleSet>, r: &Req) -> bool {
    let limits = Limits {
        body_bytes: 2 << 20,
        ..Limits::default()
    };
    let mut tx = Transaction::reusing(rules.clone(), limits, SPARE.take());
    tx.connection("203.0.113.7", 50412, "127.0.0.1", 8080);
    tx.request_line("POST", &r.uri, "HTTP/1.1");
    for (n, v) in &r.headers {
        tx.request_header(n.as_bytes(), v.as_bytes());
    }
    let mut blocked = tx.process_request_headers().is_some();
    if !blocked {
        tx.request_body(&r.body);
        blocked = tx.process_request_body().is_some();
    }
    tx.process_logging();
    SPARE.set(tx.into_scratch());
    blocked
}

thread_local! {
    /// The buffers of the request before, as the `waf` filter keeps them.
    static SPARE: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

const PROSE: &str = "The quick brown fox jumps over the lazy dog while the harbour master counts the boats that come in with the evening tide, and the shipping office stays open until the last manifest is filed. ";

fn headers(len: usize) -> Vec<(&'static str, String)> {
    vec![
        ("Host", "shop.example.com".into()),
        ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36".into()),
        ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8".into()),
        ("Accept-Language", "en-GB,en;q=0.9".into()),
        ("Accept-Encoding", "gzip, deflate, br".into()),
        ("Content-Type", "application/x-www-form-urlencoded".into()),
        ("Content-Length", len.to_string()),
        ("Cookie", "session=7f3a9c2e41b8d6f0a5c3e9b1d7f2a4c8; theme=dark".into()),
        ("Referer", "https://shop.example.com/checkout".into()),
    ]
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'_' => (b as char).to_string(),
            b' ' => "+".into(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn form(name: &str, fields: &[(&str, String)]) -> Req {
    let body = fields
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect::<Vec<_>>()
        .join("&")
        .into_bytes();
    Req {
        name: name.into(),
        uri: "/checkout/confirm?step=2&lang=en".into(),
        headers: headers(body.len()),
        body,
    }
}

fn prose(len: usize) -> String {
    PROSE.repeat(len / PROSE.len() + 1)[..len].to_string()
}

/// A clean form of about `size` bytes: nine ordinary fields and a comment.
pub fn clean_form(size: usize) -> Req {
    let mut fields = vec![
        ("first_name", "Ishmael".to_string()),
        ("last_name", "Starbuck-Queequeg".to_string()),
        ("email", "ishmael@pequod.example".to_string()),
        ("phone", "+44 20 7946 0958".to_string()),
        ("street", "12 Harbour Street".to_string()),
        ("city", "Nantucket".to_string()),
        ("postcode", "02554".to_string()),
        ("quantity", "3".to_string()),
        ("accept_terms", "on".to_string()),
    ];
    let used: usize = fields.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    fields.push(("comment", prose(size.saturating_sub(used + 8).max(16))));
    form(&format!("clean form {}", human(size)), &fields)
}

/// The form the in-process filter benchmarks (`benches/filters.rs`) send:
/// `name=Ishmael&note=aaa…`, `size` bytes.
pub fn filler_form(size: usize) -> Req {
    let note = "a".repeat(size.saturating_sub(18));
    form(
        &format!("filler form {}", human(size)),
        &[("name", "Ishmael".into()), ("note", note)],
    )
}

/// `total` bytes of short fields (`f0001=v0001&…`).
pub fn many_fields(total: usize) -> Req {
    let mut body = String::new();
    let mut i = 0;
    while body.len() + 12 < total {
        if !body.is_empty() {
            body.push('&');
        }
        body.push_str(&format!("f{i:04}=v{i:04}"));
        i += 1;
    }
    Req {
        name: format!("{i} fields in {}", human(total)),
        uri: "/bulk".into(),
        headers: headers(body.len()),
        body: body.into_bytes(),
    }
}

/// A request carrying a SQL injection and an XSS payload.
pub fn attack() -> Req {
    form(
        "attack",
        &[
            (
                "q",
                "1' OR '1'='1' UNION SELECT password FROM users--".to_string(),
            ),
            (
                "comment",
                "<script>alert(document.cookie)</script>".to_string(),
            ),
        ],
    )
}

pub fn human(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{} KiB", n >> 10)
    }
}
