//! A transaction made in the memory of the one before
//! (`Transaction::reusing`) answers exactly as a new one: the same rules
//! matched, the same decision, the same scores, whatever the request
//! before held (its `TX` variables are kept unset).

use std::sync::Arc;

use seclang::{Limits, RuleSet, Scratch, Transaction};

/// One request: URI, cookie, body (a form).
struct Req {
    uri: &'static str,
    cookie: &'static str,
    body: String,
}

fn requests() -> Vec<Req> {
    let many: String = (0..3000)
        .map(|i| format!("f{i}=v{}", i % 7))
        .collect::<Vec<_>>()
        .join("&");
    let req = |uri, cookie, body: &str| Req {
        uri,
        cookie,
        body: body.into(),
    };
    vec![
        req("/?q=1%27%20OR%20%271%27%3D%271", "s=1", "a=b"),
        req("/shop?item=boat", "s=1", "name=harbour&note=evening+tide"),
        req("/", "x=<script>alert(1)</script>", "c=d"),
        req(
            "/search",
            "s=1",
            "q=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E",
        ),
        Req {
            uri: "/bulk",
            cookie: "s=2",
            body: many,
        },
        req("/files?p=../../../../etc/passwd", "s=1", "e=f"),
        req("/", "s=1", "cmd=%3B%20cat%20%2Fetc%2Fpasswd"),
        req("/shop?item=boat", "s=1", "name=harbour&note=evening+tide"),
    ]
}

/// `TX` variables CRS scores in (set only by the rules that matched).
const SCORES: [&str; 6] = [
    "sql_injection_score",
    "xss_score",
    "rce_score",
    "lfi_score",
    "inbound_anomaly_score_pl1",
    "blocking_inbound_anomaly_score",
];

/// What one run answered: the matched rule ids, the status of an
/// intervention, and the scores.
type Answer = (Vec<u32>, Option<u16>, Vec<Option<String>>);

/// Runs `r`; its answer, and what the transaction leaves behind.
fn run(rules: &Arc<RuleSet>, r: &Req, scratch: Scratch) -> (Answer, Scratch) {
    let mut tx = Transaction::reusing(rules.clone(), Limits::default(), scratch);
    tx.connection("203.0.113.7", 50412, "127.0.0.1", 8080);
    tx.request_line("POST", r.uri, "HTTP/1.1");
    let length = r.body.len().to_string();
    for (n, v) in [
        ("Host", "shop.example.com"),
        (
            "User-Agent",
            "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0",
        ),
        ("Accept", "text/html"),
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Content-Length", length.as_str()),
        ("Cookie", r.cookie),
    ] {
        tx.request_header(n.as_bytes(), v.as_bytes());
    }
    let mut status = tx.process_request_headers().map(|i| i.status);
    if status.is_none() {
        tx.request_body(r.body.as_bytes());
        status = tx.process_request_body().map(|i| i.status);
    }
    tx.process_logging();
    let ids = tx.matched().iter().map(|m| m.id).collect();
    let scores = SCORES.iter().map(|k| tx.var("tx", k)).collect();
    ((ids, status, scores), tx.into_scratch())
}

#[test]
fn a_transaction_in_reused_memory_answers_as_a_new_one() {
    let engine = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../waf/rules/wharf-engine.conf"),
    )
    .unwrap();
    let crs =
        Arc::new(seclang::crs::rule_set(&engine, &seclang::crs::Settings::default(), "").unwrap());
    let reqs = requests();
    let mut scratch = Scratch::default();
    let mut blocked = 0;
    // Twice through, so every request follows one unlike it.
    for r in reqs.iter().chain(reqs.iter().rev()) {
        let (fresh, _) = run(&crs, r, Scratch::default());
        let (answer, left) = run(&crs, r, scratch);
        scratch = left;
        assert_eq!(answer, fresh, "{}", r.uri);
        blocked += usize::from(answer.1.is_some());
        // A blocked request was scored: the scores compared are real.
        let score = answer.2[5].as_deref().unwrap_or("0");
        assert_eq!(answer.1.is_some(), score != "0", "{} scored {score}", r.uri);
    }
    // The five attacks are blocked and the three clean requests are
    // not: the comparison is between real decisions.
    assert_eq!(blocked, 2 * 5);
}
