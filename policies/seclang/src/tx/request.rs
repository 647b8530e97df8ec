//! Feeding a transaction: the request line into `REQUEST_URI`,
//! `REQUEST_FILENAME`, `ARGS_GET`…; headers into `REQUEST_HEADERS` and
//! cookies; bodies buffered up to the inspection limit and handed to
//! their processor (URL-encoded, multipart, JSON, XML) before phase 2.
//! Follows ModSecurity v3's extraction rules.

use super::store::Str;
use super::{Limit, PastLimit, Transaction};
use crate::decode::{uri_decode, url_decode_into};
use crate::model::BodyProcessor;
use crate::ruleset::LimitAction;

impl Transaction {
    /// The request line: method, URI as sent (`/a/b?x=1`) and protocol
    /// (`HTTP/1.1`).
    pub fn request_line(&mut self, method: &str, uri: &str, protocol: &str) {
        let a = &mut self.arena;
        self.s.method = a.push(method.as_bytes());
        self.s.protocol = a.push(protocol.as_bytes());
        self.s.uri_raw = a.push(uri.as_bytes());
        self.s.request_line = a.push(format!("{method} {uri} {protocol}").as_bytes());
        let raw = uri.split('#').next().unwrap_or("");
        let (path_raw, query) = match raw.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (raw, None),
        };
        let decoded = uri_decode(raw.as_bytes());
        // Absolute form (`http://host/path`): REQUEST_URI keeps the path.
        let mut uri_part: &[u8] = &decoded;
        if !decoded.starts_with(b"/")
            && let Some(scheme) = memchr::memmem::find(&decoded, b"://")
        {
            let after = &decoded[scheme + 3..];
            if let Some(slash) = after.iter().position(|&b| b == b'/') {
                uri_part = &after[slash..];
            }
        }
        self.s.uri = a.push(uri_part);
        let path = uri_decode(path_raw.as_bytes());
        self.s.filename = a.push(&path);
        let base = match path.iter().rposition(|&b| b == b'/' || b == b'\\') {
            Some(i) if i + 1 < path.len() => &path[i + 1..],
            Some(_) => &path[..0],
            None => &path[..],
        };
        self.s.basename = a.push(base);
        if let Some(q) = query {
            self.s.query = a.push(q.as_bytes());
            self.add_arguments(q.as_bytes(), false);
        }
    }

    /// One request header (in the order received; repeated names are
    /// kept apart).
    pub fn request_header(&mut self, name: &[u8], value: &[u8]) {
        self.req_headers.add(&mut self.arena, name, value);
        if name.eq_ignore_ascii_case(b"cookie") {
            self.add_cookies(value);
        } else if name.eq_ignore_ascii_case(b"content-type") {
            let lower = value.to_ascii_lowercase();
            if lower.starts_with(b"multipart/form-data") {
                self.processor = Some(BodyProcessor::Multipart);
            } else if lower.starts_with(b"application/x-www-form-urlencoded") {
                self.processor = Some(BodyProcessor::UrlEncoded);
            }
        } else if name.eq_ignore_ascii_case(b"host") {
            let host = value.split(|&b| b == b':').next().unwrap_or(b"");
            self.s.server_name = self.arena.push(host);
        } else if name.eq_ignore_ascii_case(b"authorization") {
            let kind = value.split(|&b| b == b' ').next().unwrap_or(b"");
            self.s.auth_type = self.arena.push(kind);
        }
    }

    /// One response header.
    pub fn response_header(&mut self, name: &[u8], value: &[u8]) {
        self.resp_headers.add(&mut self.arena, name, value);
        if name.eq_ignore_ascii_case(b"content-type") {
            let t = value.split(|&b| b == b';').next().unwrap_or(b"");
            self.s.response_content_type = self.arena.push(crate::decode::trim(t, true, true));
        }
    }

    /// Appends request body bytes; past the inspection limit the rest is
    /// not kept (and, by the limits' decision, the request is blocked).
    pub fn request_body(&mut self, chunk: &[u8]) {
        if !self.request_body_access {
            return;
        }
        let limit = self
            .limits
            .body_bytes
            .min(self.rules.config().request_body_limit as usize);
        let room = limit.saturating_sub(self.body.len());
        if chunk.len() > room {
            self.inbound_data_error = true;
            self.body.extend_from_slice(&chunk[..room]);
            let reject = self.rules.config().request_body_limit_action == LimitAction::Reject;
            if reject || self.limits.past == PastLimit::Block {
                self.limit_reached(Limit::BodyBytes, 2);
            }
        } else {
            self.body.extend_from_slice(chunk);
        }
    }

    /// Appends response body bytes (kept only for inspected content types).
    pub fn response_body(&mut self, chunk: &[u8]) {
        if !self.response_body_access || !self.response_type_inspected() {
            return;
        }
        let limit = self
            .limits
            .response_bytes
            .min(self.rules.config().response_body_limit as usize);
        let room = limit.saturating_sub(self.response.len());
        if chunk.len() > room {
            self.outbound_data_error = true;
            self.response.extend_from_slice(&chunk[..room]);
            if self.rules.config().response_body_limit_action == LimitAction::Reject {
                self.limit_reached(Limit::ResponseBytes, 4);
            }
        } else {
            self.response.extend_from_slice(chunk);
        }
    }

    fn response_type_inspected(&self) -> bool {
        let t = self
            .arena
            .get(self.s.response_content_type)
            .to_ascii_lowercase();
        let types = &self.rules.config().response_mime_types;
        types.is_empty() || types.iter().any(|m| m.as_bytes() == t.as_slice())
    }

    /// `a=1&b=2` into `ARGS_GET` (or `ARGS_POST`): keys and values
    /// URL-decoded, a piece without `=` a key with an empty value.
    pub(crate) fn add_arguments(&mut self, text: &[u8], post: bool) {
        let sep = self.rules.config().argument_separator;
        for piece in text.split(|&b| b == sep).filter(|p| !p.is_empty()) {
            let (k, v) = match piece.iter().position(|&b| b == b'=') {
                Some(i) => (&piece[..i], &piece[i + 1..]),
                None => (piece, &piece[..0]),
            };
            if crate::operator::invalid_url_encoding(piece) {
                self.urlencoded_error = true;
            }
            if !self.room_for_argument(post) {
                return;
            }
            // Decoded straight into the arena: no buffer per field.
            let key = self.arena.push_with(|o| url_decode_into(k, false, o));
            let value = self.arena.push_with(|o| url_decode_into(v, false, o));
            self.push_argument(key, value, post);
        }
    }

    /// Adds one argument; false once past the arguments limit.
    pub(crate) fn add_argument(&mut self, key: &[u8], value: &[u8], post: bool) -> bool {
        if !self.room_for_argument(post) {
            return false;
        }
        let (key, value) = (self.arena.push(key), self.arena.push(value));
        self.push_argument(key, value, post);
        true
    }

    /// Adds an argument whose key and value are in the arena already.
    fn push_argument(&mut self, key: Str, value: Str, post: bool) {
        let col = if post {
            &mut self.args_post
        } else {
            &mut self.args_get
        };
        col.add_decoded(&self.arena, key, value);
    }

    /// Whether one more argument is within the arguments limit (the limit
    /// is recorded when it is not).
    fn room_for_argument(&mut self, post: bool) -> bool {
        let count = self.args_get.entries.len() + self.args_post.entries.len();
        let limit = self
            .limits
            .arguments
            .min(self.rules.config().arguments_limit.max(1));
        if count >= limit {
            self.limit_reached(Limit::Arguments, if post { 2 } else { 1 });
            return false;
        }
        true
    }

    fn add_cookies(&mut self, header: &[u8]) {
        let mut pairs: Vec<&[u8]> = header.split(|&b| b == b';').collect();
        if let Some(last) = pairs.last_mut() {
            *last = crate::decode::trim(last, false, true);
        }
        for c in pairs.into_iter().filter(|c| !c.is_empty()) {
            let (k, v) = match c.iter().position(|&b| b == b'=') {
                Some(i) => (&c[..i], &c[i + 1..]),
                None => (c, &c[..0]),
            };
            let k = crate::decode::trim(k, true, false);
            if !k.is_empty() {
                self.cookies.add(&mut self.arena, k, v);
            }
        }
    }

    /// Parses the buffered body with the processor the headers or a
    /// `ctl` chose.
    pub(crate) fn parse_request_body(&mut self) {
        let body = std::mem::take(&mut self.body);
        self.s.request_body_len = body.len();
        if !self.request_body_access || body.is_empty() {
            return;
        }
        let processor = if self.force_body_variable && self.processor.is_none() {
            Some(BodyProcessor::UrlEncoded)
        } else {
            self.processor
        };
        match processor {
            Some(BodyProcessor::UrlEncoded) => {
                self.s.request_body = self.arena.push(&body);
                self.add_arguments(&body, true);
            }
            Some(BodyProcessor::Multipart) => {
                let ct = self
                    .req_headers
                    .first(&self.arena, b"content-type")
                    .map(|s| self.arena.get(s).to_vec())
                    .unwrap_or_default();
                crate::body::multipart::parse(self, &ct, &body);
            }
            Some(BodyProcessor::Json) => crate::body::json::parse(self, &body),
            Some(BodyProcessor::Xml) => crate::body::xml::parse(self, &body),
            None => {}
        }
    }

    /// Records a limit the request went past: blocks unless the limits
    /// say to pass.
    pub(crate) fn limit_reached(&mut self, limit: Limit, phase: u8) {
        if self.limits.past == PastLimit::Pass || self.intervention.is_some() {
            return;
        }
        let status = match limit {
            Limit::Time => 403,
            _ => 413,
        };
        self.intervention = Some(super::Intervention {
            status,
            rule_id: 0,
            phase,
            redirect: None,
            drop: false,
            limit: Some(limit),
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::Limits;
    use super::*;
    use crate::RuleSet;

    fn tx() -> Transaction {
        let rules = RuleSet::from_text("SecRuleEngine On\nSecRequestBodyAccess On\n").unwrap();
        Transaction::new(Arc::new(rules), Limits::default())
    }

    #[test]
    fn uri_and_arguments() {
        let mut t = tx();
        t.request_line("GET", "/a%20b/c.php?x=1&y=%27+2&z&=e", "HTTP/1.1");
        assert_eq!(t.arena.get(t.s.filename), b"/a b/c.php");
        assert_eq!(t.arena.get(t.s.basename), b"c.php");
        assert_eq!(t.arena.get(t.s.query), b"x=1&y=%27+2&z&=e");
        let args: Vec<(Vec<u8>, Vec<u8>)> = t
            .args_get
            .entries
            .iter()
            .map(|e| (t.arena.get(e.key).to_vec(), t.arena.get(e.value).to_vec()))
            .collect();
        assert_eq!(
            args,
            vec![
                (b"x".to_vec(), b"1".to_vec()),
                (b"y".to_vec(), b"' 2".to_vec()),
                (b"z".to_vec(), b"".to_vec()),
                (b"".to_vec(), b"e".to_vec()),
            ]
        );
        t.request_line("GET", "http://example.com/p?q", "HTTP/1.1");
        assert_eq!(t.arena.get(t.s.uri), b"/p?q");
    }

    #[test]
    fn cookies_split_like_modsecurity() {
        let mut t = tx();
        t.request_header(b"Cookie", b" a=1; b=x=y;;  c ; =skip  ");
        let got: Vec<_> = t
            .cookies
            .entries
            .iter()
            .map(|e| (t.arena.get(e.key).to_vec(), t.arena.get(e.value).to_vec()))
            .collect();
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), b"1".to_vec()),
                (b"b".to_vec(), b"x=y".to_vec()),
                (b"c ".to_vec(), b"".to_vec()),
            ]
        );
    }

    #[test]
    fn too_many_arguments_block_by_default() {
        let rules = Arc::new(RuleSet::from_text("SecRuleEngine On\n").unwrap());
        let limits = Limits {
            arguments: 3,
            ..Limits::default()
        };
        let mut t = Transaction::new(rules.clone(), limits);
        t.request_line("GET", "/?a=1&b=2&c=3&d=4", "HTTP/1.1");
        let i = t.process_request_headers().unwrap();
        assert_eq!((i.status, i.limit), (413, Some(Limit::Arguments)));
        let mut t = Transaction::new(
            rules,
            Limits {
                past: PastLimit::Pass,
                ..limits
            },
        );
        t.request_line("GET", "/?a=1&b=2&c=3&d=4", "HTTP/1.1");
        assert!(t.process_request_headers().is_none());
        assert_eq!(t.args_get.entries.len(), 3);
    }
}
