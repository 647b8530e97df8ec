//! A rule's operator argument (`"@rx …"`, `"!@within %{tx.x}"`, a bare
//! regular expression) into an [`Operator`]. `@pmFromFile` and
//! `@ipMatchFromFile` read their data through the loader's [`Files`].

use std::sync::Arc;

use super::macros;
use crate::Files;
use crate::operator::{self, NumOp, NumParam, OpKind, Operator, Param, PhraseSet, StrOp};

/// Parses an operator; `file` is the rule file, for data files named
/// relative to it.
pub fn parse(text: &str, file: &str, files: &dyn Files) -> Result<Operator, String> {
    let mut s = text.trim_start();
    let negated = if let Some(r) = s.strip_prefix('!') {
        s = r.trim_start();
        true
    } else {
        false
    };
    let (name, param) = match s.strip_prefix('@') {
        Some(r) => match r.find(char::is_whitespace) {
            Some(i) => (&r[..i], r[i..].trim_start()),
            None => (r, ""),
        },
        None => ("rx", s),
    };
    let lower = name.to_ascii_lowercase();
    let param_of = |p: &str| -> Result<Param, String> {
        let m = macros::parse(p)?;
        Ok(match m.as_literal() {
            Some(lit) => Param::Lit(lit.as_bytes().to_vec()),
            None => Param::Macro(m),
        })
    };
    let number_of = |p: &str| -> Result<NumParam, String> {
        Ok(match param_of(p)? {
            Param::Lit(lit) => NumParam::Lit(operator::atoi(&lit)),
            Param::Macro(m) => NumParam::Macro(m),
        })
    };
    let (canonical, kind): (&'static str, OpKind) = match lower.as_str() {
        "rx" => {
            let m = macros::parse(param)?;
            match m.as_literal() {
                Some(p) => ("rx", OpKind::Rx(Arc::new(operator::regex(p)?))),
                None => ("rx", OpKind::RxMacro(m)),
            }
        }
        "pm" => {
            let phrases: Vec<Vec<u8>> = param
                .split_whitespace()
                .map(|p| p.as_bytes().to_vec())
                .collect();
            ("pm", OpKind::Pm(Arc::new(phrase_set(phrases)?)))
        }
        "pmfromfile" | "pmf" => {
            let mut phrases = Vec::new();
            for name in param.split_whitespace() {
                let data = files
                    .read(name, file)
                    .map_err(|e| format!("`{name}`: {e}"))?;
                phrases.extend(
                    data.lines()
                        .map(|l| l.trim_end_matches('\r'))
                        .filter(|l| !l.is_empty() && !l.starts_with('#'))
                        .map(|l| l.as_bytes().to_vec()),
                );
            }
            ("pmFromFile", OpKind::Pm(Arc::new(phrase_set(phrases)?)))
        }
        "contains" => ("contains", OpKind::Str(StrOp::Contains, param_of(param)?)),
        "containsword" => (
            "containsWord",
            OpKind::Str(StrOp::ContainsWord, param_of(param)?),
        ),
        "streq" => ("streq", OpKind::Str(StrOp::StrEq, param_of(param)?)),
        "strmatch" => ("strmatch", OpKind::Str(StrOp::StrMatch, param_of(param)?)),
        "beginswith" => (
            "beginsWith",
            OpKind::Str(StrOp::BeginsWith, param_of(param)?),
        ),
        "endswith" => ("endsWith", OpKind::Str(StrOp::EndsWith, param_of(param)?)),
        "within" => ("within", OpKind::Str(StrOp::Within, param_of(param)?)),
        "eq" => ("eq", OpKind::Num(NumOp::Eq, number_of(param)?)),
        "ne" => ("ne", OpKind::Num(NumOp::Ne, number_of(param)?)),
        "gt" => ("gt", OpKind::Num(NumOp::Gt, number_of(param)?)),
        "ge" => ("ge", OpKind::Num(NumOp::Ge, number_of(param)?)),
        "lt" => ("lt", OpKind::Num(NumOp::Lt, number_of(param)?)),
        "le" => ("le", OpKind::Num(NumOp::Le, number_of(param)?)),
        "ipmatch" => (
            "ipMatch",
            OpKind::IpMatch(Arc::new(operator::ip_list(param)?)),
        ),
        "ipmatchfromfile" | "ipmatchf" => {
            let mut list = Vec::new();
            for name in param.split_whitespace() {
                let data = files
                    .read(name, file)
                    .map_err(|e| format!("`{name}`: {e}"))?;
                list.extend(operator::ip_list(&data)?);
            }
            ("ipMatchFromFile", OpKind::IpMatch(Arc::new(list)))
        }
        "validatebyterange" => (
            "validateByteRange",
            OpKind::ValidateByteRange(Arc::new(operator::byte_range(param)?)),
        ),
        "validateurlencoding" => ("validateUrlEncoding", OpKind::ValidateUrlEncoding),
        "validateutf8encoding" => ("validateUtf8Encoding", OpKind::ValidateUtf8Encoding),
        "detectsqli" => ("detectSQLi", OpKind::DetectSqli),
        "detectxss" => ("detectXSS", OpKind::DetectXss),
        "unconditionalmatch" => ("unconditionalMatch", OpKind::Unconditional),
        "nomatch" => ("noMatch", OpKind::NoMatch),
        _ => return Err(format!("unsupported operator `@{name}`")),
    };
    Ok(Operator {
        kind,
        negated,
        name: canonical,
    })
}

fn phrase_set(phrases: Vec<Vec<u8>>) -> Result<PhraseSet, String> {
    if phrases.is_empty() {
        return Err("no phrases".into());
    }
    PhraseSet::new(phrases)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoFiles;
    impl Files for NoFiles {
        fn read(&self, name: &str, _: &str) -> Result<String, String> {
            match name {
                "words.data" => Ok("# comment\nalpha\n\nbeta\r\n".into()),
                _ => Err("not found".into()),
            }
        }
    }

    #[test]
    fn operators_parse() {
        let op = parse("!@rx ^a", "f", &NoFiles).unwrap();
        assert!(op.negated && op.name == "rx");
        assert!(matches!(
            parse("^x", "f", &NoFiles).unwrap().kind,
            OpKind::Rx(_)
        ));
        match parse("@pmFromFile words.data", "f", &NoFiles).unwrap().kind {
            OpKind::Pm(set) => assert_eq!(set.phrases, vec![b"alpha".to_vec(), b"beta".to_vec()]),
            k => panic!("{k:?}"),
        }
        assert!(matches!(
            parse("@lt %{tx.x}", "f", &NoFiles).unwrap().kind,
            OpKind::Num(NumOp::Lt, NumParam::Macro(_))
        ));
        // A literal is read as a number once, as the operator reads its
        // input: leading spaces and a sign, then digits; no digits is 0.
        for (text, n) in [("@ge 10", 10), ("@eq  -3x", -3), ("@ne abc", 0)] {
            match parse(text, "f", &NoFiles).unwrap().kind {
                OpKind::Num(_, NumParam::Lit(got)) => assert_eq!(got, n, "{text}"),
                k => panic!("{text}: {k:?}"),
            }
        }
        assert!(parse("@rbl x", "f", &NoFiles).unwrap_err().contains("@rbl"));
        assert!(
            parse("@pmFromFile nope.data", "f", &NoFiles)
                .unwrap_err()
                .contains("nope")
        );
        assert!(parse("@rx (", "f", &NoFiles).is_err());
    }
}
