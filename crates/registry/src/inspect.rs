//! `wharf inspect`: what a `.wasm` file is, which world it fits, and what it
//! imports and exports, without serving it.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::{check_component, digest, read_capped};
use wharf_runtime::{EngineSettings, Prepared, Runtime, component_items};

/// Largest file `inspect` reads.
const MAX_INSPECT_SIZE: u64 = 256 << 20;

#[derive(Debug, Serialize)]
/// What `wharf inspect` says of a file.
pub struct Report {
    /// The file.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// `sha256:` and the hex digest of its bytes.
    pub digest: String,
    /// `agent`, `filter`, or none with the reason in `fits`.
    pub world: Option<&'static str>,
    /// Which world it fits, or why none.
    pub fits: String,
    /// What it imports.
    pub imports: Vec<String>,
    /// What it exports.
    pub exports: Vec<String>,
    /// Whether it is signed, and by which of the keys given, if any.
    pub signature: Signature,
}

/// What `inspect` says of a file's signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "key")]
pub enum Signature {
    /// No signature section.
    Unsigned,
    /// Signed; no key was given to say by whom.
    Signed,
    /// Signed by this key (of those given).
    SignedBy(String),
    /// Signed, but by none of the keys given (or changed since).
    NotByGivenKeys,
    /// A signature section that cannot be read.
    Unreadable(String),
}

impl Signature {
    fn of(bytes: &[u8], keys: &[wharf_config::TrustedKey]) -> Signature {
        use crate::trust::Unverified;
        if !crate::trust::signature_first(bytes) {
            return Signature::Unsigned;
        }
        if keys.is_empty() {
            return Signature::Signed;
        }
        match crate::trust::verify(bytes, keys) {
            Ok(id) => Signature::SignedBy(id),
            Err(Unverified::Unsigned) => Signature::Unsigned,
            Err(Unverified::Bad) => Signature::NotByGivenKeys,
            Err(Unverified::Unreadable(why)) => Signature::Unreadable(why),
        }
    }

    fn human(&self) -> String {
        match self {
            Signature::Unsigned => "none (sign it with `wharf sign FILE --key KEY`)".into(),
            Signature::Signed => "signed (give `--key KEY.pub` to see by whom)".into(),
            Signature::SignedBy(id) => format!("signed by {id}"),
            Signature::NotByGivenKeys => {
                "signed, but by none of the keys given (or changed since it was signed)".into()
            }
            Signature::Unreadable(why) => format!("unreadable: {why}"),
        }
    }
}

/// Why a file could not be inspected.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// The file cannot be read, or is too large.
    #[error("{0}")]
    Read(String),
    /// It is not a component.
    #[error(transparent)]
    NotAComponent(#[from] crate::NotAComponent),
    /// No engine could be made to compile it.
    #[error("cannot create an engine: {0}")]
    Engine(#[from] wharf_runtime::EngineError),
    /// It does not compile.
    #[error("failed to compile: {0}")]
    Compile(#[from] wharf_runtime::ComponentError),
}

/// Inspects a file; an error means it is not a component at all.
pub fn inspect(path: &Path) -> Result<Report, InspectError> {
    inspect_with_keys(path, &[])
}

/// Inspects a file, saying which of `keys` signed it.
pub fn inspect_with_keys(
    path: &Path,
    keys: &[wharf_config::TrustedKey],
) -> Result<Report, InspectError> {
    let bytes = read_capped(path, MAX_INSPECT_SIZE).map_err(InspectError::Read)?;
    check_component(&bytes)?;
    let settings = EngineSettings {
        pooling: false,
        ..EngineSettings::default()
    };
    let runtime = Runtime::new(&settings)?;
    let report = |world, fits, imports, exports| Report {
        path: path.display().to_string(),
        size: bytes.len() as u64,
        digest: digest(&bytes),
        world,
        fits,
        imports,
        exports,
        signature: Signature::of(&bytes, keys),
    };
    let component = match runtime.compile(&bytes) {
        Ok((component, _)) => component,
        // It cannot compile here, but what it is can be told.
        Err(err) => match crate::component::wasip3_refusal(&bytes) {
            Some(why) => {
                let (imports, exports) =
                    crate::component::top_level_items(&bytes).unwrap_or_default();
                return Ok(report(None, why, imports, exports));
            }
            None => return Err(err.into()),
        },
    };
    let (imports, exports) = component_items(&component);
    let (world, fits) = match runtime.prepare(&component) {
        Ok(Prepared::Agent(_))
            if exports
                .iter()
                .any(|e| e.starts_with("wharf:plugin/a2a-handler")) =>
        {
            (
                Some("a2a-agent"),
                "fits the a2a-agent world (an agent that also serves A2A)".to_string(),
            )
        }
        Ok(Prepared::Agent(_)) => (Some("agent"), "fits the agent world".to_string()),
        Ok(Prepared::Filter(_)) => (Some("filter"), "fits the filter world".to_string()),
        Ok(Prepared::Http(pre)) => (
            Some("wasi-http"),
            format!(
                "fits wasi:http (WASI {}: a standard HTTP component, served like an agent)",
                pre.wasi()
            ),
        ),
        Err(reason) => (None, reason.to_string()),
    };
    Ok(report(world, fits, imports, exports))
}

impl Report {
    /// The report as text for people.
    pub fn human(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.path);
        let _ = writeln!(out, "  size:    {} bytes", self.size);
        let _ = writeln!(out, "  digest:  {}", self.digest);
        let _ = writeln!(out, "  world:   {}", self.world.unwrap_or("none"));
        let _ = writeln!(out, "  fits:    {}", self.fits);
        let _ = writeln!(out, "  signature: {}", self.signature.human());
        let _ = writeln!(out, "  imports:");
        for name in &self.imports {
            let _ = writeln!(out, "    {name}");
        }
        let _ = writeln!(out, "  exports:");
        for name in &self.exports {
            let _ = writeln!(out, "    {name}");
        }
        out
    }
}
