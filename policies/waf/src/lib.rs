//! `waf`: a web application firewall filter that runs ModSecurity SecLang
//! rule sets (the OWASP Core Rule Set, or Wharf's baseline) with the
//! `zentinel-modsec` engine. The four phases map onto ModSecurity's phases
//! 1–4 on one transaction per request; anomaly scoring and paranoia levels
//! are the rule set's own (`tx.blocking_paranoia_level`,
//! `tx.inbound_anomaly_score_threshold`).
//!
//! Config (per filter, overridable per route):
//! - `rules`: rule files, space-separated, read from the directory the
//!   filter's `files` grants (seen as `/files`); default: the baseline
//!   rule file compiled into the filter.
//! - `paranoia` (1–4) and `anomaly-threshold`: set before the rules run.
//! - `response`: `"on"` inspects responses too (phases 3 and 4).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use wharf_guest::filter::{Phases, Verdict};
use wharf_guest::{Head, Level, config, header_pairs, json_string, log};
use zentinel_modsec::parser::{Action, LoggingAction, MetadataAction};
use zentinel_modsec::{ModSecurity, Transaction};

const BASELINE: &str = include_str!("../rules/wharf-baseline.conf");

/// What the audit shows of one rule.
#[derive(Default)]
struct RuleInfo {
    msg: String,
    tags: Vec<String>,
    nolog: bool,
    /// The rule's `status:` action: the engine answers every `deny` with
    /// 403, so the filter applies the rule's own status itself.
    status: Option<u16>,
}

/// A compiled rule set and what the audit needs of its rules.
struct Engine {
    modsec: ModSecurity,
    rules: HashMap<String, RuleInfo>,
}

thread_local! {
    /// Compiled engines by configuration: an instance serving several
    /// routes with different settings compiles each once.
    static ENGINES: RefCell<HashMap<String, Rc<Engine>>> = RefCell::new(HashMap::new());
    /// Each route's engine, so a request reads no config.
    static ROUTES: RefCell<HashMap<String, Rc<Engine>>> = RefCell::new(HashMap::new());
    /// The current request's transaction, from its first phase to its last.
    static TX: RefCell<Option<(Rc<Engine>, Transaction)>> = const { RefCell::new(None) };
}

/// The engine for the route `agent`, looked up on its first request.
fn engine_for(agent: &str) -> Rc<Engine> {
    if let Some(e) = ROUTES.with(|r| r.borrow().get(agent).cloned()) {
        return e;
    }
    let e = engine();
    ROUTES.with(|r| r.borrow_mut().insert(agent.to_string(), e.clone()));
    e
}

/// The engine for the current route's configuration, compiled on first use.
fn engine() -> Rc<Engine> {
    let rules = config("rules").unwrap_or_default();
    let paranoia = config("paranoia").unwrap_or_default();
    let threshold = config("anomaly-threshold").unwrap_or_default();
    let key = format!("{rules}\u{0}{paranoia}\u{0}{threshold}");
    if let Some(e) = ENGINES.with(|e| e.borrow().get(&key).cloned()) {
        return e;
    }
    let mut text = String::new();
    if let Ok(n) = paranoia.parse::<u8>() {
        text.push_str(&format!(
            "SecAction \"id:900000,phase:1,pass,nolog,setvar:tx.blocking_paranoia_level={}\"\n",
            n.clamp(1, 4)
        ));
    }
    if let Ok(n) = threshold.parse::<u32>() {
        text.push_str(&format!(
            "SecAction \"id:900110,phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold={n}\"\n"
        ));
    }
    if rules.trim().is_empty() {
        text.push_str(BASELINE);
    }
    for path in rule_files(&rules) {
        match std::fs::read_to_string(&path) {
            Ok(body) => {
                text.push_str(&with_data_paths(&body, &path));
                text.push('\n');
            }
            Err(e) => fail(&format!("cannot read rule file {path}: {e}")),
        }
    }
    let modsec = ModSecurity::from_string(&text)
        .unwrap_or_else(|e| fail(&format!("cannot compile the rules: {e}")));
    let engine = Rc::new(Engine {
        rules: rule_infos(&modsec),
        modsec,
    });
    log(
        Level::Info,
        &format!("waf: {} rules compiled", engine.modsec.rule_count()),
    );
    ENGINES.with(|e| e.borrow_mut().insert(key, engine.clone()));
    engine
}

/// The rule files `rules` names, below `/files`, in order; a name with `*`
/// in its last part stands for the matching files of its directory, sorted
/// (`rules/*.conf`, as CRS is loaded).
fn rule_files(rules: &str) -> Vec<String> {
    let mut out = Vec::new();
    for name in rules.split_whitespace() {
        let path = format!("/files/{}", name.trim_start_matches('/'));
        let (dir, pattern) = path.rsplit_once('/').unwrap_or(("/files", &path));
        let Some((prefix, suffix)) = pattern.split_once('*') else {
            out.push(path);
            continue;
        };
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| fail(&format!("cannot list {dir}: {e}")));
        let mut matched: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|f| f.starts_with(prefix) && f.ends_with(suffix))
            .map(|f| format!("{dir}/{f}"))
            .collect();
        matched.sort();
        out.extend(matched);
    }
    out
}

/// `@pmFromFile` and `@ipMatchFromFile` name data files relative to their
/// rule file (CRS's `.data` files); the engine opens them as given, so
/// they are made absolute here.
fn with_data_paths(rules: &str, rule_file: &str) -> String {
    let dir = rule_file.rsplit_once('/').map_or("/files", |(d, _)| d);
    let mut out = rules.to_string();
    for op in ["@pmFromFile ", "@pmf ", "@ipMatchFromFile "] {
        out = out.replace(op, &format!("{op}{dir}/"));
    }
    // A name that was already absolute now has the directory twice.
    out.replace(&format!("{dir}//"), "/")
}

/// Logs why the filter cannot work and traps: the host applies the
/// filter's failure mode (closed by default: the request fails).
fn fail(why: &str) -> ! {
    log(Level::Error, &format!("waf: {why}"));
    panic!("waf: {why}")
}

fn rule_infos(modsec: &ModSecurity) -> HashMap<String, RuleInfo> {
    use zentinel_modsec::engine::phase::Phase;
    let mut out = HashMap::new();
    for phase in Phase::all() {
        for rule in modsec.ruleset().rules_for_phase(*phase) {
            let Some(id) = &rule.id else { continue };
            let mut info = RuleInfo::default();
            for action in &rule.actions {
                match action {
                    Action::Metadata(MetadataAction::Msg(m)) => info.msg = m.clone(),
                    Action::Metadata(MetadataAction::Tag(t)) => info.tags.push(t.clone()),
                    Action::Logging(LoggingAction::NoLog) => info.nolog = true,
                    Action::Metadata(MetadataAction::Status(s)) => info.status = Some(*s),
                    _ => {}
                }
            }
            out.insert(id.clone(), info);
        }
    }
    out
}

/// Starts the request's transaction: URI, method and headers.
fn begin(head: &[u8], headers: &[u8]) -> Result<(), String> {
    let head = Head::decode(head).map_err(|e| format!("head: {e}"))?;
    let engine = engine_for(&head.agent);
    let mut tx = engine.modsec.new_transaction();
    let uri = if head.query.is_empty() {
        head.path.clone()
    } else {
        format!("{}?{}", head.path, head.query)
    };
    if let Some((ip, port)) = head.client.rsplit_once(':') {
        tx.set_client_addr(ip.trim_matches(['[', ']']), port.parse().unwrap_or(0));
    }
    let e = |e: zentinel_modsec::Error| e.to_string();
    tx.process_uri(&uri, &head.method, "HTTP/1.1").map_err(e)?;
    for (name, value) in header_pairs(headers)? {
        tx.add_request_header(name, &String::from_utf8_lossy(value))
            .map_err(e)?;
    }
    tx.process_request_headers().map_err(e)?;
    TX.with(|t| *t.borrow_mut() = Some((engine, tx)));
    Ok(())
}

/// Runs `step` on the request's transaction and turns what it found into
/// a verdict: a block naming the rules when the rule set intervened,
/// audit data for every logged rule that matched.
fn step(
    phase: &str,
    f: impl FnOnce(&mut Transaction) -> Result<(), zentinel_modsec::Error>,
) -> Verdict {
    TX.with(|t| {
        let mut slot = t.borrow_mut();
        let Some((engine, tx)) = slot.as_mut() else {
            return Verdict::allow();
        };
        let before = tx.matched_rules().len();
        if let Err(e) = f(tx) {
            fail(&format!("{phase}: {e}"));
        }
        verdict(engine, tx, before)
    })
}

/// The logged rules among `ids`, as audit data.
fn audit_of(engine: &Engine, ids: &[String]) -> Verdict {
    let mut v = Verdict::allow();
    for id in ids {
        let info = engine.rules.get(id);
        if info.is_some_and(|i| i.nolog) {
            continue;
        }
        v.audit.rule_ids.push(id.clone());
        if let Some(info) = info {
            for tag in &info.tags {
                if !v.audit.tags.contains(tag) {
                    v.audit.tags.push(tag.clone());
                }
            }
            if v.audit.reason.is_empty() && !info.msg.is_empty() {
                v.audit.reason = info.msg.clone();
            }
        }
    }
    v
}

fn verdict(engine: &Engine, tx: &Transaction, before: usize) -> Verdict {
    let mut v = audit_of(engine, &tx.matched_rules()[before..]);
    if let Some(i) = tx.intervention() {
        let score = tx.anomaly_score();
        v = v.meta("waf.score", &score.to_string());
        if let Some(url) = &i.url {
            let mut r = Verdict::redirect(302, url);
            r.audit = v.audit;
            r.metadata = v.metadata;
            return r;
        }
        // The answer names every rule that contributed, in any phase.
        let whole = audit_of(engine, tx.matched_rules());
        let rules = whole.audit.rule_ids;
        let reason = if whole.audit.reason.is_empty() {
            "blocked by a rule".to_string()
        } else {
            whole.audit.reason
        };
        let body = format!(
            "{{\"error\":{{\"code\":\"blocked\",\"message\":{},\"rule_ids\":[{}]}}}}",
            json_string(&reason),
            rules
                .iter()
                .map(|r| json_string(r))
                .collect::<Vec<_>>()
                .join(",")
        );
        let status = i
            .rule_ids
            .iter()
            .find_map(|id| engine.rules.get(id).and_then(|r| r.status))
            .unwrap_or(i.status);
        let status = if (400..600).contains(&status) {
            status
        } else {
            403
        };
        let mut b = Verdict::block(status, &[("content-type", "application/json")], body);
        b.audit = v.audit;
        b.metadata = v.metadata;
        return b;
    }
    v
}

/// Whether the request announces a body (otherwise phase 2 runs at once).
fn has_body(headers: &[u8]) -> bool {
    header_pairs(headers)
        .unwrap_or_default()
        .iter()
        .any(|(n, v)| (*n == "content-length" && *v != b"0") || *n == "transfer-encoding")
}

struct Waf;

unsafe extern "C" {
    /// wasi-libc's: forgets the preopened directories it has looked up.
    fn __wasilibc_reset_preopens();
}

impl wharf_guest::filter::PreinitGuest for Waf {
    /// Compiles the rule set of the filter's own config at load time; the
    /// host snapshots the instance, so no instance compiles it again.
    fn preinit() {
        warm_up(&engine());
        // The preopens wasi-libc looked up are handles of this instance,
        // stale in the snapshot: later rule loads must look them up anew.
        unsafe { __wasilibc_reset_preopens() }
    }

    fn phases() -> Phases {
        let mut p = Phases::REQUEST_HEADERS | Phases::REQUEST_BODY;
        if config("response").as_deref() == Some("on") {
            p |= Phases::RESPONSE_HEADERS | Phases::RESPONSE_BODY;
        }
        p
    }

    fn on_request_headers(head: Vec<u8>, headers: Vec<u8>) -> Verdict {
        if let Err(e) = begin(&head, &headers) {
            fail(&e);
        }
        let v = step("phase 1", |_| Ok(()));
        if !matches!(v.decision, wharf_guest::filter::Decision::Allow) {
            return v;
        }
        if has_body(&headers) {
            return merge(v, Verdict::allow().want_body());
        }
        // No body: phase 2 (where the ARGS rules live) runs now.
        merge(v, step("phase 2", |tx| tx.process_request_body()))
    }

    fn on_request_body(_head: Vec<u8>, _headers: Vec<u8>, body: Vec<u8>) -> Verdict {
        step("phase 2", |tx| {
            tx.append_request_body(&body)?;
            tx.process_request_body()
        })
    }

    fn on_response_headers(
        _head: Vec<u8>,
        _headers: Vec<u8>,
        status: u16,
        resp: Vec<u8>,
    ) -> Verdict {
        let _ = status;
        step("phase 3", |tx| {
            for (name, value) in header_pairs(&resp).unwrap_or_default() {
                tx.add_response_header(name, &String::from_utf8_lossy(value))?;
            }
            tx.process_response_headers()
        })
        .want_body()
    }

    fn on_response_body(
        _head: Vec<u8>,
        _headers: Vec<u8>,
        _status: u16,
        _resp: Vec<u8>,
        body: Vec<u8>,
    ) -> Verdict {
        step("phase 4", |tx| {
            tx.append_response_body(&body)?;
            tx.process_response_body()
        })
    }
}

/// Inputs `preinit` runs through the engine: one clean request, then one
/// of each attack class the baseline names. Matching builds each regex's
/// lazy search state (and, for a match, its capture state); run here, that
/// state is in the snapshot instead of being built by every fresh instance.
const WARM_UP: &[&str] = &[
    "wharf",
    "1' OR '1'='1",
    "<script>alert(1)</script>",
    "../../../../etc/passwd",
    "; cat /etc/passwd",
    "${jndi:ldap://x/a}",
];

/// Runs the [`WARM_UP`] inputs as query and form values through every
/// phase, each in its own transaction.
fn warm_up(engine: &Engine) {
    for input in WARM_UP {
        let encoded: String = input
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'_' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let body = format!("name=wharf&q={encoded}");
        let mut tx = engine.modsec.new_transaction();
        let _ = tx.process_uri(&format!("/warm-up?q={encoded}"), "POST", "HTTP/1.1");
        let length = body.len().to_string();
        for (name, value) in [
            ("host", "localhost"),
            ("user-agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0"),
            ("accept", "*/*"),
            ("content-type", "application/x-www-form-urlencoded"),
            ("content-length", length.as_str()),
            ("cookie", "session=wharf"),
        ] {
            let _ = tx.add_request_header(name, value);
        }
        let _ = tx.process_request_headers();
        let _ = tx.append_request_body(body.as_bytes());
        let _ = tx.process_request_body();
        let _ = tx.add_response_header("content-type", "text/plain");
        let _ = tx.process_response_headers();
        let _ = tx.append_response_body(b"warm");
        let _ = tx.process_response_body();
    }
}

/// The audit data of `a` with the decision and flags of `b` added.
fn merge(a: Verdict, mut b: Verdict) -> Verdict {
    let mut out = a;
    out.want_body |= b.want_body;
    out.audit.rule_ids.append(&mut b.audit.rule_ids);
    for tag in b.audit.tags {
        if !out.audit.tags.contains(&tag) {
            out.audit.tags.push(tag);
        }
    }
    if out.audit.reason.is_empty() {
        out.audit.reason = b.audit.reason;
    }
    out.metadata.append(&mut b.metadata);
    if !matches!(b.decision, wharf_guest::filter::Decision::Allow) {
        out.decision = b.decision;
    }
    out
}

wharf_guest::export_filter_preinit!(Waf);
