//! `http-echo`: a standard `wasi:http/proxy` component written with the
//! `wasi` crate and nothing of Wharf's, as it would be for Spin, wasmCloud
//! or `wasmtime serve`. It keeps the echo contract of Wharf's echo agents:
//! 200 with the request body and headers, plus `x-echo-method` and
//! `x-echo-path`. With `x-echo-chunks: N` (1–64) the body leaves in N
//! pieces, each flushed as it is written.

use std::io::{Read, Write};

use wasi::exports::http::incoming_handler::Guest;
use wasi::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

struct Echo;

wasi::http::proxy::export!(Echo);

impl Guest for Echo {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let method = method_name(request.method());
        let target = request.path_with_query().unwrap_or_else(|| "/".into());
        let path = target.split_once('?').map_or(target.as_str(), |(p, _)| p);
        let headers = Fields::new();
        let mut chunks = None;
        for (name, value) in request.headers().entries() {
            if name == "x-echo-chunks" {
                chunks = std::str::from_utf8(&value)
                    .ok()
                    .and_then(|n| n.parse().ok());
            }
            // The request's framing is not the answer's; headers a response
            // may not carry (`host`, say) are left out.
            if name != "content-length" {
                let _ = headers.append(&name, &value);
            }
        }
        let _ = headers.append("x-echo-method", method.as_bytes());
        let _ = headers.append("x-echo-path", path.as_bytes());
        let mut body = Vec::new();
        let incoming = request.consume().expect("the body is consumed once");
        {
            let mut stream = incoming.stream().expect("the stream is taken once");
            stream.read_to_end(&mut body).expect("the body reads");
        }
        let pieces = match chunks {
            Some(n @ 1..=64) => n,
            Some(_) => return refuse(out, "x-echo-chunks must be 1 to 64"),
            None => {
                let length = body.len().to_string();
                let _ = headers.set("content-length", &[length.into_bytes()]);
                1
            }
        };
        let resp = OutgoingResponse::new(headers);
        let outgoing = resp.body().expect("the body is taken once");
        ResponseOutparam::set(out, Ok(resp));
        {
            let mut stream = outgoing.write().expect("the stream is taken once");
            let size = body.len().div_ceil(pieces).max(1);
            for piece in body.chunks(size) {
                stream.write_all(piece).expect("the client reads");
                stream.flush().expect("the client reads");
            }
        }
        OutgoingBody::finish(outgoing, None).expect("the body is complete");
    }
}

/// A 400 with `why` as its body.
fn refuse(out: ResponseOutparam, why: &str) {
    let resp = OutgoingResponse::new(Fields::new());
    let _ = resp.set_status_code(400);
    let outgoing = resp.body().expect("the body is taken once");
    ResponseOutparam::set(out, Ok(resp));
    {
        let mut stream = outgoing.write().expect("the stream is taken once");
        stream.write_all(why.as_bytes()).expect("the client reads");
        stream.flush().expect("the client reads");
    }
    OutgoingBody::finish(outgoing, None).expect("the body is complete");
}

fn method_name(method: Method) -> String {
    match method {
        Method::Get => "GET".into(),
        Method::Head => "HEAD".into(),
        Method::Post => "POST".into(),
        Method::Put => "PUT".into(),
        Method::Delete => "DELETE".into(),
        Method::Connect => "CONNECT".into(),
        Method::Options => "OPTIONS".into(),
        Method::Trace => "TRACE".into(),
        Method::Patch => "PATCH".into(),
        Method::Other(other) => other,
    }
}
