//! The `outbound { … }` block of an agent: the HTTP requests a component
//! may make (`wasi:http/outgoing-handler`). None by default: without the
//! block every request is denied. Entries are those of `push`'s allow-list
//! (hosts with an optional port, `*.` for subdomains, addresses, ranges),
//! and a listed name must still resolve to a public address unless a range
//! admits the one it resolves to. `https://` requests verify the server's
//! certificate against the system's roots and the PEM certificates of
//! `ca` (read relative to the configuration's directory).
//!
//! ```kdl
//! agent "fetcher" {
//!     outbound {
//!         allow "api.example.com" "127.0.0.1:8080"
//!         timeout "5s"       // connecting, then the first byte of the answer
//!         max-body "1MiB"    // of each answer the component reads
//!         ca "internal-ca.pem" // trusted for https://, besides the system's roots
//!     }
//! }
//! ```

use std::time::Duration;

use kdl::KdlNode;

use super::Target;
use super::diag::Problem;
use super::walker::{Walker, set};

const OUTBOUND: &[&str] = &["allow", "timeout", "max-body", "ca"];

/// The outbound HTTP a component may make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outbound {
    /// Where the agent's requests may go.
    pub allow: Vec<Target>,
    /// How long one may take.
    pub timeout: Duration,
    /// Largest response body read, in bytes.
    pub max_body: u64,
    /// Extra CA certificates (DER) trusted for `https://`, besides the
    /// system's roots.
    pub ca: Vec<Vec<u8>>,
}

impl Default for Outbound {
    fn default() -> Self {
        Outbound {
            allow: Vec::new(),
            timeout: Duration::from_secs(10),
            max_body: 1 << 20,
            ca: Vec::new(),
        }
    }
}

impl Walker {
    pub(super) fn outbound(&mut self, node: &KdlNode) -> Option<Outbound> {
        let mut outbound = Outbound::default();
        for child in self.block(node) {
            match child.name().value() {
                "allow" => self.allow(child, &mut outbound.allow),
                "timeout" => set(&mut outbound.timeout, self.duration(child)),
                "max-body" => set(&mut outbound.max_body, self.size(child)),
                "ca" => {
                    if let Some(certs) = self.certificates(child) {
                        outbound.ca.extend(certs);
                    }
                }
                _ => self.unknown(child, "in `outbound`", OUTBOUND),
            }
        }
        if outbound.allow.is_empty() {
            self.problems.push(
                Problem::new(node.name().span(), "`outbound` allows no host").help(
                    "add `allow \"host\"` (or an address range) for each place the component may call",
                ),
            );
            return None;
        }
        Some(outbound)
    }
}
