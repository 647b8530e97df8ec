//! Why a rule set does not load: every error names the file and line of
//! the directive and what in it is wrong or not supported. Nothing is
//! skipped silently: a directive, variable, operator, transformation or
//! action the engine does not implement refuses the whole set.

use std::fmt;

/// Where a directive starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// What is wrong with a directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// A directive the engine does not implement.
    UnsupportedDirective(String),
    /// A variable (collection) the engine does not implement.
    UnsupportedVariable(String),
    /// An operator the engine does not implement.
    UnsupportedOperator(String),
    /// A transformation the engine does not implement.
    UnsupportedTransformation(String),
    /// An action the engine does not implement.
    UnsupportedAction(String),
    /// A `ctl` option the engine does not implement.
    UnsupportedCtl(String),
    /// Text that is not SecLang (quotes, arguments, values).
    Syntax(String),
    /// A regular expression that does not compile (or is not linear-time).
    Regex(String),
    /// A rule that breaks the language's rules (no id, a duplicate id,
    /// a disruptive action in a chained rule, a phase out of range…).
    Invalid(String),
    /// A file named by `Include` or `@pmFromFile` that cannot be read.
    File(String),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::UnsupportedDirective(d) => write!(f, "unsupported directive `{d}`"),
            ErrorKind::UnsupportedVariable(v) => write!(f, "unsupported variable `{v}`"),
            ErrorKind::UnsupportedOperator(o) => write!(f, "unsupported operator `@{o}`"),
            ErrorKind::UnsupportedTransformation(t) => {
                write!(f, "unsupported transformation `t:{t}`")
            }
            ErrorKind::UnsupportedAction(a) => write!(f, "unsupported action `{a}`"),
            ErrorKind::UnsupportedCtl(c) => write!(f, "unsupported ctl option `{c}`"),
            ErrorKind::Syntax(s) => write!(f, "syntax: {s}"),
            ErrorKind::Regex(s) => write!(f, "regular expression: {s}"),
            ErrorKind::Invalid(s) => f.write_str(s),
            ErrorKind::File(s) => f.write_str(s),
        }
    }
}

/// A rule set that does not load, with where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub at: Location,
    pub kind: ErrorKind,
}

impl LoadError {
    pub fn new(at: &Location, kind: ErrorKind) -> LoadError {
        LoadError {
            at: at.clone(),
            kind,
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.kind)
    }
}

impl std::error::Error for LoadError {}
