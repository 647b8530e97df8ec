//! `topic "pattern" { keep 10000; for "24h" }`: which topics' messages the
//! host keeps, how many and for how long, so clients can read them back
//! and watchers resume after a reconnect.
//!
//! ```kdl
//! topic "orders.>" {
//!     keep 10000      // the newest messages kept across the topics it matches (default 10000)
//!     for "24h"       // and none older than this (default: no age limit)
//! }
//! ```

use std::time::Duration;

use kdl::KdlNode;

use super::diag::Problem;
use super::walker::{Seen, Walker, set};

const TOPIC: &[&str] = &["keep", "for"];

/// `keep` when not set.
pub const DEFAULT_KEEP: u64 = 10_000;

/// One `topic` block: the messages of topics matching `pattern` are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicKeep {
    /// The topics whose messages are kept.
    pub pattern: String,
    /// The newest messages kept, across every topic the pattern matches.
    pub keep: u64,
    /// None older than this.
    pub age: Option<Duration>,
}

impl Walker {
    /// One `topic "pattern" { … }` block, added to `keeps` unless its
    /// pattern already has one.
    pub(super) fn topic_keep(&mut self, node: &KdlNode, keeps: &mut Vec<TopicKeep>) {
        let (pattern, span) = {
            let Some(entry) = self.sole_entry(node, true) else {
                return;
            };
            match entry.value().as_string() {
                Some(p) => (p.to_string(), entry.span()),
                None => {
                    self.wrong_type(entry, "`topic` takes a topic or pattern as a string");
                    return;
                }
            }
        };
        if !self.check_pattern(&pattern, span) {
            return;
        }
        if keeps.iter().any(|k| k.pattern == pattern) {
            self.problems.push(
                Problem::new(span, format!("a second `topic` block for `{pattern}`"))
                    .help("write one block per pattern"),
            );
            return;
        }
        let mut keep = TopicKeep {
            pattern,
            keep: DEFAULT_KEEP,
            age: None,
        };
        let mut seen = Seen::default();
        for child in node.children().map(|d| d.nodes()).unwrap_or_default() {
            if !seen.first(self, child) {
                continue;
            }
            match child.name().value() {
                "keep" => set(&mut keep.keep, self.count(child).map(|n| n as u64)),
                "for" => keep.age = self.duration(child).or(keep.age),
                _ => self.unknown(child, "in `topic`", TOPIC),
            }
        }
        keeps.push(keep);
    }
}

/// The block whose pattern `topic` matches first, in the order written:
/// a message is kept under it alone.
pub fn keep_for<'k>(keeps: &'k [TopicKeep], topic: &str) -> Option<&'k TopicKeep> {
    keeps
        .iter()
        .find(|k| super::topic::matches(&k.pattern, topic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse("t.kdl", text, std::path::Path::new("/")).map_err(|e| e.plain())
    }

    #[test]
    fn topic_blocks_keep_in_the_order_written() {
        let config = parse(
            r#"
            topic "orders.eu.*" { keep 5; for "1h"; }
            topic "orders.>"
            "#,
        )
        .unwrap();
        assert_eq!(
            config.keeps,
            [
                TopicKeep {
                    pattern: "orders.eu.*".into(),
                    keep: 5,
                    age: Some(Duration::from_secs(3600)),
                },
                TopicKeep {
                    pattern: "orders.>".into(),
                    keep: DEFAULT_KEEP,
                    age: None,
                },
            ]
        );
        let keep = |t| keep_for(&config.keeps, t).map(|k| k.pattern.as_str());
        assert_eq!(keep("orders.eu.paid"), Some("orders.eu.*"));
        assert_eq!(keep("orders.us.paid"), Some("orders.>"));
        assert_eq!(keep("news.today"), None);
    }

    #[test]
    fn a_pattern_covers_what_it_matches_all_of() {
        use crate::topic::covers;
        for (outer, inner, want) in [
            ("orders.>", "orders.eu.*", true),
            ("orders.>", "orders.>", true),
            ("orders.*", "orders.eu", true),
            ("orders.*", "orders.*", true),
            ("orders.*", "orders.>", false),
            ("orders.eu", "orders.*", false),
            ("orders.>", "orders", false),
            (">", "a.b", true),
            ("a.*.c", "a.b.c", true),
            ("a.*.c", "a.b.d", false),
        ] {
            assert_eq!(covers(outer, inner), want, "{outer} ⊇ {inner}");
        }
    }

    #[test]
    fn at_least_once_needs_its_topics_kept_and_sane_dead_letters() {
        let ok = parse(
            r#"
            topic "orders.>"
            agent "a" {
                subscribe "orders.eu.*" {
                    delivery "at-least-once"
                    attempts 3
                    backoff "10ms"
                    dead-letter "dead.orders"
                }
            }
            "#,
        )
        .unwrap();
        let sub = &ok.agents["a"].subscribes[0];
        assert_eq!(
            sub.delivery,
            crate::Delivery::AtLeastOnce(crate::Redelivery {
                attempts: 3,
                backoff: Duration::from_millis(10),
                dead_letter: Some("dead.orders".into()),
            })
        );
        for (text, says) in [
            (
                r#"topic "orders.eu"
                   agent "a" { subscribe "orders.*" { delivery "at-least-once"; } }"#,
                "needs what `orders.*` matches kept",
            ),
            (
                r#"topic "orders.>"
                   agent "a" { subscribe "orders.>" { delivery "at-least-once"; dead-letter "orders.dead"; } }"#,
                "would come back to it",
            ),
            (
                r#"agent "a" { subscribe "x" { attempts 3; } }"#,
                "apply to `delivery",
            ),
            (
                r#"agent "a" { subscribe "x" { delivery "twice"; } }"#,
                "unknown delivery `twice`",
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn a_bad_topic_block_is_refused_with_where_and_why() {
        for (text, says) in [
            (r#"topic "a.>.b""#, "a.>.b"),
            (
                r#"topic "a.b"; topic "a.b""#,
                "a second `topic` block for `a.b`",
            ),
            (r#"topic "a" { keep 0; }"#, "`keep` must be at least 1"),
            (
                r#"topic "a" { for "0s"; }"#,
                "`for` must be longer than zero",
            ),
            (r#"topic "a" { size 3; }"#, "unknown node `size` in `topic`"),
            ("topic 3", "`topic` takes a topic or pattern as a string"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
