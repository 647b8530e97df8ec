//! `stackbomb`: test fixture that recurses until the stack overflows.

use wharf_guest::{Card, Error, Health, Request, Response};

struct Fixture;

impl wharf_guest::Guest for Fixture {
    fn handle(req: Request) -> Result<Response, Error> {
        Ok(Response::new(200, depth(req.body.len() as u64).to_string()))
    }

    fn describe() -> Card {
        Card::simple("stackbomb", env!("CARGO_PKG_VERSION"), "Test fixture that recurses until the stack overflows")
    }

    fn health() -> Health {
        Health::Ok
    }
}

#[allow(unconditional_recursion)]
fn depth(n: u64) -> u64 {
    let frame = std::hint::black_box([n; 64]);
    std::hint::black_box(depth(frame[7].wrapping_add(1))).wrapping_add(frame[3])
}

wharf_guest::export_agent!(Fixture);
