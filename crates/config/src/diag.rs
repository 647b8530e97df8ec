//! Configuration diagnostics: every problem found in one pass, each with a
//! source span, rendered by miette for people and as `file:line:col:` lines
//! for logs and golden tests.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use miette::{Diagnostic, NamedSource, SourceSpan};

/// One thing wrong with a configuration, at one place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Diagnostic)]
#[error("{message}")]
pub struct Problem {
    /// What is wrong.
    pub message: String,
    #[label("{}", label.as_deref().unwrap_or("here"))]
    /// Where, in the file's text.
    pub span: SourceSpan,
    /// A label at that place.
    pub label: Option<String>,
    #[help]
    /// How to put it right.
    pub help: Option<String>,
}

impl Problem {
    /// A problem at `span`.
    pub fn new(span: SourceSpan, message: impl Into<String>) -> Self {
        Problem {
            message: message.into(),
            span,
            label: None,
            help: None,
        }
    }

    /// This problem with `help`.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// This problem with `label` at its place.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

/// A configuration that cannot be used, with every problem found in it.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("invalid configuration `{name}`: {}", summary(.problems))]
pub struct ConfigError {
    /// The file's name, as given.
    pub name: String,
    #[source_code]
    /// The file's text, for rendering.
    pub source_code: NamedSource<Arc<String>>,
    text: Arc<String>,
    #[related]
    /// Every problem found, in order.
    pub problems: Vec<Problem>,
}

fn summary(problems: &[Problem]) -> String {
    match problems.len() {
        1 => "1 problem".into(),
        n => format!("{n} problems"),
    }
}

impl ConfigError {
    /// The problems of the file `name` holding `text`, in the order they
    /// stand in it.
    pub fn new(name: &str, text: &str, mut problems: Vec<Problem>) -> Self {
        problems.sort_by_key(|p| p.span.offset());
        let text = Arc::new(text.to_string());
        ConfigError {
            name: name.to_string(),
            source_code: NamedSource::new(name, text.clone()),
            text,
            problems,
        }
    }

    /// A file that could not be read.
    pub fn io(path: &Path, err: &std::io::Error) -> Self {
        let name = path.display().to_string();
        ConfigError::new(
            &name,
            "",
            vec![Problem::new(
                (0, 0).into(),
                format!("cannot read the file: {err}"),
            )],
        )
    }

    /// One line per problem: `name:line:col: message (help: …)`.
    pub fn plain(&self) -> String {
        PlainLines(self).to_string()
    }

    /// The rendering `wharf check` shows: source excerpts with labels.
    pub fn fancy(&self) -> String {
        let mut out = String::new();
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor());
        if handler.render_report(&mut out, self).is_err() {
            return self.plain();
        }
        out
    }

    fn line_col(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }
}

struct PlainLines<'a>(&'a ConfigError);

impl fmt::Display for PlainLines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            let (line, col) = self.0.line_col(p.span.offset());
            write!(f, "{}:{line}:{col}: {}", self.0.name, p.message)?;
            if let Some(help) = &p.help {
                write!(f, " (help: {help})")?;
            }
        }
        Ok(())
    }
}
