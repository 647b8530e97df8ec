//! The parsed form of a rule: targets, operator, transformations and
//! actions, as typed values. Produced by `parse`, compiled by `compile`,
//! read by `tx`; nothing here runs.

use std::sync::Arc;

use crate::error::Location;
use crate::operator::Operator;
use crate::transform::Transform;
use crate::vars::Var;

/// A text with `%{VAR}` / `%{VAR.key}` references, expanded when used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Macro {
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Lit(String),
    /// A variable, and the key within it (lowercase) for a collection.
    Var(Var, Option<String>),
    /// A `TX` variable by its number (`%{tx.key}` once the rule set is
    /// compiled; see `RuleSet::tx_names`).
    Tx(u32),
}

impl Macro {
    /// A text without references.
    pub fn literal(text: &str) -> Macro {
        Macro {
            parts: vec![Part::Lit(text.to_string())],
        }
    }

    /// The text when it has no references.
    pub fn as_literal(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [] => Some(""),
            [Part::Lit(s)] => Some(s),
            _ => None,
        }
    }
}

/// A `VAR:/regex/` key pattern (ASCII case-insensitive). Most are a
/// word, anchored or not (`TX:/^header_name_920450_/`,
/// `TX:/paramcounter_.*/`): those are compared as text, without the
/// regex engine, over every key of the collection.
#[derive(Debug)]
pub struct KeyRegex {
    /// The pattern as written between the slashes.
    pub source: String,
    re: regex::bytes::Regex,
    /// The word the pattern is, and whether it is anchored at the start.
    word: Option<(Vec<u8>, bool)>,
}

impl KeyRegex {
    /// `source` compiled as ModSecurity does a key pattern: without case.
    pub fn new(source: &str) -> Result<KeyRegex, String> {
        let re = crate::operator::regex(&format!("(?i){source}"))?;
        Ok(KeyRegex {
            source: source.to_string(),
            re,
            word: key_word(source),
        })
    }

    pub fn is_match(&self, key: &[u8]) -> bool {
        match &self.word {
            Some((w, true)) => key.len() >= w.len() && key[..w.len()].eq_ignore_ascii_case(w),
            Some((w, false)) => {
                w.is_empty() || key.windows(w.len()).any(|k| k.eq_ignore_ascii_case(w))
            }
            None => self.re.is_match(key),
        }
    }
}

/// The word a key pattern is, if it is one: `^`, then letters, digits,
/// `_` and `-`, then nothing, `.*`, or one of those characters with `*`
/// (which may match nothing, so the word without it matches the same
/// keys). The regex is ASCII-only (`unicode(false)`), so its `(?i)` is
/// ASCII case-folding, as `eq_ignore_ascii_case` is.
fn key_word(source: &str) -> Option<(Vec<u8>, bool)> {
    let (anchored, rest) = match source.strip_prefix('^') {
        Some(r) => (true, r),
        None => (false, source),
    };
    let plain = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
    let mut word = rest.as_bytes();
    if let Some(w) = word.strip_suffix(b".*") {
        word = w;
    } else if let [w @ .., last, b'*'] = word
        && plain(*last)
    {
        word = w;
    }
    word.iter()
        .all(|&c| plain(c))
        .then(|| (word.to_vec(), anchored))
}

/// Which values of a variable a target reads.
#[derive(Debug, Clone)]
pub enum Selector {
    /// Every value.
    All,
    /// The values under one key (compared without case).
    Key(String),
    /// The values whose key matches (compared without case).
    Regex(Arc<KeyRegex>),
    /// `XML:/*`: the text of every element.
    XmlText,
    /// `XML://@*`: the value of every attribute.
    XmlAttributes,
}

impl Selector {
    /// Whether a key is selected (keys are compared without case).
    pub fn selects(&self, key: &[u8]) -> bool {
        match self {
            Selector::All | Selector::XmlText | Selector::XmlAttributes => true,
            Selector::Key(k) => k.as_bytes().eq_ignore_ascii_case(key),
            Selector::Regex(re) => re.is_match(key),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Selector::All => String::new(),
            Selector::Key(k) => k.clone(),
            Selector::Regex(re) => format!("/{}/", re.source),
            Selector::XmlText => "/*".into(),
            Selector::XmlAttributes => "//@*".into(),
        }
    }
}

/// One variable a rule reads (`ARGS`, `&ARGS`, `ARGS:id`, `TX:/^score/`).
#[derive(Debug, Clone)]
pub struct Target {
    pub var: Var,
    pub selector: Selector,
    /// `&VAR`: the number of selected values instead of the values.
    pub count: bool,
    /// For `TX:key`, the variable's number, given when the rule set is
    /// compiled (see `RuleSet::tx_names`).
    pub slot: Option<u32>,
}

/// `!VAR:key`: values a rule's targets of that variable leave out.
#[derive(Debug, Clone)]
pub struct Exclusion {
    pub var: Var,
    pub selector: Selector,
}

/// What a matched rule does with the transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disruptive {
    Pass,
    /// The phase's default (from `SecDefaultAction`).
    Block,
    Deny,
    Drop,
    Redirect,
    /// Stop inspecting: the rest of this phase (`Phase`), the request
    /// phases (`Request`), or everything (`All`).
    Allow(AllowScope),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllowScope {
    All,
    Phase,
    Request,
}

/// `setvar`: how a variable changes.
#[derive(Debug, Clone)]
pub struct SetVar {
    pub collection: Var,
    pub key: Macro,
    pub op: SetOp,
    /// The `TX` variable's number when the key is a text, given when the
    /// rule set is compiled (see `RuleSet::tx_names`).
    pub slot: Option<u32>,
}

#[derive(Debug, Clone)]
pub enum SetOp {
    Set(Macro),
    Add(Macro),
    Sub(Macro),
    Delete,
}

/// Rule ids, as single ids and ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdRanges(pub Vec<(u32, u32)>);

impl IdRanges {
    pub fn contains(&self, id: u32) -> bool {
        self.0.iter().any(|(a, b)| (*a..=*b).contains(&id))
    }
}

/// The request body processors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyProcessor {
    UrlEncoded,
    Multipart,
    Json,
    Xml,
}

impl BodyProcessor {
    pub fn parse(s: &str) -> Option<BodyProcessor> {
        match s.to_ascii_uppercase().as_str() {
            "URLENCODED" => Some(BodyProcessor::UrlEncoded),
            "MULTIPART" => Some(BodyProcessor::Multipart),
            "JSON" => Some(BodyProcessor::Json),
            "XML" => Some(BodyProcessor::Xml),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BodyProcessor::UrlEncoded => "URLENCODED",
            BodyProcessor::Multipart => "MULTIPART",
            BodyProcessor::Json => "JSON",
            BodyProcessor::Xml => "XML",
        }
    }
}

/// `SecRuleEngine` and `ctl:ruleEngine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineMode {
    On,
    DetectionOnly,
    Off,
}

/// `ctl`: a change to this transaction's configuration.
#[derive(Debug, Clone)]
pub enum Ctl {
    RuleRemoveById(IdRanges),
    RuleRemoveByTag(String),
    RuleRemoveByMsg(String),
    RuleRemoveTargetById(IdRanges, Exclusion),
    RuleRemoveTargetByTag(String, Exclusion),
    RuleRemoveTargetByMsg(String, Exclusion),
    RuleEngine(EngineMode),
    RequestBodyAccess(bool),
    ResponseBodyAccess(bool),
    RequestBodyProcessor(BodyProcessor),
    ForceRequestBodyVariable(bool),
    RequestBodyLimit(u64),
    ResponseBodyLimit(u64),
    /// `ctl:auditEngine`, `ctl:auditLogParts`, `ctl:debugLogLevel`: the
    /// host owns logging; the change is recorded in the match report.
    Logging(String),
}

/// Everything a rule (or a chain link) says besides targets and operator.
#[derive(Debug, Clone, Default)]
pub struct Actions {
    pub id: Option<u32>,
    pub phase: Option<u8>,
    pub chain: bool,
    pub disruptive: Option<Disruptive>,
    pub redirect: Option<Macro>,
    pub status: Option<u16>,
    pub skip: u32,
    pub skip_after: Option<String>,
    pub msg: Option<Macro>,
    pub logdata: Option<Macro>,
    pub tags: Vec<String>,
    pub severity: Option<u8>,
    pub ver: Option<String>,
    pub rev: Option<String>,
    pub maturity: Option<u8>,
    pub accuracy: Option<u8>,
    pub log: Option<bool>,
    pub auditlog: Option<bool>,
    pub capture: bool,
    pub multi_match: bool,
    /// `t:none` seen: the default transformations do not apply.
    pub transforms_reset: bool,
    pub transforms: Vec<Transform>,
    pub setvars: Vec<SetVar>,
    pub ctls: Vec<Ctl>,
    /// `initcol:COLLECTION=KEY`: the collection starts empty for each
    /// transaction (nothing is persisted across requests).
    pub initcols: Vec<(Var, Macro)>,
    /// `setenv:NAME=VALUE`.
    pub setenvs: Vec<(String, Macro)>,
}

/// One parsed `SecRule`/`SecAction` (a chain link is a rule too).
#[derive(Debug, Clone)]
pub struct ParsedRule {
    pub at: Location,
    pub targets: Vec<Target>,
    pub exclusions: Vec<Exclusion>,
    pub operator: Operator,
    pub actions: Actions,
}

#[cfg(test)]
mod tests {
    use super::KeyRegex;

    /// A key pattern that is a word selects the keys its regex selects.
    #[test]
    fn key_words_select_what_their_regex_selects() {
        let keys: &[&[u8]] = &[
            b"header_name_920450_host",
            b"HEADER_NAME_920450_X",
            b"header_name_920450",
            b"x_header_name_920450_y",
            b"paramcounter_",
            b"my_paramcounter_7",
            b"multipart_headers_content_types",
            b"MULTIPART_HEADERS_CONTENT_TYPES_x",
            b"",
            b"\xe9header_name_920450_",
        ];
        for (source, word) in [
            ("^header_name_920450_", true),
            ("paramcounter_.*", true),
            ("MULTIPART_HEADERS_CONTENT_TYPES_*", true),
            ("^paramcounter_.*", true),
            ("", true),
            ("^header_name_9204[0-9]", false),
            ("a|b", false),
            ("^x$", false),
        ] {
            let k = KeyRegex::new(source).unwrap();
            assert_eq!(k.word.is_some(), word, "{source}");
            let re = crate::operator::regex(&format!("(?i){source}")).unwrap();
            for key in keys {
                assert_eq!(k.is_match(key), re.is_match(key), "/{source}/ on {key:?}");
            }
        }
    }
}
