//! `allow`: benchmark fixture, the least a filter can do: register for the
//! request-headers phase and allow every request. With config `body "on"`
//! it also registers for the request-body phase, so the body it asks for
//! (as the `waf` does) is shown to it, and allows that too: the least a
//! body-reading filter can do. The config is read once, at load.

use wharf_guest::config;
use wharf_guest::filter::{Phases, Verdict};

struct Allow;

impl wharf_guest::filter::Guest for Allow {
    fn phases() -> Phases {
        if config("body").as_deref() == Some("on") {
            Phases::REQUEST_HEADERS | Phases::REQUEST_BODY
        } else {
            Phases::REQUEST_HEADERS
        }
    }

    /// Asks for the body: the host shows it only to a filter registered
    /// for the request-body phase, so without `body "on"` this costs
    /// nothing more than a plain allow.
    fn on_request_headers(_head: Vec<u8>, _headers: Vec<u8>) -> Verdict {
        Verdict::allow().want_body()
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
