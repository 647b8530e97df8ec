//! KDL → [`Config`]: walks the document once, checks every node and value
//! against what Wharf accepts, and collects every problem before failing.
//! A value of the wrong type is an error, never a silent default.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};
use miette::SourceSpan;

use super::bounds;
use super::diag::{ConfigError, Problem};
use super::trust::TrustBlock;
use super::units::{parse_duration, parse_size};
use super::{Cache, Config, Limits, Policy, Server, TaskOwner};

const TOP: &[&str] = &[
    "listen",
    "agents",
    "server",
    "binary",
    "cache",
    "limits",
    "instances",
    "health",
    "breaker",
    "affinity",
    "rate-limit",
    "agent",
    "filter",
    "filters",
    "audit",
    "tasks",
    "push",
    "a2a",
    "trust",
    "watch",
    "pipeline",
    "call-depth",
    "cluster",
    "task-owner",
    "topics",
];
const LIMITS: &[&str] = &[
    "memory",
    "deadline",
    "request-body",
    "response-body",
    "concurrency",
    "retries",
];
const SERVER: &[&str] = &[
    "connections",
    "header-timeout",
    "max-head",
    "request-timeout",
    "shutdown-grace",
    "write-timeout",
    "component-size",
    "streams",
    "streams-per-client",
];
const AGENT: &[&str] = &[
    "card",
    "memory",
    "deadline",
    "request-body",
    "response-body",
    "concurrency",
    "retries",
    "config",
    "instances",
    "health",
    "breaker",
    "affinity",
    "rate-limit",
    "filters",
    "filter-config",
    "digest",
    "outbound",
    "calls",
    "publishes",
    "subscribe",
    "task-owner",
];

pub(super) fn parse(name: &str, text: &str, base_dir: &Path) -> Result<Config, ConfigError> {
    if let Some(at) = super::nesting::check(text) {
        let problem = Problem::new(
            SourceSpan::from((at, 1)),
            format!(
                "blocks nest deeper than {} levels",
                super::nesting::MAX_NESTING
            ),
        )
        .help("Wharf's configuration blocks go at most three deep");
        return Err(ConfigError::new(name, text, vec![problem]));
    }
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
    let place = super::compose::Place { name, text };
    let mut config = walker.document(&doc, &place);
    let (trust, problems) = std::mem::take(&mut walker.trust).resolve(base_dir);
    config.trust = trust;
    walker.problems.extend(problems);
    if walker.problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigError::new(name, text, walker.problems))
    }
}

#[derive(Default)]
pub(super) struct Walker {
    pub(super) problems: Vec<Problem>,
    /// The `trust` block, resolved once the walk is done.
    pub(super) trust: TrustBlock,
}

impl Walker {
    fn document(&mut self, doc: &KdlDocument, place: &super::compose::Place) -> Config {
        let mut config = Config::default();
        let mut seen = Seen::default();
        // Defaults first, wherever they appear, so every agent block starts
        // from them.
        let per_name = |n: &KdlNode| matches!(n.name().value(), "agent" | "filter" | "pipeline");
        for node in doc.nodes().iter().filter(|n| !per_name(n)) {
            if !seen.first(self, node) {
                continue;
            }
            let defaults = &mut config.defaults;
            match node.name().value() {
                "listen" => set(&mut config.listen, self.socket_addr(node)),
                "agents" => {
                    if let Some((dir, _)) = self.string(node) {
                        config.agents_dir = dir.into();
                    }
                }
                "server" => self.server(node, &mut config.server),
                "binary" => config.binary = self.binary(node),
                "cache" => set(&mut config.cache, self.cache(node)),
                "audit" => set(&mut config.audit, self.audit(node)),
                "tasks" => self.tasks(node, &mut config.tasks),
                "push" => config.push = self.push(node),
                "cluster" => config.cluster = self.cluster(node),
                "a2a" => self.a2a(node, &mut config.a2a),
                "watch" => set(&mut config.watch, self.boolean(node)),
                "call-depth" => set(&mut config.call_depth, self.count(node)),
                "topics" => {
                    for child in self.block(node) {
                        match child.name().value() {
                            "max-payload" => {
                                set(&mut config.topics.max_payload, self.usize_size(child))
                            }
                            _ => self.unknown(child, "in `topics`", &["max-payload"]),
                        }
                    }
                }
                "trust" => self.trust(node),
                "filters" => set(&mut defaults.filters, self.chain(node)),
                "task-owner" => set(&mut defaults.task_owner, self.task_owner(node)),
                "limits" => {
                    for child in self.block(node) {
                        if !self.limit(child, &mut defaults.limits) {
                            self.unknown(child, "in `limits`", LIMITS);
                        }
                    }
                }
                _ => {
                    if !self.policy_block(node, defaults) {
                        self.unknown(node, "at the top level", TOP);
                    }
                }
            }
        }
        for node in doc.nodes().iter().filter(|n| n.name().value() == "filter") {
            self.filter(node, &mut config.filters);
        }
        for node in doc.nodes().iter().filter(|n| n.name().value() == "agent") {
            self.agent(node, &config.defaults.clone(), &mut config.agents);
        }
        for node in doc
            .nodes()
            .iter()
            .filter(|n| n.name().value() == "pipeline")
        {
            let Some(composition) = self.pipeline(node, place) else {
                continue;
            };
            let name = composition.name.clone();
            if config.agents.contains_key(&name) {
                self.problems.push(Problem::new(
                    node.name().span(),
                    format!("`{name}` is both an agent block and a pipeline"),
                ));
            } else if config.pipelines.insert(name.clone(), composition).is_some() {
                self.problems.push(Problem::new(
                    node.name().span(),
                    format!("pipeline `{name}` is defined twice"),
                ));
            }
        }
        self.problems
            .extend(super::compose::cycles(&config.pipelines));
        config
    }

    /// A block that may stand at the top level or in an `agent` block.
    /// Returns false when `node` is not one of them.
    fn policy_block(&mut self, node: &KdlNode, policy: &mut Policy) -> bool {
        match node.name().value() {
            "instances" => self.instances(node, &mut policy.instances),
            "health" => self.health(node, &mut policy.health),
            "breaker" => self.breaker(node, &mut policy.breaker),
            "affinity" => self.affinity(node, &mut policy.affinity),
            "rate-limit" => self.rate_limit(node, &mut policy.rate_limit),
            _ => return false,
        }
        true
    }

    /// `task-owner "auth.sub" …`: metadata keys, at least one.
    fn task_owner(&mut self, node: &KdlNode) -> Option<TaskOwner> {
        let mut keys = Vec::new();
        for entry in node.entries() {
            match (entry.name(), entry.value().as_string()) {
                (None, Some(key))
                    if !key.is_empty()
                        && key.len() <= 128
                        && key.bytes().all(|b| b.is_ascii_graphic()) =>
                {
                    keys.push(key.to_string());
                }
                _ => {
                    self.wrong_type(
                        entry,
                        "`task-owner` lists metadata keys such as \"auth.sub\"",
                    );
                    return None;
                }
            }
        }
        if keys.is_empty() {
            self.problems.push(Problem::new(
                node.name().span(),
                "`task-owner` needs at least one metadata key",
            ));
            return None;
        }
        Some(TaskOwner(keys))
    }

    /// One limit, in `limits` or directly in an `agent` block.
    fn limit(&mut self, child: &KdlNode, limits: &mut Limits) -> bool {
        match child.name().value() {
            "memory" => set(&mut limits.memory, self.size(child)),
            "deadline" => set(&mut limits.deadline, self.duration(child)),
            "request-body" => set(&mut limits.request_body, self.usize_size(child)),
            "response-body" => set(&mut limits.response_body, self.usize_size(child)),
            "concurrency" => set(&mut limits.concurrency, self.count(child)),
            "retries" => set(&mut limits.retries, self.count(child).map(clamp_u32)),
            _ => return false,
        }
        true
    }

    fn server(&mut self, node: &KdlNode, s: &mut Server) {
        for child in self.block(node) {
            match child.name().value() {
                "connections" => set(&mut s.connections, self.count(child)),
                "header-timeout" => set(&mut s.header_timeout, self.duration(child)),
                "max-head" => set(&mut s.max_head, self.usize_size(child)),
                "request-timeout" => set(&mut s.request_timeout, self.duration(child)),
                "shutdown-grace" => set(&mut s.shutdown_grace, self.duration(child)),
                "write-timeout" => set(&mut s.write_timeout, self.duration(child)),
                "component-size" => set(&mut s.component_size, self.size(child)),
                "streams" => s.streams = self.count(child).or(s.streams),
                "streams-per-client" => set(&mut s.streams_per_client, self.count(child)),
                _ => self.unknown(child, "in `server`", SERVER),
            }
        }
    }

    fn agent(&mut self, node: &KdlNode, defaults: &Policy, agents: &mut BTreeMap<String, Policy>) {
        let Some((name, span)) = self.guest_name(node, "agent") else {
            return;
        };
        let mut policy = defaults.clone();
        let mut seen = Seen::default();
        for child in node.children().map(|d| d.nodes()).unwrap_or_default() {
            let repeatable = matches!(child.name().value(), "filter-config" | "subscribe");
            if !repeatable && !seen.first(self, child) {
                continue;
            }
            if child.name().value() == "config" {
                policy.values = Arc::new(self.values(child));
            } else if child.name().value() == "filters" {
                set(&mut policy.filters, self.chain(child));
            } else if child.name().value() == "digest" {
                policy.digest = self.digest(child);
            } else if child.name().value() == "card" {
                self.card(child, &mut policy.card);
            } else if child.name().value() == "outbound" {
                policy.outbound = self.outbound(child).map(Arc::new);
            } else if child.name().value() == "calls" {
                set(&mut policy.calls, self.names(child, "agent"));
            } else if child.name().value() == "task-owner" {
                set(&mut policy.task_owner, self.task_owner(child));
            } else if child.name().value() == "publishes" {
                set(&mut policy.publishes, self.names(child, "topic pattern"));
            } else if child.name().value() == "subscribe" {
                if let Some(sub) = self.subscribe(child) {
                    policy.subscribes.push(sub);
                }
            } else if child.name().value() == "filter-config" {
                if let Some((filter, _)) = self.guest_name(child, "filter-config") {
                    let values = Arc::new(self.values(child));
                    policy.filter_values.insert(filter, values);
                }
            } else if !self.limit(child, &mut policy.limits)
                && !self.policy_block(child, &mut policy)
            {
                self.unknown(child, &format!("in `agent \"{name}\"`"), AGENT);
            }
        }
        if agents.insert(name.clone(), policy).is_some() {
            self.problems.push(Problem::new(
                span,
                format!("agent `{name}` is configured twice"),
            ));
        }
    }

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
    fn cache(&mut self, node: &KdlNode) -> Option<Cache> {
        let entry = self.sole_entry(node, false)?;
        match entry.value() {
            KdlValue::String(dir) => Some(Cache::Dir(dir.into())),
            KdlValue::Bool(false) => Some(Cache::Off),
            _ => {
                self.wrong_type(
                    entry,
                    "`cache` expects a directory (a string) or #false to turn it off",
                );
                None
            }
        }
    }

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

#[cfg(test)]
mod tests {
    use super::super::blocks::{AFFINITY, BREAKER, HEALTH, INSTANCES, RATE_LIMIT};
    use super::*;

    /// Every name a help message offers is accepted where it is offered.
    #[test]
    fn offered_names_are_accepted() {
        let blocks: [(&str, &[&str]); 7] = [
            ("limits {{ {} 1 }}", LIMITS),
            ("server {{ {} 1 }}", SERVER),
            ("instances {{ {} 1 }}", INSTANCES),
            ("health {{ {} 1 }}", HEALTH),
            ("breaker {{ {} 1 }}", BREAKER),
            ("rate-limit {{ {} 1 }}", RATE_LIMIT),
            ("agent \"a\" {{ {} 1 }}", AGENT),
        ];
        let accepted = |text: &str| {
            if let Err(err) = parse("t.kdl", text, Path::new("/")) {
                let problems = err.plain();
                assert!(!problems.contains("unknown node"), "{text}: {problems}");
            }
        };
        for (template, names) in blocks {
            for name in names {
                accepted(
                    &template
                        .replace("{{", "{")
                        .replace("}}", "}")
                        .replace("{}", name),
                );
            }
        }
        for name in AFFINITY {
            accepted(&format!("affinity {{ {name} \"x\" }}"));
        }
        for name in TOP {
            accepted(&format!("{name} 1"));
        }
        for name in super::super::filter::FILTER {
            accepted(&format!("filter \"f\" {{ {name} 1 }}"));
        }
    }
}
