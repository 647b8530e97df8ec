//! The `waf` filter's configuration → a compiled rule set: which rules
//! (Wharf's baseline, the embedded OWASP CRS 4, files granted at
//! `/files`), the CRS settings (paranoia, thresholds) and the inspection
//! limits with their decision. One compiled set per distinct
//! configuration, shared by every route that has it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use seclang::{Files, Limits, Loader, MemFiles, PastLimit, RuleSet};
use wharf_guest::{Level, config, log};

/// Engine settings loaded before any rules (body access, limits, body
/// processors): ModSecurity's and Coraza's recommended configuration.
const ENGINE: &str = include_str!("../rules/wharf-engine.conf");
/// Wharf's baseline rules: the default when no rules are named.
const BASELINE: &str = include_str!("../rules/wharf-baseline.conf");

/// A compiled rule set and the limits its transactions run under.
pub struct Engine {
    pub rules: Arc<RuleSet>,
    pub limits: Limits,
}

/// The filter's settings, as read from `config` (per route).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Settings {
    ruleset: String,
    files: String,
    paranoia: Option<u8>,
    threshold: Option<u32>,
    detect_paranoia: Option<u8>,
    max_arguments: Option<usize>,
    max_body: Option<usize>,
    max_depth: Option<usize>,
    max_time_ms: Option<u64>,
    past_limit: String,
    /// `SecRuleEngine` after every rule file: `On`, `DetectionOnly`, `Off`.
    engine: Option<&'static str>,
}

thread_local! {
    /// Compiled engines by settings: routes with the same settings share one.
    static ENGINES: RefCell<HashMap<Settings, Rc<Engine>>> = RefCell::new(HashMap::new());
    /// Each route's engine, so a request reads no config.
    static ROUTES: RefCell<HashMap<String, Rc<Engine>>> = RefCell::new(HashMap::new());
}

/// The engine for the route `agent`, looked up on its first request.
pub fn for_route(agent: &str) -> Rc<Engine> {
    if let Some(e) = ROUTES.with(|r| r.borrow().get(agent).cloned()) {
        return e;
    }
    let e = current();
    ROUTES.with(|r| r.borrow_mut().insert(agent.to_string(), e.clone()));
    e
}

/// The engine for the current configuration, compiled on first use.
pub fn current() -> Rc<Engine> {
    let s = settings().unwrap_or_else(|e| fail(&e));
    if let Some(e) = ENGINES.with(|m| m.borrow().get(&s).cloned()) {
        return e;
    }
    let engine = Rc::new(compile(&s).unwrap_or_else(|e| fail(&e)));
    log(
        Level::Info,
        &format!(
            "waf: {} rules compiled ({})",
            engine.rules.rule_count(),
            if s.ruleset.is_empty() {
                "files"
            } else {
                s.ruleset.as_str()
            }
        ),
    );
    ENGINES.with(|m| m.borrow_mut().insert(s, engine.clone()));
    engine
}

/// Logs why the filter cannot work and traps: the host applies the
/// filter's failure mode (closed by default: the request fails).
pub fn fail(why: &str) -> ! {
    log(Level::Error, &format!("waf: {why}"));
    panic!("waf: {why}")
}

/// The config value `key` as a number within `range`, if set.
fn number<T>(key: &str, range: std::ops::RangeInclusive<T>) -> Result<Option<T>, String>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    let Some(text) = config(key) else {
        return Ok(None);
    };
    match text.trim().parse::<T>() {
        Ok(n) if range.contains(&n) => Ok(Some(n)),
        _ => Err(format!(
            "config `{key}` is {text:?}: expected a number from {} to {}",
            range.start(),
            range.end()
        )),
    }
}

fn settings() -> Result<Settings, String> {
    let files = config("rules").unwrap_or_default();
    let ruleset = match config("ruleset").as_deref().map(str::trim) {
        Some(r @ ("crs" | "baseline" | "none")) => r.to_string(),
        Some(other) => {
            return Err(format!(
                "config `ruleset` is {other:?}: expected \"baseline\", \"crs\" or \"none\""
            ));
        }
        // Named files alone replace the baseline.
        None if files.trim().is_empty() => "baseline".into(),
        None => "none".into(),
    };
    let past_limit = match config("past-limit").as_deref().map(str::trim) {
        None | Some("block") => "block".to_string(),
        Some("pass") => "pass".to_string(),
        Some(other) => {
            return Err(format!(
                "config `past-limit` is {other:?}: expected \"block\" or \"pass\""
            ));
        }
    };
    let engine = match config("engine").as_deref().map(str::trim) {
        None => None,
        Some("on") => Some("On"),
        Some("detection-only") => Some("DetectionOnly"),
        Some("off") => Some("Off"),
        Some(other) => {
            return Err(format!(
                "config `engine` is {other:?}: expected \"on\", \"detection-only\" or \"off\""
            ));
        }
    };
    Ok(Settings {
        engine,
        ruleset,
        files,
        paranoia: number("paranoia", 1..=4)?,
        threshold: number("anomaly-threshold", 1..=100_000)?,
        detect_paranoia: number("detection-paranoia", 1..=4)?,
        max_arguments: number("max-arguments", 1..=1_000_000)?,
        max_body: number("max-body", 1..=1 << 30)?,
        max_depth: number("max-depth", 1..=10_000)?,
        max_time_ms: number("max-time-ms", 1..=60_000)?,
        past_limit,
    })
}

fn compile(s: &Settings) -> Result<Engine, String> {
    let mut files = match s.ruleset.as_str() {
        "crs" => seclang::crs::files(),
        _ => MemFiles::new(),
    };
    files.add("(engine)", ENGINE);
    files.add("(settings)", settings_directives(s));
    let mut order: Vec<String> = vec!["(engine)".into(), "(settings)".into()];
    match s.ruleset.as_str() {
        "crs" => order.extend(seclang::crs::LOAD_ORDER.iter().map(|p| p.to_string())),
        "baseline" => {
            files.add("(baseline)", BASELINE);
            order.push("(baseline)".into());
        }
        _ => {}
    }
    let disk = DiskFiles;
    let chained = Chained {
        mem: &files,
        disk: &disk,
    };
    let mut loader = Loader::new(&chained);
    for name in &order {
        for path in files.glob(name) {
            let text = files.get(&path).unwrap_or_default();
            loader.load(&path, text).map_err(|e| e.to_string())?;
        }
    }
    for path in rule_files(&s.files)? {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read rule file {path}: {e}"))?;
        loader.load(&path, &text).map_err(|e| e.to_string())?;
    }
    if let Some(mode) = s.engine {
        loader
            .load("(engine mode)", &format!("SecRuleEngine {mode}\n"))
            .map_err(|e| e.to_string())?;
    }
    let rules = loader.finish().map_err(|e| e.to_string())?;
    let d = Limits::default();
    let limits = Limits {
        arguments: s.max_arguments.unwrap_or(d.arguments),
        body_bytes: s.max_body.unwrap_or(d.body_bytes),
        response_bytes: s.max_body.unwrap_or(d.response_bytes),
        depth: s.max_depth.unwrap_or(d.depth),
        time: s.max_time_ms.map_or(d.time, Duration::from_millis),
        past: if s.past_limit == "pass" {
            PastLimit::Pass
        } else {
            PastLimit::Block
        },
    };
    Ok(Engine {
        rules: Arc::new(rules),
        limits,
    })
}

/// The settings as the `SecAction`s CRS's `crs-setup.conf` documents
/// (ids 900000 and 900110), loaded before the rules; CRS and the
/// baseline both leave a value set here alone.
fn settings_directives(s: &Settings) -> String {
    let mut out = String::new();
    if let Some(p) = s.paranoia {
        let detect = s.detect_paranoia.unwrap_or(p).max(p);
        out.push_str(&format!(
            "SecAction \"id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level={p},setvar:tx.detection_paranoia_level={detect}\"\n"
        ));
    } else if let Some(d) = s.detect_paranoia {
        out.push_str(&format!(
            "SecAction \"id:900001,phase:1,pass,t:none,nolog,setvar:tx.detection_paranoia_level={d}\"\n"
        ));
    }
    if let Some(n) = s.threshold {
        out.push_str(&format!(
            "SecAction \"id:900110,phase:1,pass,t:none,nolog,setvar:tx.inbound_anomaly_score_threshold={n}\"\n"
        ));
    }
    out
}

/// The rule files `rules` names, below `/files`, in order; a name with `*`
/// in its last part stands for the matching files of its directory, sorted
/// (`rules/*.conf`, as CRS is loaded).
fn rule_files(rules: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for name in rules.split_whitespace() {
        let path = format!("/files/{}", name.trim_start_matches('/'));
        let (dir, pattern) = path.rsplit_once('/').unwrap_or(("/files", &path));
        let Some((prefix, suffix)) = pattern.split_once('*') else {
            out.push(path);
            continue;
        };
        let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list {dir}: {e}"))?;
        let mut matched: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|f| f.starts_with(prefix) && f.ends_with(suffix))
            .map(|f| format!("{dir}/{f}"))
            .collect();
        matched.sort();
        out.extend(matched);
    }
    Ok(out)
}

/// `Include` and `@pmFromFile` names in files read from `/files`: beside
/// the rule file that names them.
struct DiskFiles;

impl Files for DiskFiles {
    fn read(&self, name: &str, from: &str) -> Result<String, String> {
        let dir = from.rsplit_once('/').map_or("/files", |(d, _)| d);
        let path = if name.starts_with('/') {
            name.to_string()
        } else {
            format!("{dir}/{name}")
        };
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))
    }
}

/// Embedded files for embedded rules, the disk for rule files from `/files`.
struct Chained<'a> {
    mem: &'a MemFiles,
    disk: &'a DiskFiles,
}

impl Files for Chained<'_> {
    fn read(&self, name: &str, from: &str) -> Result<String, String> {
        if from.starts_with("/files") {
            self.disk.read(name, from)
        } else {
            self.mem.read(name, from)
        }
    }
}
