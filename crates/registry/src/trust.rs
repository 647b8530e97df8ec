//! Trust in components: Ed25519 signatures kept in the WebAssembly
//! `signature` custom section (the format of the WebAssembly signatures
//! design, as the `wasmsign2` crate implements it), the keys a
//! configuration trusts, and the key files `wharf keygen` writes. Used by
//! the loader and by `wharf keygen`, `wharf sign` and `wharf verify`.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use wasmsign2::{KeyPair, Module, PublicKey, PublicKeySet, SecretKey, WSError};

pub use wharf_config::{KeyError, Trust, TrustedKey, key_id};

/// Checks a component's signature. Returns the id of the key that
/// signed it (none: unsigned and allowed, or nothing to check against),
/// or why it is refused.
pub fn check(trust: &Trust, bytes: &[u8]) -> Result<Option<String>, Unverified> {
    if trust.keys.is_empty() && !trust.require_signature {
        return Ok(None);
    }
    match verify(bytes, &trust.keys) {
        Ok(id) => Ok(Some(id)),
        Err(Unverified::Unsigned) if !trust.require_signature => Ok(None),
        Err(why) => Err(why),
    }
}

/// Why a component's signature was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum Unverified {
    #[error(
        "it is not signed, and `require-signature` is on (sign it with `wharf sign FILE --key KEY`)"
    )]
    /// No signature.
    Unsigned,
    #[error(
        "bad signature: no trusted key signed these contents (changed after signing, or signed by a key the configuration does not list)"
    )]
    /// No trusted key signed it.
    Bad,
    #[error("its signature section cannot be read: {0}")]
    /// The signature section cannot be read.
    Unreadable(String),
}

/// Verifies `bytes` against `keys`; the id of the first key that signed it.
pub fn verify(bytes: &[u8], keys: &[TrustedKey]) -> Result<String, Unverified> {
    if !signature_first(bytes) {
        return Err(Unverified::Unsigned);
    }
    let set = PublicKeySet::new(keys.iter().map(|k| k.key.clone()).collect());
    match set.verify(&mut Cursor::new(bytes), None) {
        Ok(signers) => signers
            .iter()
            .map(|k| key_id(k))
            .min()
            .ok_or(Unverified::Bad),
        Err(WSError::NoSignatures) => Err(Unverified::Unsigned),
        Err(WSError::VerificationFailed) => Err(Unverified::Bad),
        Err(e) => Err(Unverified::Unreadable(e.to_string())),
    }
}

/// Whether the first section after the header is the `signature` custom
/// section, where signers put it.
pub(crate) fn signature_first(bytes: &[u8]) -> bool {
    let mut reader = wasmparser::BinaryReader::new(bytes.get(8..).unwrap_or_default(), 8);
    let mut read = || -> wasmparser::Result<bool> {
        if reader.eof() || reader.read_u8()? != 0 {
            return Ok(false);
        }
        reader.read_var_u32()?;
        Ok(reader.read_string()? == "signature")
    };
    read().unwrap_or(false)
}

/// Why a key pair could not be written or a component signed.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// A key file is already there.
    #[error("{} exists; keys are never overwritten", .0.display())]
    Exists(PathBuf),
    /// A file could not be read or written.
    #[error("cannot {doing} {}: {source}", path.display())]
    Io {
        /// `read` or `write`.
        doing: &'static str,
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The key file holds no Ed25519 secret key.
    #[error("{} is not an Ed25519 secret key: {reason}", path.display())]
    NotSecretKey {
        /// The key file.
        path: PathBuf,
        /// What the key parser said.
        reason: String,
    },
    /// The input is not a component.
    #[error(transparent)]
    NotAComponent(#[from] crate::component::NotAComponent),
    /// The component's sections cannot be read.
    #[error("cannot parse {}: {reason}", path.display())]
    Unreadable {
        /// The input.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// Signing, or writing the signed bytes, failed.
    #[error("cannot sign: {0}")]
    Sign(String),
}

fn io(doing: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SignError {
    let path = path.to_path_buf();
    move |source| SignError::Io {
        doing,
        path,
        source,
    }
}

/// Writes a new key pair: `STEM.key` (secret, mode 0600) and `STEM.pub`.
/// Never overwrites an existing file.
pub fn keygen(stem: &Path) -> Result<(PathBuf, PathBuf), SignError> {
    let pair = KeyPair::generate();
    let secret = stem.with_extension("key");
    let public = stem.with_extension("pub");
    for path in [&secret, &public] {
        if path.exists() {
            return Err(SignError::Exists(path.clone()));
        }
    }
    write_new(&secret, pair.sk.to_pem().as_bytes(), 0o600).map_err(io("write", &secret))?;
    write_new(&public, pair.pk.to_pem().as_bytes(), 0o644).map_err(io("write", &public))?;
    Ok((secret, public))
}

/// Signs the component at `input` with the secret key in `key_file` and
/// writes the result to `output` (replacing it whole, by a rename, so a
/// watcher never sees it half-written). Returns the signing key's id.
pub fn sign(input: &Path, key_file: &Path, output: &Path) -> Result<String, SignError> {
    let key_bytes = std::fs::read(key_file).map_err(io("read", key_file))?;
    let secret = SecretKey::from_any(&key_bytes).map_err(|e| SignError::NotSecretKey {
        path: key_file.to_path_buf(),
        reason: e.to_string(),
    })?;
    let bytes = std::fs::read(input).map_err(io("read", input))?;
    crate::check_component(&bytes)?;
    let module =
        Module::deserialize(&mut Cursor::new(&bytes)).map_err(|e| SignError::Unreadable {
            path: input.to_path_buf(),
            reason: e.to_string(),
        })?;
    let signed = secret
        .sign(module, None)
        .map_err(|e| SignError::Sign(e.to_string()))?;
    let mut out = Vec::with_capacity(bytes.len() + 128);
    signed
        .serialize(&mut out)
        .map_err(|e| SignError::Sign(e.to_string()))?;
    replace_file(output, &out).map_err(io("write", output))?;
    let public = PublicKey {
        pk: secret.sk.public_key(),
        key_id: None,
    };
    Ok(key_id(&public))
}

/// Writes `bytes` to `path` through a temporary file in the same
/// directory and a rename.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    let mut tmp = tempfile::Builder::new()
        .prefix(".wharf-")
        .suffix(".tmp")
        .tempfile_in(dir.unwrap_or(Path::new(".")))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    options.open(path)?.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest component: the header alone.
    const EMPTY_COMPONENT: &[u8] = &[0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

    fn pair(dir: &Path, name: &str) -> TrustedKey {
        let (_, public) = keygen(&dir.join(name)).unwrap();
        TrustedKey::read(&public).unwrap()
    }

    #[test]
    fn signs_and_verifies_a_component() {
        let dir = tempfile::tempdir().unwrap();
        let alice = pair(dir.path(), "alice");
        let bob = pair(dir.path(), "bob");
        let file = dir.path().join("c.wasm");
        std::fs::write(&file, EMPTY_COMPONENT).unwrap();
        let id = sign(&file, &dir.path().join("alice.key"), &file).unwrap();
        assert_eq!(id, alice.id());
        let signed = std::fs::read(&file).unwrap();
        assert!(wasmparser::Parser::is_component(&signed));
        assert_eq!(verify(&signed, &[bob.clone(), alice.clone()]).unwrap(), id);
        assert!(matches!(verify(&signed, &[bob]), Err(Unverified::Bad)));
        assert!(matches!(
            verify(EMPTY_COMPONENT, std::slice::from_ref(&alice)),
            Err(Unverified::Unsigned)
        ));
        // One byte appended after signing: the contents no longer match.
        let mut changed = signed.clone();
        changed.extend_from_slice(&[0x00, 0x02, 0x01, b'x']);
        assert!(matches!(verify(&changed, &[alice]), Err(Unverified::Bad)));
    }

    #[test]
    fn trust_allows_unsigned_only_when_not_required() {
        let dir = tempfile::tempdir().unwrap();
        let key = pair(dir.path(), "k");
        let lax = Trust {
            keys: vec![key.clone()],
            require_signature: false,
        };
        assert_eq!(check(&lax, EMPTY_COMPONENT).unwrap(), None);
        let strict = Trust {
            keys: vec![key],
            require_signature: true,
        };
        assert!(
            check(&strict, EMPTY_COMPONENT)
                .unwrap_err()
                .to_string()
                .contains("not signed")
        );
        assert_eq!(check(&Trust::default(), b"anything").unwrap(), None);
    }

    #[test]
    fn keys_are_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        keygen(&dir.path().join("k")).unwrap();
        let err = keygen(&dir.path().join("k")).unwrap_err();
        assert!(err.to_string().contains("never overwritten"), "{err}");
    }
}
