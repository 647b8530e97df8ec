//! The `push { … }` block: A2A push notifications, off unless present, and
//! the webhooks they may reach. Nothing is reachable by default: each
//! `allow` names hosts (optionally with a port, `*.` for subdomains) or
//! address ranges. A named host must also resolve to a public address
//! unless a range admits the address it resolves to, so a name cannot
//! smuggle a request to a private service (server-side request forgery).
//!
//! ```kdl
//! push {
//!     allow "hooks.example.com" "*.example.org:8443"
//!     allow "10.1.0.0/16" "127.0.0.1"   // private ranges only when listed
//!     timeout "10s"      // per delivery attempt
//!     attempts 5         // per notification, with exponential backoff
//!     backoff "250ms"    // the first wait; each next one doubles (cap 30s)
//!     max-configs 8      // webhooks per task
//!     ca "hooks-ca.pem"  // trusted for https:// webhooks, besides the system's roots
//! }
//! ```
//!
//! `https://` webhooks are verified against the system's root
//! certificates and the certificates of `ca` (PEM, read relative to the
//! configuration file when it loads, so `wharf check` reports a bad file).

use super::SettingError;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ipnet::IpNet;
use kdl::KdlNode;

use super::diag::Problem;
use super::walker::{Walker, set};

const PUSH: &[&str] = &[
    "allow",
    "timeout",
    "attempts",
    "backoff",
    "max-configs",
    "ca",
];

/// Push notifications as configured; `None` in [`super::Config`] is off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    /// Where webhooks may be.
    pub allow: Vec<Target>,
    /// How long a delivery may take.
    pub timeout: Duration,
    /// Deliveries tried at most.
    pub attempts: usize,
    /// The wait before the first retry (doubling after).
    pub backoff: Duration,
    /// Configs a task may have at most.
    pub max_configs: usize,
    /// Certificates (DER) trusted for `https://` webhooks besides the
    /// system's roots.
    pub ca: Vec<Vec<u8>>,
}

impl Default for Push {
    fn default() -> Self {
        Push {
            allow: Vec::new(),
            timeout: Duration::from_secs(10),
            attempts: 5,
            backoff: Duration::from_millis(250),
            max_configs: 8,
            ca: Vec::new(),
        }
    }
}

/// One `allow` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An address or a range: any port, and private addresses included.
    Net(IpNet),
    /// An address on one port (`127.0.0.1:8080`, `[::1]:8080`), private
    /// ones included.
    Socket(SocketAddr),
    /// A host name, `*.`-prefixed for its subdomains, on one port or any.
    Host {
        /// The name, lowercase, `*.`-prefixed for its subdomains.
        name: String,
        /// The one port allowed; none: any.
        port: Option<u16>,
    },
}

impl Target {
    /// Reads an allow-list entry: an address, a range, `addr:port`, or a
    /// host name (`*.`-prefixed for its subdomains) with an optional port.
    pub fn parse(text: &str) -> Result<Target, SettingError> {
        let bad = |why: &'static str| {
            Err(SettingError::Target {
                text: text.to_string(),
                why,
            })
        };
        if let Ok(net) = text.parse::<IpNet>() {
            return Ok(Target::Net(net));
        }
        if let Ok(ip) = text.trim_matches(['[', ']']).parse::<IpAddr>() {
            return Ok(Target::Net(IpNet::from(ip)));
        }
        if let Ok(socket) = text.parse::<SocketAddr>() {
            if socket.port() == 0 {
                return bad("the port must be 1–65535");
            }
            return Ok(Target::Socket(socket));
        }
        if text.contains('/') {
            return bad("a range is an address and a prefix length, such as 10.0.0.0/8");
        }
        let (name, port) = match text.rsplit_once(':') {
            Some((name, port)) => match port.parse::<u16>() {
                Ok(port) if port > 0 => (name, Some(port)),
                _ => return bad("the port must be 1–65535"),
            },
            None => (text, None),
        };
        let bare = name.strip_prefix("*.").unwrap_or(name);
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if bare.is_empty() || bare.len() > 253 || !bare.split('.').all(label_ok) {
            return bad("host names are letters, digits, `-` and dots");
        }
        // A URL host whose last label is a number is read as an IPv4
        // address (`2130706433`, `127.1`, `0x7f.1`): such a name would
        // never match; write the address in dotted form.
        let last = bare.rsplit('.').next().unwrap_or("");
        if last.bytes().all(|b| b.is_ascii_digit())
            || (last.len() > 2 && last[..2].eq_ignore_ascii_case("0x"))
        {
            return bad("a host name cannot end in a number; write an address as a.b.c.d");
        }
        Ok(Target::Host {
            name: name.to_ascii_lowercase(),
            port,
        })
    }

    /// Whether this entry admits `host` (lower-case) on `port`.
    pub fn admits_host(&self, host: &str, port: u16) -> bool {
        let ip = || host.trim_matches(['[', ']']).parse::<IpAddr>();
        match self {
            Target::Net(net) => ip().is_ok_and(|ip| net.contains(&ip)),
            Target::Socket(socket) => {
                ip().is_ok_and(|ip| ip == socket.ip()) && port == socket.port()
            }
            Target::Host { name, port: p } => {
                let name_ok = match name.strip_prefix("*.") {
                    Some(parent) => host
                        .strip_suffix(parent)
                        .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
                    None => host == name,
                };
                name_ok && p.is_none_or(|p| p == port)
            }
        }
    }

    /// Whether this entry admits connecting to `addr` whatever it is
    /// (private ranges included).
    pub fn admits_addr(&self, addr: SocketAddr) -> bool {
        match self {
            Target::Net(net) => net.contains(&addr.ip()),
            Target::Socket(socket) => *socket == addr,
            Target::Host { .. } => false,
        }
    }
}

impl Walker {
    pub(super) fn push(&mut self, node: &KdlNode) -> Option<Push> {
        let mut push = Push::default();
        for child in self.block(node) {
            match child.name().value() {
                "allow" => self.allow(child, &mut push.allow),
                "timeout" => set(&mut push.timeout, self.duration(child)),
                "backoff" => set(&mut push.backoff, self.duration(child)),
                "attempts" => set(&mut push.attempts, self.count(child)),
                "max-configs" => set(&mut push.max_configs, self.count(child)),
                "ca" => {
                    if let Some(certs) = self.certificates(child) {
                        push.ca.extend(certs);
                    }
                }
                _ => self.unknown(child, "in `push`", PUSH),
            }
        }
        if push.allow.is_empty() {
            self.problems.push(
                Problem::new(node.name().span(), "`push` allows no webhook").help(
                    "add `allow \"host\"` (or an address range) for each place webhooks may go",
                ),
            );
            return None;
        }
        Some(push)
    }

    pub(super) fn allow(&mut self, node: &KdlNode, into: &mut Vec<Target>) {
        if node.entries().is_empty() {
            self.problems.push(Problem::new(
                node.name().span(),
                "`allow` needs at least one host, address or range",
            ));
        }
        for entry in node.entries() {
            if entry.name().is_some() {
                self.problems
                    .push(Problem::new(entry.span(), "`allow` takes no properties"));
                continue;
            }
            match entry.value().as_string() {
                Some(text) => {
                    if let Some(target) =
                        self.check(entry, Target::parse(text).map_err(|e| e.to_string()))
                    {
                        into.push(target);
                    }
                }
                None => self.wrong_type(entry, "`allow` expects strings"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_admit_what_they_name_and_nothing_else() {
        let host = Target::parse("Hooks.example.com").unwrap();
        assert!(host.admits_host("hooks.example.com", 80));
        assert!(!host.admits_host("evil-hooks.example.com", 80));
        let wild = Target::parse("*.example.org:8443").unwrap();
        assert!(wild.admits_host("a.b.example.org", 8443));
        assert!(!wild.admits_host("example.org", 8443));
        assert!(!wild.admits_host("badexample.org", 8443));
        assert!(!wild.admits_host("a.example.org", 443));
        let net = Target::parse("10.1.0.0/16").unwrap();
        assert!(net.admits_host("10.1.2.3", 1));
        assert!(net.admits_addr("10.1.2.3:1".parse().unwrap()));
        assert!(!net.admits_addr("10.2.0.1:1".parse().unwrap()));
        assert!(!host.admits_addr("10.1.2.3:80".parse().unwrap()));
        let v6 = Target::parse("[::1]").unwrap();
        assert!(v6.admits_host("[::1]", 9));
        // An address with a port is that address on that port alone.
        let socket = Target::parse("127.0.0.1:8080").unwrap();
        assert!(socket.admits_host("127.0.0.1", 8080));
        assert!(socket.admits_addr("127.0.0.1:8080".parse().unwrap()));
        assert!(!socket.admits_host("127.0.0.1", 8081));
        assert!(!socket.admits_addr("127.0.0.1:8081".parse().unwrap()));
        let socket6 = Target::parse("[::1]:8080").unwrap();
        assert!(socket6.admits_addr("[::1]:8080".parse().unwrap()));
        for bad in [
            "",
            "a b",
            "host:0",
            "host:99999",
            "*.",
            "ex_ample.com",
            "127.0.0.1:0",
            "2130706433",
            "2130706433:80",
            "127.1",
            "0x7f.1",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad:?}");
        }
    }
}
