//! `sniff`: test fixture, a filter that reads the request body in pieces as
//! it arrives (the `filter-streaming` world). It blocks (403, rule
//! `sniff-deny`) when the bytes of config `deny` (default `EVIL`) appear in
//! what it was shown, across piece boundaries too, and allows once it has
//! seen config `decide-after` bytes (default 8192) or the last piece. Its
//! verdict carries `sniff.pieces` (calls for this request) and
//! `sniff.seen` (bytes shown) as metadata. The request header `x-sniff`
//! scripts a misbehaviour on the first piece: `trap` (panics), `replace`
//! (a body replacement, which the host refuses) or `more` (never decides).

use std::cell::RefCell;

use wharf_guest::filter::{BodyStep, Phases, StreamingGuest, Verdict};
use wharf_guest::{config, header_pairs};

#[derive(Default)]
struct Seen {
    pieces: u64,
    bytes: usize,
    /// The last bytes shown, to find `deny` across a piece boundary.
    tail: Vec<u8>,
    script: String,
}

thread_local! {
    static SEEN: RefCell<Seen> = RefCell::new(Seen::default());
}

struct Sniff;

fn deny() -> Vec<u8> {
    config("deny").unwrap_or_else(|| "EVIL".into()).into_bytes()
}

fn decide_after() -> usize {
    config("decide-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or(8192)
}

fn found(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

fn tagged(v: Verdict, seen: &Seen) -> Verdict {
    v.meta("sniff.pieces", &seen.pieces.to_string())
        .meta("sniff.seen", &seen.bytes.to_string())
}

impl StreamingGuest for Sniff {
    fn phases() -> Phases {
        Phases::REQUEST_HEADERS | Phases::REQUEST_BODY
    }

    fn on_request_headers(_head: Vec<u8>, headers: Vec<u8>) -> Verdict {
        let script = header_pairs(&headers)
            .unwrap_or_default()
            .into_iter()
            .find(|(n, _)| *n == "x-sniff")
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default();
        SEEN.with(|s| {
            *s.borrow_mut() = Seen {
                script,
                ..Seen::default()
            }
        });
        Verdict::allow().want_body()
    }

    /// The whole body: what a host without pieces would call.
    fn on_request_body(_: Vec<u8>, _: Vec<u8>, body: Vec<u8>) -> Verdict {
        if found(&body, &deny()) {
            return Verdict::block(403, &[], "denied").rule("sniff-deny", "denied bytes");
        }
        Verdict::allow()
    }

    fn on_response_headers(_: Vec<u8>, _: Vec<u8>, _: u16, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }

    fn on_response_body(_: Vec<u8>, _: Vec<u8>, _: u16, _: Vec<u8>, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }

    fn on_request_body_chunk(_: Vec<u8>, _: Vec<u8>, chunk: Vec<u8>, last: bool) -> BodyStep {
        SEEN.with(|s| {
            let mut seen = s.borrow_mut();
            seen.pieces += 1;
            seen.bytes += chunk.len();
            match seen.script.as_str() {
                "trap" => panic!("sniff: scripted trap"),
                "replace" => return BodyStep::Decided(Verdict::allow().replace_body("x")),
                "more" => return BodyStep::More,
                _ => {}
            }
            let deny = deny();
            let mut window = std::mem::take(&mut seen.tail);
            window.extend_from_slice(&chunk);
            if found(&window, &deny) {
                let v = Verdict::block(403, &[], "denied").rule("sniff-deny", "denied bytes");
                return BodyStep::Decided(tagged(v, &seen));
            }
            let keep = window.len().min(deny.len().saturating_sub(1));
            seen.tail = window.split_off(window.len() - keep);
            if last || seen.bytes >= decide_after() {
                return BodyStep::Decided(tagged(Verdict::allow(), &seen));
            }
            BodyStep::More
        })
    }
}

wharf_guest::export_filter_streaming!(Sniff);
