//! `relay`: an agent that works through the host.
//!
//! - `/call/NAME/REST…` calls the agent (or pipeline) NAME with the same
//!   method and body at path `/REST…` and answers with what it answered, so
//!   `/call/a/call/b` goes relay → a → b when a is a relay too;
//!   a refused or failed call answers with the call error's status
//!   (denied 403, not found 404, a loop 508, a failure its own status) and
//!   `CASE: message` as the body.
//! - `/publish/TOPIC` publishes the body to TOPIC and answers `queued N`.
//! - An event delivered to it (it has `x-wharf-topic`) is published again
//!   to `FORWARD.TOPIC` when its config has `forward "FORWARD"`; with
//!   `via "AGENT"` too, by calling AGENT at `/publish/FORWARD.TOPIC`. A
//!   refused publish or call fails the delivery (503).
//! - Anything else answers `NAME: BODY` (NAME from `config name`, else
//!   the agent's own name).

use wharf_guest::{Card, Error, Head, Health, Request, Response, config, header_pairs, peers};

struct Relay;

impl wharf_guest::Guest for Relay {
    fn handle(req: Request) -> Result<Response, Error> {
        let head = Head::decode(&req.head).map_err(|e| Error::BadRequest(e.into()))?;
        let pairs = header_pairs(&req.headers).map_err(|e| Error::BadRequest(e.into()))?;
        if let Some((_, topic)) = pairs.iter().find(|(n, _)| *n == "x-wharf-topic") {
            let topic = String::from_utf8_lossy(topic);
            if let Some(forward) = config("forward") {
                let topic = format!("{forward}.{topic}");
                match config("via") {
                    Some(via) => {
                        let path = format!("/publish/{topic}");
                        let resp = peers::call(&via, "POST", &path, &[], &req.body)
                            .unwrap_or_else(peers::error_response);
                        if !(200..300).contains(&resp.status) {
                            let why = String::from_utf8_lossy(&resp.body).into_owned();
                            return Err(Error::Unavailable(why));
                        }
                    }
                    None => {
                        peers::publish(&topic, &req.body).map_err(Error::Unavailable)?;
                    }
                }
            }
            return Ok(Response::new(204, Vec::new()));
        }
        if let Some(rest) = head.path.strip_prefix("/call/") {
            let (callee, below) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, "/"),
            };
            let path = match head.query.as_str() {
                "" => below.to_string(),
                q => format!("{below}?{q}"),
            };
            return Ok(peers::call(callee, &head.method, &path, &[], &req.body)
                .unwrap_or_else(peers::error_response));
        }
        if let Some(topic) = head.path.strip_prefix("/publish/") {
            return Ok(match peers::publish(topic, &req.body) {
                Ok(n) => Response::new(200, format!("queued {n}")),
                Err(m) => Response::new(403, m),
            });
        }
        let name = config("name").unwrap_or(head.agent);
        let mut body = format!("{name}: ").into_bytes();
        body.extend_from_slice(&req.body);
        Ok(Response::new(200, body))
    }

    fn describe() -> Card {
        Card::simple(
            "relay",
            env!("CARGO_PKG_VERSION"),
            "Calls other agents and publishes to topics through the host",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Relay);
