//! How deeply a KDL text nests its blocks, found before the KDL parser
//! sees it: the parser recurses once per level and a few thousand `{`
//! overflow the stack (found by fuzzing). The scan skips strings (quoted,
//! multi-line and raw) and comments, so braces in them do not count.

/// Deepest block nesting a configuration may have; Wharf's own blocks go
/// three deep.
pub const MAX_NESTING: usize = 32;

/// Most unclosed `{` a text may have anywhere, strings and comments
/// included. The parser recovers from syntax errors, so in a broken text
/// it may take for a block what the scan above took for a string; this
/// bound holds whatever the parser makes of it.
pub const MAX_RAW_NESTING: usize = 128;

/// Where the text nests too deeply for the parser, if it does.
pub fn check(text: &str) -> Option<usize> {
    too_deep(text, MAX_NESTING).or_else(|| raw_too_deep(text.as_bytes(), MAX_RAW_NESTING))
}

/// The offset of the first `{` past `max` unclosed ones, counting every
/// brace in the text.
fn raw_too_deep(b: &[u8], max: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in b.iter().enumerate() {
        match c {
            b'{' => {
                depth += 1;
                if depth > max {
                    return Some(i);
                }
            }
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The byte offset of the first `{` past `max` levels deep, if any.
pub fn too_deep(text: &str, max: usize) -> Option<usize> {
    let b = text.as_bytes();
    let (mut i, mut depth) = (0, 0usize);
    while i < b.len() {
        match b[i] {
            b'{' => {
                depth += 1;
                if depth > max {
                    return Some(i);
                }
                i += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |n| i + n);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => i = block_comment_end(b, i),
            b'"' => i = quoted_end(b, i),
            b'#' | b'r' if raw_start(b, i).is_some() => {
                let (hashes, open) = raw_start(b, i).expect("checked");
                i = raw_end(b, open, hashes);
            }
            _ => i += 1,
        }
    }
    None
}

/// Past a `/* … */` comment (they nest) starting at `i`.
fn block_comment_end(b: &[u8], mut i: usize) -> usize {
    let mut level = 0usize;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            level += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            level -= 1;
            i += 2;
            if level == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// Past a `"…"` or `"""…"""` string starting at `i`.
fn quoted_end(b: &[u8], i: usize) -> usize {
    let (close, mut j): (&[u8], usize) = if b[i..].starts_with(b"\"\"\"") {
        (b"\"\"\"", i + 3)
    } else {
        (b"\"", i + 1)
    };
    while j < b.len() {
        if b[j] == b'\\' {
            j += 2;
        } else if b[j..].starts_with(close) {
            return j + close.len();
        } else {
            j += 1;
        }
    }
    b.len()
}

/// A raw string's opening at `i` (`#"`, `##"`, or KDL v1's `r#"`): its
/// number of `#` and the offset of its opening quote.
fn raw_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let start = if b[i] == b'r' { i + 1 } else { i };
    let hashes = b[start..].iter().take_while(|&&c| c == b'#').count();
    let quote = start + hashes;
    (hashes > 0 && b.get(quote) == Some(&b'"')).then_some((hashes, quote))
}

/// Past a raw string whose opening quote is at `open`, closed by `"` and
/// `hashes` `#`.
fn raw_end(b: &[u8], open: usize, hashes: usize) -> usize {
    let mut j = open + 1;
    while j < b.len() {
        if b[j] == b'"'
            && b[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == b'#')
                .count()
                == hashes
        {
            return j + 1 + hashes;
        }
        j += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_blocks_not_braces_in_strings_or_comments() {
        assert_eq!(too_deep("a { b { c { } } }", 3), None);
        assert_eq!(too_deep("a { b { c { } } }", 2), Some(10));
        let braces = "{".repeat(100);
        let quiet = format!(
            "a \"{braces}\" {{ }}\n// {braces}\n/* /* {braces} */ {braces} */\nb #\"{braces}\"# r#\"{braces}\"#\nc \"\"\"\n{braces}\n\"\"\" \"x\\\"{braces}\""
        );
        assert_eq!(too_deep(&quiet, 1), None, "{quiet}");
        assert_eq!(too_deep(&"{".repeat(5000), MAX_NESTING), Some(MAX_NESTING));
        // A stray quote hides the braces from the scan, not from the parser.
        let stray = format!("a \"b {}", "{".repeat(3000));
        assert_eq!(too_deep(&stray, MAX_NESTING), None);
        assert_eq!(check(&stray), Some(5 + MAX_RAW_NESTING));
        // Unterminated strings and comments end the scan without a panic.
        for text in [
            "\"abc",
            "/* abc",
            "#\"abc",
            "\"\"\"abc",
            "r##\"abc\"#",
            "a\\",
        ] {
            let _ = too_deep(text, 1);
        }
    }
}
