//! Test fixture: a `wasi:http/proxy` component that misbehaves as its path
//! asks, and makes outbound requests.
//!
//! - `/never`: returns without setting a response.
//! - `/error`: sets an error instead of a response.
//! - `/trap`: traps before answering.
//! - `/trap-after-head`: sends the head and a first chunk, waits 50 ms,
//!   then traps.
//! - `/forever`: streams 1 KiB chunks as fast as it can, until stopped.
//! - `/drip`: streams a 1 KiB chunk every 100 ms, until stopped.
//! - `/trickle`: ten 100-byte chunks, 50 ms apart, then the end (for
//!   time-to-first-byte measurements).
//! - `/relay`: sends the head, then each piece of the request body as it
//!   arrives.
//! - `/fetch?URL`: GETs the http:// or https:// URL and answers 200 with its body,
//!   or 502 with the error the host gave.
//! - anything else: 200 `ok`.

use std::io::Write;

use wasi::exports::http::incoming_handler::Guest;
use wasi::http::outgoing_handler;
use wasi::http::types::{
    ErrorCode, Fields, IncomingRequest, OutgoingBody, OutgoingRequest, OutgoingResponse,
    ResponseOutparam, Scheme,
};

struct Faults;

wasi::http::proxy::export!(Faults);

impl Guest for Faults {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let target = request.path_with_query().unwrap_or_default();
        let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
        match path {
            "/never" => drop(out),
            "/error" => {
                ResponseOutparam::set(out, Err(ErrorCode::InternalError(Some("no".into()))))
            }
            "/trap" => panic!("trapping before the head"),
            "/trap-after-head" => {
                let (_outgoing, mut stream) = start(out, 200);
                stream.write_all(b"partial").unwrap();
                stream.flush().unwrap();
                // Waiting makes the host send what it has: the head leaves.
                wasi::clocks::monotonic_clock::subscribe_duration(50_000_000).block();
                panic!("trapping after the head");
            }
            "/forever" | "/drip" => {
                let (_outgoing, mut stream) = start(out, 200);
                loop {
                    stream.write_all(&[b'x'; 1024]).unwrap();
                    stream.flush().unwrap();
                    if path == "/drip" {
                        wasi::clocks::monotonic_clock::subscribe_duration(100_000_000).block();
                    }
                }
            }
            "/trickle" => {
                let (outgoing, mut stream) = start(out, 200);
                for i in 0..10 {
                    if i > 0 {
                        wasi::clocks::monotonic_clock::subscribe_duration(50_000_000).block();
                    }
                    stream.write_all(&[b't'; 100]).unwrap();
                    stream.flush().unwrap();
                }
                drop(stream);
                OutgoingBody::finish(outgoing, None).unwrap();
            }
            "/relay" => {
                let incoming = request.consume().unwrap();
                let input = incoming.stream().unwrap();
                let (outgoing, mut stream) = start(out, 200);
                while let Ok(chunk) = read(&input) {
                    stream.write_all(&chunk).unwrap();
                    stream.flush().unwrap();
                }
                drop((stream, input));
                OutgoingBody::finish(outgoing, None).unwrap();
            }
            "/fetch" => match fetch(query) {
                Ok(body) => answer(out, 200, &body),
                Err(err) => answer(out, 502, err.as_bytes()),
            },
            _ => answer(out, 200, b"ok"),
        }
    }
}

/// Sends the head with `status`; the body and its stream.
fn start(out: ResponseOutparam, status: u16) -> (OutgoingBody, wasi::io::streams::OutputStream) {
    let resp = OutgoingResponse::new(Fields::new());
    resp.set_status_code(status).unwrap();
    let outgoing = resp.body().unwrap();
    ResponseOutparam::set(out, Ok(resp));
    let stream = outgoing.write().unwrap();
    (outgoing, stream)
}

fn answer(out: ResponseOutparam, status: u16, body: &[u8]) {
    let (outgoing, mut stream) = start(out, status);
    stream.write_all(body).unwrap();
    stream.flush().unwrap();
    drop(stream);
    OutgoingBody::finish(outgoing, None).unwrap();
}

/// GETs `url` (`http://authority/path` or `https://…`) through the host.
fn fetch(url: &str) -> Result<Vec<u8>, String> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err("only http:// and https:// URLs".into()),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    request.set_scheme(Some(&scheme)).unwrap();
    request.set_authority(Some(authority)).unwrap();
    request.set_path_with_query(Some(path)).unwrap();
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    pending.subscribe().block();
    let resp = pending
        .get()
        .ok_or("no answer")?
        .map_err(|_| "answer taken twice")?
        .map_err(|e| format!("{e:?}"))?;
    let body = resp.consume().map_err(|_| "no body")?;
    let stream = body.stream().map_err(|_| "no stream")?;
    let mut bytes = Vec::new();
    loop {
        match read(&stream) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(None) => return Ok(bytes),
            Err(Some(e)) => return Err(format!("reading the answer: {e}")),
        }
    }
}

/// The next piece of `stream`: `Err(None)` at its end, `Err(Some(why))`
/// when it failed.
fn read(stream: &wasi::io::streams::InputStream) -> Result<Vec<u8>, Option<String>> {
    match stream.blocking_read(64 * 1024) {
        Ok(chunk) => Ok(chunk),
        Err(wasi::io::streams::StreamError::Closed) => Err(None),
        Err(wasi::io::streams::StreamError::LastOperationFailed(e)) => {
            Err(Some(e.to_debug_string()))
        }
    }
}
