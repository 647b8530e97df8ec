//! `mirror`: test fixture that answers with what it received as JSON: the
//! head (metadata included), the headers and the body as text.

use wharf_guest::{
    Card, Error, Head, Health, Request, Response, header_pairs, headers_with, json_string,
};

struct Mirror;

fn object<'a>(pairs: impl Iterator<Item = (&'a str, String)>) -> String {
    let items: Vec<String> = pairs
        .map(|(k, v)| format!("{}:{}", json_string(k), json_string(&v)))
        .collect();
    format!("{{{}}}", items.join(","))
}

impl wharf_guest::Guest for Mirror {
    fn handle(req: Request) -> Result<Response, Error> {
        let head = Head::decode(&req.head).map_err(|e| Error::BadRequest(e.into()))?;
        let headers = header_pairs(&req.headers).map_err(|e| Error::BadRequest(e.into()))?;
        let meta = object(head.meta.iter().map(|(k, v)| (k.as_str(), v.clone())));
        let hdrs = object(
            headers
                .iter()
                .map(|(k, v)| (*k, String::from_utf8_lossy(v).into_owned())),
        );
        let body = format!(
            "{{\"method\":{},\"path\":{},\"query\":{},\"meta\":{meta},\"headers\":{hdrs},\"body\":{}}}",
            json_string(&head.method),
            json_string(&head.path),
            json_string(&head.query),
            json_string(&String::from_utf8_lossy(&req.body)),
        );
        let mut resp = Response::new(200, body);
        resp.headers = headers_with(
            &[],
            &[("content-type", "application/json"), ("x-secret", "s3cr3t")],
        )
        .map_err(|e| Error::Internal(e.into()))?;
        Ok(resp)
    }

    fn describe() -> Card {
        Card::simple(
            "mirror",
            env!("CARGO_PKG_VERSION"),
            "Test fixture: answers with what it received",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Mirror);
