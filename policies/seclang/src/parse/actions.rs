//! A rule's action list (`"id:1,phase:2,t:none,setvar:'tx.x=+1',…"`) into
//! typed [`Actions`].

use super::{macros, targets};
use crate::model::{
    Actions, AllowScope, BodyProcessor, Ctl, Disruptive, EngineMode, IdRanges, SetOp, SetVar,
};
use crate::transform::Transform;
use crate::vars::Var;

/// Parses an action list.
pub fn parse(text: &str) -> Result<Actions, String> {
    let mut a = Actions::default();
    for (name, value) in split(text)? {
        apply(&mut a, &name, value)?;
    }
    Ok(a)
}

fn apply(a: &mut Actions, name: &str, value: Option<String>) -> Result<(), String> {
    let need = |v: &Option<String>| -> Result<String, String> {
        v.clone().ok_or_else(|| format!("`{name}` needs a value"))
    };
    let disruptive = |a: &mut Actions, d: Disruptive| -> Result<(), String> {
        a.disruptive = Some(d);
        Ok(())
    };
    match name.to_ascii_lowercase().as_str() {
        "id" => a.id = Some(number(&need(&value)?, name)?),
        "phase" => {
            a.phase = Some(match need(&value)?.to_ascii_lowercase().as_str() {
                "request" => 2,
                "response" => 4,
                "logging" => 5,
                v => match v.parse::<u8>() {
                    Ok(p @ 1..=5) => p,
                    _ => return Err(format!("phase `{v}` is not 1–5")),
                },
            })
        }
        "chain" => a.chain = true,
        "pass" => disruptive(a, Disruptive::Pass)?,
        "block" => disruptive(a, Disruptive::Block)?,
        "deny" => disruptive(a, Disruptive::Deny)?,
        "drop" => disruptive(a, Disruptive::Drop)?,
        "allow" => {
            let scope = match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                None | Some("") => AllowScope::All,
                Some("phase") => AllowScope::Phase,
                Some("request") => AllowScope::Request,
                Some(v) => return Err(format!("`allow:{v}`: expected phase or request")),
            };
            disruptive(a, Disruptive::Allow(scope))?
        }
        "redirect" => {
            a.redirect = Some(macros::parse(&need(&value)?)?);
            disruptive(a, Disruptive::Redirect)?
        }
        "status" => {
            let s: u16 = number(&need(&value)?, name)?;
            if !(100..600).contains(&s) {
                return Err(format!("status `{s}` is not an HTTP status"));
            }
            a.status = Some(s);
        }
        "skip" => a.skip = number(&need(&value)?, name)?,
        "skipafter" => a.skip_after = Some(need(&value)?),
        "msg" => a.msg = Some(macros::parse(&need(&value)?)?),
        "logdata" => a.logdata = Some(macros::parse(&need(&value)?)?),
        "tag" => a.tags.push(need(&value)?),
        "severity" => a.severity = Some(severity(&need(&value)?)?),
        "ver" => a.ver = Some(need(&value)?),
        "rev" => a.rev = Some(need(&value)?),
        "maturity" => a.maturity = Some(number(&need(&value)?, name)?),
        "accuracy" => a.accuracy = Some(number(&need(&value)?, name)?),
        "log" => a.log = Some(true),
        "nolog" => a.log = Some(false),
        "auditlog" => a.auditlog = Some(true),
        "noauditlog" => a.auditlog = Some(false),
        "capture" => a.capture = true,
        "multimatch" => a.multi_match = true,
        "t" => {
            let t = need(&value)?;
            if t.eq_ignore_ascii_case("none") {
                a.transforms_reset = true;
                a.transforms.clear();
            } else {
                a.transforms.push(
                    Transform::parse(&t)
                        .ok_or_else(|| format!("unsupported transformation `t:{t}`"))?,
                );
            }
        }
        "setvar" => a.setvars.push(setvar(&need(&value)?)?),
        "ctl" => a.ctls.push(ctl(&need(&value)?)?),
        "initcol" => {
            let v = need(&value)?;
            let (col, key) = v
                .split_once('=')
                .ok_or_else(|| format!("`initcol:{v}`: expected COLLECTION=KEY"))?;
            let var = Var::parse(col.trim())
                .filter(|v| v.is_persistent())
                .ok_or_else(|| format!("`initcol:{v}`: not a persistent collection"))?;
            a.initcols.push((var, macros::parse(key.trim())?));
        }
        "setenv" => {
            let v = need(&value)?;
            let (n, val) = v.split_once('=').unwrap_or((v.as_str(), "1"));
            a.setenvs.push((n.trim().to_string(), macros::parse(val)?));
        }
        other => return Err(format!("unsupported action `{other}`")),
    }
    Ok(())
}

fn number<T: std::str::FromStr>(v: &str, name: &str) -> Result<T, String> {
    v.trim()
        .trim_matches('\'')
        .parse()
        .map_err(|_| format!("`{name}:{v}` is not a number"))
}

fn severity(v: &str) -> Result<u8, String> {
    let names = [
        "EMERGENCY",
        "ALERT",
        "CRITICAL",
        "ERROR",
        "WARNING",
        "NOTICE",
        "INFO",
        "DEBUG",
    ];
    if let Ok(n @ 0..=7) = v.trim().parse::<u8>() {
        return Ok(n);
    }
    names
        .iter()
        .position(|n| n.eq_ignore_ascii_case(v.trim()))
        .map(|p| p as u8)
        .ok_or_else(|| format!("severity `{v}` is not 0–7 or a severity name"))
}

fn setvar(v: &str) -> Result<SetVar, String> {
    let (delete, body) = match v.trim().strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, v.trim()),
    };
    let (name, value) = match body.split_once('=') {
        Some((n, val)) => (n, Some(val)),
        None => (body, None),
    };
    let (col, key) = name
        .split_once('.')
        .ok_or_else(|| format!("`setvar:{v}`: expected COLLECTION.name"))?;
    let collection = Var::parse(col.trim())
        .filter(|c| c.is_writable())
        .ok_or_else(|| format!("`setvar:{v}`: `{col}` cannot be written"))?;
    let key = macros::parse(&key.trim().to_ascii_lowercase())?;
    let op = match (delete, value) {
        (true, _) => SetOp::Delete,
        (false, None) => SetOp::Set(macros::parse("1")?),
        (false, Some(val)) => {
            if let Some(n) = val.strip_prefix('+') {
                SetOp::Add(macros::parse(n)?)
            } else if let Some(n) = val.strip_prefix('-') {
                SetOp::Sub(macros::parse(n)?)
            } else {
                SetOp::Set(macros::parse(val)?)
            }
        }
    };
    Ok(SetVar {
        collection,
        key,
        op,
        slot: None,
    })
}

/// `ID`, `ID-ID`, several separated by spaces or commas.
pub fn id_ranges(v: &str) -> Result<IdRanges, String> {
    let mut out = Vec::new();
    for part in v.split([' ', ',']).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let a: u32 = a
            .trim()
            .parse()
            .map_err(|_| format!("bad rule id `{part}`"))?;
        let b: u32 = b
            .trim()
            .parse()
            .map_err(|_| format!("bad rule id `{part}`"))?;
        out.push((a.min(b), a.max(b)));
    }
    if out.is_empty() {
        return Err("no rule id".into());
    }
    Ok(IdRanges(out))
}

fn on_off(v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("`{v}`: expected On or Off")),
    }
}

pub fn engine_mode(v: &str) -> Result<EngineMode, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "on" => Ok(EngineMode::On),
        "off" => Ok(EngineMode::Off),
        "detectiononly" => Ok(EngineMode::DetectionOnly),
        _ => Err(format!("`{v}`: expected On, Off or DetectionOnly")),
    }
}

fn ctl(v: &str) -> Result<Ctl, String> {
    let (name, value) = v
        .split_once('=')
        .ok_or_else(|| format!("`ctl:{v}`: expected NAME=VALUE"))?;
    let value = value.trim();
    let target_of = |value: &str| -> Result<(String, crate::model::Exclusion), String> {
        let (who, var) = value
            .split_once(';')
            .ok_or_else(|| format!("`ctl:{v}`: expected WHO;VARIABLE"))?;
        Ok((who.trim().to_string(), targets::exclusion(var)?))
    };
    Ok(match name.trim().to_ascii_lowercase().as_str() {
        "ruleremovebyid" => Ctl::RuleRemoveById(id_ranges(value)?),
        "ruleremovebytag" => Ctl::RuleRemoveByTag(value.to_string()),
        "ruleremovebymsg" => Ctl::RuleRemoveByMsg(value.to_string()),
        "ruleremovetargetbyid" => {
            let (who, x) = target_of(value)?;
            Ctl::RuleRemoveTargetById(id_ranges(&who)?, x)
        }
        "ruleremovetargetbytag" => {
            let (who, x) = target_of(value)?;
            Ctl::RuleRemoveTargetByTag(who, x)
        }
        "ruleremovetargetbymsg" => {
            let (who, x) = target_of(value)?;
            Ctl::RuleRemoveTargetByMsg(who, x)
        }
        "ruleengine" => Ctl::RuleEngine(engine_mode(value)?),
        "requestbodyaccess" => Ctl::RequestBodyAccess(on_off(value)?),
        "responsebodyaccess" => Ctl::ResponseBodyAccess(on_off(value)?),
        "forcerequestbodyvariable" => Ctl::ForceRequestBodyVariable(on_off(value)?),
        "requestbodyprocessor" => Ctl::RequestBodyProcessor(
            BodyProcessor::parse(value)
                .ok_or_else(|| format!("unknown body processor `{value}`"))?,
        ),
        "requestbodylimit" => Ctl::RequestBodyLimit(number(value, "requestBodyLimit")?),
        "responsebodylimit" => Ctl::ResponseBodyLimit(number(value, "responseBodyLimit")?),
        "auditengine" | "auditlogparts" | "debugloglevel" => Ctl::Logging(v.to_string()),
        other => return Err(format!("unsupported ctl option `{other}`")),
    })
}

/// Splits `name[:value],…`; a value in single quotes may hold commas and
/// `\'`.
fn split(text: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let start = i;
        while i < b.len() && b[i] != b':' && b[i] != b',' {
            i += 1;
        }
        let name = text[start..i].trim().to_string();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("bad action `{}`", text[start..i].trim()));
        }
        if i >= b.len() || b[i] == b',' {
            out.push((name, None));
            continue;
        }
        i += 1; // ':'
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        let value = if b.get(i) == Some(&b'\'') {
            i += 1;
            let mut v = Vec::new();
            loop {
                match b.get(i) {
                    None => return Err(format!("the value of `{name}` is not closed")),
                    Some(b'\\') if b.get(i + 1) == Some(&b'\'') => {
                        v.push(b'\'');
                        i += 2;
                    }
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        v.push(c);
                        i += 1;
                    }
                }
            }
            String::from_utf8(v).map_err(|_| format!("the value of `{name}` is not UTF-8"))?
        } else {
            let vs = i;
            while i < b.len() && b[i] != b',' {
                i += 1;
            }
            text[vs..i].trim().to_string()
        };
        out.push((name, Some(value)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crs_actions() {
        let a = parse(
            "id:942100,phase:2,block,capture,t:none,t:utf8toUnicode,t:urlDecodeUni,msg:'SQL Injection Attack, via libinjection',logdata:'Matched Data: %{TX.0} found within %{MATCHED_VAR_NAME}: %{MATCHED_VAR}',tag:'attack-sqli',severity:'CRITICAL',setvar:'tx.inbound_anomaly_score_pl1=+%{tx.critical_anomaly_score}',ctl:ruleRemoveTargetById=920300;REQUEST_HEADERS:Accept",
        )
        .unwrap();
        assert_eq!(a.id, Some(942100));
        assert_eq!(a.phase, Some(2));
        assert_eq!(a.disruptive, Some(Disruptive::Block));
        assert!(a.capture && a.transforms_reset);
        assert_eq!(
            a.transforms,
            [Transform::Utf8ToUnicode, Transform::UrlDecodeUni]
        );
        assert_eq!(a.severity, Some(2));
        assert_eq!(a.tags, ["attack-sqli"]);
        assert!(matches!(a.setvars[0].op, SetOp::Add(_)));
        assert!(matches!(&a.ctls[0], Ctl::RuleRemoveTargetById(ids, _) if ids.contains(920300)));
        assert_eq!(
            a.msg.as_ref().unwrap().as_literal(),
            Some("SQL Injection Attack, via libinjection")
        );
    }

    #[test]
    fn errors_name_the_action() {
        assert!(parse("id:1,exec:/bin/sh").unwrap_err().contains("exec"));
        assert!(parse("id:1,t:md5").unwrap_err().contains("t:md5"));
        assert!(parse("id:x").unwrap_err().contains("id:x"));
        assert!(parse("phase:7").is_err());
        assert!(parse("setvar:request_uri.x=1").is_err());
        assert!(parse("msg:'open").is_err());
    }

    #[test]
    fn setvar_forms() {
        let a = parse("setvar:tx.a,setvar:!tx.b,setvar:'tx.c=-2',setvar:tx.d=x").unwrap();
        assert!(matches!(a.setvars[0].op, SetOp::Set(_)));
        assert!(matches!(a.setvars[1].op, SetOp::Delete));
        assert!(matches!(a.setvars[2].op, SetOp::Sub(_)));
        assert!(matches!(a.setvars[3].op, SetOp::Set(_)));
    }
}
