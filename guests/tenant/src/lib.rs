//! `tenant`: the agent a directory of many agents is made of (the
//! many-agents test and `scripts/bench/many-agents.sh`). Its data holds a
//! marker, `wharf-tenant:` and twelve digits, that those copies rewrite, so
//! every copy is a distinct component (its own digest, compile and memory
//! image) that names itself: it answers 200 with `x-tenant: <digits>` and
//! the request body. A body of `dirty` first writes to 900 KiB of its
//! stack, so that its pool slot is freed with most of its first megabyte
//! dirty (the idle-memory test).

use wharf_guest::{Card, Error, Health, Request, Response, Skill, headers_with};

/// The marker the copies rewrite; read through `black_box` so it stays in
/// the data segment instead of being folded into code.
static TENANT: [u8; 25] = *b"wharf-tenant:000000000000";

fn tenant() -> String {
    let marker: &[u8; 25] = std::hint::black_box(&TENANT);
    String::from_utf8_lossy(&marker[13..]).into_owned()
}

/// Writes one byte in every 4 KiB page of a 900 KiB stack buffer.
#[inline(never)]
fn dirty_stack() {
    let mut pages = [0u8; 900 << 10];
    for page in pages.chunks_mut(4096) {
        page[0] = 1;
    }
    std::hint::black_box(&mut pages);
}

struct Tenant;

impl wharf_guest::Guest for Tenant {
    fn handle(req: Request) -> Result<Response, Error> {
        if req.body == b"dirty" {
            dirty_stack();
        }
        let id = tenant();
        let headers = headers_with(&[], &[("x-tenant", id.as_str())])
            .map_err(|e| Error::Internal(e.into()))?;
        Ok(Response {
            status: 200,
            headers,
            body: req.body,
        })
    }

    fn describe() -> Card {
        Card {
            name: "tenant".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: format!("Tenant {}", tenant()),
            skills: vec![Skill {
                id: "echo".into(),
                name: "Echo".into(),
                description: "Names itself and repeats what it is sent".into(),
                tags: vec!["test".into()],
            }],
        }
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Tenant);
