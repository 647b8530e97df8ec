//! `spin`: test fixture that loops forever.

use wharf_guest::{Card, Error, Health, Request, Response};

struct Fixture;

impl wharf_guest::Guest for Fixture {
    fn handle(req: Request) -> Result<Response, Error> {
        let mut n = req.body.len() as u64;
        loop {
            n = std::hint::black_box(n.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }

    fn describe() -> Card {
        Card::simple(
            "spin",
            env!("CARGO_PKG_VERSION"),
            "Test fixture that loops forever",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Fixture);
