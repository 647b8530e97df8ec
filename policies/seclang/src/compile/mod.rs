//! Directives → [`RuleSet`]: rules in phase order with their chains,
//! `SecDefaultAction` applied, `block` resolved, markers placed, removals
//! and target updates applied, transformation chains interned, and the
//! literal prefilter built. Every directive is either implemented, or
//! accepted with a notice saying why it changes nothing here (logging the
//! host owns), or refused with `file:line`.

pub mod literals;
pub mod prefilter;
mod tx_names;

use std::collections::HashMap;

use crate::Files;
use crate::error::{ErrorKind, LoadError, Location};
use crate::model::{Actions, Disruptive, ParsedRule};
use crate::operator::{self, OpKind, Param, StrOp};
use crate::parse::{self, actions, lexer, targets};
use crate::ruleset::{
    ChainDef, ChainId, ColumnDef, Config, Lane, LimitAction, Quick, Rule, RuleIdx, RuleSet, Step,
};
use crate::transform::Transform;

/// What `SecDefaultAction` sets for the rules of one phase that follow.
#[derive(Debug, Clone)]
struct Defaults {
    disruptive: Disruptive,
    status: Option<u16>,
    log: bool,
    auditlog: bool,
    transforms: Vec<Transform>,
}

impl Default for Defaults {
    fn default() -> Defaults {
        Defaults {
            disruptive: Disruptive::Pass,
            status: None,
            log: true,
            auditlog: true,
            transforms: Vec::new(),
        }
    }
}

/// Reads rule files into a [`RuleSet`].
pub struct Loader<'f> {
    files: &'f dyn Files,
    config: Config,
    defaults: [Defaults; 6],
    rules: Vec<Rule>,
    phases: [Vec<Step>; 6],
    by_id: HashMap<u32, RuleIdx>,
    /// Each rule's transformations (interned when the set is built).
    transforms: Vec<Vec<Transform>>,
    /// The last rule of a chain still waiting for its next link.
    open_chain: Option<RuleIdx>,
    removals: Vec<(Location, Removal)>,
    updates: Vec<(Location, Update)>,
    notices: Vec<String>,
    depth: usize,
}

enum Removal {
    Ids(crate::model::IdRanges),
    Tag(String),
    Msg(String),
}

enum Update {
    Targets(Selector, String),
    Actions(u32, Box<Actions>),
}

enum Selector {
    Id(crate::model::IdRanges),
    Tag(String),
    Msg(String),
}

impl<'f> Loader<'f> {
    pub fn new(files: &'f dyn Files) -> Loader<'f> {
        Loader {
            files,
            config: Config::default(),
            defaults: Default::default(),
            rules: Vec::new(),
            phases: Default::default(),
            by_id: HashMap::new(),
            transforms: Vec::new(),
            open_chain: None,
            removals: Vec::new(),
            updates: Vec::new(),
            notices: Vec::new(),
            depth: 0,
        }
    }

    /// Loads the text of one rule file.
    pub fn load(&mut self, file: &str, text: &str) -> Result<(), LoadError> {
        for s in lexer::statements(file, text)? {
            self.directive(&s)?;
        }
        Ok(())
    }

    fn directive(&mut self, s: &lexer::Statement) -> Result<(), LoadError> {
        let err = |k: ErrorKind| LoadError::new(&s.at, k);
        let arg = |i: usize| -> Result<&str, LoadError> {
            s.args.get(i).map(String::as_str).ok_or_else(|| {
                LoadError::new(
                    &s.at,
                    ErrorKind::Syntax(format!("{} needs an argument", s.name)),
                )
            })
        };
        let syntax = |e: String| LoadError::new(&s.at, ErrorKind::Syntax(e));
        let name = s.name.to_ascii_lowercase();
        if self.open_chain.is_some() && name != "secrule" {
            return Err(err(ErrorKind::Invalid(format!(
                "`{}` follows a rule with `chain`: the chain needs a SecRule",
                s.name
            ))));
        }
        match name.as_str() {
            "secrule" | "secaction" => {
                let rule = parse::rule(s, self.files)?;
                self.add_rule(rule)?;
            }
            "secmarker" => {
                let marker = arg(0)?.to_string();
                for phase in 1..=5 {
                    self.phases[phase].push(Step::Marker(marker.clone()));
                }
            }
            "secdefaultaction" => {
                let a = actions::parse(arg(0)?).map_err(syntax)?;
                let phase = a.phase.ok_or_else(|| {
                    err(ErrorKind::Invalid("SecDefaultAction needs a phase".into()))
                })?;
                if a.id.is_some() || a.chain || a.skip_after.is_some() {
                    return Err(err(ErrorKind::Invalid(
                        "SecDefaultAction cannot set id, chain or skipAfter".into(),
                    )));
                }
                let d = &mut self.defaults[phase as usize];
                *d = Defaults::default();
                if let Some(x) = a.disruptive {
                    if x == Disruptive::Block {
                        return Err(err(ErrorKind::Invalid(
                            "SecDefaultAction cannot be `block`".into(),
                        )));
                    }
                    d.disruptive = x;
                }
                d.status = a.status;
                d.log = a.log.unwrap_or(true);
                d.auditlog = a.auditlog.unwrap_or(d.log);
                d.transforms = a.transforms;
            }
            "secruleengine" => self.config.engine = actions::engine_mode(arg(0)?).map_err(syntax)?,
            "secrequestbodyaccess" => self.config.request_body_access = on_off(arg(0)?).map_err(syntax)?,
            "secresponsebodyaccess" => self.config.response_body_access = on_off(arg(0)?).map_err(syntax)?,
            "secrequestbodylimit" => self.config.request_body_limit = number(arg(0)?).map_err(syntax)?,
            "secrequestbodynofileslimit" => {
                self.config.request_body_no_files_limit = number(arg(0)?).map_err(syntax)?
            }
            "secresponsebodylimit" => self.config.response_body_limit = number(arg(0)?).map_err(syntax)?,
            "secrequestbodylimitaction" => {
                self.config.request_body_limit_action = limit_action(arg(0)?).map_err(syntax)?
            }
            "secresponsebodylimitaction" => {
                self.config.response_body_limit_action = limit_action(arg(0)?).map_err(syntax)?
            }
            "secresponsebodymimetype" => self
                .config
                .response_mime_types
                .extend(s.args.iter().flat_map(|a| a.split_whitespace()).map(str::to_ascii_lowercase)),
            "secresponsebodymimetypesclear" => self.config.response_mime_types.clear(),
            "secargumentslimit" => self.config.arguments_limit = number(arg(0)?).map_err(syntax)? as usize,
            "secrequestbodyjsondepthlimit" => {
                self.config.json_depth_limit = number(arg(0)?).map_err(syntax)? as usize
            }
            "secargumentseparator" => {
                let a = arg(0)?;
                if a.len() != 1 {
                    return Err(syntax(format!("`{a}`: the separator is one character")));
                }
                self.config.argument_separator = a.as_bytes()[0];
            }
            "seccookieformat" => {
                if arg(0)? != "0" {
                    return Err(err(ErrorKind::Invalid(
                        "only version 0 cookies (SecCookieFormat 0) are parsed".into(),
                    )));
                }
            }
            "seccomponentsignature" => self.config.component_signature.push(arg(0)?.to_string()),
            "secruleremovebyid" => {
                let ids = actions::id_ranges(&s.args.join(" ")).map_err(syntax)?;
                self.removals.push((s.at.clone(), Removal::Ids(ids)));
            }
            "secruleremovebytag" => self.removals.push((s.at.clone(), Removal::Tag(arg(0)?.into()))),
            "secruleremovebymsg" => self.removals.push((s.at.clone(), Removal::Msg(arg(0)?.into()))),
            "secruleupdatetargetbyid" | "secruleupdatetargetbytag" | "secruleupdatetargetbymsg" => {
                let who = match name.as_str() {
                    "secruleupdatetargetbyid" => Selector::Id(actions::id_ranges(arg(0)?).map_err(syntax)?),
                    "secruleupdatetargetbytag" => Selector::Tag(arg(0)?.into()),
                    _ => Selector::Msg(arg(0)?.into()),
                };
                let replace = s.args.len() > 2;
                if replace {
                    return Err(err(ErrorKind::Invalid(
                        "SecRuleUpdateTarget… with a replaced target is not supported; add and exclude targets instead".into(),
                    )));
                }
                self.updates.push((s.at.clone(), Update::Targets(who, arg(1)?.to_string())));
            }
            "secruleupdateactionbyid" => {
                let id: u32 = arg(0)?.parse().map_err(|_| syntax(format!("`{}` is not a rule id", s.args[0])))?;
                let a = actions::parse(arg(1)?).map_err(syntax)?;
                self.updates.push((s.at.clone(), Update::Actions(id, Box::new(a))));
            }
            "include" => self.include(s, arg(0)?)?,
            "secauditengine" | "secauditlog" | "secauditlog2" | "secauditlogparts" | "secauditlogtype"
            | "secauditlogformat" | "secauditlogrelevantstatus" | "secauditlogstoragedir"
            | "secauditlogdirmode" | "secauditlogfilemode" | "secdebuglog" | "secdebugloglevel" => {
                self.notice(&s.at, &s.name, "Wharf writes the audit log and logs (see `audit` in the KDL file)")
            }
            "secrequestbodyinmemorylimit" | "sectmpdir" | "secdatadir" | "secuploaddir"
            | "secuploadkeepfiles" | "secuploadfilemode" | "secuploadfilelimit" | "seccollectiontimeout"
            | "secpcrematchlimit" | "secpcrematchlimitrecursion" | "secstatusengine" | "sectmpsaveuploadedfiles" => {
                self.notice(
                    &s.at,
                    &s.name,
                    "bodies are inspected in memory, nothing is written to disk or kept across requests, and regular expressions cannot backtrack",
                )
            }
            _ => return Err(err(ErrorKind::UnsupportedDirective(s.name.clone()))),
        }
        Ok(())
    }

    fn notice(&mut self, at: &Location, name: &str, why: &str) {
        self.notices
            .push(format!("{at}: `{name}` has no effect: {why}"));
    }

    fn include(&mut self, s: &lexer::Statement, path: &str) -> Result<(), LoadError> {
        if self.depth > 8 {
            return Err(LoadError::new(
                &s.at,
                ErrorKind::Invalid("Include nests too deep".into()),
            ));
        }
        let text = self.files.read(path, &s.at.file).map_err(|e| {
            LoadError::new(&s.at, ErrorKind::File(format!("Include `{path}`: {e}")))
        })?;
        self.depth += 1;
        let r = self.load(path, &text);
        self.depth -= 1;
        r
    }

    fn add_rule(&mut self, parsed: ParsedRule) -> Result<(), LoadError> {
        let err = |m: &str| LoadError::new(&parsed.at, ErrorKind::Invalid(m.to_string()));
        let idx = self.rules.len() as RuleIdx;
        let a = &parsed.actions;
        let (phase, id, link) = match self.open_chain.take() {
            Some(prev) => {
                let starter = &self.rules[prev as usize];
                if a.id.is_some() {
                    return Err(err("a chained rule cannot have an id"));
                }
                if a.disruptive.is_some() || a.skip_after.is_some() || a.skip > 0 {
                    return Err(err(
                        "disruptive actions, skip and skipAfter belong to the chain's first rule",
                    ));
                }
                if a.phase.is_some_and(|p| p != starter.phase) {
                    return Err(err("a chained rule cannot change the phase"));
                }
                let (phase, id) = (starter.phase, starter.id);
                self.rules[prev as usize].next = Some(idx);
                (phase, id, true)
            }
            None => {
                let id = a.id.ok_or_else(|| err("a rule needs an id"))?;
                if id == 0 {
                    return Err(err("rule id 0 is not allowed"));
                }
                if self.by_id.insert(id, idx).is_some() {
                    return Err(err(&format!("rule id {id} is used twice")));
                }
                (a.phase.unwrap_or(2), id, false)
            }
        };
        let d = self.defaults[phase as usize].clone();
        let mut transforms = if a.transforms_reset {
            Vec::new()
        } else {
            d.transforms.clone()
        };
        transforms.extend(a.transforms.iter().copied());
        let disruptive = (!link).then(|| match a.disruptive.unwrap_or(d.disruptive) {
            Disruptive::Block => d.disruptive,
            x => x,
        });
        let log = a.log.unwrap_or(d.log);
        let rule = Rule {
            id,
            phase,
            at: parsed.at.clone(),
            targets: parsed.targets,
            exclusions: parsed.exclusions,
            op: parsed.operator,
            chain: 0,
            multi_match: a.multi_match,
            capture: a.capture,
            setvars: a.setvars.clone(),
            ctls: a.ctls.clone(),
            initcols: a.initcols.clone(),
            setenvs: a.setenvs.clone(),
            disruptive,
            status: a.status.or(d.status),
            redirect: a.redirect.clone(),
            skip: a.skip,
            skip_after: a.skip_after.clone(),
            msg: a.msg.clone(),
            logdata: a.logdata.clone(),
            tags: a.tags.clone(),
            severity: a.severity,
            ver: a.ver.clone(),
            log,
            auditlog: a.auditlog.unwrap_or(if a.log == Some(false) {
                false
            } else {
                d.auditlog
            }),
            next: None,
            link,
            prefilter: None,
            classes: None,
            lanes: 0,
        };
        if a.chain {
            self.open_chain = Some(idx);
        }
        self.rules.push(rule);
        self.transforms.push(transforms);
        if !link {
            self.phases[phase as usize].push(Step::Rule(idx));
        }
        Ok(())
    }
}

impl Loader<'_> {
    /// Builds the rule set: applies removals and updates, checks markers,
    /// interns transformation chains and builds the prefilter.
    pub fn finish(mut self) -> Result<RuleSet, LoadError> {
        if let Some(open) = self.open_chain {
            let at = &self.rules[open as usize].at;
            return Err(LoadError::new(
                at,
                ErrorKind::Invalid("the last rule has `chain` but no rule follows".into()),
            ));
        }
        self.apply_updates()?;
        self.apply_removals();
        self.check_markers()?;
        let chains = self.intern_chains();
        let prefilter = self.build_prefilter()?;
        let (lanes, columns) = lanes(&mut self.rules, &chains);
        let mut tx_names = tx_names::TxNames::default();
        for r in &mut self.rules {
            tx_names.number_rule(r);
        }
        let quick = self.rules.iter().map(|r| quick(r, &lanes)).collect();
        let skip_to = std::array::from_fn(|phase| skip_targets(&self.phases[phase], &self.rules));
        Ok(RuleSet {
            rules: self.rules,
            phases: self.phases,
            skip_to,
            config: self.config,
            chains,
            prefilter,
            lanes,
            columns: columns.defs,
            column_paths: columns.paths,
            bases: columns.bases.len() as u32,
            quick,
            tx_names: tx_names.into_names(),
            by_id: self.by_id,
            notices: self.notices,
        })
    }

    fn matching(&self, who: &Selector) -> Vec<RuleIdx> {
        self.rules
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.link)
            .filter(|(_, r)| match who {
                Selector::Id(ids) => ids.contains(r.id),
                Selector::Tag(t) => r.tags.iter().any(|x| x == t),
                Selector::Msg(m) => r.msg.as_ref().and_then(|x| x.as_literal()) == Some(m.as_str()),
            })
            .map(|(i, _)| i as RuleIdx)
            .collect()
    }

    fn apply_updates(&mut self) -> Result<(), LoadError> {
        for (at, update) in std::mem::take(&mut self.updates) {
            match update {
                Update::Targets(who, text) => {
                    let (t, x) = targets::parse(&text)
                        .map_err(|e| LoadError::new(&at, ErrorKind::Syntax(e)))?;
                    let hit = self.matching(&who);
                    if hit.is_empty() {
                        self.notices
                            .push(format!("{at}: the target update matches no rule"));
                    }
                    for i in hit {
                        let r = &mut self.rules[i as usize];
                        r.targets.extend(t.iter().cloned());
                        r.exclusions.extend(x.iter().cloned());
                    }
                }
                Update::Actions(id, a) => {
                    let Some(&i) = self.by_id.get(&id) else {
                        self.notices
                            .push(format!("{at}: SecRuleUpdateActionById: no rule {id}"));
                        continue;
                    };
                    let r = &mut self.rules[i as usize];
                    if let Some(d) = a.disruptive {
                        r.disruptive = Some(if d == Disruptive::Block {
                            self.defaults[r.phase as usize].disruptive
                        } else {
                            d
                        });
                    }
                    if a.status.is_some() {
                        r.status = a.status;
                    }
                    if a.msg.is_some() {
                        r.msg = a.msg;
                    }
                    if a.logdata.is_some() {
                        r.logdata = a.logdata;
                    }
                    if a.severity.is_some() {
                        r.severity = a.severity;
                    }
                    if let Some(l) = a.log {
                        r.log = l;
                    }
                    r.tags.extend(a.tags);
                    r.setvars.extend(a.setvars);
                    r.ctls.extend(a.ctls);
                    if !a.transforms.is_empty() || a.transforms_reset {
                        let t = &mut self.transforms[i as usize];
                        if a.transforms_reset {
                            t.clear();
                        }
                        t.extend(a.transforms);
                    }
                }
            }
        }
        Ok(())
    }

    fn apply_removals(&mut self) {
        let mut removed = vec![false; self.rules.len()];
        for (_, removal) in std::mem::take(&mut self.removals) {
            let who = match removal {
                Removal::Ids(ids) => Selector::Id(ids),
                Removal::Tag(t) => Selector::Tag(t),
                Removal::Msg(m) => Selector::Msg(m),
            };
            for i in self.matching(&who) {
                removed[i as usize] = true;
            }
        }
        for steps in &mut self.phases {
            steps.retain(|s| !matches!(s, Step::Rule(i) if removed[*i as usize]));
        }
        self.by_id.retain(|_, i| !removed[*i as usize]);
    }

    fn check_markers(&self) -> Result<(), LoadError> {
        let known: std::collections::HashSet<&str> = self.phases[1]
            .iter()
            .filter_map(|s| match s {
                Step::Marker(m) => Some(m.as_str()),
                Step::Rule(_) => None,
            })
            .collect();
        for r in &self.rules {
            if let Some(m) = &r.skip_after
                && !known.contains(m.as_str())
            {
                return Err(LoadError::new(
                    &r.at,
                    ErrorKind::Invalid(format!(
                        "skipAfter names `{m}`, which no SecMarker defines"
                    )),
                ));
            }
        }
        Ok(())
    }

    fn intern_chains(&mut self) -> Vec<ChainDef> {
        let mut ids: HashMap<Vec<Transform>, ChainId> = HashMap::new();
        let mut chains = vec![ChainDef {
            steps: Vec::new(),
            triggers: 0,
            parent: None,
            path: vec![0],
        }];
        ids.insert(Vec::new(), 0);
        for (i, steps) in self.transforms.iter().enumerate() {
            let mut parent = 0;
            for n in 1..=steps.len() {
                let prefix = steps[..n].to_vec();
                parent = match ids.get(&prefix) {
                    Some(&id) => id,
                    None => {
                        let id = chains.len() as ChainId;
                        let mut path = chains[parent as usize].path.clone();
                        path.push(id);
                        chains.push(ChainDef {
                            triggers: chains[parent as usize].triggers | steps[n - 1].triggers(),
                            steps: prefix.clone(),
                            parent: Some(parent),
                            path,
                        });
                        ids.insert(prefix, id);
                        id
                    }
                };
            }
            self.rules[i].chain = parent;
        }
        chains
    }

    fn build_prefilter(&mut self) -> Result<prefilter::Prefilters, LoadError> {
        let mut needs = Vec::new();
        // Rules that need the same literal set share its slot.
        let mut slot_of: HashMap<Vec<Vec<u8>>, u32> = HashMap::new();
        for r in &mut self.rules {
            if r.op.negated {
                continue;
            }
            r.classes = operator::needed_classes(&r.op.kind);
            let sets = match &r.op.kind {
                OpKind::Rx(re) => literals::required_literals(re.as_str()),
                OpKind::Pm(p) if !p.phrases.iter().any(Vec::is_empty) => vec![p.phrases.clone()],
                OpKind::Str(
                    StrOp::Contains
                    | StrOp::StrMatch
                    | StrOp::ContainsWord
                    | StrOp::StrEq
                    | StrOp::BeginsWith
                    | StrOp::EndsWith,
                    Param::Lit(p),
                ) if !p.is_empty() => vec![vec![p.clone()]],
                _ => Vec::new(),
            };
            if !sets.is_empty() {
                let slots: Vec<u32> = sets
                    .into_iter()
                    .map(|set| {
                        *slot_of.entry(set.clone()).or_insert_with(|| {
                            needs.push(set);
                            needs.len() as u32 - 1
                        })
                    })
                    .collect();
                r.prefilter = Some(prefilter::Screen::new(&slots));
            }
        }
        // The slots of the rules reading each variable: what a narrow
        // prefilter of that variable must hold.
        let mut reads = vec![Vec::new(); crate::vars::Var::ALL.len()];
        for r in &self.rules {
            if let Some(screen) = r.prefilter {
                for t in &r.targets {
                    reads[t.var as usize].extend_from_slice(screen.slots());
                }
            }
        }
        prefilter::Prefilters::build(&needs, &reads).map_err(|e| {
            LoadError::new(
                &Location {
                    file: "(rule set)".into(),
                    line: 0,
                },
                ErrorKind::Invalid(format!("prefilter: {e}")),
            )
        })
    }
}

/// Where each step of a phase goes on when its rule matched and has
/// `skipAfter`: right after the first marker of that name further on, or
/// the end of the phase. Found once here, in one pass from the end, so a
/// skip costs no lookup.
fn skip_targets(steps: &[Step], rules: &[Rule]) -> Vec<u32> {
    let end = steps.len() as u32;
    let mut after: HashMap<&str, u32> = HashMap::new();
    let mut out = vec![end; steps.len()];
    for (i, step) in steps.iter().enumerate().rev() {
        match step {
            Step::Marker(m) => {
                after.insert(m, i as u32 + 1);
            }
            Step::Rule(idx) => {
                if let Some(name) = &rules[*idx as usize].skip_after {
                    out[i] = after.get(name.as_str()).copied().unwrap_or(end);
                }
            }
        }
    }
    out
}

fn on_off(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("`{v}`: expected On or Off")),
    }
}

fn number(v: &str) -> Result<u64, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("`{v}` is not a number"))
}

fn limit_action(v: &str) -> Result<LimitAction, String> {
    match v.to_ascii_lowercase().as_str() {
        "reject" => Ok(LimitAction::Reject),
        "processpartial" => Ok(LimitAction::ProcessPartial),
        _ => Err(format!("`{v}`: expected Reject or ProcessPartial")),
    }
}

/// Every rule's lanes (see [`Lane`]), and the (collection, chain) pairs
/// the column lanes read.
fn lanes(rules: &mut [Rule], chains: &[ChainDef]) -> (Vec<Lane>, Columns) {
    let mut lanes = Vec::new();
    let mut columns = Columns::default();
    for r in rules {
        r.lanes = lanes.len() as u32;
        for t in &r.targets {
            let column = !t.count
                && !matches!(t.selector, crate::model::Selector::Key(_))
                && crate::tx::arena_backed(t.var);
            let attrs = matches!(t.selector, crate::model::Selector::XmlAttributes);
            lanes.push(Lane {
                column: column.then(|| columns.id(chains, t.var, attrs, r.chain)),
            });
        }
    }
    (lanes, columns)
}

/// The [`ColumnDef`]s of a set as they are numbered.
#[derive(Default)]
struct Columns {
    defs: Vec<ColumnDef>,
    paths: Vec<u32>,
    ids: HashMap<(crate::vars::Var, bool, ChainId), u32>,
    bases: HashMap<(crate::vars::Var, bool), u32>,
}

impl Columns {
    /// The pair's index, numbering it (and its chain's prefixes) when new.
    fn id(
        &mut self,
        chains: &[ChainDef],
        var: crate::vars::Var,
        attrs: bool,
        chain: ChainId,
    ) -> u32 {
        if let Some(&c) = self.ids.get(&(var, attrs, chain)) {
            return c;
        }
        let def = &chains[chain as usize];
        let parent = def.parent.map(|p| self.id(chains, var, attrs, p));
        let next = self.bases.len() as u32;
        let base = *self.bases.entry((var, attrs)).or_insert(next);
        let path: Vec<u32> = def.path[..def.path.len() - 1]
            .iter()
            .map(|&p| self.id(chains, var, attrs, p))
            .collect();
        let c = self.defs.len() as u32;
        let at = self.paths.len() as u32;
        self.paths.extend(path);
        self.paths.push(c);
        self.defs.push(ColumnDef {
            var,
            attrs,
            chain,
            parent,
            base,
            path: (at, self.paths.len() as u32 - at),
        });
        self.ids.insert((var, attrs, chain), c);
        c
    }
}

/// Rule `r`'s [`Quick`] check (its `TX` targets numbered already).
fn quick(r: &Rule, lanes: &[Lane]) -> Quick {
    let mine = &lanes[r.lanes as usize..][..r.targets.len()];
    match (r.prefilter, &r.targets[..]) {
        _ if r.multi_match || r.targets.is_empty() => Quick::Evaluate,
        (Some(screen), _) if mine.iter().all(|l| l.column.is_some()) => Quick::Columns {
            screen,
            lanes: (r.lanes, mine.len() as u32),
        },
        (_, [t]) if t.var == crate::vars::Var::Tx && !t.count && r.chain == 0 => match t.slot {
            Some(slot) => Quick::TxValue { slot },
            None => Quick::Evaluate,
        },
        _ => Quick::Evaluate,
    }
}
