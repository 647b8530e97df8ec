//! `mistyped`: test fixture, a filter of the `filter` world that also
//! exports `on-request-body-chunk`, but not with the type the
//! `filter-streaming` world gives it (`func(chunk: list<u8>) -> bool`).
//! The host must refuse to load it, naming the type it expected, rather
//! than never calling the export or calling it wrongly.

#[allow(clippy::too_many_arguments)] // the response-body hook's lowered ABI
mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit",
        inline: "
            package wharf-test:mistyped;

            world mistyped {
                include wharf:plugin/filter@0.2.0;
                export on-request-body-chunk: func(chunk: list<u8>) -> bool;
            }
        ",
        world: "wharf-test:mistyped/mistyped",
        generate_all,
    });
}

use bindings::Guest;
use bindings::wharf::plugin::filtering::{Audit, Decision, Phases, Verdict};

struct Mistyped;

fn allow() -> Verdict {
    Verdict {
        decision: Decision::Allow,
        request_header_ops: Vec::new(),
        response_header_ops: Vec::new(),
        body: None,
        metadata: Vec::new(),
        want_body: false,
        audit: Audit {
            rule_ids: Vec::new(),
            tags: Vec::new(),
            reason: String::new(),
        },
    }
}

impl Guest for Mistyped {
    fn phases() -> Phases {
        Phases::REQUEST_HEADERS | Phases::REQUEST_BODY
    }

    fn on_request_headers(_head: Vec<u8>, _headers: Vec<u8>) -> Verdict {
        allow()
    }

    fn on_request_body(_head: Vec<u8>, _headers: Vec<u8>, _body: Vec<u8>) -> Verdict {
        allow()
    }

    fn on_response_headers(
        _head: Vec<u8>,
        _headers: Vec<u8>,
        _status: u16,
        _resp_headers: Vec<u8>,
    ) -> Verdict {
        allow()
    }

    fn on_response_body(
        _head: Vec<u8>,
        _headers: Vec<u8>,
        _status: u16,
        _resp_headers: Vec<u8>,
        _body: Vec<u8>,
    ) -> Verdict {
        allow()
    }

    fn on_request_body_chunk(_chunk: Vec<u8>) -> bool {
        true
    }
}

bindings::export!(Mistyped with_types_in bindings);
