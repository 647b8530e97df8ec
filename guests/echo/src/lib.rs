//! `echo`: answers 200 with the request body and the request headers, plus
//! `x-echo-method` and `x-echo-path` taken from the request head. Every
//! language's echo agent answers exactly this way (the contract suite).
//! With `x-echo-chunks: N` (1–64) it streams the answer: the head at once,
//! the body in N pieces, the last one returned by `handle`. With
//! `x-echo-call: AGENT` it calls AGENT through the host with the body and
//! answers with its status and body (a refused or failed call: its status
//! and `CASE: message`); with `x-echo-publish: TOPIC` it publishes the body
//! and adds `x-echo-queued` (the count, or `refused`).

use wharf_guest::{
    Card, Error, Head, Health, Request, Response, Skill, header_pairs, headers_with, peers, stream,
};

struct Echo;

impl wharf_guest::Guest for Echo {
    fn handle(req: Request) -> Result<Response, Error> {
        let malformed = |what: &str| Error::BadRequest(format!("malformed request: {what}"));
        let head = Head::decode(&req.head).map_err(malformed)?;
        let pairs = header_pairs(&req.headers).map_err(malformed)?;
        let find = |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        };
        if let Some(agent) = find("x-echo-call") {
            return Ok(call_through(&agent, &req.body));
        }
        let queued = find("x-echo-publish").map(|topic| match peers::publish(&topic, &req.body) {
            Ok(n) => n.to_string(),
            Err(_) => "refused".to_string(),
        });
        let mut extra = vec![
            ("x-echo-method", head.method.as_str()),
            ("x-echo-path", &head.path),
        ];
        if let Some(queued) = &queued {
            extra.push(("x-echo-queued", queued));
        }
        // The header blob has the same encoding in requests and responses,
        // so echoing headers needs no decoding.
        let headers = headers_with(&req.headers, &extra).map_err(malformed)?;
        let Some((_, chunks)) = pairs.iter().find(|(name, _)| *name == "x-echo-chunks") else {
            return Ok(Response {
                status: 200,
                headers,
                body: req.body,
            });
        };
        let chunks = std::str::from_utf8(chunks)
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| (1..=64).contains(n))
            .ok_or_else(|| malformed("x-echo-chunks must be 1 to 64"))?;
        stream::start(200, &headers).map_err(Error::Internal)?;
        let size = req.body.len().div_ceil(chunks).max(1);
        let mut pieces: Vec<&[u8]> = req.body.chunks(size).collect();
        let last = pieces.pop().unwrap_or_default().to_vec();
        for piece in pieces {
            stream::write(piece).map_err(Error::Internal)?;
        }
        Ok(Response::new(200, last))
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

/// What `agent` answered to `body`, or the call's error as a response.
fn call_through(agent: &str, body: &[u8]) -> Response {
    match peers::call(agent, "POST", "/", &[], body) {
        Ok(resp) => Response::new(resp.status, resp.body),
        Err(err) => peers::error_response(err),
    }
}

wharf_guest::export_agent!(Echo);
