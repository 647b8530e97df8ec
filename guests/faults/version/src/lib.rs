//! `version`: test fixture that answers the version mark built into it.
//! Reload tests write copies whose mark's digits differ: each copy is a
//! different component (another digest, compiled anew) whose answers say
//! which copy served them.

use wharf_guest::{Card, Error, Health, Request, Response};

/// The mark; tests find `WHARF-VERSION-MARK:` in the file and rewrite the
/// eight digits after it.
static MARK: &[u8; 27] = b"WHARF-VERSION-MARK:00000000";

struct Fixture;

impl wharf_guest::Guest for Fixture {
    fn handle(_req: Request) -> Result<Response, Error> {
        // Read through a black box so the bytes stay in the data segment.
        let mark = std::hint::black_box(MARK);
        Ok(Response::new(200, mark[19..].to_vec()))
    }

    fn describe() -> Card {
        Card::simple(
            "version",
            env!("CARGO_PKG_VERSION"),
            "Test fixture that answers the version mark built into it",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Fixture);
