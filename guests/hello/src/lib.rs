//! `hello`: greets the name in the body (or "world") with the greeting
//! configured as `greeting` in the host's KDL file (default "Hello").

use wharf_guest::{Card, Error, Health, Level, Request, Response, config, log};

struct Hello;

impl wharf_guest::Guest for Hello {
    fn handle(req: Request) -> Result<Response, Error> {
        let greeting = config("greeting").unwrap_or_else(|| "Hello".into());
        let name = match std::str::from_utf8(&req.body) {
            Ok(s) if !s.trim().is_empty() => s.trim().to_string(),
            Ok(_) => "world".to_string(),
            Err(_) => return Err(Error::BadRequest("the name must be UTF-8 text".into())),
        };
        log(Level::Debug, &format!("greeting {name}"));
        let mut resp = Response::new(200, format!("{greeting}, {name}!\n"));
        resp.headers = content_type_text();
        Ok(resp)
    }

    fn describe() -> Card {
        Card::simple(
            "hello",
            env!("CARGO_PKG_VERSION"),
            "Greets the name it is sent, with a configurable greeting",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

/// `[["content-type", "text/plain; charset=utf-8"]]` in MessagePack.
fn content_type_text() -> Vec<u8> {
    const NAME: &[u8] = b"content-type";
    const VALUE: &[u8] = b"text/plain; charset=utf-8";
    let mut out = vec![0x91, 0x92, 0xa0 | NAME.len() as u8];
    out.extend_from_slice(NAME);
    out.push(0xa0 | VALUE.len() as u8);
    out.extend_from_slice(VALUE);
    out
}

wharf_guest::export_agent!(Hello);
