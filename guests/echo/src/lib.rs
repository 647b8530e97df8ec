//! `echo`: answers 200 with the request body and the request headers, plus
//! `x-echo-method` and `x-echo-path` taken from the request head. Every
//! language's echo agent answers exactly this way (the contract suite).

use wharf_guest::{Card, Error, Head, Health, Request, Response, Skill, headers_with};

struct Echo;

impl wharf_guest::Guest for Echo {
    fn handle(req: Request) -> Result<Response, Error> {
        let malformed = |what: &str| Error::BadRequest(format!("malformed request: {what}"));
        let head = Head::decode(&req.head).map_err(malformed)?;
        // The header blob has the same encoding in requests and responses,
        // so echoing headers needs no decoding.
        let headers = headers_with(
            &req.headers,
            &[("x-echo-method", &head.method), ("x-echo-path", &head.path)],
        )
        .map_err(malformed)?;
        Ok(Response {
            status: 200,
            headers,
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
