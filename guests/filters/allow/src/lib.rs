//! `allow`: benchmark fixture, the least a filter can do: register for the
//! request-headers phase and allow every request.

use wharf_guest::filter::{Phases, Verdict};

struct Allow;

impl wharf_guest::filter::Guest for Allow {
    fn phases() -> Phases {
        Phases::REQUEST_HEADERS
    }

    fn on_request_headers(_head: Vec<u8>, _headers: Vec<u8>) -> Verdict {
        Verdict::allow()
    }

    fn on_request_body(_: Vec<u8>, _: Vec<u8>, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }

    fn on_response_headers(_: Vec<u8>, _: Vec<u8>, _: u16, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }

    fn on_response_body(_: Vec<u8>, _: Vec<u8>, _: u16, _: Vec<u8>, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }
}

wharf_guest::export_filter!(Allow);
