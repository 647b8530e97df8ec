//! What a target reads: the values of a variable for this transaction,
//! selected by key, minus the rule's exclusions and the targets a `ctl`
//! removed. Arena-backed values keep their position (so transformations
//! and prefilter scans of them are cached); values of variables that
//! change while rules run (`TX`, `MATCHED_VARS`…) are copied.

use super::Transaction;
use super::store::{Arena, Entry, Str};
use crate::model::{Exclusion, Selector, Target};
use crate::ruleset::Rule;
use crate::transform::{Mask, byte_mask};
use crate::vars::Var;

/// A value's bytes: in the arena (with its byte classes), or copied
/// into the bytes of the [`Vals`] it was read into.
#[derive(Clone, Copy)]
pub(crate) enum Data {
    Arena(Str, Mask),
    Held(Span),
}

/// The key a value has within its variable (for `MATCHED_VAR_NAME`).
#[derive(Clone, Copy)]
pub(crate) enum Key {
    None,
    Arena(Str),
    Held(Span),
    Static(&'static str),
}

/// A request-wide variable's value before it is held.
enum One<'a> {
    Arena(Str),
    Bytes(&'a [u8]),
    Num(usize),
    /// `STATUS_LINE`: the protocol, a space, the status.
    Line(Str, Str),
}

/// Bytes copied into a [`Vals`] buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    at: u32,
    len: u32,
}

#[derive(Clone, Copy)]
pub(crate) struct Val {
    pub var: Var,
    pub key: Key,
    pub data: Data,
}

/// The values a target read: those in the arena by position, and the
/// bytes of those copied out of variables that change while rules run
/// (`TX`, `MATCHED_VARS`, a count), in one buffer the transaction keeps
/// from rule to rule, so reading them allocates nothing once it has
/// grown.
#[derive(Default)]
pub(crate) struct Vals {
    pub list: Vec<Val>,
    pub bytes: Vec<u8>,
}

impl Vals {
    pub(crate) fn clear(&mut self) {
        self.list.clear();
        self.bytes.clear();
    }

    /// `b`, copied.
    pub(crate) fn hold(&mut self, b: &[u8]) -> Span {
        hold(&mut self.bytes, b)
    }
}

/// `b` appended to `bytes`: where.
fn hold(bytes: &mut Vec<u8>, b: &[u8]) -> Span {
    let at = bytes.len() as u32;
    bytes.extend_from_slice(b);
    Span {
        at,
        len: b.len() as u32,
    }
}

/// `n` in decimal appended to `bytes`: where.
fn hold_decimal(bytes: &mut Vec<u8>, n: i64) -> Span {
    let at = bytes.len() as u32;
    crate::operator::write_decimal(n, bytes);
    Span {
        at,
        len: bytes.len() as u32 - at,
    }
}

impl Span {
    /// These bytes of `held`.
    pub(crate) fn of(self, held: &[u8]) -> &[u8] {
        &held[self.at as usize..(self.at + self.len) as usize]
    }
}

/// An arena-backed collection as seen by a variable: up to two entry
/// lists (ARGS is ARGS_GET then ARGS_POST), and whether the variable
/// reads keys (`*_NAMES`) instead of values.
pub(crate) struct View<'a> {
    pub lists: [&'a [Entry]; 2],
    pub names: bool,
}

impl View<'_> {
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.lists[0].iter().chain(self.lists[1].iter())
    }

    pub fn get(&self, i: usize) -> &Entry {
        if i < self.lists[0].len() {
            &self.lists[0][i]
        } else {
            &self.lists[1][i - self.lists[0].len()]
        }
    }
}

/// Whether `var` is an arena-backed collection (one [`Transaction::view`]
/// serves), whatever the transaction.
pub(crate) fn arena_backed(var: Var) -> bool {
    matches!(
        var,
        Var::Args
            | Var::ArgsNames
            | Var::ArgsGet
            | Var::ArgsGetNames
            | Var::ArgsPost
            | Var::ArgsPostNames
            | Var::RequestHeaders
            | Var::RequestHeadersNames
            | Var::RequestCookies
            | Var::RequestCookiesNames
            | Var::ResponseHeaders
            | Var::ResponseHeadersNames
            | Var::Files
            | Var::FilesNames
            | Var::FilesSizes
            | Var::MultipartPartHeaders
            | Var::Xml
    )
}

impl Transaction {
    /// The arena-backed collection behind `var`, if it is one.
    pub(crate) fn view(&self, var: Var, sel: &Selector) -> Option<View<'_>> {
        let none: &[Entry] = &[];
        let (a, b, names) = match var {
            Var::Args => (
                &self.args_get.entries[..],
                &self.args_post.entries[..],
                false,
            ),
            Var::ArgsNames => (
                &self.args_get.entries[..],
                &self.args_post.entries[..],
                true,
            ),
            Var::ArgsGet => (&self.args_get.entries[..], none, false),
            Var::ArgsGetNames => (&self.args_get.entries[..], none, true),
            Var::ArgsPost => (&self.args_post.entries[..], none, false),
            Var::ArgsPostNames => (&self.args_post.entries[..], none, true),
            Var::RequestHeaders => (&self.req_headers.entries[..], none, false),
            Var::RequestHeadersNames => (&self.req_headers.entries[..], none, true),
            Var::RequestCookies => (&self.cookies.entries[..], none, false),
            Var::RequestCookiesNames => (&self.cookies.entries[..], none, true),
            Var::ResponseHeaders => (&self.resp_headers.entries[..], none, false),
            Var::ResponseHeadersNames => (&self.resp_headers.entries[..], none, true),
            Var::Files => (&self.files.entries[..], none, false),
            Var::FilesNames => (&self.files_names.entries[..], none, false),
            Var::FilesSizes => (&self.files_sizes.entries[..], none, false),
            Var::MultipartPartHeaders => (&self.mp_headers.entries[..], none, false),
            Var::Xml => match sel {
                Selector::XmlAttributes => (&self.xml_attrs.entries[..], none, false),
                _ => (&self.xml_text.entries[..], none, false),
            },
            _ => return None,
        };
        Some(View {
            lists: [a, b],
            names,
        })
    }

    /// Whether `key` of `var` is left out of rule `r`'s targets.
    pub(crate) fn excluded(&self, r: &Rule, var: Var, key: &[u8]) -> bool {
        let hit = |x: &Exclusion| x.var == var && x.selector.selects(key);
        r.exclusions.iter().any(hit)
            || self
                .removed_targets
                .iter()
                .any(|(owner, x)| hit(x) && self.owns(owner, r))
    }

    /// The values `target` reads for rule `r`, appended to `out`.
    pub(crate) fn values(&self, r: &Rule, t: &Target, out: &mut Vals) {
        let start = out.list.len();
        if let Some(view) = self.view(t.var, &t.selector) {
            let xml_key = (t.var == Var::Xml).then_some(match t.selector {
                Selector::XmlAttributes => "//@*",
                _ => "/*",
            });
            for e in view.iter() {
                let key = self.arena.get(e.key);
                if !t.selector.selects(key) || self.excluded(r, t.var, key) {
                    continue;
                }
                let data = if view.names {
                    Data::Arena(e.key, e.kmask)
                } else {
                    Data::Arena(e.value, e.vmask)
                };
                let key = match xml_key {
                    Some(s) => Key::Static(s),
                    None => Key::Arena(e.key),
                };
                out.list.push(Val {
                    var: t.var,
                    key,
                    data,
                });
            }
        } else if t.var.is_collection() {
            self.dynamic_values(r, t, out);
        } else if let Some(v) = self.single(t.var, &mut out.bytes) {
            out.list.push(Val {
                var: t.var,
                key: Key::None,
                data: v,
            });
        }
        if t.count {
            let n = out.list.len() - start;
            out.list.truncate(start);
            let key = match &t.selector {
                Selector::Key(k) => Key::Held(out.hold(k.as_bytes())),
                _ => Key::None,
            };
            let data = Data::Held(hold_decimal(&mut out.bytes, n as i64));
            out.list.push(Val {
                var: t.var,
                key,
                data,
            });
        }
    }

    fn dynamic_values(&self, r: &Rule, t: &Target, out: &mut Vals) {
        let mut push = |key: &[u8], value: &[u8]| {
            if t.selector.selects(key) && !self.excluded(r, t.var, key) {
                let key = Key::Held(out.hold(key));
                let data = Data::Held(out.hold(value));
                out.list.push(Val {
                    var: t.var,
                    key,
                    data,
                });
            }
        };
        match t.var {
            Var::MatchedVars => {
                for (k, v) in self.matched_vars.iter() {
                    push(k.as_bytes(), v);
                }
            }
            Var::MatchedVarsNames => {
                for (k, _) in self.matched_vars.iter() {
                    push(k.as_bytes(), k.as_bytes());
                }
            }
            Var::Env => {
                for (k, v) in self.env.iter() {
                    push(k, v);
                }
            }
            Var::Rule => {
                let rule = self.rules.rule_at(self.current_rule);
                push(b"id", rule.id.to_string().as_bytes());
                push(b"phase", rule.phase.to_string().as_bytes());
                if let Some(s) = rule.severity {
                    push(b"severity", s.to_string().as_bytes());
                }
                if let Some(m) = rule.msg.as_ref().and_then(|m| m.as_literal()) {
                    push(b"msg", m.as_bytes());
                }
                if let Some(v) = &rule.ver {
                    push(b"ver", v.as_bytes());
                }
            }
            var => {
                if let Selector::Key(k) = &t.selector {
                    // A direct lookup: no walk over the collection.
                    let v = match t.slot {
                        Some(slot) => self.tx.value_at(slot),
                        None => self.vars_of(var).and_then(|c| c.get(k.as_bytes())),
                    };
                    if let Some(v) = v
                        && !self.excluded(r, var, k.as_bytes())
                    {
                        let key = Key::Held(out.hold(k.as_bytes()));
                        let data = Data::Held(out.hold(v));
                        out.list.push(Val { var, key, data });
                    }
                    return;
                }
                if let Some(c) = self.vars_of(var) {
                    for (k, v) in c.iter() {
                        push(k, v);
                    }
                }
            }
        }
    }

    /// The byte classes of an arena value; a long one's are found once.
    fn mask_of(&self, x: Str) -> Mask {
        const LONG: u32 = 256;
        if x.len < LONG {
            return byte_mask(self.arena.get(x));
        }
        *self
            .long_masks
            .borrow_mut()
            .entry(x)
            .or_insert_with(|| byte_mask(self.arena.get(x)))
    }

    /// A request-wide variable's value: in the arena, or appended to
    /// `held` (a number, a flag, a value the engine keeps elsewhere).
    pub(crate) fn single(&self, var: Var, held: &mut Vec<u8>) -> Option<Data> {
        Some(match self.single_of(var)? {
            One::Arena(x) => Data::Arena(x, self.mask_of(x)),
            One::Bytes(b) => Data::Held(hold(held, b)),
            One::Num(n) => Data::Held(hold_decimal(held, n as i64)),
            One::Line(protocol, status) => {
                let at = held.len();
                held.extend_from_slice(self.arena.get(protocol));
                held.push(b' ');
                held.extend_from_slice(self.arena.get(status));
                Data::Held(Span {
                    at: at as u32,
                    len: (held.len() - at) as u32,
                })
            }
        })
    }

    fn single_of(&self, var: Var) -> Option<One<'_>> {
        let s = &self.s;
        let arena = One::Arena;
        let owned = One::Bytes;
        let flag = |b: bool| One::Bytes(if b { b"1" } else { b"0" });
        let num = One::Num;
        let mp = &self.multipart;
        Some(match var {
            Var::RequestMethod => arena(s.method),
            Var::RequestUriRaw => arena(s.uri_raw),
            Var::RequestUri => arena(s.uri),
            Var::RequestProtocol => arena(s.protocol),
            Var::RequestLine => arena(s.request_line),
            Var::QueryString => arena(s.query),
            Var::RequestFilename | Var::PathInfo => arena(s.filename),
            Var::RequestBasename => arena(s.basename),
            Var::RemoteAddr | Var::RemoteHost => arena(s.remote_addr),
            Var::RemotePort => arena(s.remote_port),
            Var::ServerAddr => arena(s.server_addr),
            Var::ServerPort => arena(s.server_port),
            Var::ServerName => arena(s.server_name),
            Var::AuthType => arena(s.auth_type),
            Var::UniqueId => arena(s.unique_id),
            Var::RequestBody => arena(s.request_body),
            Var::RequestBodyLength => num(s.request_body_len),
            Var::ResponseStatus => arena(s.status),
            Var::ResponseProtocol => arena(s.response_protocol),
            Var::ResponseContentType => arena(s.response_content_type),
            Var::ResponseBody => arena(s.response_body),
            Var::ResponseContentLength => num(s.response_body_len),
            Var::StatusLine => One::Line(s.response_protocol, s.status),
            Var::FullRequestLength => {
                let headers: usize = self
                    .req_headers
                    .entries
                    .iter()
                    .map(|e| (e.key.len + e.value.len) as usize + 4)
                    .sum();
                num(s.request_line.len as usize + 2 + headers + 2 + s.request_body_len)
            }
            Var::ArgsCombinedSize => num(self
                .args_get
                .entries
                .iter()
                .chain(&self.args_post.entries)
                .map(|e| (e.key.len + e.value.len) as usize)
                .sum()),
            Var::FilesCombinedSize => num(s.files_combined_size),
            Var::ReqbodyProcessor => {
                owned(self.processor.map(|p| p.name()).unwrap_or("").as_bytes())
            }
            Var::ReqbodyError | Var::ReqbodyProcessorError => flag(self.reqbody_error.is_some()),
            Var::ReqbodyErrorMsg | Var::ReqbodyProcessorErrorMsg => {
                owned(self.reqbody_error.as_deref().unwrap_or("").as_bytes())
            }
            Var::InboundDataError => flag(self.inbound_data_error),
            Var::OutboundDataError => flag(self.outbound_data_error),
            Var::UrlencodedError => flag(self.urlencoded_error),
            Var::MatchedVar => owned(&self.matched_var),
            Var::MatchedVarName => owned(self.matched_var_name.as_bytes()),
            Var::HighestSeverity => num(self.highest_severity as usize),
            Var::MultipartFilename => arena(s.multipart_filename),
            Var::MultipartName => arena(s.multipart_name),
            Var::MultipartStrictError => flag(mp.strict_error()),
            Var::MultipartBoundaryQuoted => flag(mp.boundary_quoted),
            Var::MultipartBoundaryWhitespace => flag(mp.boundary_whitespace),
            Var::MultipartCrlfLfLines => flag(mp.crlf_lf_lines),
            Var::MultipartDataAfter => flag(mp.data_after),
            Var::MultipartDataBefore => flag(mp.data_before),
            Var::MultipartFileLimitExceeded => flag(mp.file_limit_exceeded),
            Var::MultipartHeaderFolding => flag(mp.header_folding),
            Var::MultipartInvalidHeaderFolding => flag(mp.invalid_header_folding),
            Var::MultipartInvalidPart => flag(mp.invalid_part),
            Var::MultipartInvalidQuoting => flag(mp.invalid_quoting),
            Var::MultipartLfLine => flag(mp.lf_line),
            Var::MultipartMissingSemicolon => flag(mp.missing_semicolon),
            Var::MultipartUnmatchedBoundary => flag(mp.unmatched_boundary),
            Var::Duration => num(self.spent.as_micros() as usize),
            Var::Time | Var::TimeEpoch => {
                let secs = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                num(secs as usize)
            }
            _ => return None,
        })
    }

    /// Adds `var:key` with `value` to the variables the rule being
    /// evaluated matched (`VAR` or `VAR:key`, as `MATCHED_VAR_NAME` shows
    /// it); `held`: the bytes of the [`Vals`] a held key is in.
    pub(crate) fn note_match(&mut self, var: Var, key: Key, value: Found<'_>, held: &[u8]) {
        let (name, bytes) = self.matched_vars.next();
        write_name(name, var, key, &self.arena, held);
        bytes.extend_from_slice(match value {
            Found::Arena(s) => self.arena.get(s),
            Found::Bytes(b) => b,
        });
    }
}

/// `VAR:key` (or `VAR` without a key), the key's bytes as UTF-8 with
/// replacement characters, appended to `name`.
fn write_name(name: &mut String, var: Var, key: Key, arena: &Arena, held: &[u8]) {
    name.push_str(var.name());
    let key: &[u8] = match key {
        Key::None => return,
        Key::Arena(s) => arena.get(s),
        Key::Held(span) => span.of(held),
        Key::Static(s) => s.as_bytes(),
    };
    name.push(':');
    match std::str::from_utf8(key) {
        Ok(key) => name.push_str(key),
        Err(_) => name.push_str(&String::from_utf8_lossy(key)),
    }
}

/// A matched value: in the arena, or bytes of the caller's.
pub(crate) enum Found<'a> {
    Arena(Str),
    Bytes(&'a [u8]),
}

/// Most entries [`MatchedVars`] keeps for the next transaction.
const KEEP_MATCHED: usize = 64;

/// Largest buffer (name or value) [`MatchedVars`] keeps for the next
/// transaction: a matched body of a megabyte is not held after its
/// request.
const KEEP_MATCHED_BYTES: usize = 4096;

/// The variables the rule being evaluated matched (`MATCHED_VARS`), as
/// `VAR:key` names and values, in buffers kept from match to match and
/// from request to request (up to [`KEEP_MATCHED`] of them, none larger
/// than [`KEEP_MATCHED_BYTES`]): a match is
/// copied into them and allocates only when a rule matches more
/// variables, or longer ones, than before.
#[derive(Debug, Default)]
pub(crate) struct MatchedVars {
    entries: Vec<(String, Vec<u8>)>,
    len: usize,
}

impl MatchedVars {
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Emptied, and no larger than what a transaction keeps.
    pub(crate) fn kept(mut self) -> MatchedVars {
        self.len = 0;
        self.entries.truncate(KEEP_MATCHED);
        for (name, value) in &mut self.entries {
            if name.capacity() > KEEP_MATCHED_BYTES {
                *name = String::new();
            }
            if value.capacity() > KEEP_MATCHED_BYTES {
                *value = Vec::new();
            }
        }
        self
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.entries[..self.len]
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    pub(crate) fn last(&self) -> Option<(&str, &[u8])> {
        let (name, value) = &self.entries[..self.len].last()?;
        Some((name, value))
    }

    /// The buffers of one more entry, emptied.
    fn next(&mut self) -> (&mut String, &mut Vec<u8>) {
        if self.len == self.entries.len() {
            self.entries.push(Default::default());
        }
        let (name, value) = &mut self.entries[self.len];
        self.len += 1;
        name.clear();
        value.clear();
        (name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compiler's list of arena-backed variables is the one a
    /// transaction serves views of.
    #[test]
    fn arena_backed_is_what_view_serves() {
        let rules = std::sync::Arc::new(crate::RuleSet::from_text("").unwrap());
        let tx = Transaction::new(rules, crate::Limits::default());
        for &var in Var::ALL {
            for sel in [Selector::All, Selector::XmlAttributes] {
                assert_eq!(arena_backed(var), tx.view(var, &sel).is_some(), "{var:?}");
            }
        }
    }

    /// What a transaction leaves for the next is bounded in entries and
    /// in bytes, whatever its matches were, and starts empty.
    #[test]
    fn matched_vars_keep_a_bounded_amount_for_the_next_transaction() {
        let mut m = MatchedVars::default();
        for i in 0..200 {
            let (name, value) = m.next();
            name.push_str("ARGS:big");
            value.resize(if i % 2 == 0 { 1 << 20 } else { 10 }, b'a');
        }
        assert_eq!(m.iter().count(), 200);
        let m = m.kept();
        assert_eq!(m.iter().count(), 0);
        assert!(m.last().is_none());
        assert_eq!(m.entries.len(), KEEP_MATCHED);
        let held: usize = m
            .entries
            .iter()
            .map(|(n, v)| n.capacity() + v.capacity())
            .sum();
        assert!(
            held <= KEEP_MATCHED * 2 * KEEP_MATCHED_BYTES,
            "{held} bytes kept"
        );
        assert!(
            m.entries
                .iter()
                .all(|(_, v)| v.capacity() <= KEEP_MATCHED_BYTES)
        );
    }
}
