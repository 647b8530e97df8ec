//! `reflect`: the backend the CRS regression suite expects behind a WAF
//! (as go-ftw's albedo): `POST /reflect` with a JSON body
//! `{"status":…, "headers":{…}, "body":"…", "encodedBody":"base64…"}` is
//! answered with that status, those headers and that body; any other
//! request gets `200 ok`. `scripts/conformance/crs-conformance.sh` serves it behind
//! the `waf` filter so response-phase rules see the answers the cases
//! describe.

use serde_json::Value;
use wharf_guest::{Card, Error, Head, Health, Request, Response, headers_with};

struct Reflect;

impl wharf_guest::Guest for Reflect {
    fn handle(req: Request) -> Result<Response, Error> {
        let head = Head::decode(&req.head).map_err(|e| Error::BadRequest(e.into()))?;
        if !head.path.starts_with("/reflect") {
            return Ok(Response::new(200, "ok"));
        }
        let spec: Value = serde_json::from_slice(&req.body)
            .map_err(|e| Error::BadRequest(format!("reflect: {e}")))?;
        let status = spec["status"].as_u64().unwrap_or(200) as u16;
        let body = match (spec["encodedBody"].as_str(), spec["body"].as_str()) {
            (Some(b64), _) => base64(b64),
            (None, Some(text)) => text.as_bytes().to_vec(),
            (None, None) => Vec::new(),
        };
        let pairs: Vec<(String, String)> = spec["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.to_ascii_lowercase(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let mut borrowed: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if !pairs.iter().any(|(k, _)| k == "content-type") {
            borrowed.push(("content-type", "text/plain"));
        }
        let mut resp = Response::new(status, body);
        resp.headers = headers_with(&[], &borrowed).map_err(|e| Error::Internal(e.into()))?;
        Ok(resp)
    }

    fn describe() -> Card {
        Card::simple(
            "reflect",
            env!("CARGO_PKG_VERSION"),
            "Test fixture: answers as its request asks (CRS regression suite backend)",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

/// Standard base64, padding and whitespace ignored.
fn base64(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut acc, mut n) = (0u32, 0);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => continue,
        } as u32;
        acc = (acc << 6) | v;
        n += 1;
        if n == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            (acc, n) = (0, 0);
        }
    }
    match n {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => {}
    }
    out
}

wharf_guest::export_agent!(Reflect);
