//! A WASIp3 HTTP component written as for any wasi:http 0.3 host (the
//! `wasip3` crate, no Wharf SDK): `/spin` never returns, `/fetch?URL`
//! answers what an outbound GET of URL gave, anything else echoes the
//! request body back as it arrives, with the method and path in headers.

use wasip3::http::types::{ErrorCode, Fields, Method, Request, Response, Scheme};
use wasip3::wit_bindgen::StreamResult;
use wasip3::{wit_future, wit_stream};

wasip3::http::service::export!(Component);

struct Component;

impl wasip3::exports::http::handler::Guest for Component {
    async fn handle(request: Request) -> Result<Response, ErrorCode> {
        let target = request.get_path_with_query().unwrap_or_default();
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        match path {
            "/spin" => spin(),
            "/fetch" => fetch(query).await,
            _ => echo(request, path.to_string()).await,
        }
    }
}

/// Runs until the host's deadline stops it.
fn spin() -> ! {
    let mut n = 0u64;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

/// The body back as it comes, chunk by chunk, written by a task of its own
/// after the head has gone; a request body that fails (the host's limit,
/// say) fails the answer's body with the same error.
async fn echo(request: Request, path: String) -> Result<Response, ErrorCode> {
    let method = match request.get_method() {
        Method::Get => "GET".to_string(),
        Method::Post => "POST".to_string(),
        Method::Put => "PUT".to_string(),
        other => format!("{other:?}"),
    };
    let headers = Fields::new();
    let _ = headers.append("x-echo-method", method.as_bytes());
    let _ = headers.append("x-echo-path", path.as_bytes());
    let (_, done) = wit_future::new(|| Ok(()));
    let (mut incoming, received) = Request::consume_body(request, done);
    let (mut outgoing, contents) = wit_stream::new();
    let (trailers_tx, trailers) = wit_future::new(|| Ok(None));
    let (response, _) = Response::new(headers, Some(contents), trailers);
    wasip3::spawn_local(async move {
        loop {
            let (result, chunk) = incoming.read(Vec::with_capacity(16 << 10)).await;
            if !chunk.is_empty() && !outgoing.write_all(chunk).await.is_empty() {
                break;
            }
            if !matches!(result, StreamResult::Complete(_)) {
                break;
            }
        }
        drop(outgoing);
        let ended = match received.await {
            Ok(_) => Ok(None),
            Err(code) => Err(code),
        };
        let _ = trailers_tx.write(ended).await;
    });
    Ok(response)
}

/// `GET url` through `wasi:http/client`, answered as `200` with the status
/// it got and its body, or `502` with the error.
async fn fetch(url: &str) -> Result<Response, ErrorCode> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("https", rest)) => (Scheme::Https, rest),
        Some((_, rest)) => (Scheme::Http, rest),
        None => (Scheme::Http, url),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (_, trailers) = wit_future::new(|| Ok(None));
    let (outgoing, _) = Request::new(Fields::new(), None, trailers, None);
    let _ = outgoing.set_method(&Method::Get);
    let _ = outgoing.set_scheme(Some(&scheme));
    let _ = outgoing.set_authority(Some(authority));
    let _ = outgoing.set_path_with_query(Some(path));
    let text = match wasip3::http::client::send(outgoing).await {
        Ok(got) => {
            let status = got.get_status_code();
            let (_, done) = wit_future::new(|| Ok(()));
            let (body, _) = Response::consume_body(got, done);
            let body = body.collect().await;
            (200, format!("{status} {}", String::from_utf8_lossy(&body)))
        }
        Err(code) => (502, format!("{code:?}")),
    };
    text_response(text.0, text.1)
}

fn text_response(status: u16, text: String) -> Result<Response, ErrorCode> {
    let (mut tx, contents) = wit_stream::new();
    let (trailers_tx, trailers) = wit_future::new(|| Ok(None));
    let (response, _) = Response::new(Fields::new(), Some(contents), trailers);
    let _ = response.set_status_code(status);
    wasip3::spawn_local(async move {
        tx.write_all(text.into_bytes()).await;
        drop(tx);
        let _ = trailers_tx.write(Ok(None)).await;
    });
    Ok(response)
}
