//! SecLang text → typed statements: `lexer` splits directives, the other
//! modules parse a rule's variables, operator and actions. Every error
//! carries the directive's `file:line`.

pub mod actions;
pub mod lexer;
pub mod macros;
pub mod operators;
pub mod targets;

use crate::Files;
use crate::error::{ErrorKind, LoadError};
use crate::model::ParsedRule;
use crate::operator::{OpKind, Operator};
use lexer::Statement;

/// A `SecRule VARIABLES OPERATOR [ACTIONS]` or `SecAction ACTIONS`.
pub fn rule(s: &Statement, files: &dyn Files) -> Result<ParsedRule, LoadError> {
    let err = |kind: ErrorKind| LoadError::new(&s.at, kind);
    let classify = |e: String| -> ErrorKind {
        if e.starts_with("unsupported operator") {
            ErrorKind::UnsupportedOperator(
                e.trim_start_matches("unsupported operator `@")
                    .trim_end_matches('`')
                    .into(),
            )
        } else if e.starts_with("unsupported variable") {
            ErrorKind::UnsupportedVariable(between_ticks(&e))
        } else if e.starts_with("unsupported transformation") {
            ErrorKind::UnsupportedTransformation(between_ticks(&e).trim_start_matches("t:").into())
        } else if e.starts_with("unsupported action") {
            ErrorKind::UnsupportedAction(between_ticks(&e))
        } else if e.starts_with("unsupported ctl") {
            ErrorKind::UnsupportedCtl(between_ticks(&e))
        } else if e.contains("regex parse error") || e.contains("exceeds size limit") {
            ErrorKind::Regex(e)
        } else {
            ErrorKind::Syntax(e)
        }
    };
    let is_action = s.name.eq_ignore_ascii_case("SecAction");
    let (targets, exclusions, operator, actions_text) = if is_action {
        if s.args.len() != 1 {
            return Err(err(ErrorKind::Syntax(
                "SecAction takes one argument: the actions".into(),
            )));
        }
        let op = Operator {
            kind: OpKind::Unconditional,
            negated: false,
            name: "unconditionalMatch",
        };
        (Vec::new(), Vec::new(), op, s.args[0].as_str())
    } else {
        if !(2..=3).contains(&s.args.len()) {
            return Err(err(ErrorKind::Syntax(
                "SecRule takes VARIABLES OPERATOR [ACTIONS]".into(),
            )));
        }
        let (t, x) = targets::parse(&s.args[0]).map_err(|e| err(classify(e)))?;
        let op = operators::parse(&s.args[1], &s.at.file, files).map_err(|e| err(classify(e)))?;
        (t, x, op, s.args.get(2).map(String::as_str).unwrap_or(""))
    };
    let actions = actions::parse(actions_text).map_err(|e| err(classify(e)))?;
    Ok(ParsedRule {
        at: s.at.clone(),
        targets,
        exclusions,
        operator,
        actions,
    })
}

fn between_ticks(s: &str) -> String {
    s.split('`').nth(1).unwrap_or(s).to_string()
}
