//! `stackbomb`: test fixture that recurses until the stack overflows.

use wharf_guest::{Card, Error, Health, Request, Response};

struct Fixture;

impl wharf_guest::Guest for Fixture {
    fn handle(req: Request) -> Result<Response, Error> {
        Ok(Response::new(200, depth(req.body.len() as u64).to_string()))
    }

    fn describe() -> Card {
        Card::simple(
            "stackbomb",
            env!("CARGO_PKG_VERSION"),
            "Test fixture that recurses until the stack overflows",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

/// Small frames kept in wasm locals: the engine's wasm stack overflows
/// before the guest's shadow stack in linear memory runs out.
#[inline(never)]
fn depth(n: u64) -> u64 {
    if n == u64::MAX {
        return 0;
    }
    depth(std::hint::black_box(n) + 1).wrapping_mul(3) + 1
}

wharf_guest::export_agent!(Fixture);
