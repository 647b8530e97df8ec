//! The `binary { … }` block: the MessagePack-over-socket transport's
//! listeners (a Unix socket with its mode and owner, optionally TCP) and
//! its limits. Absent: no binary listener.
//!
//! ```kdl
//! binary {
//!     unix "wharf.sock" {       // relative to this file
//!         mode "660"            // octal; default: as the umask leaves it
//!         owner "wharf:wharf"   // user, user:group, or numeric ids
//!     }
//!     tcp "127.0.0.1:8081"
//!     max-frame "17MiB"         // largest frame a client may send
//!     in-flight 64              // requests running at once per connection
//!     connections 1024
//!     frame-timeout "10s"       // a started frame must complete within this
//! }
//! ```

use super::SettingError;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kdl::{KdlNode, KdlValue};

use super::diag::Problem;
use super::walker::{Walker, set};

const BINARY: &[&str] = &[
    "unix",
    "tcp",
    "max-frame",
    "in-flight",
    "connections",
    "frame-timeout",
];
const UNIX: &[&str] = &["mode", "owner"];

/// The binary transport's listeners and limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    /// The Unix socket to serve on.
    pub unix: Option<UnixSocket>,
    /// A TCP address to serve on (for callers on other hosts).
    pub tcp: Option<SocketAddr>,
    /// Largest frame accepted, in bytes.
    pub max_frame: usize,
    /// Requests in flight per connection at most.
    pub in_flight: usize,
    /// Connections served at once.
    pub connections: usize,
    /// How long a frame may take to arrive once started.
    pub frame_timeout: Duration,
}

impl Default for Binary {
    fn default() -> Self {
        Binary {
            unix: None,
            tcp: None,
            // Room for the default 16 MiB request body and its head.
            max_frame: 17 << 20,
            in_flight: 64,
            connections: 1024,
            frame_timeout: Duration::from_secs(10),
        }
    }
}

/// A Unix socket to listen on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnixSocket {
    /// The socket file.
    pub path: PathBuf,
    /// Its mode (octal in KDL).
    pub mode: Option<u32>,
    /// Its owner.
    pub owner: Option<Owner>,
}

/// Who owns the socket file: `user`, `user:group` or numeric ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner(pub String);

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Owner {
    /// The user and group ids, looked up when the socket is bound.
    pub fn resolve(&self) -> Result<(Option<u32>, Option<u32>), SettingError> {
        let (user, group) = match self.0.split_once(':') {
            Some((u, g)) => (u, Some(g)),
            None => (self.0.as_str(), None),
        };
        let uid = id(Some(user), "user", |n| {
            Ok(nix::unistd::User::from_name(n)?.map(|u| u.uid.as_raw()))
        })?;
        let gid = id(group, "group", |n| {
            Ok(nix::unistd::Group::from_name(n)?.map(|g| g.gid.as_raw()))
        })?;
        Ok((uid, gid))
    }
}

/// A numeric id, or the id of the user or group `name` names; none when
/// `name` is absent or empty.
fn id(
    name: Option<&str>,
    what: &'static str,
    lookup: impl Fn(&str) -> nix::Result<Option<u32>>,
) -> Result<Option<u32>, SettingError> {
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    if let Ok(id) = name.parse() {
        return Ok(Some(id));
    }
    match lookup(name) {
        Ok(Some(id)) => Ok(Some(id)),
        Ok(None) => Err(SettingError::NoSuchId {
            what,
            name: name.to_string(),
        }),
        Err(e) => Err(SettingError::IdLookup {
            what,
            name: name.to_string(),
            reason: e.to_string(),
        }),
    }
}

impl Walker {
    pub(super) fn binary(&mut self, node: &KdlNode) -> Option<Binary> {
        let mut binary = Binary::default();
        for child in self.block(node) {
            match child.name().value() {
                "unix" => binary.unix = self.unix_socket(child),
                "tcp" => binary.tcp = self.socket_addr(child),
                "max-frame" => set(&mut binary.max_frame, self.usize_size(child)),
                "in-flight" => set(&mut binary.in_flight, self.count(child)),
                "connections" => set(&mut binary.connections, self.count(child)),
                "frame-timeout" => set(&mut binary.frame_timeout, self.duration(child)),
                _ => self.unknown(child, "in `binary`", BINARY),
            }
        }
        if binary.unix.is_none() && binary.tcp.is_none() {
            self.problems.push(
                Problem::new(node.name().span(), "`binary` has no listener")
                    .help("add `unix \"wharf.sock\"` or `tcp \"127.0.0.1:8081\"`"),
            );
            return None;
        }
        Some(binary)
    }

    fn unix_socket(&mut self, node: &KdlNode) -> Option<UnixSocket> {
        let entry = self.sole_entry(node, true)?;
        let Some(path) = entry.value().as_string() else {
            self.wrong_type(entry, "`unix` takes the socket's path as a string");
            return None;
        };
        let mut socket = UnixSocket {
            path: path.into(),
            mode: None,
            owner: None,
        };
        for child in node.children().map(|d| d.nodes()).unwrap_or_default() {
            match child.name().value() {
                "mode" => socket.mode = self.file_mode(child),
                "owner" => socket.owner = self.string(child).map(|(s, _)| Owner(s)),
                _ => self.unknown(child, "in `unix`", UNIX),
            }
        }
        Some(socket)
    }

    /// An octal file mode: a string such as "660" or "0660", or `0o660`.
    fn file_mode(&mut self, node: &KdlNode) -> Option<u32> {
        let entry = self.sole_entry(node, false)?;
        let parsed = match entry.value() {
            KdlValue::String(s) => u32::from_str_radix(s.trim_start_matches("0o"), 8)
                .map_err(|_| format!("`{s}` is not an octal file mode")),
            KdlValue::Integer(i) => u32::try_from(*i).map_err(|_| format!("`{i}` is out of range")),
            _ => {
                self.wrong_type(entry, "`mode` expects an octal mode such as \"660\"");
                return None;
            }
        };
        let parsed = parsed.and_then(|m| match m {
            0..=0o777 => Ok(m),
            _ => Err(format!("mode {m:o} is not a file mode (at most 777)")),
        });
        self.check(entry, parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::Owner;

    #[test]
    fn owners_are_ids_or_names() {
        assert_eq!(Owner("0:0".into()).resolve().unwrap(), (Some(0), Some(0)));
        assert_eq!(Owner("root".into()).resolve().unwrap(), (Some(0), None));
        assert_eq!(Owner(":0".into()).resolve().unwrap(), (None, Some(0)));
        let missing = Owner("no-such-user-here".into())
            .resolve()
            .unwrap_err()
            .to_string();
        assert!(missing.contains("no user named"), "{missing}");
    }
}
