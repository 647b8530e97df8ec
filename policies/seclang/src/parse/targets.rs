//! A rule's variable list (`ARGS|!ARGS:id|&TX:score|REQUEST_COOKIES:/^s/|XML:/*`)
//! into targets and exclusions.

use std::sync::Arc;

use crate::model::{Exclusion, Selector, Target};
use crate::vars::Var;

/// Parses a variable list.
pub fn parse(text: &str) -> Result<(Vec<Target>, Vec<Exclusion>), String> {
    let mut targets = Vec::new();
    let mut exclusions = Vec::new();
    for item in split(text)? {
        let (negate, count, body) = prefixes(&item);
        let (name, key) = match body.split_once(':') {
            Some((n, k)) => (n, Some(k)),
            None => (body, None),
        };
        let var =
            Var::parse(name.trim()).ok_or_else(|| format!("unsupported variable `{name}`"))?;
        let selector = selector(var, key)?;
        if negate {
            if count {
                return Err(format!("`!&{body}` is not a variable"));
            }
            exclusions.push(Exclusion { var, selector });
        } else {
            targets.push(Target {
                var,
                selector,
                count,
                slot: None,
            });
        }
    }
    Ok((targets, exclusions))
}

/// One `VAR:key` after `!` or `&` (as `ctl:ruleRemoveTargetById` and
/// `SecRuleUpdateTargetById` write it).
pub fn exclusion(text: &str) -> Result<Exclusion, String> {
    let text = text.trim().trim_start_matches('!');
    let (name, key) = match text.split_once(':') {
        Some((n, k)) => (n, Some(k)),
        None => (text, None),
    };
    let var = Var::parse(name.trim()).ok_or_else(|| format!("unsupported variable `{name}`"))?;
    Ok(Exclusion {
        var,
        selector: selector(var, key)?,
    })
}

fn prefixes(item: &str) -> (bool, bool, &str) {
    let mut s = item.trim();
    let (mut negate, mut count) = (false, false);
    loop {
        if let Some(r) = s.strip_prefix('!') {
            negate = true;
            s = r;
        } else if let Some(r) = s.strip_prefix('&') {
            count = true;
            s = r;
        } else {
            return (negate, count, s);
        }
    }
}

fn selector(var: Var, key: Option<&str>) -> Result<Selector, String> {
    let Some(key) = key.map(|k| k.trim().trim_matches('\'')) else {
        return Ok(Selector::All);
    };
    if var == Var::Xml {
        return match key {
            "/*" => Ok(Selector::XmlText),
            "//@*" => Ok(Selector::XmlAttributes),
            _ => Err(format!(
                "unsupported XPath `XML:{key}` (supported: `XML:/*`, `XML://@*`)"
            )),
        };
    }
    if !var.is_collection() {
        return Err(format!(
            "`{}` has no keys (`{}:{key}`)",
            var.name(),
            var.name()
        ));
    }
    if key.len() >= 2 && key.starts_with('/') && key.ends_with('/') {
        let re = crate::model::KeyRegex::new(&key[1..key.len() - 1])
            .map_err(|e| format!("key `{key}`: {e}"))?;
        return Ok(Selector::Regex(Arc::new(re)));
    }
    Ok(Selector::Key(key.to_ascii_lowercase()))
}

/// Splits at `|`, keeping `/…/` regular-expression keys whole.
fn split(text: &str) -> Result<Vec<String>, String> {
    let text = text.trim().trim_matches('"');
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut item = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b':'
            && bytes.get(i + 1) == Some(&b'/')
            && !item.to_ascii_uppercase().ends_with("XML")
        {
            // A regular-expression key: up to the `/` that ends it.
            let start = i + 2;
            let mut j = start;
            while j < bytes.len() {
                if bytes[j] == b'\\' {
                    j += 2;
                    continue;
                }
                if bytes[j] == b'/' && matches!(bytes.get(j + 1), None | Some(b'|')) {
                    break;
                }
                j += 1;
            }
            if j >= bytes.len() {
                return Err(format!("a key regex is not closed in `{text}`"));
            }
            item.push_str(&text[i..=j]);
            i = j + 1;
            continue;
        }
        if c == b'|' {
            if item.trim().is_empty() {
                return Err(format!("an empty variable in `{text}`"));
            }
            out.push(std::mem::take(&mut item));
        } else {
            item.push(c as char);
        }
        i += 1;
    }
    if item.trim().is_empty() {
        return Err(format!("an empty variable in `{text}`"));
    }
    out.push(item);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crs_variable_lists() {
        let (t, x) = parse(
            "REQUEST_COOKIES|!REQUEST_COOKIES:/__utm/|!REQUEST_COOKIES:/^_pk_ref|x/|REQUEST_COOKIES_NAMES|ARGS_NAMES|ARGS|XML:/*",
        )
        .unwrap();
        assert_eq!(t.len(), 5);
        assert_eq!(x.len(), 2);
        assert!(x[1].selector.selects(b"_PK_REF.1"));
        assert!(x[1].selector.selects(b"x"));
        assert!(matches!(t[4].selector, Selector::XmlText));
        let (t, _) = parse("&TX:crs_setup_version|REQUEST_HEADERS:User-Agent").unwrap();
        assert!(t[0].count);
        assert!(t[1].selector.selects(b"user-agent"));
        let (t, _) = parse("TX:/MULTIPART_HEADERS_CONTENT_TYPES_*/").unwrap();
        assert!(t[0].selector.selects(b"multipart_headers_content_types_0"));
        assert!(parse("GEO:country").is_err());
        assert!(parse("XML:/a/b").is_err());
        assert!(parse("REQUEST_URI:x").is_err());
    }
}
