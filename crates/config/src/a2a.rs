//! The `a2a { … }` block: host-wide A2A settings. `default` names the agent
//! whose card the host serves at its own `/.well-known/agent-card.json`,
//! where A2A clients look for one when given only the host.
//!
//! ```kdl
//! a2a {
//!     default "scribe"
//! }
//! ```

use kdl::KdlNode;

use super::walker::Walker;

const A2A: &[&str] = &["default"];

/// Host-wide A2A settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct A2aSettings {
    /// The agent whose card is the host's card.
    pub default_agent: Option<String>,
}

impl Walker {
    pub(super) fn a2a(&mut self, node: &KdlNode, settings: &mut A2aSettings) {
        for child in self.block(node) {
            match child.name().value() {
                "default" => {
                    if let Some((name, span)) = self.string(child)
                        && self.valid_name(&name, span, "agent")
                    {
                        settings.default_agent = Some(name);
                    }
                }
                _ => self.unknown(child, "in `a2a`", A2A),
            }
        }
    }
}
