//! Conversion between the neutral request/response and the guest ABI:
//! MessagePack `head` and `headers` blobs out, validated headers back in.
//! The body is passed by reference and never re-encoded.

use bytes::Bytes;
use http::StatusCode;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use rmp::Marker;

use super::bindings::{GuestRequest, GuestResponse};
use wharf_core::request::{Request, Response};

/// Encodes a request's `head` and `headers` blobs into `buf` (cleared
/// first; one buffer serves both, and a live instance reuses it across
/// calls) and returns the guest-facing record. The body is borrowed, never
/// copied here.
pub fn guest_request<'a>(req: &'a Request, buf: &'a mut Vec<u8>) -> GuestRequest<'a> {
    let (head, headers) = encode_request(req, buf);
    GuestRequest {
        head,
        headers,
        body: &req.body,
    }
}

/// The `head` and `headers` blobs of a request, encoded into `buf`.
pub(super) fn encode_request<'a>(req: &Request, buf: &'a mut Vec<u8>) -> (&'a [u8], &'a [u8]) {
    buf.clear();
    encode_head(req, buf);
    let split = buf.len();
    encode_headers_into(&req.headers, buf);
    buf.split_at(split)
}

fn encode_head(req: &Request, out: &mut Vec<u8>) {
    let client = req.client.map(|c| c.to_string()).unwrap_or_default();
    let fields: [(&str, &str); 8] = [
        ("method", req.method.as_str()),
        ("path", &req.path),
        ("query", &req.query),
        ("id", &req.id),
        ("client", &client),
        ("affinity", req.affinity.as_deref().unwrap_or("")),
        ("agent", &req.agent),
        ("body", if req.has_body { "some" } else { "none" }),
    ];
    let size: usize = fields.iter().map(|(k, v)| k.len() + v.len() + 10).sum();
    out.reserve(size + 1);
    let len = fields.len() + req.metadata.len();
    write(rmp::encode::write_map_len(out, len as u32));
    for (key, value) in fields {
        write(rmp::encode::write_str(out, key));
        write(rmp::encode::write_str(out, value));
    }
    // Filter metadata as `meta.KEY` string entries: every value in the head
    // stays a string, so guests' decoders need nothing new.
    let mut key = String::new();
    for (name, value) in &req.metadata {
        key.clear();
        key.push_str("meta.");
        key.push_str(name);
        write(rmp::encode::write_str(out, &key));
        write(rmp::encode::write_str(out, value));
    }
}

/// Headers as a MessagePack array of `[name, value]` pairs; empty when none.
pub fn encode_headers(headers: &HeaderMap) -> Vec<u8> {
    let mut out = Vec::new();
    encode_headers_into(headers, &mut out);
    out
}

fn encode_headers_into(headers: &HeaderMap, out: &mut Vec<u8>) {
    if headers.is_empty() {
        return;
    }
    let size: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 11)
        .sum();
    out.reserve(size + 5);
    write(rmp::encode::write_array_len(out, headers.len() as u32));
    for (name, value) in headers {
        write(rmp::encode::write_array_len(out, 2));
        write(rmp::encode::write_str(out, name.as_str()));
        write(rmp::encode::write_bin(out, value.as_bytes()));
    }
}

/// Writes into a `Vec` cannot fail; this keeps the encoders free of `?`.
fn write<T, E: std::fmt::Debug>(result: Result<T, E>) {
    result.expect("writing MessagePack into a Vec cannot fail");
}

/// Headers the host owns: a guest's value for these is dropped.
pub(super) fn host_owned(name: &HeaderName) -> bool {
    use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING, UPGRADE};
    name == CONTENT_LENGTH
        || name == TRANSFER_ENCODING
        || name == CONNECTION
        || name == UPGRADE
        || name.as_str() == "keep-alive"
}

/// Validates a guest's response: status, header blob, body size.
pub(crate) fn response_from_guest(
    resp: GuestResponse,
    max_body: usize,
) -> Result<Response, String> {
    let status = StatusCode::from_u16(resp.status)
        .map_err(|_| format!("status {} is not a valid HTTP status", resp.status))?;
    if resp.body.len() > max_body {
        return Err(format!(
            "response body of {} bytes exceeds the limit of {max_body} bytes",
            resp.body.len()
        ));
    }
    let headers = decode_headers(Bytes::from(resp.headers)).map_err(|e| e.to_string())?;
    Ok(Response::new(status, headers, Bytes::from(resp.body)))
}

/// Why a guest's header blob was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderBlobError {
    /// The blob is not a MessagePack array.
    #[error("headers are not a MessagePack array")]
    NotArray,
    /// An entry is not an array.
    #[error("header {0} is not a [name, value] array")]
    NotPair(u32),
    /// An entry has other than two elements.
    #[error("header {0} has {1} elements, expected 2")]
    PairLength(u32, u32),
    /// An entry's name is not a string or bytes.
    #[error("header {0} has no valid name")]
    NoName(u32),
    /// An entry's value is not a string or bytes.
    #[error("header {0} has no valid value")]
    NoValue(u32),
    /// A name HTTP does not allow.
    #[error("header {0} has an invalid name")]
    BadName(u32),
    /// A value HTTP does not allow.
    #[error("header `{0}` has an invalid value")]
    BadValue(String),
    /// Bytes after the array.
    #[error("trailing bytes after the header array")]
    Trailing,
}

/// Decodes a header blob; every length is checked against the bytes
/// present. Values share the blob's allocation instead of being copied.
pub fn decode_headers(blob: Bytes) -> Result<HeaderMap, HeaderBlobError> {
    let mut map = HeaderMap::new();
    if blob.is_empty() {
        return Ok(map);
    }
    let mut buf = &blob[..];
    let count = rmp::decode::read_array_len(&mut buf).map_err(|_| HeaderBlobError::NotArray)?;
    // Each pair takes at least 3 bytes: never reserve beyond what is present.
    map.reserve((count as usize).min(buf.len() / 3));
    for i in 0..count {
        let pair =
            rmp::decode::read_array_len(&mut buf).map_err(|_| HeaderBlobError::NotPair(i))?;
        if pair != 2 {
            return Err(HeaderBlobError::PairLength(i, pair));
        }
        let name = read_bytes(&mut buf).ok_or(HeaderBlobError::NoName(i))?;
        let value = read_bytes(&mut buf).ok_or(HeaderBlobError::NoValue(i))?;
        let name = HeaderName::from_bytes(name).map_err(|_| HeaderBlobError::BadName(i))?;
        let value = HeaderValue::from_maybe_shared(blob.slice_ref(value))
            .map_err(|_| HeaderBlobError::BadValue(name.to_string()))?;
        if !host_owned(&name) {
            map.append(name, value);
        }
    }
    if !buf.is_empty() {
        return Err(HeaderBlobError::Trailing);
    }
    Ok(map)
}

/// Reads a MessagePack str or bin and returns its bytes.
fn read_bytes<'a>(buf: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (&first, rest) = buf.split_first()?;
    let (len, header): (usize, usize) = match Marker::from_u8(first) {
        Marker::FixStr(n) => (n as usize, 0),
        Marker::Str8 | Marker::Bin8 => (*rest.first()? as usize, 1),
        Marker::Str16 | Marker::Bin16 => (
            u16::from_be_bytes(rest.get(..2)?.try_into().ok()?) as usize,
            2,
        ),
        Marker::Str32 | Marker::Bin32 => (
            u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize,
            4,
        ),
        _ => return None,
    };
    let body = rest.get(header..header.checked_add(len)?)?;
    *buf = &rest[header + len..];
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let mut headers = HeaderMap::new();
        headers.insert("x-one", HeaderValue::from_static("1"));
        headers.append("x-two", HeaderValue::from_static("a"));
        headers.append("x-two", HeaderValue::from_static("b"));
        headers.insert("content-length", HeaderValue::from_static("5"));
        let decoded = decode_headers(encode_headers(&headers).into()).unwrap();
        assert_eq!(decoded.get("x-one").unwrap(), "1");
        let twos: Vec<_> = decoded.get_all("x-two").iter().collect();
        assert_eq!(twos, ["a", "b"]);
        assert!(
            decoded.get("content-length").is_none(),
            "host-owned header kept"
        );
    }

    #[test]
    fn empty_headers_are_empty_bytes() {
        assert!(encode_headers(&HeaderMap::new()).is_empty());
        assert!(decode_headers(Bytes::new()).unwrap().is_empty());
    }

    #[test]
    fn hostile_header_blobs_are_refused_without_allocating() {
        // An array claiming 4 billion pairs with no bytes behind it.
        assert!(decode_headers(Bytes::from_static(&[0xdd, 0xff, 0xff, 0xff, 0xff])).is_err());
        // A str32 claiming 4 GiB.
        assert!(
            decode_headers(Bytes::from_static(&[
                0x91, 0x92, 0xdb, 0xff, 0xff, 0xff, 0xff
            ]))
            .is_err()
        );
        // A name that is not a valid header name.
        assert!(
            decode_headers(Bytes::from_static(&[
                0x91, 0x92, 0xa2, b'a', b' ', 0xa1, b'v'
            ]))
            .is_err()
        );
        // Trailing garbage.
        assert!(decode_headers(Bytes::from_static(&[0x90, 0x00])).is_err());
        // A map instead of an array.
        assert!(decode_headers(Bytes::from_static(&[0x80])).is_err());
    }

    #[test]
    fn head_is_a_map_with_every_field() {
        let mut req = Request::new(http::Method::POST, "/x");
        req.query = "a=1".into();
        req.affinity = Some("s1".into());
        let mut head = Vec::new();
        encode_head(&req, &mut head);
        let value: std::collections::BTreeMap<String, String> =
            rmp_serde::from_slice(&head).unwrap();
        assert_eq!(value["method"], "POST");
        assert_eq!(value["path"], "/x");
        assert_eq!(value["query"], "a=1");
        assert_eq!(value["affinity"], "s1");
        assert_eq!(value["client"], "");
        assert_eq!(value["id"], &*req.id);
        assert_eq!(value["body"], "some", "unknown until the pipeline says");
        req.metadata = vec![("auth.sub".into(), "alice".into())];
        head.clear();
        encode_head(&req, &mut head);
        let value: std::collections::BTreeMap<String, String> =
            rmp_serde::from_slice(&head).unwrap();
        assert_eq!(value["meta.auth.sub"], "alice");
        assert_eq!(value.len(), 9);
        req.has_body = false;
        head.clear();
        encode_head(&req, &mut head);
        let value: std::collections::BTreeMap<String, String> =
            rmp_serde::from_slice(&head).unwrap();
        assert_eq!(value["body"], "none");
    }

    #[test]
    fn oversized_and_invalid_responses_are_refused() {
        let ok = GuestResponse {
            status: 200,
            headers: vec![],
            body: vec![0; 10],
        };
        assert!(response_from_guest(ok, 10).is_ok());
        let big = GuestResponse {
            status: 200,
            headers: vec![],
            body: vec![0; 11],
        };
        assert!(
            response_from_guest(big, 10)
                .unwrap_err()
                .contains("exceeds")
        );
        let bad = GuestResponse {
            status: 42,
            headers: vec![],
            body: vec![],
        };
        assert!(response_from_guest(bad, 10).unwrap_err().contains("status"));
    }
}
