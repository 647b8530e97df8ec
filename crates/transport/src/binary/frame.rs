//! The binary transport's wire format: length-prefixed frames, each one
//! MessagePack map. Decoding borrows from the frame (the body is a slice of
//! it, never copied) and is safe against hostile input: every length is
//! checked against the bytes present before it is used, nesting is capped,
//! unknown keys are skipped. Encoding writes an answer's head; its body is
//! written after it from the buffer it already lives in. Nothing here knows
//! about sockets, the pipeline or wasmtime. See `docs/binary.md`.

use bytes::{BufMut, BytesMut};
use http::HeaderMap;
use rmp::Marker;

/// Bytes in a frame's length prefix (big-endian `u32`).
pub const PREFIX: usize = 4;

/// Deepest nesting an ignored value may have.
pub const MAX_DEPTH: usize = 16;

/// Most headers one request may carry.
pub const MAX_HEADERS: usize = 256;

/// One request, borrowing from its frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRequest<'a> {
    /// The request's id, echoed in its answer.
    pub id: u64,
    /// What it is for: an agent, or a topic to publish its body to.
    pub target: Target<'a>,
    /// Its method.
    pub method: &'a str,
    /// Its path below the agent.
    pub path: &'a str,
    /// Its query string.
    pub query: &'a str,
    /// Its headers, values as bytes.
    pub headers: Vec<(&'a str, &'a [u8])>,
    /// Its session key.
    pub affinity: Option<&'a str>,
    /// Its body: a slice of the frame.
    pub body: &'a [u8],
}

/// What a request is for: exactly one of its `agent` and `topic` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// An agent, pipeline or wasi:http component to call.
    Agent(&'a str),
    /// A topic to publish the body to, as `POST /topics/{topic}` does.
    Topic(&'a str),
}

/// Why a frame could not be read as a request; `id` is the request's id
/// when it was read before the fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FrameError {
    /// The request's id, when it could be read.
    pub id: Option<u64>,
    /// What is wrong.
    pub message: String,
}

type Result<T> = std::result::Result<T, String>;

/// Reads a request from one frame's payload (the bytes after the prefix).
pub fn decode_request(frame: &[u8]) -> std::result::Result<FrameRequest<'_>, FrameError> {
    let mut id = None;
    let mut cur = Cursor(frame);
    let result = read_request(&mut cur, &mut id).and_then(|req| match cur.0 {
        [] => Ok(req),
        rest => Err(format!(
            "{} bytes follow the request map in its frame",
            rest.len()
        )),
    });
    result.map_err(|message| FrameError { id, message })
}

fn read_request<'a>(cur: &mut Cursor<'a>, id_seen: &mut Option<u64>) -> Result<FrameRequest<'a>> {
    let fields = cur
        .map_len()
        .map_err(|e| format!("a request frame is a MessagePack map: {e}"))?;
    let mut req = FrameRequest {
        id: 0,
        target: Target::Agent(""),
        method: "POST",
        path: "/",
        query: "",
        headers: Vec::new(),
        affinity: None,
        body: &[],
    };
    let (mut agent, mut topic) = (None, None);
    for _ in 0..fields {
        let key = cur.str().map_err(|e| format!("a key: {e}"))?;
        let field = |e: String| format!("`{key}`: {e}");
        match key {
            "id" => {
                req.id = cur.uint().map_err(field)?;
                *id_seen = Some(req.id);
            }
            "agent" => agent = Some(cur.str().map_err(field)?),
            "topic" => topic = Some(cur.str().map_err(field)?),
            "method" => req.method = cur.str().map_err(field)?,
            "path" => req.path = cur.str().map_err(field)?,
            "query" => req.query = cur.str().map_err(field)?,
            "affinity" => req.affinity = cur.opt_str().map_err(field)?,
            "headers" => req.headers = cur.headers().map_err(field)?,
            "body" => req.body = cur.bytes().map_err(field)?,
            _ => cur.skip(0).map_err(field)?,
        }
    }
    if id_seen.is_none() {
        return Err("the request has no `id`".into());
    }
    req.target = match (agent, topic) {
        (Some(agent), None) => Target::Agent(agent),
        (None, Some(topic)) => Target::Topic(topic),
        (None, None) => return Err("the request names no `agent` (or `topic`)".into()),
        (Some(_), Some(_)) => {
            return Err("the request names both an `agent` and a `topic`: give one".into());
        }
    };
    if !req.path.starts_with('/') {
        return Err(format!("`path` must start with `/`, found `{}`", req.path));
    }
    Ok(req)
}

/// A read position in a frame; every read checks the bytes left first.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.0.len() {
            return Err(format!(
                "a length of {n} bytes runs past the frame ({} left)",
                self.0.len()
            ));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn be(&mut self, n: usize) -> Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn marker(&mut self) -> Result<Marker> {
        Ok(Marker::from_u8(self.take(1)?[0]))
    }

    fn uint(&mut self) -> Result<u64> {
        match self.marker()? {
            Marker::FixPos(n) => Ok(n.into()),
            Marker::U8 => self.be(1),
            Marker::U16 => self.be(2),
            Marker::U32 => self.be(4),
            Marker::U64 => self.be(8),
            other => Err(format!(
                "expected an unsigned integer, found {}",
                name(other)
            )),
        }
    }

    /// A length for `marker`'s kind of value, or an error naming `what`.
    fn len_of(&mut self, marker: Marker) -> Result<Option<usize>> {
        let n = match marker {
            Marker::FixStr(n) | Marker::FixArray(n) | Marker::FixMap(n) => u64::from(n),
            Marker::Str8 | Marker::Bin8 => self.be(1)?,
            Marker::Str16 | Marker::Bin16 | Marker::Array16 | Marker::Map16 => self.be(2)?,
            Marker::Str32 | Marker::Bin32 | Marker::Array32 | Marker::Map32 => self.be(4)?,
            _ => return Ok(None),
        };
        Ok(Some(n as usize))
    }

    fn str(&mut self) -> Result<&'a str> {
        match self.marker()? {
            m @ (Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32) => {
                let n = self.len_of(m)?.unwrap_or(0);
                std::str::from_utf8(self.take(n)?).map_err(|_| "a string is not UTF-8".into())
            }
            other => Err(format!("expected a string, found {}", name(other))),
        }
    }

    fn opt_str(&mut self) -> Result<Option<&'a str>> {
        if self.0.first() == Some(&0xc0) {
            self.0 = &self.0[1..];
            return Ok(None);
        }
        self.str().map(Some)
    }

    /// `bin` or `str`, as raw bytes.
    fn bytes(&mut self) -> Result<&'a [u8]> {
        match self.marker()? {
            m @ (Marker::FixStr(_)
            | Marker::Str8
            | Marker::Str16
            | Marker::Str32
            | Marker::Bin8
            | Marker::Bin16
            | Marker::Bin32) => {
                let n = self.len_of(m)?.unwrap_or(0);
                self.take(n)
            }
            Marker::Null => Ok(&[]),
            other => Err(format!("expected bytes, found {}", name(other))),
        }
    }

    fn map_len(&mut self) -> Result<usize> {
        match self.marker()? {
            m @ (Marker::FixMap(_) | Marker::Map16 | Marker::Map32) => {
                Ok(self.len_of(m)?.unwrap_or(0))
            }
            other => Err(format!("expected a map, found {}", name(other))),
        }
    }

    /// `[[name, value], …]` or `{name: value, …}`; values are `str` or `bin`.
    fn headers(&mut self) -> Result<Vec<(&'a str, &'a [u8])>> {
        let (n, pairs) = match self.marker()? {
            m @ (Marker::FixArray(_) | Marker::Array16 | Marker::Array32) => {
                (self.len_of(m)?.unwrap_or(0), true)
            }
            m @ (Marker::FixMap(_) | Marker::Map16 | Marker::Map32) => {
                (self.len_of(m)?.unwrap_or(0), false)
            }
            Marker::Null => return Ok(Vec::new()),
            other => return Err(format!("expected an array of pairs, found {}", name(other))),
        };
        if n > MAX_HEADERS {
            return Err(format!("{n} headers; at most {MAX_HEADERS} are accepted"));
        }
        // Never trust `n` for an allocation: each header takes at least a byte.
        let mut headers = Vec::with_capacity(n.min(self.0.len()));
        for _ in 0..n {
            if pairs {
                match self.marker()? {
                    Marker::FixArray(2) => {}
                    other => {
                        return Err(format!(
                            "each header is a [name, value] pair, found {}",
                            name(other)
                        ));
                    }
                }
            }
            headers.push((self.str()?, self.bytes()?));
        }
        Ok(headers)
    }

    /// Skips one value of any kind, refusing nesting deeper than
    /// [`MAX_DEPTH`].
    fn skip(&mut self, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(format!("values nest deeper than {MAX_DEPTH} levels"));
        }
        let marker = self.marker()?;
        let fixed = match marker {
            Marker::FixPos(_) | Marker::FixNeg(_) | Marker::Null | Marker::True => 0,
            Marker::False => 0,
            Marker::U8 | Marker::I8 => 1,
            Marker::U16 | Marker::I16 => 2,
            Marker::U32 | Marker::I32 | Marker::F32 => 4,
            Marker::U64 | Marker::I64 | Marker::F64 => 8,
            Marker::FixExt1 => 2,
            Marker::FixExt2 => 3,
            Marker::FixExt4 => 5,
            Marker::FixExt8 => 9,
            Marker::FixExt16 => 17,
            Marker::Ext8 => 1 + self.be(1)? as usize,
            Marker::Ext16 => 1 + self.be(2)? as usize,
            Marker::Ext32 => 1 + self.be(4)? as usize,
            Marker::Reserved => return Err("the reserved marker 0xc1".into()),
            m @ (Marker::FixArray(_) | Marker::Array16 | Marker::Array32) => {
                for _ in 0..self.len_of(m)?.unwrap_or(0) {
                    self.skip(depth + 1)?;
                }
                0
            }
            m @ (Marker::FixMap(_) | Marker::Map16 | Marker::Map32) => {
                for _ in 0..self.len_of(m)?.unwrap_or(0) {
                    self.skip(depth + 1)?;
                    self.skip(depth + 1)?;
                }
                0
            }
            m => self.len_of(m)?.unwrap_or(0),
        };
        self.take(fixed).map(drop)
    }
}

/// What a marker introduces, for messages.
fn name(marker: Marker) -> &'static str {
    match marker {
        Marker::FixPos(_) | Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 => "an integer",
        Marker::FixNeg(_) | Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 => {
            "a negative integer"
        }
        Marker::Null => "nil",
        Marker::True | Marker::False => "a boolean",
        Marker::F32 | Marker::F64 => "a float",
        Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => "a string",
        Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => "bytes",
        Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "an array",
        Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "a map",
        Marker::Reserved => "the reserved marker",
        _ => "an extension",
    }
}

/// Writes MessagePack into a buffer (writing to memory cannot fail).
fn put<T, E: std::fmt::Debug>(result: std::result::Result<T, E>) {
    result.expect("writing MessagePack to memory does not fail");
}

/// Starts a frame: the prefix, patched by [`finish`].
fn start(capacity: usize) -> bytes::buf::Writer<BytesMut> {
    let mut buf = BytesMut::with_capacity(PREFIX + capacity);
    buf.put_u32(0);
    buf.writer()
}

/// Sets the prefix to the frame's length: what is in `buf` plus `more`
/// bytes written after it.
fn finish(w: bytes::buf::Writer<BytesMut>, more: usize) -> BytesMut {
    let mut buf = w.into_inner();
    let len = (buf.len() - PREFIX + more) as u32;
    buf[..PREFIX].copy_from_slice(&len.to_be_bytes());
    buf
}

/// An answer's frame up to its body: `{id, status, headers, body}` with
/// the body's `bin` header last; the `body_len` bytes of the body follow.
pub fn answer_head(id: u64, status: u16, headers: &HeaderMap, body_len: usize) -> BytesMut {
    let mut w = start(64 + headers.len() * 48);
    put(rmp::encode::write_map_len(&mut w, 4));
    put(rmp::encode::write_str(&mut w, "id"));
    put(rmp::encode::write_uint(&mut w, id));
    put(rmp::encode::write_str(&mut w, "status"));
    put(rmp::encode::write_uint(&mut w, status.into()));
    put(rmp::encode::write_str(&mut w, "headers"));
    put(rmp::encode::write_array_len(&mut w, headers.len() as u32));
    for (name, value) in headers {
        put(rmp::encode::write_array_len(&mut w, 2));
        put(rmp::encode::write_str(&mut w, name.as_str()));
        match value.to_str() {
            Ok(text) => put(rmp::encode::write_str(&mut w, text)),
            Err(_) => put(rmp::encode::write_bin(&mut w, value.as_bytes())),
        }
    }
    put(rmp::encode::write_str(&mut w, "body"));
    put(rmp::encode::write_bin_len(&mut w, body_len as u32));
    finish(w, body_len)
}

/// An error frame: `{id, status, error: {code, message}}`, with
/// `retry_after` (whole seconds) when the client should come back later;
/// `id` is nil when the request's id could not be read.
pub fn error_frame(
    id: Option<u64>,
    status: u16,
    code: &str,
    message: &str,
    retry_after: Option<u64>,
) -> BytesMut {
    let mut w = start(48 + code.len() + message.len());
    put(rmp::encode::write_map_len(
        &mut w,
        3 + u32::from(retry_after.is_some()),
    ));
    put(rmp::encode::write_str(&mut w, "id"));
    match id {
        Some(id) => put(rmp::encode::write_uint(&mut w, id)),
        None => put(rmp::encode::write_nil(&mut w)),
    }
    put(rmp::encode::write_str(&mut w, "status"));
    put(rmp::encode::write_uint(&mut w, status.into()));
    put(rmp::encode::write_str(&mut w, "error"));
    put(rmp::encode::write_map_len(&mut w, 2));
    put(rmp::encode::write_str(&mut w, "code"));
    put(rmp::encode::write_str(&mut w, code));
    put(rmp::encode::write_str(&mut w, "message"));
    put(rmp::encode::write_str(&mut w, message));
    if let Some(secs) = retry_after {
        put(rmp::encode::write_str(&mut w, "retry_after"));
        put(rmp::encode::write_uint(&mut w, secs));
    }
    finish(w, 0)
}

#[cfg(test)]
mod tests;
