//! Wharf's ModSecurity SecLang engine: loads rule sets (the OWASP Core
//! Rule Set, Wharf's baseline, a user's own), compiles them once, and runs
//! one [`Transaction`] per request with ModSecurity v3's semantics. Builds
//! natively (benchmarks, conformance runs) and for `wasm32-wasip2` (the
//! `waf` filter is a thin adapter around it).
//!
//! Cost is bounded by construction: every regular expression runs on
//! finite automata (linear in its input), every collection and body is
//! capped by [`Limits`], and a literal prefilter lets a value skip every
//! rule whose operator cannot match it.

mod body;
pub mod compile;
#[cfg(feature = "crs")]
pub mod crs;
mod decode;
pub mod error;
mod files;
pub mod model;
pub mod operator;
mod parse;
#[cfg(feature = "profile")]
pub mod profile;
pub mod ruleset;
pub mod transform;
pub mod tx;
pub mod vars;

pub use compile::Loader;
pub use error::{ErrorKind, LoadError, Location};
pub use files::MemFiles;
pub use ruleset::RuleSet;
pub use tx::{Intervention, Limit, Limits, MatchedRule, PastLimit, Scratch, Transaction};

/// Base64 (standard alphabet) as `t:base64DecodeExt` decodes it: bytes
/// outside the alphabet are skipped, padding ends it.
pub fn base64_decode(input: &[u8]) -> Vec<u8> {
    decode::base64_decode(input, true)
}

/// Where `Include` and data files (`@pmFromFile`) are read from.
pub trait Files {
    /// The text of `name`, named in the rule file `from`.
    fn read(&self, name: &str, from: &str) -> Result<String, String>;
}

/// No files: `Include` and `@pmFromFile` fail with a clear error.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoFiles;

impl Files for NoFiles {
    fn read(&self, name: &str, _from: &str) -> Result<String, String> {
        Err(format!("no file `{name}` (this rule set reads no files)"))
    }
}

impl RuleSet {
    /// A rule set from one text, reading no files.
    pub fn from_text(text: &str) -> Result<RuleSet, LoadError> {
        let mut loader = Loader::new(&NoFiles);
        loader.load("(rules)", text)?;
        loader.finish()
    }

    /// A rule set from the files `paths` names in `files`, in order; each
    /// path may end in `*…` for the matching files of a directory, sorted
    /// (`rules/*.conf`, as CRS is loaded). `prelude` is loaded first
    /// (settings written before the rules, such as a paranoia level).
    pub fn from_files(
        prelude: &str,
        paths: &[&str],
        files: &MemFiles,
    ) -> Result<RuleSet, LoadError> {
        let mut loader = Loader::new(files);
        loader.load("(settings)", prelude)?;
        for path in paths {
            let names = files.glob(path);
            if names.is_empty() {
                return Err(LoadError::new(
                    &Location {
                        file: path.to_string(),
                        line: 0,
                    },
                    ErrorKind::File(format!("no rule file matches `{path}`")),
                ));
            }
            for name in names {
                let text = files.get(&name).unwrap_or_default();
                loader.load(&name, text)?;
            }
        }
        loader.finish()
    }
}
