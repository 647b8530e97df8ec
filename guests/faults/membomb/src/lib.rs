//! `membomb`: test fixture that allocates until memory runs out.

use wharf_guest::{Card, Error, Health, Request, Response};

struct Fixture;

impl wharf_guest::Guest for Fixture {
    fn handle(req: Request) -> Result<Response, Error> {
        let _ = req;
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut chunk = vec![0u8; 1 << 20];
            chunk[0] = hoard.len() as u8;
            hoard.push(std::hint::black_box(chunk));
        }
    }

    fn describe() -> Card {
        Card::simple(
            "membomb",
            env!("CARGO_PKG_VERSION"),
            "Test fixture that allocates until memory runs out",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Fixture);
