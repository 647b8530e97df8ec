//! Operators (`@rx`, `@pm`, `@detectSQLi`, …): parsed once, run on one
//! transformed value at a time. Every regular expression is compiled by
//! the `regex` crate (finite automata: linear in the input, no
//! backtracking), byte-oriented like PCRE without UTF mode: `.` matches
//! any byte and `(?i)` folds ASCII only.

use std::net::IpAddr;
use std::sync::Arc;

use aho_corasick::AhoCorasick;
use regex::bytes::Regex;

use crate::model::Macro;
use crate::transform::{M_ANY, M_LOWER, M_UPPER, Mask, class_of};

/// An operator and whether it is negated (`!@rx`).
#[derive(Debug, Clone)]
pub struct Operator {
    pub kind: OpKind,
    pub negated: bool,
    /// The operator's name as written (for reports).
    pub name: &'static str,
}

/// A parameter: fixed text, or text with `%{…}` references.
#[derive(Debug, Clone)]
pub enum Param {
    Lit(Vec<u8>),
    Macro(Macro),
}

/// A numeric operator's parameter: a number read once when the rule
/// loads, or text with `%{…}` references read when the rule runs.
#[derive(Debug, Clone)]
pub enum NumParam {
    Lit(i64),
    Macro(Macro),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrOp {
    Contains,
    ContainsWord,
    StrEq,
    StrMatch,
    BeginsWith,
    EndsWith,
    Within,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumOp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// Phrases for `@pm`/`@pmFromFile`, matched without case.
#[derive(Debug)]
pub struct PhraseSet {
    pub phrases: Vec<Vec<u8>>,
    pub automaton: AhoCorasick,
}

#[derive(Debug, Clone)]
pub enum OpKind {
    Rx(Arc<Regex>),
    /// A regular expression written with `%{…}`: compiled when it runs.
    RxMacro(Macro),
    Pm(Arc<PhraseSet>),
    Str(StrOp, Param),
    Num(NumOp, NumParam),
    IpMatch(Arc<Vec<(IpAddr, u8)>>),
    /// Matches when a byte is outside the allowed set.
    ValidateByteRange(Arc<[bool; 256]>),
    ValidateUrlEncoding,
    ValidateUtf8Encoding,
    DetectSqli,
    DetectXss,
    Unconditional,
    NoMatch,
}

/// Compiles a regular expression the way every `@rx` is compiled.
pub fn regex(pattern: &str) -> Result<Regex, String> {
    regex::bytes::RegexBuilder::new(&byte_escapes(pattern))
        .unicode(false)
        .dot_matches_new_line(true)
        .size_limit(64 << 20)
        .dfa_size_limit(8 << 20)
        .build()
        .map_err(|e| e.to_string())
}

/// PCRE without UTF mode reads `\x{ff}` as the byte 0xff; the `regex`
/// crate reads it as a code point, so the braces are dropped for values
/// that fit a byte (`\xff`).
fn byte_escapes(pattern: &str) -> std::borrow::Cow<'_, str> {
    if !pattern.contains("\\x{") {
        return std::borrow::Cow::Borrowed(pattern);
    }
    let b = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            if b[i + 1] == b'x' && b.get(i + 2) == Some(&b'{') {
                let close = pattern[i + 3..].find('}').map(|c| c + i + 3);
                if let Some(c) = close {
                    let hex = &pattern[i + 3..c];
                    if let Ok(v) = u8::from_str_radix(hex, 16) {
                        out.push_str(&format!("\\x{v:02x}"));
                        i = c + 1;
                        continue;
                    }
                }
            }
            out.push_str(&pattern[i..i + 2]);
            i += 2;
            continue;
        }
        let ch = pattern[i..].chars().next().unwrap_or('\0');
        out.push(ch);
        i += ch.len_utf8();
    }
    std::borrow::Cow::Owned(out)
}

/// What a match found: the capture groups (`TX.0`…`TX.9` with `capture`).
#[derive(Debug, Default)]
pub struct Found {
    pub captures: Vec<Vec<u8>>,
}

impl PhraseSet {
    pub fn new(phrases: Vec<Vec<u8>>) -> Result<PhraseSet, String> {
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&phrases)
            .map_err(|e| e.to_string())?;
        Ok(PhraseSet { phrases, automaton })
    }
}

/// Runs a non-regex string or number operator on `input` with the
/// parameter's (expanded) value.
pub fn string_op(op: StrOp, input: &[u8], param: &[u8]) -> bool {
    match op {
        StrOp::Contains | StrOp::StrMatch => find(input, param),
        StrOp::ContainsWord => contains_word(input, param),
        StrOp::StrEq => input == param,
        StrOp::BeginsWith => input.starts_with(param),
        StrOp::EndsWith => input.ends_with(param),
        StrOp::Within => input.is_empty() || find(param, input),
    }
}

/// Whether `needle` occurs in `hay`. A short haystack (a `@within` list,
/// a header) is searched directly: a comparison at each place its first
/// byte occurs, so at most 256 comparisons of at most 256 bytes, where
/// building `memmem`'s searcher for one search costs more than a typical
/// such search.
fn find(hay: &[u8], needle: &[u8]) -> bool {
    const SHORT: usize = 256;
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    if needle.len() > hay.len() {
        return false;
    }
    if hay.len() > SHORT {
        return memchr::memmem::find(hay, needle).is_some();
    }
    let last = hay.len() - needle.len();
    let mut at = 0;
    while let Some(i) = memchr::memchr(first, &hay[at..=last]) {
        if &hay[at + i + 1..at + i + needle.len()] == rest {
            return true;
        }
        at += i + 1;
        if at > last {
            return false;
        }
    }
    false
}

fn contains_word(input: &[u8], word: &[u8]) -> bool {
    if word.is_empty() {
        return true;
    }
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    memchr::memmem::find_iter(input, word).any(|at| {
        let before = at.checked_sub(1).map(|i| input[i]);
        let after = input.get(at + word.len()).copied();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// C's `atoi`: leading whitespace, a sign, digits; anything else is 0.
pub fn atoi(s: &[u8]) -> i64 {
    let s = crate::decode::trim(s, true, false);
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for &d in digits.iter().take_while(|d| d.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add((d - b'0') as i64);
    }
    if neg { -v } else { v }
}

pub fn number_op(op: NumOp, input: &[u8], param: &[u8]) -> bool {
    compare(op, atoi(input), atoi(param))
}

/// `a op b`.
pub fn compare(op: NumOp, a: i64, b: i64) -> bool {
    match op {
        NumOp::Eq => a == b,
        NumOp::Ne => a != b,
        NumOp::Gt => a > b,
        NumOp::Ge => a >= b,
        NumOp::Lt => a < b,
        NumOp::Le => a <= b,
    }
}

/// `n` in decimal, appended to `out` (as `n.to_string()` writes it).
pub(crate) fn write_decimal(n: i64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut m = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// The byte classes of which a value must hold one for `op` (not
/// negated) to match it, when `op` says: a byte outside the allowed range
/// (each such byte in a class), a `%` for a bad URL encoding, a byte past
/// ASCII for bad UTF-8, a byte outside `[A-Za-z0-9_]` for SQL injection,
/// a `<` or `=` for XSS. `None` when any value may match.
pub fn needed_classes(op: &OpKind) -> Option<Mask> {
    match op {
        OpKind::ValidateByteRange(allowed) => (0..=255u8)
            .filter(|&b| !allowed[b as usize])
            .try_fold(0, |m, b| match class_of(b) {
                0 => None,
                c => Some(m | c),
            }),
        OpKind::ValidateUrlEncoding => Some(class_of(b'%')),
        OpKind::ValidateUtf8Encoding => Some(class_of(0x80)),
        // The conditions under which `detect_sqli` and `detect_xss` answer
        // without libinjection (see each).
        OpKind::DetectSqli => Some(M_ANY & !(M_LOWER | M_UPPER)),
        OpKind::DetectXss => Some(class_of(b'<') | class_of(b'=')),
        _ => None,
    }
}

/// `@validateUrlEncoding`: a `%` not followed by two hex digits.
pub fn invalid_url_encoding(input: &[u8]) -> bool {
    let mut i = 0;
    while let Some(at) = memchr::memchr(b'%', &input[i..]) {
        i += at;
        match input.get(i + 1..i + 3) {
            Some([a, b]) if a.is_ascii_hexdigit() && b.is_ascii_hexdigit() => i += 3,
            _ => return true,
        }
    }
    false
}

/// The `@validateByteRange` parameter: `1-255`, `9,10,13,32-126`.
pub fn byte_range(param: &str) -> Result<[bool; 256], String> {
    let mut allowed = [false; 256];
    for part in param.split([',', ' ']).filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo: u8 = lo.parse().map_err(|_| format!("bad byte range `{part}`"))?;
        let hi: u8 = hi.parse().map_err(|_| format!("bad byte range `{part}`"))?;
        if lo > hi {
            return Err(format!("bad byte range `{part}`"));
        }
        for b in lo..=hi {
            allowed[b as usize] = true;
        }
    }
    Ok(allowed)
}

/// The `@ipMatch` parameter: addresses and CIDR blocks, comma-separated.
pub fn ip_list(param: &str) -> Result<Vec<(IpAddr, u8)>, String> {
    let mut out = Vec::new();
    for part in param.split([',', ' ', '\n']).map(str::trim) {
        if part.is_empty() || part.starts_with('#') {
            continue;
        }
        let (addr, bits) = match part.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (part, None),
        };
        let ip: IpAddr = addr.parse().map_err(|_| format!("bad address `{part}`"))?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            Some(b) => b
                .parse::<u8>()
                .ok()
                .filter(|b| *b <= max)
                .ok_or_else(|| format!("bad prefix `{part}`"))?,
            None => max,
        };
        out.push((ip, bits));
    }
    Ok(out)
}

pub fn ip_matches(list: &[(IpAddr, u8)], input: &[u8]) -> bool {
    let Some(ip) = std::str::from_utf8(input)
        .ok()
        .and_then(|s| s.trim().parse::<IpAddr>().ok())
    else {
        return false;
    };
    list.iter().any(|(net, bits)| match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(a)) => prefix_eq(&n.octets(), &a.octets(), *bits),
        (IpAddr::V6(n), IpAddr::V6(a)) => prefix_eq(&n.octets(), &a.octets(), *bits),
        _ => false,
    })
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let bits = bits as usize;
    let (whole, rest) = (bits / 8, bits % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || (a[whole] ^ b[whole]) >> (8 - rest) == 0
}

/// libinjection's SQL injection verdict and fingerprint. The verdict
/// comes first, alone: `libinjectionrs::detect_sqli` tokenizes and folds
/// the input once more after it to report the fingerprint, which only a
/// match needs.
///
/// A value of ASCII letters, digits and `_` alone (a name, a number, an
/// id: most fields of a form) is answered without the tokenizer: it
/// reads as at most two tokens, a number and then a word, and of the
/// fingerprints of one or two tokens libinjection lists only `X` (a token
/// it cannot parse, which needs other bytes), `1U` (which it lets pass
/// when it is the whole input, as here) and pairs with a comment, string
/// or variable, each of which needs other bytes; its quoted and MySQL
/// readings need a quote, `-` or `#`. `tests/libinjection.rs` compares
/// the two on generated inputs.
pub fn detect_sqli(input: &[u8]) -> Option<Vec<u8>> {
    if input
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return None;
    }
    let flags = libinjectionrs::SqliFlags::FLAG_NONE;
    if !libinjectionrs::SqliState::new(input, flags).detect() {
        return None;
    }
    let found = libinjectionrs::detect_sqli(input);
    if !found.is_injection() {
        return None;
    }
    Some(
        found
            .fingerprint
            .map(|f| f.to_string().into_bytes())
            .unwrap_or_default(),
    )
}

/// libinjection's XSS verdict. libinjection flags a value only for a
/// tag, comment or doctype token, each of which starts at a `<`, or for an
/// attribute value right after an attribute name, which only an `=` leads
/// to, in each of its five contexts (data, and an attribute value without
/// quotes or in one of three quotes). A value holding neither byte, such
/// as almost every field of a form, is answered without running the
/// tokenizer five times; `tests/libinjection.rs` compares the two on
/// generated inputs.
pub fn detect_xss(input: &[u8]) -> bool {
    memchr::memchr2(b'<', b'=', input).is_some() && libinjectionrs::detect_xss(input).is_injection()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_and_number_operators() {
        assert!(string_op(StrOp::Within, b"GET", b"GET HEAD POST"));
        assert!(!string_op(StrOp::Within, b"PUT", b"GET HEAD POST"));
        assert!(string_op(StrOp::ContainsWord, b"a select b", b"select"));
        assert!(!string_op(StrOp::ContainsWord, b"selected", b"select"));
        assert!(number_op(NumOp::Ge, b"10", b" 5"));
        assert!(number_op(NumOp::Eq, b"abc", b"0"));
        assert_eq!(atoi(b"-12x"), -12);
    }

    /// The direct search of short haystacks finds what `memmem` finds,
    /// at every length around the 256-byte switch, needles at the edges.
    #[test]
    fn short_searches_find_what_memmem_finds() {
        let mut next = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move |n: u64| {
            next ^= next << 13;
            next ^= next >> 7;
            next ^= next << 17;
            next % n
        };
        for len in [0usize, 1, 2, 5, 63, 64, 65, 255, 256, 257, 400] {
            for _ in 0..200 {
                let hay: Vec<u8> = (0..len).map(|_| b"ab/"[rand(3) as usize]).collect();
                let n = rand(6) as usize;
                let needle: Vec<u8> = if n > 0 && len > 0 && rand(2) == 0 {
                    let at = rand(len as u64) as usize;
                    hay[at..(at + n).min(len)].to_vec()
                } else {
                    (0..n).map(|_| b"ab/"[rand(3) as usize]).collect()
                };
                let want = memchr::memmem::find(&hay, &needle).is_some();
                assert_eq!(find(&hay, &needle), want, "{needle:?} in {hay:?}");
            }
        }
        // The worst case of the direct search: the needle's first byte at
        // every place, each comparison failing at its last byte.
        let hay = vec![b'a'; 256];
        let mut needle = vec![b'a'; 255];
        needle.push(b'b');
        assert!(!find(&hay, &needle));
        needle[254] = b'a';
        needle.pop();
        assert!(find(&hay, &needle));
    }

    #[test]
    fn decimals_are_written_as_to_string_writes_them() {
        for n in [0i64, 7, -7, 10, 99, -100, 1234567, i64::MAX, i64::MIN] {
            let mut out = b"x".to_vec();
            write_decimal(n, &mut out);
            assert_eq!(out, format!("x{n}").into_bytes());
        }
    }

    #[test]
    fn ranges_and_addresses() {
        let r = byte_range("1-255").unwrap();
        assert!(!r[0] && r[1] && r[255]);
        let r = byte_range("9,10,13,32-126").unwrap();
        assert!(r[9] && !r[11] && r[126] && !r[127]);
        let list = ip_list("127.0.0.1,10.0.0.0/8, ::1").unwrap();
        assert!(ip_matches(&list, b"10.2.3.4"));
        assert!(ip_matches(&list, b"::1"));
        assert!(!ip_matches(&list, b"11.0.0.1"));
        assert!(invalid_url_encoding(b"a%2"));
        assert!(!invalid_url_encoding(b"a%20b"));
    }

    #[test]
    fn regexes_match_bytes_like_pcre() {
        let re = regex(r"(?i)a.b").unwrap();
        assert!(re.is_match(b"A\nB"));
        assert!(regex(r"\xff").unwrap().is_match(&[0xff]));
        assert!(re.is_match(&[b'a', 0xff, b'b']));
    }
}
