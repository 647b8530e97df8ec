//! `booking`: a multi-turn A2A agent. It books a table once it knows for
//! how many people and which day; until then it asks (the task waits in
//! `input-required`) and reads the answers from the task's history.

use wharf_guest::a2a::{Outcome, Role, Turn};
use wharf_guest::{Card, Error, Health, Request, Response, Skill};

const DAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

struct Booking;

impl wharf_guest::a2a::Guest for Booking {
    fn on_message(turn: Turn) -> Result<Outcome, Error> {
        let said: Vec<String> = turn
            .history
            .iter()
            .chain([&turn.message])
            .filter(|m| m.role == Role::User)
            .map(|m| m.text().to_lowercase())
            .collect();
        let words = || {
            said.iter()
                .flat_map(|s| s.split(|c: char| !c.is_alphanumeric()))
        };
        let people = words().filter_map(|w| w.parse::<u32>().ok()).next_back();
        let day = words().rfind(|w| DAYS.contains(w));
        Ok(match (people, day) {
            (Some(0), _) => Outcome::input_required("A table for nobody? For how many people?"),
            (Some(n), Some(day)) => Outcome::completed(format!("Booked a table for {n} on {day}.")),
            (None, _) => Outcome::input_required("For how many people?"),
            (Some(_), None) => Outcome::input_required("Which day?"),
        })
    }
}

impl wharf_guest::Guest for Booking {
    fn handle(_req: Request) -> Result<Response, Error> {
        Ok(Response::new(200, "booking speaks A2A at /a2a/booking\n"))
    }

    fn describe() -> Card {
        Card {
            name: "booking".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Books a table, asking for the party size and the day".into(),
            skills: vec![Skill {
                id: "book-table".into(),
                name: "Book a table".into(),
                description: "Books a table for a number of people on a day of the week".into(),
                tags: vec!["multi-turn".into()],
            }],
        }
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_a2a_agent!(Booking);
