//! `bigoutput`: test fixture that answers with a body larger than the host accepts.

use wharf_guest::{Card, Error, Health, Request, Response};

struct Fixture;

impl wharf_guest::Guest for Fixture {
    fn handle(req: Request) -> Result<Response, Error> {
        let _ = req;
        // 24 MiB: more than the host's default response limit of 16 MiB.
        Ok(Response::new(200, vec![b'x'; 24 << 20]))
    }

    fn describe() -> Card {
        Card::simple(
            "bigoutput",
            env!("CARGO_PKG_VERSION"),
            "Test fixture that answers with a body larger than the host accepts",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Fixture);
