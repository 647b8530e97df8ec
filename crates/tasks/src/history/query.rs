//! Reading kept messages back: a topic or pattern, a cursor (`after`,
//! `before`), a time range, a substring or a regular expression, oldest or
//! newest first, one page at a time. A read examines at most
//! [`MAX_SCAN`] messages and a page holds at most [`Query::max_bytes`] of
//! payload (one message however large, so a read always moves on); past
//! either it answers what it found with a cursor to go on from, so no
//! query costs more than a bounded scan and a bounded page.

use rusqlite::{Connection, OptionalExtension, params};

use super::{HistoryError, db};

/// The most messages one page answers.
pub const MAX_LIMIT: usize = 1000;

/// The most messages one read examines.
pub const MAX_SCAN: usize = 100_000;

/// The most payload bytes one page holds unless the query says less (a
/// single message larger than it is answered alone).
pub const MAX_PAGE_BYTES: usize = 4 << 20;

/// What to read.
#[derive(Debug, Clone)]
pub struct Query {
    /// A topic, or a pattern (`orders.*`, `orders.>`).
    pub pattern: String,
    /// Only ids above this.
    pub after: Option<u64>,
    /// Only ids below this.
    pub before: Option<u64>,
    /// Only messages published at or after this time (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Only messages published before this time (ms since the epoch).
    pub until_ms: Option<i64>,
    /// The most messages to answer (at most [`MAX_LIMIT`]).
    pub limit: usize,
    /// Only payloads holding these bytes.
    pub contains: Option<Vec<u8>>,
    /// Only payloads this expression matches.
    pub regex: Option<regex::bytes::Regex>,
    /// Newest first (else oldest first).
    pub newest_first: bool,
    /// The most payload bytes the page holds (at most [`MAX_PAGE_BYTES`]);
    /// the first message is answered whatever its size.
    pub max_bytes: usize,
}

impl Query {
    /// Every kept message of `pattern`, oldest first, a page of `limit`.
    pub fn new(pattern: &str, limit: usize) -> Query {
        Query {
            pattern: pattern.into(),
            after: None,
            before: None,
            since_ms: None,
            until_ms: None,
            limit,
            contains: None,
            regex: None,
            newest_first: false,
            max_bytes: MAX_PAGE_BYTES,
        }
    }
}

/// One kept message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Its id: later messages have higher ids.
    pub id: u64,
    /// The topic it was published to.
    pub topic: String,
    /// When, in ms since the epoch.
    pub published_ms: i64,
    /// Which republish in a row it was (0 when no delivered event led to
    /// its publish).
    pub hops: u32,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// One page of an answer.
#[derive(Debug, Default)]
pub struct Page {
    /// The messages, in the order asked.
    pub messages: Vec<Kept>,
    /// Where to go on from when there may be more: the next read's
    /// `after` (oldest first) or `before` (newest first).
    pub next: Option<u64>,
    /// The page's payload bytes, held in the history's read-back budget
    /// until the page (or this hold, taken from it) is dropped.
    pub hold: super::Hold,
}

impl Page {
    /// The payload bytes the page holds.
    pub fn bytes(&self) -> usize {
        self.messages.iter().map(|m| m.payload.len()).sum()
    }
}

/// Which rows a pattern can match, as an index range over `topic`.
enum Topics {
    Exact(String),
    /// Topics starting with the first string and below the second.
    Range(String, String),
    Any,
}

fn topics(pattern: &str) -> Topics {
    let literal: Vec<&str> = pattern
        .split('.')
        .take_while(|t| *t != "*" && *t != ">")
        .collect();
    if literal.len() == pattern.split('.').count() {
        return Topics::Exact(pattern.into());
    }
    if literal.is_empty() {
        return Topics::Any;
    }
    let stem = literal.join(".");
    // Every topic below `stem.` sorts between `stem.` and `stem/`.
    Topics::Range(format!("{stem}."), format!("{stem}/"))
}

/// The first id published at or after `ms`, if any.
fn first_at(conn: &Connection, ms: i64) -> Result<Option<u64>, HistoryError> {
    conn.prepare_cached(
        "SELECT id FROM messages WHERE published_ms >= ?1 ORDER BY published_ms, id LIMIT 1",
    )
    .and_then(|mut s| s.query_row([ms], |r| r.get::<_, i64>(0)).optional())
    .map(|id| id.map(|id| id as u64))
    .map_err(db)
}

/// Runs `q` on `conn`.
pub(crate) fn run(conn: &Connection, q: &Query) -> Result<Page, HistoryError> {
    let mut after = q.after.unwrap_or(0);
    let mut before = q.before.unwrap_or(i64::MAX as u64).min(i64::MAX as u64);
    if let Some(since) = q.since_ms {
        match first_at(conn, since)? {
            Some(id) => after = after.max(id.saturating_sub(1)),
            None => return Ok(Page::default()),
        }
    }
    if let Some(until) = q.until_ms
        && let Some(id) = first_at(conn, until)?
    {
        before = before.min(id);
    }
    if after.saturating_add(1) >= before {
        return Ok(Page::default());
    }
    let order = if q.newest_first { "DESC" } else { "ASC" };
    let (clause, a, b) = match topics(&q.pattern) {
        Topics::Exact(t) => ("AND topic = ?3 AND ?4 = ?4", t, String::new()),
        Topics::Range(lo, hi) => ("AND topic >= ?3 AND topic < ?4", lo, hi),
        Topics::Any => ("AND ?3 = ?3 AND ?4 = ?4", String::new(), String::new()),
    };
    let sql = format!(
        "SELECT id, topic, published_ms, payload, hops FROM messages \
         WHERE id > ?1 AND id < ?2 {clause} ORDER BY id {order}"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
    let mut rows = stmt
        .query(params![after as i64, before as i64, a, b])
        .map_err(db)?;
    let limit = q.limit.clamp(1, MAX_LIMIT);
    let max_bytes = q.max_bytes.clamp(1, MAX_PAGE_BYTES);
    let mut bytes = 0usize;
    let finder = q.contains.as_deref().map(memchr::memmem::Finder::new);
    let mut page = Page::default();
    let mut examined = 0;
    while let Some(row) = rows.next().map_err(db)? {
        let id = row.get::<_, i64>(0).map_err(db)? as u64;
        examined += 1;
        let topic = row
            .get_ref(1)
            .map_err(db)?
            .as_str()
            .map_err(|e| db(e.into()))?;
        let payload = row
            .get_ref(3)
            .map_err(db)?
            .as_blob()
            .map_err(|e| db(e.into()))?;
        let wanted = wharf_config::topic::matches(&q.pattern, topic)
            && finder.as_ref().is_none_or(|f| f.find(payload).is_some())
            && q.regex.as_ref().is_none_or(|r| r.is_match(payload));
        if wanted && !page.messages.is_empty() && bytes + payload.len() > max_bytes {
            // Full by bytes: this one starts the next page.
            page.next = page.messages.last().map(|m| m.id);
            break;
        }
        if wanted {
            bytes += payload.len();
            page.messages.push(Kept {
                id,
                topic: topic.to_string(),
                published_ms: row.get(2).map_err(db)?,
                hops: row.get(4).map_err(db)?,
                payload: payload.to_vec(),
            });
            if page.messages.len() >= limit {
                page.next = Some(id);
                break;
            }
        }
        if examined >= MAX_SCAN {
            page.next = Some(id);
            break;
        }
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_reads_only_the_range_of_topics_it_can_match() {
        assert!(matches!(topics("a.b"), Topics::Exact(t) if t == "a.b"));
        assert!(matches!(topics("a.b.>"), Topics::Range(lo, hi) if lo == "a.b." && hi == "a.b/"));
        assert!(matches!(topics("a.*.c"), Topics::Range(lo, hi) if lo == "a." && hi == "a/"));
        assert!(matches!(topics("*.b"), Topics::Any));
        assert!(matches!(topics(">"), Topics::Any));
    }
}
