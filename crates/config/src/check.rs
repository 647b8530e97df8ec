//! What `wharf check` finds beyond the file itself: names the file gives
//! (filter chains, agent and filter blocks, the A2A default, pipeline
//! steps) that no component in the agents directory answers to, each at
//! its line and column with the nearest name that does.

use std::collections::BTreeMap;

use kdl::{KdlDocument, KdlNode, KdlValue};
use miette::SourceSpan;

use crate::{Config, Problem};

/// What a file of the agents directory is, read without compiling it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// An agent (the `agent` world).
    Agent,
    /// An agent that also serves A2A (the `a2a-agent` world).
    A2aAgent,
    /// A standard `wasi:http` component, served like an agent.
    WasiHttp,
    /// An inspection filter.
    Filter,
    /// A file Wharf will not serve, and why.
    Unusable(String),
}

impl Found {
    fn is_agent(&self) -> bool {
        matches!(self, Found::Agent | Found::A2aAgent | Found::WasiHttp)
    }

    fn what(&self) -> &str {
        match self {
            Found::Agent => "an agent",
            Found::A2aAgent => "an A2A agent",
            Found::WasiHttp => "a wasi:http component",
            Found::Filter => "a filter",
            Found::Unusable(_) => "not a component Wharf serves",
        }
    }
}

/// The problems of `config` (parsed from `text`) against the components
/// `found` in its agents directory, in the order they stand in the file.
pub fn against(config: &Config, text: &str, found: &BTreeMap<String, Found>) -> Vec<Problem> {
    let Ok(doc) = KdlDocument::parse(text) else {
        return Vec::new();
    };
    let names = Names { config, found };
    let mut problems = Vec::new();
    for node in doc.nodes() {
        match node.name().value() {
            "agent" => {
                if let Some((name, span)) = first_string(node) {
                    problems.extend(names.block(name, span, Want::Agent));
                }
            }
            "filter" => {
                if let Some((name, span)) = first_string(node) {
                    problems.extend(names.block(name, span, Want::Filter));
                }
            }
            "a2a" => {
                for child in node
                    .iter_children()
                    .filter(|c| c.name().value() == "default")
                {
                    if let Some((name, span)) = first_string(child) {
                        problems.extend(names.a2a_default(name, span));
                    }
                }
            }
            _ => {}
        }
        chains(node, &names, &mut problems);
    }
    for composition in config.pipelines.values() {
        for step in composition.flow.steps() {
            problems.extend(names.step(&step.name, step.span));
        }
    }
    problems.sort_by_key(|p| p.span.offset());
    problems
}

/// Every `filters` node at any depth of `node`.
fn chains(node: &KdlNode, names: &Names<'_>, problems: &mut Vec<Problem>) {
    if node.name().value() == "filters" {
        for entry in node.entries().iter().filter(|e| e.name().is_none()) {
            if let KdlValue::String(name) = entry.value() {
                problems.extend(names.block(name, entry.span(), Want::Filter));
            }
        }
    }
    for child in node.iter_children() {
        chains(child, names, problems);
    }
}

fn first_string(node: &KdlNode) -> Option<(&str, SourceSpan)> {
    let entry = node.entries().iter().find(|e| e.name().is_none())?;
    match entry.value() {
        KdlValue::String(s) => Some((s.as_str(), entry.span())),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    Agent,
    Filter,
}

struct Names<'a> {
    config: &'a Config,
    found: &'a BTreeMap<String, Found>,
}

impl Names<'_> {
    /// `name`, given where a component of kind `want` is meant.
    fn block(&self, name: &str, span: SourceSpan, want: Want) -> Option<Problem> {
        let (kind, fits): (&str, fn(&Found) -> bool) = match want {
            Want::Agent => ("agent", Found::is_agent),
            Want::Filter => ("filter", |f| *f == Found::Filter),
        };
        match self.found.get(name) {
            Some(found) if fits(found) => None,
            Some(Found::Unusable(why)) => Some(
                Problem::new(span, format!("`{name}.wasm` will not be served: {why}"))
                    .label("this component"),
            ),
            Some(other) => Some(
                Problem::new(
                    span,
                    format!("`{name}` is {}, not {}", other.what(), article(kind)),
                )
                .label(format!("not {}", article(kind))),
            ),
            None => Some(self.missing(name, span, kind, fits)),
        }
    }

    /// The A2A default: an agent that serves A2A.
    fn a2a_default(&self, name: &str, span: SourceSpan) -> Option<Problem> {
        match self.found.get(name) {
            Some(Found::A2aAgent) => None,
            Some(other) => Some(
                Problem::new(
                    span,
                    format!("`{name}` is {}, and does not serve A2A", other.what()),
                )
                .help("the default A2A agent must fit the a2a-agent world"),
            ),
            None => Some(self.missing(name, span, "A2A agent", |f| *f == Found::A2aAgent)),
        }
    }

    /// A pipeline step: an agent or another pipeline.
    fn step(&self, name: &str, span: SourceSpan) -> Option<Problem> {
        if self.config.pipelines.contains_key(name) {
            return None;
        }
        self.block(name, span, Want::Agent)
    }

    fn missing(
        &self,
        name: &str,
        span: SourceSpan,
        kind: &str,
        fits: fn(&Found) -> bool,
    ) -> Problem {
        let dir = self.config.agents_dir.display();
        let candidates: Vec<&str> = self
            .found
            .iter()
            .filter(|(_, f)| fits(f))
            .map(|(n, _)| n.as_str())
            .collect();
        let problem = Problem::new(
            span,
            format!("no {kind} named `{name}` in the agents directory `{dir}`"),
        )
        .label(format!("no `{name}.wasm`"));
        match nearest(name, &candidates) {
            Some(near) => problem.help(format!("did you mean `{near}`?")),
            None if candidates.is_empty() => {
                problem.help(format!("the agents directory has no {kind}"))
            }
            None => problem.help(format!(
                "the {kind}s there: {}",
                candidates
                    .iter()
                    .take(8)
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

fn article(kind: &str) -> String {
    match kind.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u' | 'A') => format!("an {kind}"),
        _ => format!("a {kind}"),
    }
}

/// The closest of `candidates` to `name`, when it is close enough to be a
/// slip (at most a third of its letters, and at least 1, differ).
pub fn nearest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let most = (name.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(name, c), *c))
        .filter(|(d, _)| *d <= most)
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn found() -> BTreeMap<String, Found> {
        [
            ("echo", Found::Agent),
            ("hello", Found::Agent),
            ("scribe", Found::A2aAgent),
            ("waf", Found::Filter),
            ("headers", Found::Filter),
            ("old", Found::Unusable("a core module".into())),
        ]
        .into_iter()
        .map(|(n, f)| (n.to_string(), f))
        .collect()
    }

    fn problems(text: &str) -> Vec<String> {
        let config = Config::parse("t.kdl", text, Path::new("")).expect("parses");
        against(&config, text, &found())
            .into_iter()
            .map(|p| format!("{} | {}", p.message, p.help.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn names_nothing_answers_to_are_found_with_the_nearest() {
        let text = "filters \"wafx\"\nagent \"helo\"\na2a {\n    default \"scibe\"\n}\npipeline \"p\" {\n    step \"helo\"\n}\n";
        let found = problems(text);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(
            found[0].starts_with("no filter named `wafx`")
                && found[0].ends_with("did you mean `waf`?"),
            "{found:#?}"
        );
        assert!(
            found[1].starts_with("no agent named `helo`")
                && found[1].ends_with("did you mean `hello`?"),
            "{found:#?}"
        );
        assert!(
            found[2].starts_with("no A2A agent named `scibe`")
                && found[2].ends_with("did you mean `scribe`?"),
            "{found:#?}"
        );
        assert!(found[3].starts_with("no agent named `helo`"), "{found:#?}");
    }

    #[test]
    fn a_name_of_the_wrong_kind_is_named_so() {
        let found = problems("filters \"echo\"\nagent \"waf\"\na2a {\n    default \"echo\"\n}\n");
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(
            found[0].starts_with("`echo` is an agent, not a filter"),
            "{found:#?}"
        );
        assert!(
            found[1].starts_with("`waf` is a filter, not an agent"),
            "{found:#?}"
        );
        assert!(
            found[2].starts_with("`echo` is an agent, and does not serve A2A"),
            "{found:#?}"
        );
    }

    #[test]
    fn a_configuration_that_matches_has_no_problems() {
        let text = "filters \"headers\" \"waf\"\nagent \"echo\" {\n    filters \"waf\"\n}\na2a {\n    default \"scribe\"\n}\npipeline \"p\" {\n    step \"echo\"\n}\n";
        assert!(problems(text).is_empty());
    }

    #[test]
    fn an_unusable_file_says_why() {
        let found = problems("agent \"old\"\n");
        assert_eq!(
            found,
            vec!["`old.wasm` will not be served: a core module | ".to_string()]
        );
    }

    #[test]
    fn nearest_needs_to_be_near() {
        assert_eq!(nearest("wafx", &["waf", "auth"]), Some("waf"));
        assert_eq!(nearest("zzzz", &["waf", "auth"]), None);
    }
}
