//! Transformations (`t:…`) with ModSecurity's semantics, and for each the
//! bytes that can make it change its input: a value holding none of them
//! passes through unchanged and uncopied, which is what makes a rule set
//! of many transformation chains cheap on ordinary input.

use std::fmt;

/// Byte classes a value contains, as bits (see [`byte_mask`]).
pub type Mask = u32;

pub const M_PCT: Mask = 1 << 0;
pub const M_PLUS: Mask = 1 << 1;
pub const M_UPPER: Mask = 1 << 2;
pub const M_AMP: Mask = 1 << 3;
pub const M_BSLASH: Mask = 1 << 4;
pub const M_SPACE: Mask = 1 << 5;
pub const M_NUL: Mask = 1 << 6;
pub const M_SLASH: Mask = 1 << 7;
pub const M_DOT: Mask = 1 << 8;
pub const M_DQUOTE: Mask = 1 << 9;
pub const M_SQUOTE: Mask = 1 << 10;
pub const M_CARET: Mask = 1 << 11;
pub const M_COMMA: Mask = 1 << 12;
pub const M_SEMI: Mask = 1 << 13;
pub const M_HIGH: Mask = 1 << 14;
pub const M_STAR: Mask = 1 << 15;
pub const M_DASH: Mask = 1 << 16;
pub const M_HASH: Mask = 1 << 17;
pub const M_LT: Mask = 1 << 18;
pub const M_LOWER: Mask = 1 << 19;
pub const M_EQ: Mask = 1 << 20;
/// Every other byte but digits and `_`: a value of no class but letters
/// is a word (`[A-Za-z0-9_]*`).
pub const M_OTHER: Mask = 1 << 21;
/// Every class a byte can have.
pub const M_ANY: Mask = (1 << 22) - 1;
/// Set for transformations that change every input (hashes, lengths).
pub const M_ALWAYS: Mask = 1 << 31;

/// Whether transformations of trigger classes `triggers` leave a value of
/// byte classes `mask` as it is (it holds none of their trigger bytes).
pub const fn untouched(triggers: Mask, mask: Mask) -> bool {
    triggers & M_ALWAYS == 0 && triggers & mask == 0
}

const fn class(b: u8) -> Mask {
    match b {
        b'%' => M_PCT,
        b'+' => M_PLUS,
        b'A'..=b'Z' => M_UPPER,
        b'a'..=b'z' => M_LOWER,
        b'&' => M_AMP,
        b'\\' => M_BSLASH,
        b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => M_SPACE,
        0 => M_NUL,
        b'/' => M_SLASH,
        b'.' => M_DOT,
        b'"' => M_DQUOTE,
        b'\'' => M_SQUOTE,
        b'^' => M_CARET,
        b',' => M_COMMA,
        b';' => M_SEMI,
        0x80..=0xff => M_HIGH,
        b'*' => M_STAR,
        b'-' => M_DASH,
        b'#' => M_HASH,
        b'<' => M_LT,
        b'=' => M_EQ,
        b'0'..=b'9' | b'_' => 0,
        _ => M_OTHER,
    }
}

const CLASSES: [Mask; 256] = {
    let mut t = [0; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = class(i as u8);
        i += 1;
    }
    t
};

/// The byte class of `b` (0 for bytes in none).
pub fn class_of(b: u8) -> Mask {
    CLASSES[b as usize]
}

/// The byte classes present in `bytes`.
pub fn byte_mask(bytes: &[u8]) -> Mask {
    bytes.iter().fold(0, |m, &b| m | CLASSES[b as usize])
}

macro_rules! transforms {
    ($( $t:ident = $name:literal, $mask:expr; )*) => {
        /// A transformation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Transform { $( $t, )* }

        impl Transform {
            /// The transformation named `name` (ModSecurity's spelling, any case).
            pub fn parse(name: &str) -> Option<Transform> {
                let lower = name.to_ascii_lowercase();
                match lower.as_str() {
                    $( n if n == $name.to_ascii_lowercase() => Some(Transform::$t), )*
                    "normalisepath" => Some(Transform::NormalizePath),
                    "normalisepathwin" => Some(Transform::NormalizePathWin),
                    _ => None,
                }
            }

            pub fn name(self) -> &'static str {
                match self { $( Transform::$t => $name, )* }
            }

            /// The byte classes that can make it change a value.
            pub fn triggers(self) -> Mask {
                match self { $( Transform::$t => $mask, )* }
            }
        }
    };
}

transforms! {
    Lowercase = "lowercase", M_UPPER;
    Uppercase = "uppercase", M_LOWER;
    UrlDecode = "urlDecode", M_PCT | M_PLUS;
    UrlDecodeUni = "urlDecodeUni", M_PCT | M_PLUS;
    HtmlEntityDecode = "htmlEntityDecode", M_AMP;
    JsDecode = "jsDecode", M_BSLASH;
    CssDecode = "cssDecode", M_BSLASH;
    EscapeSeqDecode = "escapeSeqDecode", M_BSLASH;
    CmdLine = "cmdLine", M_UPPER | M_DQUOTE | M_SQUOTE | M_BSLASH | M_CARET | M_SPACE | M_COMMA | M_SEMI;
    CompressWhitespace = "compressWhitespace", M_SPACE | M_HIGH;
    RemoveWhitespace = "removeWhitespace", M_SPACE | M_HIGH;
    RemoveNulls = "removeNulls", M_NUL;
    ReplaceNulls = "replaceNulls", M_NUL;
    ReplaceComments = "replaceComments", M_SLASH;
    RemoveComments = "removeComments", M_SLASH | M_LT | M_DASH | M_HASH;
    RemoveCommentsChar = "removeCommentsChar", M_SLASH | M_STAR | M_LT | M_DASH | M_HASH;
    NormalizePath = "normalizePath", M_SLASH | M_DOT;
    NormalizePathWin = "normalizePathWin", M_SLASH | M_DOT | M_BSLASH;
    Utf8ToUnicode = "utf8toUnicode", M_HIGH | M_NUL;
    Trim = "trim", M_SPACE;
    TrimLeft = "trimLeft", M_SPACE;
    TrimRight = "trimRight", M_SPACE;
    Base64Decode = "base64Decode", M_ALWAYS;
    Base64DecodeExt = "base64DecodeExt", M_ALWAYS;
    Base64Encode = "base64Encode", M_ALWAYS;
    HexDecode = "hexDecode", M_ALWAYS;
    HexEncode = "hexEncode", M_ALWAYS;
    SqlHexDecode = "sqlHexDecode", M_ALWAYS;
    UrlEncode = "urlEncode", M_ALWAYS;
    Length = "length", M_ALWAYS;
    Sha1 = "sha1", M_ALWAYS;
}

impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Transform {
    /// The transformed value, or `None` when it equals the input.
    pub fn apply(self, input: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.apply_into(input, &mut out).then_some(out)
    }

    /// The transformed value into `out` (emptied first; no allocation
    /// once it has grown): whether it differs from the input.
    pub fn apply_into(self, input: &[u8], out: &mut Vec<u8>) -> bool {
        use crate::decode::*;
        out.clear();
        match self {
            Transform::Lowercase => out.extend(input.iter().map(u8::to_ascii_lowercase)),
            Transform::Uppercase => out.extend(input.iter().map(u8::to_ascii_uppercase)),
            Transform::UrlDecode => url_decode_into(input, false, out),
            Transform::UrlDecodeUni => url_decode_into(input, true, out),
            Transform::HtmlEntityDecode => html_entity_decode_into(input, out),
            Transform::JsDecode => js_decode_into(input, out),
            Transform::CssDecode => css_decode_into(input, out),
            Transform::EscapeSeqDecode => escape_seq_decode_into(input, out),
            Transform::CmdLine => cmd_line_into(input, out),
            Transform::CompressWhitespace => compress_whitespace_into(input, out),
            Transform::RemoveWhitespace => {
                out.extend(input.iter().copied().filter(|&b| !is_space(b) && b != 0xa0))
            }
            Transform::RemoveNulls => out.extend(input.iter().copied().filter(|&b| b != 0)),
            Transform::ReplaceNulls => {
                out.extend(input.iter().map(|&b| if b == 0 { b' ' } else { b }))
            }
            Transform::ReplaceComments => replace_comments_into(input, out),
            Transform::RemoveComments => remove_comments_into(input, out),
            Transform::RemoveCommentsChar => remove_comments_char_into(input, out),
            Transform::NormalizePath => normalize_path_into(input, false, out),
            Transform::NormalizePathWin => normalize_path_into(input, true, out),
            Transform::Utf8ToUnicode => utf8_to_unicode_into(input, out),
            Transform::Trim => out.extend_from_slice(trim(input, true, true)),
            Transform::TrimLeft => out.extend_from_slice(trim(input, true, false)),
            Transform::TrimRight => out.extend_from_slice(trim(input, false, true)),
            Transform::Base64Decode => base64_decode_into(input, false, out),
            Transform::Base64DecodeExt => base64_decode_into(input, true, out),
            Transform::Base64Encode => base64_encode_into(input, out),
            Transform::HexDecode => hex_decode_into(input, out),
            Transform::HexEncode => hex_encode_into(input, out),
            Transform::SqlHexDecode => sql_hex_decode_into(input, out),
            Transform::UrlEncode => url_encode_into(input, out),
            Transform::Length => out.extend_from_slice(input.len().to_string().as_bytes()),
            Transform::Sha1 => {
                out.extend_from_slice(&sha1_smol::Sha1::from(input).digest().bytes())
            }
        }
        out[..] != *input
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, input: &str) -> String {
        let t = Transform::parse(name).unwrap();
        let out = t.apply(input.as_bytes());
        String::from_utf8_lossy(out.as_deref().unwrap_or(input.as_bytes())).into_owned()
    }

    #[test]
    fn names_parse_in_any_case_and_british_spelling() {
        assert_eq!(
            Transform::parse("URLDECODEUNI"),
            Some(Transform::UrlDecodeUni)
        );
        assert_eq!(
            Transform::parse("normalisePathWin"),
            Some(Transform::NormalizePathWin)
        );
        assert_eq!(Transform::parse("md5"), None);
    }

    #[test]
    fn values_without_trigger_bytes_are_unchanged() {
        // Every transformation whose triggers are absent leaves the value
        // as it is: the basis of the engine's copy-free fast path.
        let inputs: [&[u8]; 4] = [b"hello", b"abc123_", b"", b"x=y:z!?"];
        for name in [
            "lowercase",
            "urlDecodeUni",
            "htmlEntityDecode",
            "jsDecode",
            "cssDecode",
            "cmdLine",
            "compressWhitespace",
            "removeWhitespace",
            "removeNulls",
            "replaceComments",
            "removeCommentsChar",
            "normalizePath",
            "normalizePathWin",
            "utf8toUnicode",
            "escapeSeqDecode",
            "trim",
        ] {
            let tr = Transform::parse(name).unwrap();
            for input in inputs {
                if byte_mask(input) & tr.triggers() == 0 {
                    assert_eq!(tr.apply(input), None, "{name} changed {input:?}");
                }
            }
        }
    }

    #[test]
    fn examples() {
        assert_eq!(t("lowercase", "SeLeCT"), "select");
        assert_eq!(t("urlDecodeUni", "a%27b+c%u0041%uff01%zz%"), "a'b cA!%zz%");
        assert_eq!(
            t("htmlEntityDecode", "&lt;a&#x41;&#66;&quot;&bogus;&amp"),
            "<aAB\"&bogus;&"
        );
        assert_eq!(t("jsDecode", r"\x41\u0042\103\n\q"), "ABC\nq");
        assert_eq!(t("cssDecode", r"\41 \00004c\zz"), "ALzz");
        assert_eq!(
            t("cmdLine", "C^at  \"/etc/\"PASS'wd' ;ls ,(x)"),
            "cat/etc/passwd ls(x)"
        );
        assert_eq!(t("compressWhitespace", "a \t\n b"), "a b");
        assert_eq!(t("removeWhitespace", "a b\tc"), "abc");
        assert_eq!(t("replaceComments", "un/**/ion/*x"), "un ion ");
        assert_eq!(t("removeCommentsChar", "a/*b*/c--d#e<!--f-->"), "abcdef");
        assert_eq!(t("normalizePath", "/a/./b/../../c//d"), "/c/d");
        assert_eq!(t("normalizePath", "a/../../etc/passwd"), "../etc/passwd");
        assert_eq!(t("normalizePathWin", r"\a\..\b\c"), "/b/c");
        assert_eq!(t("utf8toUnicode", "a\u{e9}\u{20ac}"), "a%u00e9%u20ac");
        assert_eq!(t("escapeSeqDecode", r"\x41\102\n\z"), "AB\nz");
        assert_eq!(t("base64Decode", "aGVsbG8=xx"), "hello");
        assert_eq!(t("hexEncode", "AB"), "4142");
        assert_eq!(t("length", "abc"), "3");
        assert_eq!(t("trim", " \tab c\n"), "ab c");
        assert_eq!(t("sqlHexDecode", "0x414243 x"), "ABC x");
    }
}
