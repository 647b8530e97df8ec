//! `trap`: test fixture that traps on every request.

use wharf_guest::{Card, Error, Health, Request, Response};

struct Fixture;

impl wharf_guest::Guest for Fixture {
    fn handle(req: Request) -> Result<Response, Error> {
        let _ = req;
        panic!("this fixture always traps")
    }

    fn describe() -> Card {
        Card::simple(
            "trap",
            env!("CARGO_PKG_VERSION"),
            "Test fixture that traps on every request",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Fixture);
