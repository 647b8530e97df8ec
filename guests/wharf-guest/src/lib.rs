//! Rust bindings for Wharf's `agent` and `filter` worlds, generated once so
//! each agent crate only implements [`Guest`] and calls [`export_agent!`],
//! and each filter implements [`filter::Guest`] and calls [`export_filter!`]
//! (or [`filter::PreinitGuest`] with [`export_filter_preinit!`],
//! [`filter::EffectsGuest`] with [`export_filter_effects!`], or
//! [`filter::StreamingGuest`] with [`export_filter_streaming!`]).
//!
//! ```ignore
//! struct Echo;
//! impl wharf_guest::Guest for Echo {
//!     fn handle(req: Request) -> Result<Response, Error> { /* … */ }
//!     fn describe() -> Card { /* … */ }
//!     fn health() -> Health { Health::Ok }
//! }
//! wharf_guest::export_agent!(Echo);
//! ```

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "agent",
        pub_export_macro: true,
        export_macro_name: "export_agent",
        default_bindings_module: "wharf_guest::bindings",
    });
}

#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // the response-body hook's lowered ABI
pub mod filter_bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "filter",
        pub_export_macro: true,
        export_macro_name: "export_filter",
        default_bindings_module: "wharf_guest::filter_bindings",
        with: {
            "wharf:plugin/host@0.2.0": crate::bindings::wharf::plugin::host,
            "wharf:plugin/types@0.2.0": crate::bindings::wharf::plugin::types,
        },
    });
}

#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // the response-body hook's lowered ABI
pub mod filter_preinit_bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "filter-preinit",
        pub_export_macro: true,
        export_macro_name: "export_filter_preinit",
        default_bindings_module: "wharf_guest::filter_preinit_bindings",
        with: {
            "wharf:plugin/host@0.2.0": crate::bindings::wharf::plugin::host,
            "wharf:plugin/types@0.2.0": crate::bindings::wharf::plugin::types,
            "wharf:plugin/filtering@0.2.0": crate::filter_bindings::wharf::plugin::filtering,
        },
    });
}

#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // the response-body hook's lowered ABI
pub mod filter_streaming_bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "filter-streaming",
        pub_export_macro: true,
        export_macro_name: "export_filter_streaming",
        default_bindings_module: "wharf_guest::filter_streaming_bindings",
        with: {
            "wharf:plugin/host@0.2.0": crate::bindings::wharf::plugin::host,
            "wharf:plugin/types@0.2.0": crate::bindings::wharf::plugin::types,
            "wharf:plugin/filtering@0.2.0": crate::filter_bindings::wharf::plugin::filtering,
        },
    });
}

#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // the response-body hook's lowered ABI
pub mod filter_effects_bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "filter-effects",
        pub_export_macro: true,
        export_macro_name: "export_filter_effects",
        default_bindings_module: "wharf_guest::filter_effects_bindings",
        with: {
            "wharf:plugin/host@0.2.0": crate::bindings::wharf::plugin::host,
            "wharf:plugin/types@0.2.0": crate::bindings::wharf::plugin::types,
            "wharf:plugin/filtering@0.2.0": crate::filter_bindings::wharf::plugin::filtering,
        },
    });
}

#[doc(hidden)]
pub mod a2a_bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "a2a-agent",
        pub_export_macro: true,
        export_macro_name: "export_a2a_agent",
        default_bindings_module: "wharf_guest::a2a_bindings",
        with: {
            "wharf:plugin/host@0.2.0": crate::bindings::wharf::plugin::host,
            "wharf:plugin/types@0.2.0": crate::bindings::wharf::plugin::types,
            "wharf:plugin/streaming@0.2.0": crate::bindings::wharf::plugin::streaming,
            "wharf:plugin/peers@0.2.0": crate::bindings::wharf::plugin::peers,
        },
    });
}

pub mod a2a;
pub mod filter;
mod memcmp;

/// Streaming the answer of `handle`: [`stream::start`] sends the status and
/// headers at once, [`stream::write`] each chunk of the body as it is
/// ready; what `handle` then returns only adds its body as the last chunk.
///
/// ```ignore
/// stream::start(200, &stream::headers(&[("content-type", "text/event-stream")]))?;
/// for n in 0..3 {
///     stream::write(format!("data: {n}\n\n").as_bytes())?;
/// }
/// Ok(Response::new(200, "data: done\n\n"))
/// ```
pub mod stream {
    pub use crate::bindings::wharf::plugin::streaming::{start, write};

    /// A header list of `pairs`, encoded as `start` takes it.
    pub fn headers(pairs: &[(&str, &str)]) -> Vec<u8> {
        crate::headers_with(&[], pairs).unwrap_or_default()
    }
}

/// Reaching other agents through the host: [`peers::call`] calls an agent
/// or pipeline by name and waits for its answer, [`peers::publish`] queues
/// a payload for a topic's subscribers. Both need the caller's KDL block to
/// allow them (`calls "NAME"`, `publishes "PATTERN"`).
///
/// ```ignore
/// let answer = peers::call("classify", "POST", "/", &[], b"refund please")?;
/// peers::publish("orders.created", br#"{"id":1}"#)?;
/// ```
pub mod peers {
    pub use crate::bindings::wharf::plugin::peers::{CallError, publish};

    /// Calls `agent` with a request of this method, path (below the
    /// callee's mount, starting with `/`, optionally `?query`), headers
    /// and body.
    pub fn call(
        agent: &str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<crate::Response, CallError> {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let mut head = Vec::with_capacity(32 + path.len() + query.len());
        crate::write_len(&mut head, 3, 0x80, 16, 0xde);
        for (key, value) in [("method", method), ("path", path), ("query", query)] {
            crate::write_str(&mut head, key);
            crate::write_str(&mut head, value);
        }
        let req = crate::Request {
            head,
            headers: crate::headers_with(&[], headers).unwrap_or_default(),
            body: body.to_vec(),
        };
        crate::bindings::wharf::plugin::peers::call(agent, &req)
    }

    /// A call's error as a response: 403 (denied), 404 (not found), 508
    /// (a loop) or the failure's own status, with `CASE: message` as body.
    pub fn error_response(err: CallError) -> crate::Response {
        let (status, text) = match err {
            CallError::Denied(m) => (403, format!("denied: {m}")),
            CallError::NotFound(m) => (404, format!("not-found: {m}")),
            CallError::LoopDetected(m) => (508, format!("loop: {m}")),
            CallError::Failed((s, m)) => (s, format!("failed: {m}")),
        };
        crate::Response::new(status, text)
    }
}

pub use a2a_bindings::export_a2a_agent;
pub use bindings::wharf::plugin::host::{self, Level, config, log};
pub use bindings::wharf::plugin::types::Skill;
pub use bindings::{Card, Error, Guest, Health, Request, Response, export_agent};
pub use filter_bindings::export_filter;
pub use filter_effects_bindings::export_filter_effects;
pub use filter_preinit_bindings::export_filter_preinit;
pub use filter_streaming_bindings::export_filter_streaming;

impl Card {
    /// A card with no skills.
    pub fn simple(name: &str, version: &str, description: &str) -> Self {
        Card {
            name: name.into(),
            version: version.into(),
            description: description.into(),
            skills: Vec::new(),
        }
    }
}

impl Response {
    /// A response with a status, no headers and a body.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Response {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }
}

/// The decoded `head` of a request: method, path, query, request id,
/// client address and affinity key (empty strings when absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub path: String,
    pub query: String,
    pub id: String,
    pub client: String,
    pub affinity: String,
    /// The agent the request is for.
    pub agent: String,
    /// Metadata filters attached (`meta.KEY` entries), key without `meta.`.
    pub meta: Vec<(String, String)>,
    /// Whether a body comes with the request, as the host's transport
    /// knows it (`body` in the head: an HTTP/2 request may carry one with
    /// no `content-length`); none from a host that does not say.
    pub has_body: Option<bool>,
}

impl Head {
    /// Decodes the MessagePack map the host sends; unknown keys are skipped.
    pub fn decode(buf: &[u8]) -> Result<Head, &'static str> {
        let mut head = Head::default();
        for pair in head_pairs(buf)? {
            let (key, value) = pair?;
            let value = value.to_string();
            match key {
                "method" => head.method = value,
                "path" => head.path = value,
                "query" => head.query = value,
                "id" => head.id = value,
                "client" => head.client = value,
                "affinity" => head.affinity = value,
                "agent" => head.agent = value,
                "body" => head.has_body = Some(value != "none"),
                _ => {
                    if let Some(name) = key.strip_prefix("meta.") {
                        head.meta.push((name.to_string(), value));
                    }
                }
            }
        }
        Ok(head)
    }

    /// One field of the head (`"agent"`, `"method"`, …), borrowed from the
    /// MessagePack map without decoding the rest: for a filter that needs
    /// only that field on every request. `None` when absent or malformed.
    pub fn field<'a>(buf: &'a [u8], name: &str) -> Option<&'a str> {
        for pair in head_pairs(buf).ok()? {
            let (key, value) = pair.ok()?;
            if key == name {
                return Some(value);
            }
        }
        None
    }
}

/// The head's (key, value) strings in order, borrowed; an error ends it.
fn head_pairs(
    mut buf: &[u8],
) -> Result<impl Iterator<Item = Result<(&str, &str), &'static str>>, &'static str> {
    let fields = read_len(&mut buf, 0x80, 0xde)?;
    Ok((0..fields).map(move |_| Ok((read_str(&mut buf)?, read_str(&mut buf)?))))
}

/// Reads a fix (`fix_base` + n < 16) or 16/32-bit (`wide`, `wide` + 1) length.
fn read_len(buf: &mut &[u8], fix_base: u8, wide: u8) -> Result<usize, &'static str> {
    let (&marker, rest) = buf.split_first().ok_or("truncated")?;
    let (len, used) = match marker {
        m if (fix_base..fix_base + 16).contains(&m) => ((m - fix_base) as usize, 0),
        m if m == wide => (u16::from_be_bytes(take::<2>(rest)?) as usize, 2),
        m if m == wide + 1 => (u32::from_be_bytes(take::<4>(rest)?) as usize, 4),
        _ => return Err("unexpected MessagePack type"),
    };
    *buf = &rest[used..];
    Ok(len)
}

fn read_str<'a>(buf: &mut &'a [u8]) -> Result<&'a str, &'static str> {
    let (&marker, rest) = buf.split_first().ok_or("truncated")?;
    let (len, used) = match marker {
        0xa0..=0xbf => ((marker & 0x1f) as usize, 0),
        0xd9 => (*rest.first().ok_or("truncated")? as usize, 1),
        0xda => (u16::from_be_bytes(take::<2>(rest)?) as usize, 2),
        0xdb => (u32::from_be_bytes(take::<4>(rest)?) as usize, 4),
        _ => return Err("expected a string"),
    };
    let bytes = rest.get(used..used + len).ok_or("truncated")?;
    *buf = &rest[used + len..];
    core::str::from_utf8(bytes).map_err(|_| "invalid UTF-8")
}

fn take<const N: usize>(buf: &[u8]) -> Result<[u8; N], &'static str> {
    buf.get(..N)
        .and_then(|b| b.try_into().ok())
        .ok_or("truncated")
}

impl Head {
    /// The value of metadata `key`, if a filter attached it.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Decodes a header list (`[[name, value], …]`, values str or bin) into
/// pairs borrowing the blob. Empty bytes are an empty list.
pub fn header_pairs(blob: &[u8]) -> Result<Vec<(&str, &[u8])>, &'static str> {
    if blob.is_empty() {
        return Ok(Vec::new());
    }
    let mut buf = blob;
    let count = read_len(&mut buf, 0x90, 0xdc)?;
    let mut pairs = Vec::with_capacity(count.min(buf.len() / 3));
    for _ in 0..count {
        if read_len(&mut buf, 0x90, 0xdc)? != 2 {
            return Err("a header is not a [name, value] pair");
        }
        let name = core::str::from_utf8(read_raw(&mut buf)?).map_err(|_| "invalid UTF-8")?;
        let value = read_raw(&mut buf)?;
        pairs.push((name, value));
    }
    Ok(pairs)
}

/// Reads a str or bin and returns its bytes.
fn read_raw<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], &'static str> {
    let (&marker, rest) = buf.split_first().ok_or("truncated")?;
    let (len, used) = match marker {
        0xa0..=0xbf => ((marker & 0x1f) as usize, 0),
        0xd9 | 0xc4 => (*rest.first().ok_or("truncated")? as usize, 1),
        0xda | 0xc5 => (u16::from_be_bytes(take::<2>(rest)?) as usize, 2),
        0xdb | 0xc6 => (u32::from_be_bytes(take::<4>(rest)?) as usize, 4),
        _ => return Err("expected a string or bytes"),
    };
    let bytes = rest.get(used..used + len).ok_or("truncated")?;
    *buf = &rest[used + len..];
    Ok(bytes)
}

/// Builds a response header list: the pairs of `headers` (the request's
/// encoding, possibly empty) followed by `extra` name/value pairs. The
/// request's pairs are copied as they are, without decoding them.
pub fn headers_with(headers: &[u8], extra: &[(&str, &str)]) -> Result<Vec<u8>, &'static str> {
    let mut rest = headers;
    let pairs = if headers.is_empty() {
        0
    } else {
        read_len(&mut rest, 0x90, 0xdc)?
    };
    let mut out = Vec::with_capacity(headers.len() + 16 + extra.len() * 32);
    write_len(&mut out, pairs + extra.len(), 0x90, 16, 0xdc);
    out.extend_from_slice(rest);
    for (name, value) in extra {
        out.push(0x92);
        write_str(&mut out, name);
        write_str(&mut out, value);
    }
    Ok(out)
}

/// Writes a fix (`fix_base` + n < `fix_max`), 16-bit (`wide`) or 32-bit
/// (`wide` + 1) length.
pub(crate) fn write_len(out: &mut Vec<u8>, len: usize, fix_base: u8, fix_max: usize, wide: u8) {
    if len < fix_max {
        out.push(fix_base + len as u8);
    } else if let Ok(len) = u16::try_from(len) {
        out.push(wide);
        out.extend_from_slice(&len.to_be_bytes());
    } else {
        out.push(wide + 1);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    if let Ok(len @ 32..=255) = u8::try_from(text.len()) {
        out.extend_from_slice(&[0xd9, len]);
    } else {
        write_len(out, text.len(), 0xa0, 32, 0xda);
    }
    out.extend_from_slice(text.as_bytes());
}

/// `text` as a JSON string literal, quotes included: for building small
/// JSON answers without a JSON library.
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::Head;

    /// A head as the host encodes it: a MessagePack map of strings.
    fn head(pairs: &[(&str, &str)]) -> Vec<u8> {
        let mut out = vec![0x80 | pairs.len() as u8];
        for s in pairs.iter().flat_map(|(k, v)| [k, v]) {
            out.push(0xa0 | s.len() as u8);
            out.extend_from_slice(s.as_bytes());
        }
        out
    }

    #[test]
    fn one_field_reads_as_the_whole_head_decodes_it() {
        let buf = head(&[("method", "GET"), ("agent", "booking"), ("meta.x", "1")]);
        let whole = Head::decode(&buf).unwrap();
        assert_eq!(Head::field(&buf, "agent"), Some(whole.agent.as_str()));
        assert_eq!(Head::field(&buf, "method"), Some("GET"));
        assert_eq!(Head::field(&buf, "query"), None);
        // Truncated: no field rather than a wrong one.
        assert_eq!(Head::field(&buf[..buf.len() - 1], "meta.x"), None);
    }
}
