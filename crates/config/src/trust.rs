//! The `trust { … }` block (which keys sign the components Wharf serves, and
//! whether a signature is required), `watch`, and per-component `digest`
//! pins. Key files are read when the configuration is loaded, so
//! `wharf check` reports a missing or malformed key at its line.
//!
//! ```kdl
//! trust {
//!     key "keys/release.pub"
//!     require-signature #true
//! }
//! agent "echo" { digest "sha256:…" }
//! ```

use std::path::{Path, PathBuf};

use kdl::KdlNode;
use miette::SourceSpan;
use sha2::{Digest, Sha256};
use wasmsign2::PublicKey;

use super::diag::Problem;
use super::walker::Walker;

/// A public key the configuration trusts, with the file it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    /// The file it was read from.
    pub path: PathBuf,
    /// The key.
    pub key: PublicKey,
}

impl TrustedKey {
    /// Reads a public key file (PEM, as `wharf keygen` writes, DER or raw).
    pub fn read(path: &Path) -> Result<TrustedKey, KeyError> {
        let bytes = std::fs::read(path).map_err(KeyError::Read)?;
        let key = PublicKey::from_any(&bytes).map_err(|e| KeyError::NotEd25519(e.to_string()))?;
        Ok(TrustedKey {
            path: path.to_path_buf(),
            key,
        })
    }

    /// A short, stable name for the key: `ed25519:` and 16 hex digits of
    /// the SHA-256 of its bytes.
    pub fn id(&self) -> String {
        key_id(&self.key)
    }
}

/// A key's id, as [`TrustedKey::id`] gives it.
pub fn key_id(key: &PublicKey) -> String {
    let sum = Sha256::digest(key.pk.as_ref());
    format!("ed25519:{}", hex::encode(&sum[..8]))
}

/// What the configuration's `trust` block says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Trust {
    /// The keys listed, read.
    pub keys: Vec<TrustedKey>,
    /// Every component must carry a valid signature by a listed key.
    pub require_signature: bool,
}

/// Why a key file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file cannot be read.
    #[error("cannot read the key: {0}")]
    Read(std::io::Error),
    /// Its contents are not an Ed25519 public key.
    #[error("not an Ed25519 public key: {0}")]
    NotEd25519(String),
}

const TRUST: &[&str] = &["key", "require-signature"];

/// The `trust` block as written: key paths with their spans, read later
/// against the configuration file's directory.
#[derive(Debug, Default)]
pub(super) struct TrustBlock {
    pub(super) keys: Vec<(PathBuf, SourceSpan)>,
    pub(super) require_signature: Option<bool>,
    pub(super) span: Option<SourceSpan>,
}

impl TrustBlock {
    /// Reads every key file; problems name the line that listed it. A
    /// block that lists keys requires signatures unless it says otherwise.
    pub(super) fn resolve(self, base_dir: &Path) -> (Trust, Vec<Problem>) {
        let listed = !self.keys.is_empty();
        let mut problems = Vec::new();
        let mut keys = Vec::new();
        for (path, span) in self.keys {
            let path = if path.is_relative() {
                base_dir.join(path)
            } else {
                path
            };
            match TrustedKey::read(&path) {
                Ok(key) => keys.push(key),
                Err(reason) => problems.push(
                    Problem::new(span, format!("key `{}`: {reason}", path.display()))
                        .help("write a key pair with `wharf keygen NAME` and list NAME.pub here"),
                ),
            }
        }
        let require_signature = self.require_signature.unwrap_or(listed);
        if require_signature
            && !listed
            && let Some(span) = self.span
        {
            problems.push(
                Problem::new(span, "`require-signature` needs at least one trusted `key`")
                    .help("add `key \"NAME.pub\"` to the `trust` block"),
            );
        }
        (
            Trust {
                keys,
                require_signature,
            },
            problems,
        )
    }
}

impl Walker {
    /// Records the `trust` block; its keys are read by [`TrustBlock::resolve`].
    pub(super) fn trust(&mut self, node: &KdlNode, into: &mut TrustBlock) {
        into.span = Some(node.name().span());
        for child in self.block(node) {
            match child.name().value() {
                "key" => {
                    if let Some((path, span)) = self.string(child) {
                        into.keys.push((path.into(), span));
                    }
                }
                "require-signature" => into.require_signature = self.boolean(child),
                _ => self.unknown(child, "in `trust`", TRUST),
            }
        }
    }

    /// `digest "sha256:<64 hex digits>"`: the only contents a component may have.
    pub(super) fn digest(&mut self, node: &KdlNode) -> Option<String> {
        let (text, span) = self.string(node)?;
        let hex = text.strip_prefix("sha256:").unwrap_or("");
        if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(format!("sha256:{}", hex.to_ascii_lowercase()));
        }
        self.problems.push(
            Problem::new(span, format!("`{text}` is not a SHA-256 digest")).help(
                "write `sha256:` and 64 hex digits, as `GET /agents` and `wharf inspect` show",
            ),
        );
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use std::path::Path;

    #[test]
    fn keys_are_read_relative_to_the_file_and_required_by_default() {
        let dir = tempfile::tempdir().unwrap();
        let pair = wasmsign2::KeyPair::generate();
        std::fs::write(dir.path().join("release.pub"), pair.pk.to_pem()).unwrap();
        let text = "trust { key \"release.pub\" }";
        let config = Config::parse("t.kdl", text, dir.path()).unwrap();
        assert_eq!(config.trust.keys.len(), 1);
        assert!(config.trust.require_signature);
        let lax = "trust { key \"release.pub\"; require-signature #false }";
        let config = Config::parse("t.kdl", lax, dir.path()).unwrap();
        assert!(!config.trust.require_signature);
    }

    #[test]
    fn a_missing_key_or_a_bad_digest_is_reported_at_its_line() {
        let text = "trust {\n  key \"nope.pub\"\n}\nagent \"a\" { digest \"sha256:12\" }";
        let err = Config::parse("t.kdl", text, Path::new("/nonexistent")).unwrap_err();
        let plain = err.plain();
        assert!(
            plain.contains("t.kdl:2:7: key `/nonexistent/nope.pub`"),
            "{plain}"
        );
        assert!(
            plain.contains("`sha256:12` is not a SHA-256 digest"),
            "{plain}"
        );
        let err = Config::parse("t.kdl", "trust { require-signature #true }", Path::new("/"))
            .unwrap_err();
        assert!(err.plain().contains("needs at least one trusted `key`"));
    }
}
