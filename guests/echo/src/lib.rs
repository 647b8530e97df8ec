//! `echo`: answers 200 with the request body and the request headers, as is.

use wharf_guest::{Card, Error, Health, Request, Response, Skill};

struct Echo;

impl wharf_guest::Guest for Echo {
    fn handle(req: Request) -> Result<Response, Error> {
        // The header blob has the same encoding in requests and responses,
        // so echoing headers needs no decoding.
        Ok(Response {
            status: 200,
            headers: req.headers,
            body: req.body,
        })
    }

    fn describe() -> Card {
        Card {
            name: "echo".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Returns the request body and headers".into(),
            skills: vec![Skill {
                id: "echo".into(),
                name: "Echo".into(),
                description: "Repeats what it is sent".into(),
                tags: vec!["test".into()],
            }],
        }
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Echo);
