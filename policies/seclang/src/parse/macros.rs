//! `%{VAR}` and `%{VAR.key}` references in action values and operator
//! parameters, parsed into a [`Macro`].

use crate::model::{Macro, Part};
use crate::vars::Var;

/// Parses `text`; an unknown variable is an error.
pub fn parse(text: &str) -> Result<Macro, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("%{") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        if start > 0 {
            parts.push(Part::Lit(rest[..start].to_string()));
        }
        let inner = &rest[start + 2..start + len];
        let (name, key) = match inner.split_once(['.', ':']) {
            Some((n, k)) => (n, Some(k.to_ascii_lowercase())),
            None => (inner, None),
        };
        let var = Var::parse(name.trim())
            .ok_or_else(|| format!("unknown variable `{name}` in `%{{{inner}}}`"))?;
        if key.is_some() && !var.is_collection() {
            return Err(format!("`{name}` has no keys (in `%{{{inner}}}`)"));
        }
        parts.push(Part::Var(var, key));
        rest = &rest[start + len + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Lit(rest.to_string()));
    }
    Ok(Macro { parts })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_literals() {
        let m = parse("score %{tx.critical_anomaly_score} of %{MATCHED_VAR}!").unwrap();
        assert_eq!(
            m.parts,
            vec![
                Part::Lit("score ".into()),
                Part::Var(Var::Tx, Some("critical_anomaly_score".into())),
                Part::Lit(" of ".into()),
                Part::Var(Var::MatchedVar, None),
                Part::Lit("!".into()),
            ]
        );
        assert_eq!(parse("plain").unwrap().as_literal(), Some("plain"));
        assert!(parse("%{nosuch.x}").is_err());
        assert_eq!(
            parse("%{REQUEST_HEADERS.User-Agent}").unwrap().parts,
            vec![Part::Var(Var::RequestHeaders, Some("user-agent".into()))]
        );
    }
}
