//! `probe`: test fixture, a filter whose verdicts the request scripts. It
//! answers to its name (config `name`, default `probe`): the request header
//! `x-probe-NAME` holds `;`-separated steps `PHASE:ACTION[:ARGS]`, with
//! PHASE one of `rh` `rb` `sh` `sb` (request headers/body, response
//! headers/body). It reports the phases one instance saw for the request in
//! the response header `x-probe-NAME-seen`, and its lifetime call count in
//! `x-probe-NAME-calls`. Config `declare` makes its declared effects
//! (`effects`) one the host must refuse; absent, it declares nothing.

use std::cell::RefCell;

use wharf_guest::filter::{Effects, EffectsGuest, HeaderLimits, Phases, Verdict};
use wharf_guest::{Response, config, header_pairs};

thread_local! {
    static SEEN: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    static CALLS: RefCell<u64> = const { RefCell::new(0) };
    static HOLD: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

struct Probe;

fn name() -> String {
    config("name").unwrap_or_else(|| "probe".into())
}

/// The script steps for `phase` from the request headers.
fn steps(headers: &[u8], phase: &str) -> Vec<Vec<String>> {
    let key = format!("x-probe-{}", name());
    let pairs = header_pairs(headers).unwrap_or_default();
    pairs
        .iter()
        .filter(|(n, _)| *n == key)
        .flat_map(|(_, v)| {
            String::from_utf8_lossy(v)
                .split(';')
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter_map(|step| {
            let parts: Vec<String> = step.trim().split(':').map(str::to_string).collect();
            (parts.first().map(String::as_str) == Some(phase)).then(|| parts[1..].to_vec())
        })
        .collect()
}

fn run(phase: &'static str, headers: &[u8], body_len: Option<usize>) -> Verdict {
    SEEN.with(|s| {
        let mut s = s.borrow_mut();
        if phase == "rh" {
            s.clear();
        }
        s.push(phase);
    });
    CALLS.with(|c| *c.borrow_mut() += 1);
    let mut v = Verdict::allow();
    if let Some(len) = body_len {
        v = v.meta(&format!("{}.{phase}-len", name()), &len.to_string());
    }
    if phase == "sh" {
        let seen = SEEN.with(|s| s.borrow().join(","));
        let calls = CALLS.with(|c| *c.borrow());
        v = v
            .set_response_header(&format!("x-probe-{}-seen", name()), seen.as_bytes())
            .set_response_header(
                &format!("x-probe-{}-calls", name()),
                calls.to_string().as_bytes(),
            );
    }
    for step in steps(headers, phase) {
        let arg = |i: usize| step.get(i).cloned().unwrap_or_default();
        let rest = |i: usize| step.get(i..).map(|p| p.join(":")).unwrap_or_default();
        v = match arg(0).as_str() {
            "block" => {
                let body = format!("{{\"blocked_by\":\"{}\"}}", name());
                let mut b = Verdict::block(
                    arg(1).parse().unwrap_or(403),
                    &[("content-type", "application/json")],
                    body,
                );
                b.metadata = v.metadata;
                b.response_header_ops = v.response_header_ops;
                b
            }
            "redirect" => {
                let mut r = Verdict::redirect(arg(1).parse().unwrap_or(302), &rest(2));
                r.metadata = v.metadata;
                r
            }
            "set-req" => v.set_request_header(&arg(1), rest(2).as_bytes()),
            "rm-req" => v.remove_request_header(&arg(1)),
            "set-resp" => v.set_response_header(&arg(1), rest(2).as_bytes()),
            "add-resp" => v.add_response_header(&arg(1), rest(2).as_bytes()),
            "rm-resp" => v.remove_response_header(&arg(1)),
            "meta" => v.meta(&arg(1), &rest(2)),
            "cfg" => {
                let value = config(&arg(1)).unwrap_or_else(|| "-".into());
                v.meta(&format!("{}.cfg", name()), &value)
            }
            "want-body" => v.want_body(),
            "replace" => v.replace_body(rest(1)),
            "rule" => v.rule(&arg(1), &rest(2)),
            "tag" => v.tag(&arg(1)),
            "trap" => panic!("probe told to trap"),
            "sleep" => {
                // Blocked in a host call (a clock poll), out of the
                // epoch's reach.
                let secs = arg(1).parse().unwrap_or(30);
                std::thread::sleep(std::time::Duration::from_secs(secs));
                v
            }
            "spin" => loop {
                std::hint::spin_loop();
            },
            "oom" => {
                // Grow until the host's memory limit refuses.
                HOLD.with(|h| {
                    loop {
                        h.borrow_mut().push(vec![1u8; 1 << 20]);
                    }
                })
            }
            "bad-header" => v.set_request_header("bad name", b"x"),
            "bad-value" => v.set_response_header("x-ok", b"line\nbreak"),
            "host-header" => v.set_response_header("content-length", b"1"),
            "bad-meta" => v.meta("Not Valid", "x"),
            "block-status" => {
                let mut b = Verdict::allow();
                b.decision = wharf_guest::filter::Decision::Block(Response::new(
                    arg(1).parse().unwrap_or(302),
                    "",
                ));
                b
            }
            "body-in-headers" => v.replace_body("x"),
            "req-op-in-response" => v.set_request_header("x-late", b"1"),
            _ => v,
        };
    }
    v
}

/// What `effects` declares, by config `declare`: nothing (absent), or a
/// declaration the host must refuse at load (`bad-header`,
/// `allow-refusal`, `extra-phase`, `many-defaults`, `trap`).
fn declared() -> Effects {
    let mut fx = Effects {
        phases: <Probe as EffectsGuest>::phases(),
        header_limits: None,
        cors: None,
        response_defaults: Vec::new(),
    };
    match config("declare").as_deref() {
        Some("bad-header") => fx.response_defaults = vec![("Bad Name".into(), b"x".to_vec())],
        Some("allow-refusal") => {
            fx.header_limits = Some(HeaderLimits {
                max_count: 1,
                too_many: Verdict::allow(),
                max_bytes: 1,
                too_large: Verdict::allow(),
            })
        }
        Some("extra-phase") => fx.phases = Phases::all(),
        Some("many-defaults") => {
            fx.response_defaults = (0..257)
                .map(|i| (format!("x-d{i}"), b"x".to_vec()))
                .collect()
        }
        Some("trap") => panic!("declaring traps"),
        _ => {}
    }
    fx
}

impl EffectsGuest for Probe {
    fn effects() -> Effects {
        declared()
    }

    fn phases() -> Phases {
        let wanted = config("phases").unwrap_or_else(|| "rh,rb,sh,sb".into());
        let mut p = Phases::empty();
        for phase in wanted.split(',') {
            p |= match phase.trim() {
                "rh" => Phases::REQUEST_HEADERS,
                "rb" => Phases::REQUEST_BODY,
                "sh" => Phases::RESPONSE_HEADERS,
                "sb" => Phases::RESPONSE_BODY,
                _ => Phases::empty(),
            };
        }
        p
    }

    fn on_request_headers(_head: Vec<u8>, headers: Vec<u8>) -> Verdict {
        run("rh", &headers, None)
    }

    fn on_request_body(_head: Vec<u8>, headers: Vec<u8>, body: Vec<u8>) -> Verdict {
        run("rb", &headers, Some(body.len()))
    }

    fn on_response_headers(
        _head: Vec<u8>,
        headers: Vec<u8>,
        _status: u16,
        _resp: Vec<u8>,
    ) -> Verdict {
        run("sh", &headers, None)
    }

    fn on_response_body(
        _head: Vec<u8>,
        headers: Vec<u8>,
        _status: u16,
        _resp: Vec<u8>,
        body: Vec<u8>,
    ) -> Verdict {
        run("sb", &headers, Some(body.len()))
    }
}

wharf_guest::export_filter_effects!(Probe);
