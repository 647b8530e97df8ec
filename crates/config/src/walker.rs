//! The walker every section of the configuration is read with: the
//! problems found so far, and the helpers that read one value of a node
//! (strings, booleans, sizes, durations, names) and report a wrong one at
//! its line and column. Each section (`compose.rs`, `filter.rs`, …) adds
//! its own `impl Walker` block; `parse.rs` walks the document.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use kdl::{KdlEntry, KdlNode, KdlValue};
use miette::SourceSpan;

use super::bounds;
use super::diag::Problem;
use super::units::{parse_duration, parse_size};

/// Reads a configuration, collecting every problem.
#[derive(Default)]
pub(super) struct Walker {
    pub(super) problems: Vec<Problem>,
    /// The configuration file's directory: files it names are read
    /// relative to it.
    pub(super) base_dir: std::path::PathBuf,
    /// The `topic` blocks' patterns, read before any `agent` block (an
    /// at-least-once subscription needs its topics kept).
    pub(super) kept: Vec<String>,
}

impl Walker {
    /// `agent "name" { … }` (or `filter`, `filter-config`): exactly one
    /// string argument naming a component by its file stem.
    pub(super) fn guest_name(
        &mut self,
        node: &KdlNode,
        what: &str,
    ) -> Option<(String, SourceSpan)> {
        if node.entries().is_empty() {
            self.problems.push(
                Problem::new(node.name().span(), format!("`{what}` needs a name")).help(format!(
                    "write `{what} \"NAME\" {{ … }}`, where NAME.wasm is the component's file"
                )),
            );
            return None;
        }
        let entry = self.sole_entry(node, true)?;
        let Some(name) = entry.value().as_string() else {
            self.wrong_type(
                entry,
                &format!("`{what}` takes the component's name as a string"),
            );
            return None;
        };
        self.valid_name(name, entry.span(), what)
            .then(|| (name.to_string(), entry.span()))
    }

    /// Whether `name` can name a component (a file stem); reports it when not.
    pub(super) fn valid_name(&mut self, name: &str, span: SourceSpan, what: &str) -> bool {
        let valid = super::valid_agent_name(name);
        if !valid {
            self.problems.push(
                Problem::new(span, format!("`{name}` is not a valid {what} name"))
                    .help("names are file stems: letters, digits, `-`, `_` and `.`"),
            );
        }
        valid
    }

    pub(super) fn values(&mut self, node: &KdlNode) -> BTreeMap<String, String> {
        let mut values = BTreeMap::new();
        let mut seen = Seen::default();
        // `filter-config "name" { … }` names its filter; `config { … }` takes no argument.
        let children = match node.name().value() {
            "filter-config" => node.children().map(|d| d.nodes()).unwrap_or_default(),
            _ => self.block(node),
        };
        for child in children {
            if !seen.first(self, child) {
                continue;
            }
            let Some(entry) = self.sole_entry(child, false) else {
                continue;
            };
            let text = match entry.value() {
                KdlValue::String(s) => s.clone(),
                KdlValue::Integer(i) => i.to_string(),
                KdlValue::Float(f) => f.to_string(),
                KdlValue::Bool(b) => b.to_string(),
                KdlValue::Null => {
                    self.wrong_type(entry, "config values are strings, numbers or booleans");
                    continue;
                }
            };
            values.insert(child.name().value().to_string(), text);
        }
        values
    }

    /// The children of a block node that takes no arguments.
    pub(super) fn block<'a>(&mut self, node: &'a KdlNode) -> &'a [KdlNode] {
        if let Some(entry) = node.entries().first() {
            self.problems.push(Problem::new(
                entry.span(),
                format!(
                    "`{}` takes no arguments, only a `{{ … }}` block",
                    node.name().value()
                ),
            ));
        }
        node.children().map(|d| d.nodes()).unwrap_or_default()
    }

    /// The single positional argument of a node; `children_ok` allows a block.
    pub(super) fn sole_entry<'a>(
        &mut self,
        node: &'a KdlNode,
        children_ok: bool,
    ) -> Option<&'a KdlEntry> {
        let key = node.name().value();
        if let Some(prop) = node.entries().iter().find(|e| e.name().is_some()) {
            self.problems.push(Problem::new(
                prop.span(),
                format!("`{key}` takes no properties"),
            ));
            return None;
        }
        if !children_ok && let Some(children) = node.children() {
            self.problems.push(Problem::new(
                children.span(),
                format!("`{key}` takes a value, not a block"),
            ));
            return None;
        }
        match node.entries() {
            [entry] => Some(entry),
            [] => {
                self.problems.push(Problem::new(
                    node.name().span(),
                    format!("`{key}` needs a value"),
                ));
                None
            }
            [_, extra, ..] => {
                self.problems.push(Problem::new(
                    extra.span(),
                    format!("`{key}` takes one value, found {}", node.entries().len()),
                ));
                None
            }
        }
    }

    pub(super) fn string(&mut self, node: &KdlNode) -> Option<(String, SourceSpan)> {
        let entry = self.sole_entry(node, false)?;
        match entry.value().as_string() {
            Some(s) => Some((s.to_string(), entry.span())),
            None => {
                let key = node.name().value();
                self.wrong_type(entry, &format!("`{key}` expects a string"));
                None
            }
        }
    }

    /// `#true` or `#false`.
    pub(super) fn boolean(&mut self, node: &KdlNode) -> Option<bool> {
        let entry = self.sole_entry(node, false)?;
        match entry.value() {
            KdlValue::Bool(b) => Some(*b),
            _ => {
                let key = node.name().value();
                self.wrong_type(entry, &format!("`{key}` expects #true or #false"));
                None
            }
        }
    }

    /// `cache "dir"` or `cache #false`.
    pub(super) fn socket_addr(&mut self, node: &KdlNode) -> Option<SocketAddr> {
        let (text, span) = self.string(node)?;
        match text.parse() {
            Ok(addr) => Some(addr),
            Err(_) => {
                self.problems.push(
                    Problem::new(span, format!("`{text}` is not a socket address")).help(
                        "write an IP address and a port, e.g. \"127.0.0.1:8080\" or \"[::1]:8080\"",
                    ),
                );
                None
            }
        }
    }

    pub(super) fn size(&mut self, node: &KdlNode) -> Option<u64> {
        let entry = self.sole_entry(node, false)?;
        let key = node.name().value();
        let parsed = match entry.value() {
            KdlValue::Integer(i) => u64::try_from(*i).map_err(|_| format!("`{i}` is out of range")),
            KdlValue::String(s) => parse_size(s),
            _ => {
                self.wrong_type(entry, &format!("`{key}` expects a size such as \"64MiB\""));
                return None;
            }
        };
        self.check(entry, parsed.and_then(|n| bounds::size(key, n)))
    }

    pub(super) fn usize_size(&mut self, node: &KdlNode) -> Option<usize> {
        self.size(node)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    pub(super) fn duration(&mut self, node: &KdlNode) -> Option<Duration> {
        let entry = self.sole_entry(node, false)?;
        let key = node.name().value();
        let Some(text) = entry.value().as_string() else {
            self.wrong_type(
                entry,
                &format!("`{key}` expects a duration such as \"500ms\" or \"2s\""),
            );
            return None;
        };
        let parsed = parse_duration(text).and_then(|d| {
            if d.is_zero() {
                Err(format!("`{key}` must be longer than zero"))
            } else {
                bounds::duration(key, d)
            }
        });
        self.check(entry, parsed)
    }

    /// A duration, or `#false` for none.
    pub(super) fn duration_or_off(&mut self, node: &KdlNode) -> Option<Option<Duration>> {
        let entry = self.sole_entry(node, false)?;
        match entry.value() {
            KdlValue::Bool(false) => Some(None),
            KdlValue::String(_) => self.duration(node).map(Some),
            _ => {
                let key = node.name().value();
                self.wrong_type(
                    entry,
                    &format!("`{key}` expects a duration such as \"10m\", or #false"),
                );
                None
            }
        }
    }

    /// A whole number in the range [`bounds`] gives the node.
    pub(super) fn count(&mut self, node: &KdlNode) -> Option<usize> {
        let entry = self.sole_entry(node, false)?;
        let key = node.name().value();
        let parsed = match entry.value() {
            KdlValue::Integer(i) => u64::try_from(*i)
                .map_err(|_| format!("`{key}` must be at least 0, found {i}"))
                .and_then(|n| bounds::count(key, n)),
            _ => {
                self.wrong_type(entry, &format!("`{key}` expects a whole number"));
                return None;
            }
        };
        self.check(entry, parsed).map(|n| n as usize)
    }

    pub(super) fn check<T>(&mut self, entry: &KdlEntry, parsed: Result<T, String>) -> Option<T> {
        parsed
            .map_err(|msg| self.problems.push(Problem::new(entry.span(), msg)))
            .ok()
    }

    pub(super) fn wrong_type(&mut self, entry: &KdlEntry, expected: &str) {
        let found = match entry.value() {
            KdlValue::String(_) => "a string",
            KdlValue::Integer(_) => "an integer",
            KdlValue::Float(_) => "a number with a fraction",
            KdlValue::Bool(_) => "a boolean",
            KdlValue::Null => "#null",
        };
        self.problems.push(Problem::new(
            entry.span(),
            format!("{expected}, found {found}"),
        ));
    }

    pub(super) fn unknown(&mut self, node: &KdlNode, place: &str, allowed: &[&str]) {
        let key = node.name().value();
        self.problems.push(
            Problem::new(node.name().span(), format!("unknown node `{key}` {place}"))
                .help(format!("expected one of: {}", allowed.join(", "))),
        );
    }
}

pub(super) fn clamp_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

pub(super) fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// Tracks which single-valued nodes a block has set, to report repeats.
#[derive(Default)]
pub(super) struct Seen(Vec<String>);

impl Seen {
    /// True the first time a node name is seen in this block.
    pub(super) fn first(&mut self, walker: &mut Walker, node: &KdlNode) -> bool {
        let key = node.name().value();
        if self.0.iter().any(|k| k == key) {
            walker.problems.push(Problem::new(
                node.name().span(),
                format!("`{key}` is set more than once here"),
            ));
            return false;
        }
        self.0.push(key.to_string());
        true
    }
}
