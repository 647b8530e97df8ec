//! The index that finds every subscription a topic matches without
//! looking at the ones it cannot (the pattern grammar itself is
//! [`wharf_config::topic`]).

use std::collections::HashMap;

use wharf_config::topic::Pattern;

/// Subscriptions by pattern, as a tree of tokens: matching a topic walks
/// one branch per token (plus the `*` branch), so its cost grows with the
/// topic's length and the wildcards that apply, not with the number of
/// subscriptions.
#[derive(Debug)]
pub struct Index<T> {
    root: Node<T>,
    len: usize,
}

#[derive(Debug)]
struct Node<T> {
    exact: HashMap<Box<str>, Node<T>>,
    star: Option<Box<Node<T>>>,
    /// Subscriptions whose pattern ends here with `>`.
    rest: Vec<T>,
    /// Subscriptions whose pattern ends here.
    end: Vec<T>,
}

impl<T> Default for Node<T> {
    fn default() -> Self {
        Node {
            exact: HashMap::new(),
            star: None,
            rest: Vec::new(),
            end: Vec::new(),
        }
    }
}

impl<T> Default for Index<T> {
    fn default() -> Self {
        Index {
            root: Node::default(),
            len: 0,
        }
    }
}

impl<T: Clone> Index<T> {
    /// Subscriptions held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `value` under `pattern`.
    pub fn insert(&mut self, pattern: &Pattern, value: T) {
        let mut node = &mut self.root;
        for token in pattern.as_str().split('.') {
            match token {
                ">" => {
                    node.rest.push(value);
                    self.len += 1;
                    return;
                }
                "*" => node = node.star.get_or_insert_with(Default::default),
                token => node = node.exact.entry(token.into()).or_default(),
            }
        }
        node.end.push(value);
        self.len += 1;
    }

    /// Removes the subscriptions of `pattern` for which `is` holds.
    pub fn remove(&mut self, pattern: &Pattern, is: impl Fn(&T) -> bool) {
        let mut node = &mut self.root;
        for token in pattern.as_str().split('.') {
            let next = match token {
                ">" => {
                    let before = node.rest.len();
                    node.rest.retain(|v| !is(v));
                    self.len -= before - node.rest.len();
                    return;
                }
                "*" => node.star.as_deref_mut(),
                token => node.exact.get_mut(token),
            };
            match next {
                Some(next) => node = next,
                None => return,
            }
        }
        let before = node.end.len();
        node.end.retain(|v| !is(v));
        self.len -= before - node.end.len();
    }

    /// Appends to `out` every subscription `topic` matches.
    pub fn matches(&self, topic: &str, out: &mut Vec<T>) {
        walk(&self.root, topic, out);
    }
}

fn walk<T: Clone>(node: &Node<T>, rest: &str, out: &mut Vec<T>) {
    // At least one token remains: `>` here takes it and all after it.
    out.extend_from_slice(&node.rest);
    let (token, after) = match rest.split_once('.') {
        Some((token, after)) => (token, Some(after)),
        None => (rest, None),
    };
    let next = |child: &Node<T>, out: &mut Vec<T>| match after {
        Some(after) => walk(child, after, out),
        None => out.extend_from_slice(&child.end),
    };
    if let Some(child) = node.exact.get(token) {
        next(child, out);
    }
    if let Some(child) = &node.star {
        next(child, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(patterns: &[&str]) -> Index<usize> {
        let mut index = Index::default();
        for (i, p) in patterns.iter().enumerate() {
            index.insert(&Pattern::parse(p).unwrap(), i);
        }
        index
    }

    fn matched(index: &Index<usize>, topic: &str) -> Vec<usize> {
        let mut out = Vec::new();
        index.matches(topic, &mut out);
        out.sort();
        out
    }

    #[test]
    fn wildcards_match_as_nats_defines_them() {
        let patterns = [
            "orders.created",
            "orders.*",
            "orders.>",
            "*.created",
            ">",
            "a.*.c",
        ];
        let index = index(&patterns);
        assert_eq!(matched(&index, "orders.created"), [0, 1, 2, 3, 4]);
        assert_eq!(matched(&index, "orders.paid"), [1, 2, 4]);
        // `>` needs at least one token after its prefix; `*` exactly one.
        assert_eq!(matched(&index, "orders"), [4]);
        assert_eq!(matched(&index, "orders.created.eu"), [2, 4]);
        assert_eq!(matched(&index, "a.b.c"), [4, 5]);
        assert_eq!(matched(&index, "a.b.c.d"), [4]);
        for (i, p) in patterns.iter().enumerate() {
            let p = Pattern::parse(p).unwrap();
            for topic in [
                "orders.created",
                "orders",
                "orders.created.eu",
                "a.b.c",
                "x",
            ] {
                let by_index = matched(&index, topic).contains(&i);
                assert_eq!(p.matches(topic), by_index, "{} vs {topic}", p.as_str());
            }
        }
    }

    #[test]
    fn removing_takes_only_what_it_names() {
        let mut index = index(&["a.>", "a.>", "a.b"]);
        index.remove(&Pattern::parse("a.>").unwrap(), |v| *v == 1);
        assert_eq!(matched(&index, "a.b"), [0, 2]);
        assert_eq!(index.len(), 2);
        index.remove(&Pattern::parse("x.y").unwrap(), |_| true);
        assert_eq!(index.len(), 2);
    }
}
