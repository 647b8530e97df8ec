//! Topic names and patterns as NATS writes them: dot-separated tokens; in
//! a pattern `*` stands for one token and a last `>` for one or more.

/// Longest topic or pattern accepted, in bytes.
pub const MAX_TOPIC_LEN: usize = 256;

/// Why a topic or a pattern cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicError {
    /// Nothing at all.
    #[error("a {what} cannot be empty")]
    Empty {
        /// `topic` or `pattern`.
        what: &'static str,
    },
    /// Longer than [`MAX_TOPIC_LEN`].
    #[error("a {what} is at most {MAX_TOPIC_LEN} bytes, found {len}")]
    TooLong {
        /// `topic` or `pattern`.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
    },
    /// A space or a control character.
    #[error("the {what} `{text}` holds {found:?}")]
    Character {
        /// `topic` or `pattern`.
        what: &'static str,
        /// The text refused.
        text: String,
        /// The first character refused.
        found: char,
    },
    /// A leading, trailing or doubled `.`.
    #[error("the {what} `{text}` has an empty token (a leading, trailing or doubled `.`)")]
    EmptyToken {
        /// `topic` or `pattern`.
        what: &'static str,
        /// The text refused.
        text: String,
    },
    /// `*` or `>` inside a token.
    #[error("the pattern `{text}` has `{token}`: `*` and `>` stand alone as tokens")]
    Wildcard {
        /// The pattern refused.
        text: String,
        /// The token holding the wildcard.
        token: String,
    },
    /// `>` before the last token.
    #[error("the pattern `{0}` has `>` before its last token")]
    RestNotLast(String),
    /// A wildcard in a topic published to.
    #[error("the topic `{0}` has a wildcard: messages go to one topic, subscriptions use patterns")]
    WildcardTopic(String),
}

/// A checked subscription pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(String);

impl Pattern {
    /// Checks `text`: non-empty tokens of printable non-space characters,
    /// `*` and `>` only as whole tokens, `>` only last.
    pub fn parse(text: &str) -> Result<Pattern, TopicError> {
        check(text, "pattern")?;
        let count = text.split('.').count();
        for (i, token) in text.split('.').enumerate() {
            let wild = token.contains(['*', '>']);
            if wild && token != "*" && token != ">" {
                return Err(TopicError::Wildcard {
                    text: text.into(),
                    token: token.into(),
                });
            }
            if token == ">" && i + 1 != count {
                return Err(TopicError::RestNotLast(text.into()));
            }
        }
        Ok(Pattern(text.to_string()))
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `topic` (a checked topic) matches; for one-off checks (the
    /// index is for many patterns).
    pub fn matches(&self, topic: &str) -> bool {
        matches(&self.0, topic)
    }
}

/// Whether `topic` matches `pattern`, both already checked (a pattern
/// from a parsed configuration).
pub fn matches(pattern: &str, topic: &str) -> bool {
    let mut tokens = topic.split('.');
    for want in pattern.split('.') {
        match (want, tokens.next()) {
            (">", Some(_)) => return true,
            ("*", Some(_)) => {}
            (want, Some(got)) if want == got => {}
            _ => return false,
        }
    }
    tokens.next().is_none()
}

/// Whether some topic matches both patterns (both already checked): what
/// an agent may publish under `a` can reach a subscription to `b`.
pub fn overlap(a: &str, b: &str) -> bool {
    let (mut a, mut b) = (a.split('.'), b.split('.'));
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            // `>` stands for one token or more: the other side has one here
            // and may take any tokens after it.
            (Some(">"), Some(_)) | (Some(_), Some(">")) => return true,
            (Some(x), Some(y)) if x == y || x == "*" || y == "*" => {}
            _ => return false,
        }
    }
}

/// Whether every topic `inner` matches is matched by `outer` too.
pub fn covers(outer: &str, inner: &str) -> bool {
    let (mut o, mut i) = (outer.split('.'), inner.split('.'));
    loop {
        match (o.next(), i.next()) {
            (None, None) => return true,
            // `>` takes one token or more: whatever `inner` has left.
            (Some(">"), Some(_)) => return true,
            (Some("*"), Some(t)) if t != ">" => {}
            (Some(x), Some(y)) if x == y && x != ">" => {}
            _ => return false,
        }
    }
}

/// Checks a topic a message is published to: a pattern's rules, and no
/// wildcards.
pub fn check_topic(topic: &str) -> Result<(), TopicError> {
    check(topic, "topic")?;
    if topic.split('.').any(|t| t == "*" || t == ">") {
        return Err(TopicError::WildcardTopic(topic.into()));
    }
    Ok(())
}

fn check(text: &str, what: &'static str) -> Result<(), TopicError> {
    if text.is_empty() {
        return Err(TopicError::Empty { what });
    }
    if text.len() > MAX_TOPIC_LEN {
        return Err(TopicError::TooLong {
            what,
            len: text.len(),
        });
    }
    if let Some(c) = text.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(TopicError::Character {
            what,
            text: text.into(),
            found: c,
        });
    }
    if text.split('.').any(str::is_empty) {
        return Err(TopicError::EmptyToken {
            what,
            text: text.into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_patterns_and_topics_say_why() {
        for bad in [
            "",
            "a..b",
            ".a",
            "a.",
            "a.b*",
            "a.>.b",
            "a b",
            &"x".repeat(300),
        ] {
            assert!(Pattern::parse(bad).is_err(), "{bad}");
        }
        assert!(
            check_topic("a.*")
                .unwrap_err()
                .to_string()
                .contains("wildcard")
        );
        assert!(check_topic("orders.created").is_ok());
    }

    #[test]
    fn patterns_overlap_when_one_topic_matches_both() {
        for (a, b, both) in [
            ("orders.>", "orders.>", true),
            ("orders.>", "orders.created", true),
            ("orders.>", "orders", false),
            ("orders.*", "orders.created.eu", false),
            ("orders.*", "*.created", true),
            ("*.*", "orders.>", true),
            ("*", "orders.>", false),
            ("audit.>", "orders.>", false),
            (">", "a.b.c", true),
            ("a.*.c", "a.b.*", true),
            ("a.*.c", "a.b.d", false),
            ("a.b", "a.b", true),
            ("a.b", "a.b.c", false),
        ] {
            assert_eq!(overlap(a, b), both, "{a} and {b}");
            assert_eq!(overlap(b, a), both, "{b} and {a}");
            // A witness: when they overlap, the topic built from both
            // matches both.
            if both {
                let witness = witness(a, b);
                assert!(matches(a, &witness) && matches(b, &witness), "{witness}");
            }
        }
    }

    /// A topic both overlapping patterns match: each token the concrete
    /// one of the two, `x` for a wildcard.
    fn witness(a: &str, b: &str) -> String {
        let (a, b): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
        let mut out = Vec::new();
        for i in 0..a.len().max(b.len()) {
            let pick = match (a.get(i), b.get(i)) {
                (Some(&">"), Some(&t)) | (Some(&t), Some(&">")) if t != "*" && t != ">" => t,
                (Some(&">"), None) | (None, Some(&">")) => break,
                (Some(&">"), _) | (_, Some(&">")) => "x",
                (Some(&"*"), Some(&t)) | (Some(&t), Some(&"*")) if t != "*" => t,
                (Some(&t), _) | (None, Some(&t)) if t != "*" => t,
                _ => "x",
            };
            out.push(pick);
        }
        out.join(".")
    }
}
