//! KDL → [`Config`]: walks the document once, checks every node and value
//! against what Wharf accepts, and collects every problem before failing.
//! A value of the wrong type is an error, never a silent default.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use kdl::{KdlDocument, KdlNode, KdlValue};
use miette::SourceSpan;

use super::diag::{ConfigError, Problem};
use super::trust::TrustBlock;
use super::walker::{Seen, Walker, clamp_u32, set};
use super::{Cache, Config, Limits, Policy, Server, TaskOwner};

const TOP: &[&str] = &[
    "listen",
    "tls",
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
    "topic",
    "telemetry",
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
    "idle-memory",
    "instance-slots",
    "load",
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

/// KDL v1's bare keywords, which KDL v2 spells with `#`.
const V1_KEYWORDS: [&str; 5] = ["true", "false", "null", "inf", "nan"];

/// When the text at a syntax error is a KDL v1 keyword (`true`, `null`),
/// says that the file is read as KDL v2 and how v2 spells it.
fn kdl_v1_hint(text: &str, span: SourceSpan) -> Option<String> {
    let at = text.get(span.offset()..)?;
    let start = at.find(|c: char| c.is_alphanumeric() || c == '-')?;
    let word: String = at[start..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    // The keyword is where the parser stopped, or just after it.
    if start > 1 {
        return None;
    }
    let keyword = V1_KEYWORDS.iter().find(|k| **k == word)?;
    Some(format!(
        "Wharf's configuration is KDL v2, where `{keyword}` is written `#{keyword}` (KDL v1 spelling is not accepted)"
    ))
}

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
                    help: d.help.clone().or_else(|| kdl_v1_hint(text, d.span)),
                })
                .collect();
            return Err(ConfigError::new(name, text, problems));
        }
    };
    let mut walker = Walker {
        base_dir: base_dir.to_path_buf(),
        ..Walker::default()
    };
    let place = super::compose::Place { name, text };
    let mut trust = TrustBlock::default();
    let mut config = walker.document(&doc, &place, &mut trust);
    let (trust, problems) = trust.resolve(base_dir);
    config.trust = trust;
    walker.problems.extend(problems);
    if walker.problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigError::new(name, text, walker.problems))
    }
}

impl Walker {
    fn document(
        &mut self,
        doc: &KdlDocument,
        place: &super::compose::Place,
        trust: &mut TrustBlock,
    ) -> Config {
        let mut config = Config::default();
        let mut seen = Seen::default();
        // Defaults first, wherever they appear, so every agent block starts
        // from them.
        let per_name = |n: &KdlNode| matches!(n.name().value(), "agent" | "filter" | "pipeline");
        for node in doc.nodes().iter().filter(|n| !per_name(n)) {
            if node.name().value() != "topic" && !seen.first(self, node) {
                continue;
            }
            let defaults = &mut config.defaults;
            match node.name().value() {
                "listen" => set(&mut config.listen, self.socket_addr(node)),
                "tls" => config.tls = self.tls(node),
                "telemetry" => config.telemetry = self.telemetry(node),
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
                            "max-hops" => set(&mut config.topics.max_hops, self.count(child)),
                            _ => self.unknown(child, "in `topics`", &["max-payload", "max-hops"]),
                        }
                    }
                }
                "topic" => self.topic_keep(node, &mut config.keeps),
                "trust" => self.trust(node, trust),
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
        self.kept = config.keeps.iter().map(|k| k.pattern.clone()).collect();
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
                "idle-memory" => set(&mut s.idle_memory, self.size(child)),
                "instance-slots" => set(&mut s.instance_slots, self.count(child).map(|n| n as u32)),
                "load" => set(&mut s.load, self.load(child)),
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
