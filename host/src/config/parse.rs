//! KDL → [`Config`]: walks the document once, checks every node and value
//! against what Wharf accepts, and collects every problem before failing.
//! A value of the wrong type is an error, never a silent default.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};
use miette::SourceSpan;

use super::diag::{ConfigError, Problem};
use super::units::{parse_duration, parse_size};
use super::{AgentSettings, Config};

const TOP: &[&str] = &["listen", "agents", "limits", "server", "agent"];
const LIMITS: &[&str] = &["memory", "deadline", "request-body", "response-body"];
const SERVER: &[&str] = &[
    "connections",
    "header-timeout",
    "shutdown-grace",
    "component-size",
];
const AGENT: &[&str] = &[
    "memory",
    "deadline",
    "request-body",
    "response-body",
    "config",
];

pub(super) fn parse(name: &str, text: &str) -> Result<Config, ConfigError> {
    let doc = match KdlDocument::parse(text) {
        Ok(doc) => doc,
        Err(err) => {
            let problems = err
                .diagnostics
                .iter()
                .map(|d| Problem {
                    message: d
                        .message
                        .clone()
                        .unwrap_or_else(|| "invalid KDL syntax".into()),
                    span: d.span,
                    label: d.label.clone(),
                    help: d.help.clone(),
                })
                .collect();
            return Err(ConfigError::new(name, text, problems));
        }
    };
    let mut walker = Walker::default();
    let config = walker.document(&doc);
    if walker.problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigError::new(name, text, walker.problems))
    }
}

#[derive(Default)]
struct Walker {
    problems: Vec<Problem>,
}

impl Walker {
    fn document(&mut self, doc: &KdlDocument) -> Config {
        let mut config = Config::default();
        let mut seen = Seen::default();
        for node in doc.nodes() {
            let key = node.name().value();
            if key != "agent" && !seen.first(self, node) {
                continue;
            }
            match key {
                "listen" => {
                    if let Some(addr) = self.socket_addr(node) {
                        config.listen = addr;
                    }
                }
                "agents" => {
                    if let Some((dir, _)) = self.string(node) {
                        config.agents_dir = dir.into();
                    }
                }
                "limits" => self.limits(node, &mut config),
                "server" => self.server(node, &mut config),
                "agent" => self.agent(node, &mut config.agents),
                _ => self.unknown(node, "at the top level", TOP),
            }
        }
        config
    }

    fn limits(&mut self, node: &KdlNode, config: &mut Config) {
        for child in self.block(node) {
            match child.name().value() {
                "memory" => set(&mut config.limits.memory, self.size(child)),
                "deadline" => set(&mut config.limits.deadline, self.duration(child)),
                "request-body" => set(&mut config.limits.request_body, self.usize_size(child)),
                "response-body" => set(&mut config.limits.response_body, self.usize_size(child)),
                _ => self.unknown(child, "in `limits`", LIMITS),
            }
        }
    }

    fn server(&mut self, node: &KdlNode, config: &mut Config) {
        for child in self.block(node) {
            let s = &mut config.server;
            match child.name().value() {
                "connections" => set(&mut s.connections, self.count(child)),
                "header-timeout" => set(&mut s.header_timeout, self.duration(child)),
                "shutdown-grace" => set(&mut s.shutdown_grace, self.duration(child)),
                "component-size" => set(&mut s.component_size, self.size(child)),
                _ => self.unknown(child, "in `server`", SERVER),
            }
        }
    }

    fn agent(&mut self, node: &KdlNode, agents: &mut BTreeMap<String, AgentSettings>) {
        let Some((name, span)) = self.agent_name(node) else {
            return;
        };
        let mut settings = AgentSettings::default();
        let mut seen = Seen::default();
        for child in node.children().map(|d| d.nodes()).unwrap_or_default() {
            if !seen.first(self, child) {
                continue;
            }
            match child.name().value() {
                "memory" => settings.memory = self.size(child),
                "deadline" => settings.deadline = self.duration(child),
                "request-body" => settings.request_body = self.usize_size(child),
                "response-body" => settings.response_body = self.usize_size(child),
                "config" => settings.values = self.values(child),
                _ => self.unknown(child, &format!("in `agent \"{name}\"`"), AGENT),
            }
        }
        if agents.insert(name.clone(), settings).is_some() {
            self.problems.push(Problem::new(
                span,
                format!("agent `{name}` is configured twice"),
            ));
        }
    }

    /// `agent "name" { … }`: exactly one string argument naming the agent.
    fn agent_name(&mut self, node: &KdlNode) -> Option<(String, SourceSpan)> {
        if node.entries().is_empty() {
            self.problems.push(
                Problem::new(node.name().span(), "`agent` needs the agent's name")
                    .help("write `agent \"NAME\" { … }`, where NAME.wasm is the agent's file"),
            );
            return None;
        }
        let entry = self.sole_entry(node, true)?;
        let Some(name) = entry.value().as_string() else {
            self.wrong_type(entry, "`agent` takes the agent's name as a string");
            return None;
        };
        if !crate::registry::valid_agent_name(name) {
            self.problems.push(
                Problem::new(entry.span(), format!("`{name}` is not a valid agent name"))
                    .help("agent names are file stems: letters, digits, `-`, `_` and `.`"),
            );
            return None;
        }
        Some((name.to_string(), entry.span()))
    }

    fn values(&mut self, node: &KdlNode) -> BTreeMap<String, String> {
        let mut values = BTreeMap::new();
        let mut seen = Seen::default();
        for child in self.block(node) {
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
    fn block<'a>(&mut self, node: &'a KdlNode) -> &'a [KdlNode] {
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
    fn sole_entry<'a>(&mut self, node: &'a KdlNode, children_ok: bool) -> Option<&'a KdlEntry> {
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

    fn string(&mut self, node: &KdlNode) -> Option<(String, SourceSpan)> {
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

    fn socket_addr(&mut self, node: &KdlNode) -> Option<SocketAddr> {
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

    fn size(&mut self, node: &KdlNode) -> Option<u64> {
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
        self.check(entry, parsed)
    }

    fn usize_size(&mut self, node: &KdlNode) -> Option<usize> {
        self.size(node)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn duration(&mut self, node: &KdlNode) -> Option<Duration> {
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
                Ok(d)
            }
        });
        self.check(entry, parsed)
    }

    fn count(&mut self, node: &KdlNode) -> Option<usize> {
        let entry = self.sole_entry(node, false)?;
        let key = node.name().value();
        match entry.value() {
            KdlValue::Integer(i) if *i >= 1 => Some(usize::try_from(*i).unwrap_or(usize::MAX)),
            KdlValue::Integer(i) => {
                self.problems.push(Problem::new(
                    entry.span(),
                    format!("`{key}` must be at least 1, found {i}"),
                ));
                None
            }
            _ => {
                self.wrong_type(entry, &format!("`{key}` expects a whole number"));
                None
            }
        }
    }

    fn check<T>(&mut self, entry: &KdlEntry, parsed: Result<T, String>) -> Option<T> {
        parsed
            .map_err(|msg| self.problems.push(Problem::new(entry.span(), msg)))
            .ok()
    }

    fn wrong_type(&mut self, entry: &KdlEntry, expected: &str) {
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

    fn unknown(&mut self, node: &KdlNode, place: &str, allowed: &[&str]) {
        let key = node.name().value();
        self.problems.push(
            Problem::new(node.name().span(), format!("unknown node `{key}` {place}"))
                .help(format!("expected one of: {}", allowed.join(", "))),
        );
    }
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// Tracks which single-valued nodes a block has set, to report repeats.
#[derive(Default)]
struct Seen(Vec<String>);

impl Seen {
    /// True the first time a node name is seen in this block.
    fn first(&mut self, walker: &mut Walker, node: &KdlNode) -> bool {
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
