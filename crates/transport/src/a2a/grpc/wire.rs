//! gRPC on the wire: a unary call's one framed message, a response's
//! messages with the status in trailers (or the status alone), and the
//! gRPC status of an error answer (the A2A error's own, with its
//! `ErrorInfo`, or one mapped from a filter's HTTP status).

use std::convert::Infallible;

use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use http::{HeaderMap, HeaderValue};
use http_body_util::StreamBody;
use hyper::body::Frame;
use serde_json::Value;
use tonic::Code;

use super::GRPC;

/// The one message of a unary request: a 5-byte prefix (not compressed,
/// big-endian length) and exactly that many bytes.
pub(super) fn unframe(body: &[u8]) -> Result<&[u8], tonic::Status> {
    let malformed = |why: &str| tonic::Status::internal(format!("malformed gRPC message: {why}"));
    let (head, rest) = body
        .split_at_checked(5)
        .ok_or_else(|| malformed("shorter than its 5-byte prefix"))?;
    if head[0] != 0 {
        return Err(malformed("compressed, without an encoding"));
    }
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len != rest.len() {
        return Err(malformed(
            "its length is not the bytes sent (one message per call)",
        ));
    }
    Ok(rest)
}

/// `message` framed for the wire.
pub(super) fn frame(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(message.len() + 5);
    out.put_u8(0);
    out.put_u32(message.len() as u32);
    out.put_slice(message);
    out.freeze()
}

/// A 200 `application/grpc` response: `frames` as they come, then the
/// status in trailers (`0`, or the error that ended the stream).
pub(super) fn with_trailers(
    metadata: HeaderMap,
    frames: impl futures_util::Stream<Item = Result<Bytes, tonic::Status>> + Send + 'static,
) -> Response {
    let mut ended = false;
    let body = frames
        .map(Some)
        .chain(futures_util::stream::once(async { None }))
        .filter_map(move |item| {
            let frame = match item {
                _ if ended => None,
                Some(Ok(bytes)) if bytes.is_empty() => None,
                Some(Ok(bytes)) => Some(Frame::data(bytes)),
                Some(Err(status)) => {
                    ended = true;
                    Some(Frame::trailers(status_headers(status)))
                }
                None => Some(Frame::trailers(status_headers(tonic::Status::ok("")))),
            };
            std::future::ready(frame.map(Ok::<_, Infallible>))
        });
    let mut response = Response::new(Body::new(StreamBody::new(body)));
    let headers = response.headers_mut();
    for (name, value) in &metadata {
        if name != http::header::CONTENT_TYPE
            && name != http::header::CONTENT_LENGTH
            && name != http::header::CACHE_CONTROL
        {
            headers.append(name, value.clone());
        }
    }
    headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(GRPC));
    response
}

/// A status alone ("Trailers-Only": HTTP 200 and the status in the head).
pub(super) fn status_only(status: tonic::Status) -> Response {
    let mut response = Response::new(Body::empty());
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(GRPC));
    headers.extend(status_headers(status));
    response
}

/// `grpc-status`, `grpc-message` and `grpc-status-details-bin`.
fn status_headers(status: tonic::Status) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Err(e) = status.add_header(&mut headers) {
        tracing::warn!(error = %e, "a gRPC status could not be written");
        headers.insert("grpc-status", HeaderValue::from(Code::Internal as i32));
    }
    headers
}

/// An error answer as a gRPC status: the binding's errors carry their
/// status name and `ErrorInfo` (kept as details); a filter's or the
/// host's answer is mapped from its HTTP status.
pub(super) fn error_status(
    status: http::StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> tonic::Status {
    let parsed: Option<Value> = is_media(headers, "application/json")
        .then(|| serde_json::from_slice(body).ok())
        .flatten();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body);
            let text: String = text.trim().chars().take(256).collect();
            if text.is_empty() {
                status.canonical_reason().unwrap_or("refused").to_string()
            } else {
                text
            }
        });
    let code = error
        .and_then(|e| e.get("status"))
        .and_then(Value::as_str)
        .and_then(code_of_name)
        .unwrap_or_else(|| code_of_http(status));
    let info = error
        .and_then(|e| e.get("details"))
        .and_then(Value::as_array)
        .and_then(|details| {
            details.iter().find(|d| {
                d.get("@type").and_then(Value::as_str)
                    == Some("type.googleapis.com/google.rpc.ErrorInfo")
            })
        });
    let Some(info) = info else {
        return tonic::Status::new(code, message);
    };
    let text = |key: &str| {
        info.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let metadata: std::collections::HashMap<String, String> = info
        .get("metadata")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    (k.clone(), v)
                })
                .collect()
        })
        .unwrap_or_default();
    let details =
        tonic_types::ErrorDetails::with_error_info(text("reason"), text("domain"), metadata);
    <tonic::Status as tonic_types::StatusExt>::with_error_details(code, message, details)
}

/// A gRPC code by its name (`NOT_FOUND`).
fn code_of_name(name: &str) -> Option<Code> {
    Some(match name {
        "CANCELLED" => Code::Cancelled,
        "UNKNOWN" => Code::Unknown,
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "DEADLINE_EXCEEDED" => Code::DeadlineExceeded,
        "NOT_FOUND" => Code::NotFound,
        "ALREADY_EXISTS" => Code::AlreadyExists,
        "PERMISSION_DENIED" => Code::PermissionDenied,
        "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "ABORTED" => Code::Aborted,
        "OUT_OF_RANGE" => Code::OutOfRange,
        "UNIMPLEMENTED" => Code::Unimplemented,
        "INTERNAL" => Code::Internal,
        "UNAVAILABLE" => Code::Unavailable,
        "DATA_LOSS" => Code::DataLoss,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        _ => return None,
    })
}

/// The gRPC code for an HTTP status (gRPC's own table, with the refusals
/// it leaves as UNKNOWN named: a body too large, a deadline).
pub(super) fn code_of_http(status: http::StatusCode) -> Code {
    match status.as_u16() {
        400 => Code::InvalidArgument,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::NotFound,
        408 | 504 => Code::DeadlineExceeded,
        413 | 429 => Code::ResourceExhausted,
        415 => Code::InvalidArgument,
        501 => Code::Unimplemented,
        502 | 503 => Code::Unavailable,
        500 => Code::Internal,
        _ => Code::Unknown,
    }
}

pub(super) fn is_media(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case(media))
        })
}

pub(super) fn unreadable(e: &serde_json::Error) -> tonic::Status {
    tracing::warn!(error = %e, "an A2A answer could not be encoded as its gRPC message");
    tonic::Status::internal("the answer could not be encoded as the method's message")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_per_call_framed_exactly() {
        let framed = frame(b"abc");
        assert_eq!(&framed[..], b"\0\0\0\0\x03abc");
        assert_eq!(unframe(&framed).unwrap(), b"abc");
        assert!(unframe(b"\0\0\0").is_err());
        assert!(unframe(b"\0\0\0\0\x04abc").is_err());
        assert!(unframe(b"\0\0\0\0\x02abc").is_err());
        assert!(unframe(b"\x01\0\0\0\x03abc").is_err());
    }

    #[test]
    fn errors_keep_their_code_and_error_info() {
        let (status, body) = wharf_tasks::A2aError::new(wharf_tasks::A2aErrorKind::TaskNotFound)
            .with("taskId", "t1")
            .to_rest();
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let grpc = error_status(
            http::StatusCode::from_u16(status).unwrap(),
            &headers,
            &serde_json::to_vec(&body).unwrap(),
        );
        assert_eq!(grpc.code(), Code::NotFound);
        let details = tonic_types::StatusExt::get_error_details(&grpc);
        let info = details.error_info().expect("an ErrorInfo");
        assert_eq!(
            (info.reason.as_str(), info.domain.as_str()),
            ("TASK_NOT_FOUND", "a2a-protocol.org")
        );
        assert_eq!(info.metadata["taskId"], "t1");
        // A filter's own refusal, by its HTTP status.
        let blocked = error_status(
            http::StatusCode::FORBIDDEN,
            &HeaderMap::new(),
            b"blocked by waf",
        );
        assert_eq!(
            (blocked.code(), blocked.message()),
            (Code::PermissionDenied, "blocked by waf")
        );
    }
}
