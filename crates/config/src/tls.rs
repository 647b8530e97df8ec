//! TLS files: the `tls { … }` block that makes the HTTP listener speak
//! HTTPS, and the PEM certificates that `push` and `outbound` blocks name
//! with `ca`. Files are read relative to the configuration's directory
//! when it loads, so `wharf check` reports a missing or malformed one; the
//! listener's pair is read again whenever its files change.
//!
//! ```kdl
//! listen "0.0.0.0:8443"
//! tls {
//!     certificate "certs/server.pem"  // the chain, leaf first (PEM)
//!     key "certs/server.key"          // its private key (PEM: PKCS#8, PKCS#1 or SEC1)
//! }
//! ```

use std::path::{Path, PathBuf};

use kdl::KdlNode;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::diag::Problem;
use super::walker::Walker;

const TLS: &[&str] = &["certificate", "key"];

/// The HTTP listener's certificate and key files (absolute, or relative
/// to where Wharf runs when the configuration is embedded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenTls {
    /// PEM file of the certificate chain, leaf first.
    pub certificate: PathBuf,
    /// PEM file of the leaf's private key.
    pub key: PathBuf,
}

/// Why a TLS file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsFileError {
    /// It cannot be read.
    #[error("`{path}`: cannot read it: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        reason: String,
    },
    /// It is not PEM of the expected kind.
    #[error("`{path}`: {reason}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl TlsFileError {
    /// What to do about it.
    fn help(&self, want: &str) -> String {
        match self {
            TlsFileError::Read { .. } => format!("name a readable PEM file of {want}"),
            TlsFileError::Pem { .. } => format!("the file must hold {want} in PEM"),
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsFileError> {
    std::fs::read(path).map_err(|e| TlsFileError::Read {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// The certificates of a PEM file: at least one.
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsFileError> {
    let text = read(path)?;
    let pem = |reason: String| TlsFileError::Pem {
        path: path.to_path_buf(),
        reason,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<_, _>>()
        .map_err(|e| pem(format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(pem("it holds no certificate".into()));
    }
    Ok(certs)
}

/// The private key of a PEM file (the first one in it).
pub fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsFileError> {
    let text = read(path)?;
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| TlsFileError::Pem {
        path: path.to_path_buf(),
        reason: format!("no usable private key: {e}"),
    })
}

impl ListenTls {
    /// Reads both files.
    pub fn load(
        &self,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsFileError> {
        Ok((
            read_certificates(&self.certificate)?,
            read_private_key(&self.key)?,
        ))
    }
}

impl Walker {
    /// The certificates (DER) of the PEM file a node names, relative to
    /// the configuration's directory; at least one, or a problem.
    pub(super) fn certificates(&mut self, node: &KdlNode) -> Option<Vec<Vec<u8>>> {
        let (path, span) = self.string(node)?;
        match read_certificates(&self.base_dir.join(path)) {
            Ok(certs) => Some(certs.into_iter().map(|c| c.to_vec()).collect()),
            Err(e) => {
                let help = e.help("one or more CERTIFICATE blocks");
                self.problems
                    .push(Problem::new(span, e.to_string()).help(help));
                None
            }
        }
    }

    /// `tls { certificate "…"; key "…" }`: both files named and usable.
    pub(super) fn tls(&mut self, node: &KdlNode) -> Option<ListenTls> {
        let (mut certificate, mut key) = (None, None);
        let mut named = [false; 2];
        for child in self.block(node) {
            let (slot, want, is_cert) = match child.name().value() {
                "certificate" => (&mut certificate, "CERTIFICATE blocks", true),
                "key" => (&mut key, "one PRIVATE KEY block", false),
                _ => {
                    self.unknown(child, "in `tls`", TLS);
                    continue;
                }
            };
            named[usize::from(!is_cert)] = true;
            let Some((path, span)) = self.string(child) else {
                continue;
            };
            let path = std::path::absolute(self.base_dir.join(&path))
                .unwrap_or_else(|_| self.base_dir.join(&path));
            let checked = if is_cert {
                read_certificates(&path).map(drop)
            } else {
                read_private_key(&path).map(drop)
            };
            match checked {
                Ok(()) => *slot = Some(path),
                Err(e) => {
                    let help = e.help(want);
                    self.problems
                        .push(Problem::new(span, e.to_string()).help(help));
                }
            }
        }
        for (named, what) in named.into_iter().zip(["certificate", "key"]) {
            if !named {
                self.problems.push(
                    Problem::new(node.name().span(), format!("`tls` names no `{what}`")).help(
                        "write `certificate \"server.pem\"` and `key \"server.key\"` in the block",
                    ),
                );
            }
        }
        Some(ListenTls {
            certificate: certificate?,
            key: key?,
        })
    }
}
