//! The `card { … }` block of an agent: what its A2A agent card says beyond
//! what `describe()` reports: a description in place of the agent's own,
//! the media types it takes and answers in, its provider and its
//! documentation, and how long a client may keep the card before asking
//! again (`max-age`, five minutes unless said).
//!
//! ```kdl
//! agent "scribe" {
//!     card {
//!         description "Writes what it is sent back, word by word"
//!         input-modes "text/plain"
//!         output-modes "text/plain" "application/json"
//!         provider "Example Corp" url="https://example.com"
//!         documentation-url "https://example.com/docs/scribe"
//!         max-age "1h"
//!     }
//! }
//! ```

use kdl::KdlNode;

use super::diag::Problem;
use super::walker::Walker;

const CARD: &[&str] = &[
    "description",
    "input-modes",
    "output-modes",
    "provider",
    "documentation-url",
    "max-age",
];

/// How long a client may keep a card before asking again, unless the
/// card block says: short enough that a reloaded agent's new card is seen
/// within minutes; clients revalidate cheaply with `If-None-Match`.
pub const CARD_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(300);

/// An agent's card settings; what is unset comes from `describe()` and the
/// host's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CardSettings {
    /// The card's description; none: the agent's own.
    pub description: Option<String>,
    /// Media types it accepts; none: the agent's own.
    pub input_modes: Option<Vec<String>>,
    /// Media types it answers with; none: the agent's own.
    pub output_modes: Option<Vec<String>>,
    /// Organization and URL.
    pub provider: Option<(String, String)>,
    /// Where its documentation is.
    pub documentation_url: Option<String>,
    /// `Cache-Control: max-age` of the card; none: [`CARD_MAX_AGE`].
    pub max_age: Option<std::time::Duration>,
}

impl Walker {
    pub(super) fn card(&mut self, node: &KdlNode, card: &mut CardSettings) {
        for child in self.block(node) {
            match child.name().value() {
                "description" => card.description = self.string(child).map(|(s, _)| s),
                "input-modes" => card.input_modes = self.media_types(child),
                "output-modes" => card.output_modes = self.media_types(child),
                "documentation-url" => {
                    card.documentation_url = self.string(child).map(|(s, _)| s);
                }
                "provider" => card.provider = self.provider(child),
                "max-age" => card.max_age = self.duration(child),
                _ => self.unknown(child, "in `card`", CARD),
            }
        }
    }

    /// One or more media types (`type/subtype`).
    fn media_types(&mut self, node: &KdlNode) -> Option<Vec<String>> {
        let key = node.name().value();
        let mut out = Vec::new();
        for entry in node.entries() {
            match entry.value().as_string() {
                Some(s) if entry.name().is_none() && valid_media_type(s) => out.push(s.to_string()),
                Some(s) if entry.name().is_none() => self.problems.push(Problem::new(
                    entry.span(),
                    format!("`{s}` is not a media type such as \"text/plain\""),
                )),
                _ => self.wrong_type(entry, &format!("`{key}` expects media types as strings")),
            }
        }
        if out.is_empty() && node.entries().is_empty() {
            self.problems.push(Problem::new(
                node.name().span(),
                format!("`{key}` needs at least one media type"),
            ));
        }
        (!out.is_empty()).then_some(out)
    }

    /// `provider "Organization" url="https://…"`.
    fn provider(&mut self, node: &KdlNode) -> Option<(String, String)> {
        let mut organization = None;
        let mut url = None;
        for entry in node.entries() {
            match (entry.name().map(|n| n.value()), entry.value().as_string()) {
                (None, Some(s)) if organization.is_none() => organization = Some(s.to_string()),
                (Some("url"), Some(s)) => url = Some(s.to_string()),
                _ => self.wrong_type(
                    entry,
                    "`provider` takes the organization and url=\"…\", both strings",
                ),
            }
        }
        match (organization, url) {
            (Some(o), Some(u)) => Some((o, u)),
            _ => {
                self.problems.push(
                    Problem::new(
                        node.name().span(),
                        "`provider` needs an organization and a url",
                    )
                    .help("write `provider \"Example Corp\" url=\"https://example.com\"`"),
                );
                None
            }
        }
    }
}

fn valid_media_type(s: &str) -> bool {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+*".contains(&b))
    };
    matches!(s.split_once('/'), Some((a, b)) if token(a) && token(b))
}
