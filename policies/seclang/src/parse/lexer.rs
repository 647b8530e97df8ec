//! SecLang text → statements: comments, line continuations (`\` at the
//! end of a line) and quoted arguments, one [`Statement`] per directive
//! with the line it starts on. Knows nothing of what directives mean.

use crate::error::{ErrorKind, LoadError, Location};

/// One directive as written: its name and its arguments, unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub name: String,
    pub args: Vec<String>,
    pub at: Location,
}

/// Splits `text` (the contents of `file`) into statements.
pub fn statements(file: &str, text: &str) -> Result<Vec<Statement>, LoadError> {
    let mut out = Vec::new();
    let mut logical = String::new();
    let mut start = 0u32;
    for (n, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if logical.is_empty() {
            start = n as u32 + 1;
            if line.trim_start().starts_with('#') {
                continue;
            }
        }
        match line.strip_suffix('\\') {
            Some(head) => {
                logical.push_str(head);
                continue;
            }
            None => logical.push_str(line),
        }
        let at = Location {
            file: file.to_string(),
            line: start,
        };
        if let Some(statement) = statement(&logical, at)? {
            out.push(statement);
        }
        logical.clear();
    }
    if !logical.trim().is_empty() {
        let at = Location {
            file: file.to_string(),
            line: start,
        };
        if let Some(statement) = statement(&logical, at)? {
            out.push(statement);
        }
    }
    Ok(out)
}

fn statement(text: &str, at: Location) -> Result<Option<Statement>, LoadError> {
    let text = text.trim();
    if text.is_empty() || text.starts_with('#') {
        return Ok(None);
    }
    let mut words = words(text).map_err(|e| LoadError::new(&at, ErrorKind::Syntax(e)))?;
    let name = words.remove(0);
    Ok(Some(Statement {
        name,
        args: words,
        at,
    }))
}

/// Whitespace-separated words; a double-quoted word may hold spaces and
/// `\"` for a quote (every other backslash is kept as written, so regular
/// expressions keep their escapes).
fn words(text: &str) -> Result<Vec<String>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if bytes[i] == b'"' {
            let mut word = Vec::new();
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err("a quoted argument is not closed".into()),
                    Some(b'\\') if bytes.get(i + 1) == Some(&b'"') => {
                        word.push(b'"');
                        i += 2;
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(&b) => {
                        word.push(b);
                        i += 1;
                    }
                }
            }
            if bytes.get(i).is_some_and(|b| !b.is_ascii_whitespace()) {
                return Err("text right after a closing quote".into());
            }
            out.push(String::from_utf8(word).map_err(|_| "an argument is not UTF-8")?);
        } else {
            let begin = i;
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            out.push(text[begin..i].to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuations_comments_and_quotes() {
        let text = "# a comment\nSecRule ARGS \"@rx a\\\"b\\d\" \\\n    \"id:1,\\\n    phase:2\"\n\nSecMarker END\n";
        let got = statements("f.conf", text).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].name, "SecRule");
        assert_eq!(got[0].args, ["ARGS", "@rx a\"b\\d", "id:1,    phase:2"]);
        assert_eq!(got[0].at.line, 2);
        assert_eq!(got[1].args, ["END"]);
        assert_eq!(got[1].at.line, 6);
    }

    #[test]
    fn an_open_quote_is_an_error_with_its_line() {
        let err = statements("f.conf", "\nSecRule ARGS \"@rx a").unwrap_err();
        assert_eq!(err.at.line, 2);
        assert!(err.to_string().starts_with("f.conf:2: syntax"), "{err}");
    }
}
