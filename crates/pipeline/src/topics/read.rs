//! Reading a kept topic back (`GET /topics/{topic}/messages?…`): the
//! query's parameters, checked and turned into a history [`Query`], and
//! the page as JSON, streamed a message at a time. Every parameter a
//! client sends is bounded: a page holds at most [`MAX_LIMIT`] messages and
//! [`wharf_tasks::history::MAX_PAGE_BYTES`] of payload (held in the
//! history's read-back budget until its answer is sent), a read examines at most
//! [`wharf_tasks::history::MAX_SCAN`], and a regular expression is at most
//! [`MAX_REGEX_LEN`] characters compiled into at most [`MAX_REGEX_SIZE`]
//! bytes (the engine runs in time linear in the payload).

use bytes::Bytes;
use wharf_core::request::Response;
use wharf_tasks::history::{HistoryError, MAX_LIMIT, Page, Query};

/// Messages a page holds when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;

/// The longest `match` expression accepted, in characters.
pub const MAX_REGEX_LEN: usize = 1024;

/// The most memory a compiled `match` expression may take.
pub const MAX_REGEX_SIZE: usize = 1 << 20;

/// The longest `contains` text accepted, in bytes.
pub const MAX_CONTAINS_LEN: usize = 4096;

const PARAMS: &str = "after, before, since, until, limit, order, contains, match";

/// Why a read of a kept topic was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A query parameter cannot be used.
    #[error("the query parameter `{name}`: {reason}")]
    Param {
        /// The parameter.
        name: String,
        /// Why not.
        reason: String,
    },
    /// No `topic` block keeps any topic the pattern matches.
    #[error(
        "nothing is kept for `{0}`: add a `topic` block whose pattern matches it to keep its messages"
    )]
    NotKept(String),
    /// The history failed.
    #[error(transparent)]
    History(#[from] HistoryError),
}

impl ReadError {
    /// The HTTP status it maps to.
    pub fn status(&self) -> u16 {
        match self {
            ReadError::Param { .. } => 400,
            ReadError::NotKept(_) => 404,
            ReadError::History(e) => history_status(e),
        }
    }
}

/// The HTTP status a history failure maps to: 503 when it is behind or
/// closing (try again), else 500.
pub fn history_status(e: &HistoryError) -> u16 {
    match e {
        HistoryError::Backlog { .. } | HistoryError::Closed => 503,
        _ => 500,
    }
}

fn param(name: &str, reason: impl Into<String>) -> ReadError {
    ReadError::Param {
        name: name.into(),
        reason: reason.into(),
    }
}

/// `query` (`a=b&c=d`, percent-encoded) as a read of `pattern`.
pub fn parse_query(pattern: &str, query: &str) -> Result<Query, ReadError> {
    let mut q = Query::new(pattern, DEFAULT_LIMIT);
    let mut seen: Vec<String> = Vec::new();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if seen.iter().any(|s| *s == name) {
            return Err(param(&name, "given more than once"));
        }
        seen.push(name.to_string());
        let id = || {
            value
                .parse::<u64>()
                .map_err(|_| param(&name, format!("`{value}` is not a message id")))
        };
        match &*name {
            "after" => q.after = Some(id()?),
            "before" => q.before = Some(id()?),
            "since" => q.since_ms = Some(time(&name, &value)?),
            "until" => q.until_ms = Some(time(&name, &value)?),
            "limit" => match value.parse::<usize>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => q.limit = n,
                _ => {
                    return Err(param(
                        &name,
                        format!("`{value}` is not a whole number from 1 to {MAX_LIMIT}"),
                    ));
                }
            },
            "order" => {
                q.newest_first = match &*value {
                    "oldest" => false,
                    "newest" => true,
                    _ => return Err(param(&name, "\"oldest\" (the default) or \"newest\"")),
                }
            }
            "contains" if value.len() > MAX_CONTAINS_LEN => {
                return Err(param(
                    &name,
                    format!("longer than {MAX_CONTAINS_LEN} bytes"),
                ));
            }
            "contains" if value.is_empty() => return Err(param(&name, "empty")),
            "contains" => q.contains = Some(value.as_bytes().to_vec()),
            "match" if value.chars().count() > MAX_REGEX_LEN => {
                return Err(param(
                    &name,
                    format!("longer than {MAX_REGEX_LEN} characters"),
                ));
            }
            "match" => {
                let regex = regex::bytes::RegexBuilder::new(&value)
                    .size_limit(MAX_REGEX_SIZE)
                    .dfa_size_limit(MAX_REGEX_SIZE)
                    .build()
                    .map_err(|e| param(&name, e.to_string()))?;
                q.regex = Some(regex);
            }
            _ => {
                return Err(param(
                    &name,
                    format!("unknown; the parameters are {PARAMS}"),
                ));
            }
        }
    }
    Ok(q)
}

/// RFC 3339 (`2026-11-27T10:00:00Z`), or milliseconds since the epoch.
fn time(name: &str, value: &str) -> Result<i64, ReadError> {
    if let Ok(ms) = value.parse::<i64>() {
        return Ok(ms);
    }
    time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339)
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .map_err(|_| {
            param(
                name,
                format!("`{value}` is not an RFC 3339 time (2026-11-27T10:00:00Z) or milliseconds since 1970"),
            )
        })
}

/// A page as the JSON a client reads, `{"topic", "messages": […], "next"}`,
/// written a message at a time as the client takes it: what is in memory
/// is the page's payload (in the read-back budget, held until the last
/// byte is handed on) and one message's JSON, never the whole answer.
pub fn page_response(pattern: &str, page: Page) -> Response {
    let Page {
        messages,
        next,
        hold,
    } = page;
    let head = format!(
        "{{\"topic\":{},\"messages\":[",
        serde_json::Value::from(pattern)
    );
    let next = next.map_or("null".to_string(), |n| n.to_string());
    let tail = std::iter::once_with(move || {
        drop(hold);
        format!("],\"next\":{next}}}")
    });
    let body = messages.into_iter().enumerate().map(|(i, m)| {
        let json = super::message_json(&m.topic, &m.payload, Some(m.id), Some(m.published_ms));
        let comma = if i == 0 { "" } else { "," };
        format!("{comma}{json}")
    });
    let chunks = std::iter::once(head)
        .chain(body)
        .chain(tail)
        .map(|chunk| Ok::<_, std::io::Error>(Bytes::from(chunk)));
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    let mut resp = Response::new(http::StatusCode::OK, headers, Bytes::new());
    resp.stream = Some(Box::pin(futures_util::stream::iter(chunks)));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_is_read_and_checked() {
        let q = parse_query(
            "a.>",
            "after=5&before=9&since=2026-11-27T10:00:00Z&until=1800000000000&limit=7&order=newest&contains=x%20y&match=%5Eab",
        )
        .unwrap();
        assert_eq!((q.after, q.before, q.limit), (Some(5), Some(9), 7));
        assert_eq!(q.since_ms, Some(1_795_773_600_000));
        assert_eq!(q.until_ms, Some(1_800_000_000_000));
        assert!(q.newest_first);
        assert_eq!(q.contains.as_deref(), Some(&b"x y"[..]));
        assert!(q.regex.unwrap().is_match(b"abc"));
        for (bad, says) in [
            ("limit=0", "from 1 to 1000"),
            ("limit=1001", "from 1 to 1000"),
            ("after=-1", "not a message id"),
            ("since=yesterday", "not an RFC 3339 time"),
            ("order=up", "\"oldest\""),
            ("match=(", "regex parse error"),
            ("match=a{1000}{1000}", "size limit"),
            ("limit=1&limit=2", "more than once"),
            ("color=red", "unknown; the parameters are"),
            ("contains=", "empty"),
        ] {
            let err = parse_query("a", bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let long = format!("match={}", "a".repeat(MAX_REGEX_LEN + 1));
        assert!(parse_query("a", &long).is_err());
    }
}
