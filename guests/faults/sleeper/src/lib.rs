//! `sleeper`: test fixture that sleeps in a host call (a WASI clock
//! subscription and a poll, where epoch interruption cannot reach it):
//! `handle` for as many seconds as its body says, `describe` for as many
//! as its `describe-sleep` config value says.

use std::time::Duration;

use wharf_guest::{Card, Error, Health, Request, Response, config};

fn sleep_for(text: &str) {
    if let Ok(secs) = text.trim().parse::<u64>() {
        std::thread::sleep(Duration::from_secs(secs));
    }
}

struct Fixture;

impl wharf_guest::Guest for Fixture {
    fn handle(req: Request) -> Result<Response, Error> {
        sleep_for(&String::from_utf8_lossy(&req.body));
        Ok(Response::new(200, "awake"))
    }

    fn describe() -> Card {
        sleep_for(&config("describe-sleep").unwrap_or_default());
        Card::simple(
            "sleeper",
            env!("CARGO_PKG_VERSION"),
            "Test fixture that sleeps in a host call",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Fixture);
