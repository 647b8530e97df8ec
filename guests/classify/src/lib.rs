//! `classify`: a keyword classifier. The body is UTF-8 text; words are runs
//! of ASCII letters and digits, lower-cased. The answer is JSON:
//! `{"words":W,"labels":[{"label":L,"hits":H,"score":S},...]}`, labels with
//! hits only, most hits first (ties in table order), S = H*1000/total hits.
//! Every language's classify agent answers exactly this way.

use std::fmt::Write;

use wharf_guest::{Card, Error, Health, Request, Response, headers_with};

const LABELS: [(&str, [&str; 5]); 3] = [
    (
        "billing",
        ["invoice", "refund", "charge", "payment", "price"],
    ),
    ("outage", ["down", "error", "outage", "timeout", "crash"]),
    (
        "security",
        ["password", "breach", "phishing", "leak", "hacked"],
    ),
];

struct Classify;

impl wharf_guest::Guest for Classify {
    fn handle(req: Request) -> Result<Response, Error> {
        let text = std::str::from_utf8(&req.body)
            .map_err(|_| Error::BadRequest("body is not UTF-8".into()))?;
        let mut hits = [0usize; LABELS.len()];
        let mut words = 0;
        for word in text
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            words += 1;
            let word = word.to_ascii_lowercase();
            if let Some(label) = LABELS.iter().position(|(_, k)| k.contains(&word.as_str())) {
                hits[label] += 1;
            }
        }
        let total: usize = hits.iter().sum();
        let mut order: Vec<usize> = (0..LABELS.len()).filter(|&l| hits[l] > 0).collect();
        order.sort_by_key(|&l| std::cmp::Reverse(hits[l]));
        let mut body = format!(r#"{{"words":{words},"labels":["#);
        for (n, &l) in order.iter().enumerate() {
            let sep = if n > 0 { "," } else { "" };
            let (name, count) = (LABELS[l].0, hits[l]);
            let score = count * 1000 / total;
            let _ = write!(
                body,
                r#"{sep}{{"label":"{name}","hits":{count},"score":{score}}}"#
            );
        }
        body.push_str("]}");
        let headers = headers_with(&[], &[("content-type", "application/json")])
            .map_err(|e| Error::Internal(e.into()))?;
        Ok(Response {
            status: 200,
            headers,
            body: body.into_bytes(),
        })
    }

    fn describe() -> Card {
        Card::simple(
            "classify",
            env!("CARGO_PKG_VERSION"),
            "Labels text by keywords, with scores (Rust)",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Classify);
