//! The byte-level decoders behind the transformations, each following
//! ModSecurity's implementation (invalid escapes are kept as written,
//! numeric entities and `%u` escapes keep their lowest byte, full-width
//! ASCII folds to ASCII). Pure functions: bytes in, bytes out.

pub fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn is_hex(b: u8) -> bool {
    hex_val(b).is_some()
}

/// Two hex digits as a byte (both must be hex).
fn x2c(hi: u8, lo: u8) -> u8 {
    (hex_val(hi).unwrap_or(0) << 4) | hex_val(lo).unwrap_or(0)
}

/// `%XX` (and with `uni`, IIS's `%uXXXX`) decoded, `+` as a space. The
/// text between escapes is copied a run at a time (found with `memchr`),
/// its `+` replaced in a loop the compiler vectorizes.
pub fn url_decode_into(input: &[u8], uni: bool, out: &mut Vec<u8>) {
    out.reserve(input.len());
    let mut i = 0;
    while i < input.len() {
        let end = memchr::memchr(b'%', &input[i..]).map_or(input.len(), |k| i + k);
        out.extend(
            input[i..end]
                .iter()
                .map(|&b| if b == b'+' { b' ' } else { b }),
        );
        i = end;
        if i == input.len() {
            break;
        }
        if uni && matches!(input.get(i + 1), Some(b'u' | b'U')) {
            if i + 5 < input.len() && input[i + 2..i + 6].iter().all(|&c| is_hex(c)) {
                let low = x2c(input[i + 4], input[i + 5]);
                let full_width =
                    matches!(input[i + 2], b'f' | b'F') && matches!(input[i + 3], b'f' | b'F');
                out.push(if full_width && low > 0 && low < 0x5f {
                    low + 0x20
                } else {
                    low
                });
                i += 6;
            } else {
                out.extend_from_slice(&input[i..i + 2]);
                i += 2;
            }
        } else if i + 2 < input.len() && is_hex(input[i + 1]) && is_hex(input[i + 2]) {
            out.push(x2c(input[i + 1], input[i + 2]));
            i += 3;
        } else {
            out.push(b'%');
            i += 1;
        }
    }
}

/// RFC 3986 percent-decoding only (no `+`): how ModSecurity decodes the
/// request line's path for `REQUEST_URI` and `REQUEST_FILENAME`.
pub fn uri_decode_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'%', &input[i..]) {
        out.extend_from_slice(&input[i..i + k]);
        i += k;
        if i + 2 < input.len() && is_hex(input[i + 1]) && is_hex(input[i + 2]) {
            out.push(x2c(input[i + 1], input[i + 2]));
            i += 3;
        } else {
            out.push(b'%');
            i += 1;
        }
    }
    out.extend_from_slice(&input[i..]);
}

/// Numeric entities (decimal, hex) and `&quot; &amp; &lt; &gt; &nbsp;`.
pub fn html_entity_decode_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let n = input.len();
    let mut i = 0;
    while i < n {
        if input[i] == b'&' && i + 1 < n {
            let mut j = i + 1;
            if input[j] == b'#' {
                j += 1;
                let hex = matches!(input.get(j), Some(b'x' | b'X'));
                if hex {
                    j += 1;
                }
                let start = j;
                while j < n
                    && (if hex {
                        is_hex(input[j])
                    } else {
                        input[j].is_ascii_digit()
                    })
                {
                    j += 1;
                }
                if j > start {
                    let mut v: u32 = 0;
                    for &d in &input[start..j] {
                        let digit = hex_val(d).unwrap_or(0) as u32;
                        v = v
                            .wrapping_mul(if hex { 16 } else { 10 })
                            .wrapping_add(digit);
                    }
                    out.push(v as u8);
                    i = if input.get(j) == Some(&b';') {
                        j + 1
                    } else {
                        j
                    };
                    continue;
                }
            } else {
                let start = j;
                while j < n && input[j].is_ascii_alphanumeric() {
                    j += 1;
                }
                let name = input[start..j].to_ascii_lowercase();
                let decoded = match name.as_slice() {
                    b"quot" => Some(b'"'),
                    b"amp" => Some(b'&'),
                    b"lt" => Some(b'<'),
                    b"gt" => Some(b'>'),
                    b"nbsp" => Some(0xa0),
                    _ => None,
                };
                if let Some(c) = decoded {
                    out.push(c);
                    i = if input.get(j) == Some(&b';') {
                        j + 1
                    } else {
                        j
                    };
                    continue;
                }
            }
        }
        out.push(input[i]);
        i += 1;
    }
}

/// JavaScript escapes: `\uHHHH`, `\xHH`, octal, `\n`-style, `\C` → `C`.
pub fn js_decode_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let n = input.len();
    let mut i = 0;
    while i < n {
        if input[i] != b'\\' {
            out.push(input[i]);
            i += 1;
            continue;
        }
        if i + 5 < n && input[i + 1] == b'u' && input[i + 2..i + 6].iter().all(|&c| is_hex(c)) {
            let low = x2c(input[i + 4], input[i + 5]);
            let full_width =
                matches!(input[i + 2], b'f' | b'F') && matches!(input[i + 3], b'f' | b'F');
            out.push(if full_width && low > 0 && low < 0x5f {
                low + 0x20
            } else {
                low
            });
            i += 6;
        } else if i + 3 < n && input[i + 1] == b'x' && is_hex(input[i + 2]) && is_hex(input[i + 3])
        {
            out.push(x2c(input[i + 2], input[i + 3]));
            i += 4;
        } else if i + 1 < n && is_odigit(input[i + 1]) {
            let mut j = 0;
            while i + 1 + j < n && j < 3 && is_odigit(input[i + 1 + j]) {
                j += 1;
            }
            if j == 3 && input[i + 1] > b'3' {
                j = 2;
            }
            out.push(octal(&input[i + 1..i + 1 + j]));
            i += 1 + j;
        } else if i + 1 < n {
            out.push(match input[i + 1] {
                b'a' => 0x07,
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'v' => 0x0b,
                c => c,
            });
            i += 2;
        } else {
            out.push(b'\\');
            i += 1;
        }
    }
}

fn is_odigit(b: u8) -> bool {
    (b'0'..=b'7').contains(&b)
}

fn octal(digits: &[u8]) -> u8 {
    digits.iter().fold(0u32, |v, &d| v * 8 + (d - b'0') as u32) as u8
}

/// CSS escapes: `\` and 1–6 hex digits (the last two kept, full width
/// folded), one following whitespace dropped; `\` + newline is nothing.
pub fn css_decode_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let n = input.len();
    let mut i = 0;
    while i < n {
        if input[i] != b'\\' {
            out.push(input[i]);
            i += 1;
            continue;
        }
        if i + 1 >= n {
            i += 1;
            continue;
        }
        i += 1;
        let mut j = 0;
        while j < 6 && i + j < n && is_hex(input[i + j]) {
            j += 1;
        }
        if j > 0 {
            let mut c = if j == 1 {
                hex_val(input[i]).unwrap_or(0)
            } else {
                x2c(input[i + j - 2], input[i + j - 1])
            };
            let full_check = match j {
                4 => true,
                5 => input[i] == b'0',
                6 => input[i] == b'0' && input[i + 1] == b'0',
                _ => false,
            };
            if full_check
                && c > 0
                && c < 0x5f
                && matches!(input[i + j - 3], b'f' | b'F')
                && matches!(input[i + j - 4], b'f' | b'F')
            {
                c += 0x20;
            }
            out.push(c);
            if i + j < n && is_space(input[i + j]) {
                j += 1;
            }
            i += j;
        } else if input[i] == b'\n' {
            i += 1;
        } else {
            out.push(input[i]);
            i += 1;
        }
    }
}

/// ANSI C escapes: `\n`-style, `\xHH`, octal; anything else loses its `\`.
pub fn escape_seq_decode_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let n = input.len();
    let mut i = 0;
    while i < n {
        if input[i] != b'\\' || i + 1 >= n {
            out.push(input[i]);
            i += 1;
            continue;
        }
        let simple = match input[i + 1] {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            b'\\' => Some(b'\\'),
            b'?' => Some(b'?'),
            b'\'' => Some(b'\''),
            b'"' => Some(b'"'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            i += 2;
        } else if matches!(input[i + 1], b'x' | b'X')
            && i + 3 < n
            && is_hex(input[i + 2])
            && is_hex(input[i + 3])
        {
            out.push(x2c(input[i + 2], input[i + 3]));
            i += 4;
        } else if is_odigit(input[i + 1]) {
            let mut j = 0;
            while i + 1 + j < n && j < 3 && is_odigit(input[i + 1 + j]) {
                j += 1;
            }
            out.push(octal(&input[i + 1..i + 1 + j]));
            i += 1 + j;
        } else {
            out.push(input[i + 1]);
            i += 2;
        }
    }
}

/// What a shell would see: quotes, `\` and `^` removed, separators as one
/// space, no space before `/` or `(`, lowercase.
pub fn cmd_line_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let mut space = false;
    for &a in input {
        match a {
            b'"' | b'\'' | b'\\' | b'^' => {}
            b' ' | b',' | b';' | b'\t' | b'\r' | b'\n' => {
                if !space {
                    out.push(b' ');
                    space = true;
                }
            }
            b'/' | b'(' => {
                if space {
                    out.pop();
                }
                space = false;
                out.push(a);
            }
            _ => {
                out.push(a.to_ascii_lowercase());
                space = false;
            }
        }
    }
}

/// Runs of whitespace (and non-breaking spaces) as one space.
pub fn compress_whitespace_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let mut in_space = false;
    for &b in input {
        if is_space(b) || b == 0xa0 {
            if !in_space {
                out.push(b' ');
                in_space = true;
            }
        } else {
            out.push(b);
            in_space = false;
        }
    }
}

/// C comments (`/* … */`) replaced by one space; an unclosed one too.
pub fn replace_comments_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let n = input.len();
    let (mut i, mut in_comment) = (0, false);
    while i < n {
        if !in_comment {
            if input[i] == b'/' && i + 1 < n && input[i + 1] == b'*' {
                in_comment = true;
                i += 2;
            } else {
                out.push(input[i]);
                i += 1;
            }
        } else if input[i] == b'*' && i + 1 < n && input[i + 1] == b'/' {
            in_comment = false;
            out.push(b' ');
            i += 2;
        } else {
            i += 1;
        }
    }
    if in_comment {
        out.push(b' ');
    }
}

/// C and HTML comments removed; `--` and `#` end the value.
pub fn remove_comments_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let n = input.len();
    let (mut i, mut in_comment) = (0, false);
    while i < n {
        if !in_comment {
            if input[i..].starts_with(b"/*") {
                in_comment = true;
                i += 2;
            } else if input[i..].starts_with(b"<!--") {
                in_comment = true;
                i += 4;
            } else if input[i..].starts_with(b"--") || input[i] == b'#' {
                break;
            } else {
                out.push(input[i]);
                i += 1;
            }
        } else if input[i..].starts_with(b"*/") {
            in_comment = false;
            i += 2;
        } else if input[i..].starts_with(b"-->") {
            in_comment = false;
            i += 3;
        } else {
            i += 1;
        }
    }
    if in_comment {
        out.push(b' ');
    }
}

/// The comment characters themselves removed: `/*`, `*/`, `<!--`, `-->`,
/// `--`, `#`.
pub fn remove_comments_char_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let mut i = 0;
    while i < input.len() {
        let rest = &input[i..];
        let skip = if rest.starts_with(b"/*") || rest.starts_with(b"*/") {
            2
        } else if rest.starts_with(b"<!--") {
            4
        } else if rest.starts_with(b"-->") {
            3
        } else if rest.starts_with(b"--") {
            2
        } else if rest[0] == b'#' {
            1
        } else {
            0
        };
        if skip == 0 {
            out.push(rest[0]);
            i += 1;
        } else {
            i += skip;
        }
    }
}

/// `.` and `..` segments resolved, repeated slashes collapsed (with `win`,
/// `\` is a slash too); a relative path keeps the `..` it cannot resolve.
pub fn normalize_path_into(input: &[u8], win: bool, out: &mut Vec<u8>) {
    if input.is_empty() {
        return;
    }
    let src: Vec<u8> = if win {
        input
            .iter()
            .map(|&b| if b == b'\\' { b'/' } else { b })
            .collect()
    } else {
        input.to_vec()
    };
    let absolute = src[0] == b'/';
    let trailing = src[src.len() - 1] == b'/';
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut leading_up = 0usize;
    for seg in src.split(|&b| b == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => {
                if parts.pop().is_none() && !absolute {
                    leading_up += 1;
                }
            }
            s => parts.push(s),
        }
    }
    out.reserve(src.len());
    if absolute {
        out.push(b'/');
    }
    for _ in 0..leading_up {
        out.extend_from_slice(b"../");
    }
    for (k, p) in parts.iter().enumerate() {
        if k > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(p);
    }
    if parts.is_empty() && leading_up > 0 {
        out.pop();
    }
    if trailing && out.last() != Some(&b'/') && !out.is_empty() {
        out.push(b'/');
    }
}

/// Multi-byte UTF-8 characters as `%uXXXX` (NUL bytes dropped, invalid
/// bytes kept), as ModSecurity writes them.
pub fn utf8_to_unicode_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len() + 8);
    let n = input.len();
    let mut i = 0;
    while i < n {
        let c = input[i];
        let cont = |k: usize| input.get(i + k).is_some_and(|b| b & 0xc0 == 0x80);
        let (len, code) = if c & 0x80 == 0 {
            (1, None)
        } else if c & 0xe0 == 0xc0 && i + 1 < n && cont(1) {
            (
                2,
                Some(((c as u32 & 0x1f) << 6) | (input[i + 1] as u32 & 0x3f)),
            )
        } else if c & 0xf0 == 0xe0 && i + 2 < n && cont(1) && cont(2) {
            let d = ((c as u32 & 0x0f) << 12)
                | ((input[i + 1] as u32 & 0x3f) << 6)
                | (input[i + 2] as u32 & 0x3f);
            (3, Some(d))
        } else if c & 0xf8 == 0xf0 && i + 3 < n && cont(1) && cont(2) && cont(3) {
            let d = ((c as u32 & 0x07) << 18)
                | ((input[i + 1] as u32 & 0x3f) << 12)
                | ((input[i + 2] as u32 & 0x3f) << 6)
                | (input[i + 3] as u32 & 0x3f);
            (4, Some(d))
        } else {
            (1, None)
        };
        match code {
            None if c == 0 => {}
            None => out.push(c),
            Some(d) => {
                out.extend_from_slice(format!("%u{d:04x}").as_bytes());
                let overlong =
                    (len == 2 && d < 0x80) || (len == 3 && d < 0x800) || (len == 4 && d < 0x10000);
                if (0xd800..=0xdfff).contains(&d) || overlong {
                    out.push(c);
                }
            }
        }
        i += len;
    }
}

pub fn trim(input: &[u8], left: bool, right: bool) -> &[u8] {
    let mut s = input;
    if left {
        while let [b, rest @ ..] = s {
            if !is_space(*b) {
                break;
            }
            s = rest;
        }
    }
    if right {
        while let [rest @ .., b] = s {
            if !is_space(*b) {
                break;
            }
            s = rest;
        }
    }
    s
}

/// Each byte's base64 value, or `NOT_B64`.
static B64: [u8; 256] = {
    let mut t = [NOT_B64; 256];
    let mut i = 0;
    while i < 64 {
        t[b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[i] as usize] =
            i as u8;
        i += 1;
    }
    t
};
const NOT_B64: u8 = 0x80;

fn b64_value(b: u8) -> Option<u8> {
    let v = B64[b as usize];
    (v != NOT_B64).then_some(v)
}

/// Base64, decoded up to the first character that is not base64 (with
/// `lenient`, such characters are skipped instead); newlines are ignored.
pub fn base64_decode_into(input: &[u8], lenient: bool, out: &mut Vec<u8>) {
    out.reserve(input.len() * 3 / 4);
    // Whole groups of four base64 characters, while they last; the rest
    // (newlines, junk, padding, a last short group) one by one below.
    let mut groups = input.chunks_exact(4);
    let mut done = 0;
    for g in &mut groups {
        let [a, b, c, d] = [g[0], g[1], g[2], g[3]].map(|x| B64[x as usize]);
        if (a | b | c | d) & NOT_B64 != 0 {
            break;
        }
        let v = (a as u32) << 18 | (b as u32) << 12 | (c as u32) << 6 | d as u32;
        out.extend_from_slice(&[(v >> 16) as u8, (v >> 8) as u8, v as u8]);
        done += 4;
    }
    base64_one_by_one(&input[done..], lenient, out);
}

/// [`base64_decode_into`]'s rule, one character at a time.
fn base64_one_by_one(input: &[u8], lenient: bool, out: &mut Vec<u8>) {
    let (mut acc, mut n) = (0u32, 0);
    for &b in input {
        if b == b'\r' || b == b'\n' {
            continue;
        }
        let Some(v) = b64_value(b) else {
            if lenient && b != b'=' {
                continue;
            }
            break;
        };
        acc = (acc << 6) | v as u32;
        n += 1;
        if n == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            acc = 0;
            n = 0;
        }
    }
    match n {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => {}
    }
}

pub fn base64_encode_into(input: &[u8], out: &mut Vec<u8>) {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out.reserve(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let v = chunk
            .iter()
            .enumerate()
            .fold(0u32, |v, (k, &b)| v | (b as u32) << (16 - 8 * k));
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ABC[((v >> (18 - 6 * k)) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
}

pub fn hex_decode_into(input: &[u8], out: &mut Vec<u8>) {
    out.extend(
        input
            .chunks_exact(2)
            .take_while(|p| is_hex(p[0]) && is_hex(p[1]))
            .map(|p| x2c(p[0], p[1])),
    );
}

pub fn hex_encode_into(input: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(input.len() * 2);
    for &b in input {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

/// `0x4142…` sequences (as SQL writes strings in hex) decoded.
pub fn sql_hex_decode_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let mut i = 0;
    while i < input.len() {
        if input[i] == b'0'
            && matches!(input.get(i + 1), Some(b'x' | b'X'))
            && input.get(i + 2).is_some_and(|&b| is_hex(b))
            && input.get(i + 3).is_some_and(|&b| is_hex(b))
        {
            i += 2;
            while i + 1 < input.len() && is_hex(input[i]) && is_hex(input[i + 1]) {
                out.push(x2c(input[i], input[i + 1]));
                i += 2;
            }
        } else {
            out.push(input[i]);
            i += 1;
        }
    }
}

pub fn url_encode_into(input: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(input.len());
    for &b in input {
        match b {
            b' ' => out.push(b'+'),
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(b),
            _ => out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]),
        }
    }
}

/// A decoder's output in a new vector.
fn to_vec(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut v = Vec::new();
    f(&mut v);
    v
}

/// [`url_decode_into`] into a new vector.
#[cfg(test)]
pub fn url_decode(input: &[u8], uni: bool) -> Vec<u8> {
    to_vec(|o| url_decode_into(input, uni, o))
}

/// [`uri_decode_into`] into a new vector.
pub fn uri_decode(input: &[u8]) -> Vec<u8> {
    to_vec(|o| uri_decode_into(input, o))
}

/// [`normalize_path_into`] into a new vector.
#[cfg(test)]
pub fn normalize_path(input: &[u8], win: bool) -> Vec<u8> {
    to_vec(|o| normalize_path_into(input, win, o))
}

/// [`base64_decode_into`] into a new vector.
pub fn base64_decode(input: &[u8], lenient: bool) -> Vec<u8> {
    to_vec(|o| base64_decode_into(input, lenient, o))
}

/// [`base64_encode_into`] into a new vector.
#[cfg(test)]
pub fn base64_encode(input: &[u8]) -> Vec<u8> {
    to_vec(|o| base64_encode_into(input, o))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_path_keeps_what_it_cannot_resolve() {
        let n = |s: &str| String::from_utf8(normalize_path(s.as_bytes(), false)).unwrap();
        assert_eq!(n("/"), "/");
        assert_eq!(n("/a/b/"), "/a/b/");
        assert_eq!(n("/../../etc/passwd"), "/etc/passwd");
        assert_eq!(n("../../etc/passwd"), "../../etc/passwd");
        assert_eq!(n("./a"), "a");
        assert_eq!(n("a/.."), "");
        assert_eq!(n("index.php"), "index.php");
    }

    #[test]
    fn base64_round_trips_and_stops_at_junk() {
        for s in ["", "a", "ab", "abc", "abcd", "hello world"] {
            assert_eq!(
                base64_decode(&base64_encode(s.as_bytes()), false),
                s.as_bytes()
            );
        }
        assert_eq!(base64_decode(b"aGk$aGk", false), b"hi");
        assert_eq!(base64_decode(b"aG$Vs bG8=", true), b"hello");
    }

    #[test]
    fn base64_by_groups_decodes_as_byte_by_byte() {
        // The groups of four must give what the rule one character at a
        // time gives on the whole input.
        let alphabet = b"AZaz09+/Qw\n\r=$ ";
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 23) as usize;
            let input: Vec<u8> = (0..len)
                .map(|k| {
                    let r = x.rotate_left(5 * k as u32);
                    // Mostly base64 characters, so that groups form.
                    alphabet[(r % if r & 0x300 == 0 { 15 } else { 10 }) as usize]
                })
                .collect();
            for lenient in [false, true] {
                let mut one_by_one = Vec::new();
                base64_one_by_one(&input, lenient, &mut one_by_one);
                assert_eq!(
                    base64_decode(&input, lenient),
                    one_by_one,
                    "{:?}",
                    String::from_utf8_lossy(&input)
                );
            }
        }
    }

    #[test]
    fn url_decode_keeps_invalid_escapes() {
        assert_eq!(url_decode(b"%4", false), b"%4");
        assert_eq!(url_decode(b"%u12", true), b"%u12");
        assert_eq!(uri_decode(b"a+b%20"), b"a+b ");
    }

    /// The run-at-a-time decoders give what decoding one byte at a time
    /// gives, on random text dense in escapes, broken escapes, `%u`, `+`.
    #[test]
    fn url_decoding_by_runs_is_decoding_byte_by_byte() {
        fn one_at_a_time(input: &[u8], uni: bool, plus: bool) -> Vec<u8> {
            let hex = |from: usize, n: usize| {
                input
                    .get(from..from + n)
                    .filter(|h| h.iter().all(|&c| is_hex(c)))
                    .map(|h| {
                        h.iter()
                            .fold(0u32, |v, &c| v << 4 | hex_val(c).unwrap() as u32)
                    })
            };
            let mut out = Vec::new();
            let mut i = 0;
            while let Some(&b) = input.get(i) {
                let u = uni && b == b'%' && matches!(input.get(i + 1), Some(b'u' | b'U'));
                i += match (u, hex(i + 2, 4), hex(i + 1, 2)) {
                    (true, Some(v), _) => {
                        let low = (v & 0xff) as u8;
                        let wide = v >> 8 == 0xff && (1..0x5f).contains(&low);
                        out.push(if wide { low + 0x20 } else { low });
                        6
                    }
                    (true, None, _) => {
                        out.extend_from_slice(&input[i..i + 2]);
                        2
                    }
                    (false, _, Some(v)) if b == b'%' => {
                        out.push(v as u8);
                        3
                    }
                    _ => {
                        out.push(if plus && b == b'+' { b' ' } else { b });
                        1
                    }
                }
            }
            out
        }
        let mut next = 0x2545_f491_4f6c_dd1du64;
        let alphabet = b"%%%++uUfF0a9Gz ";
        for len in 0..60 {
            for _ in 0..200 {
                let input: Vec<u8> = (0..len)
                    .map(|_| {
                        next ^= next << 13;
                        next ^= next >> 7;
                        next ^= next << 17;
                        alphabet[(next % alphabet.len() as u64) as usize]
                    })
                    .collect();
                for uni in [false, true] {
                    assert_eq!(
                        url_decode(&input, uni),
                        one_at_a_time(&input, uni, true),
                        "{input:?}"
                    );
                }
                assert_eq!(
                    uri_decode(&input),
                    one_at_a_time(&input, false, false),
                    "{input:?}"
                );
            }
        }
    }
}
