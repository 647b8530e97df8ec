//! Running a phase with ModSecurity v3's semantics: rules in order, each
//! target's values transformed and tested; on every matching value the
//! match variables are set, `capture` fills `TX.0`–`TX.9` and the link's
//! `setvar`s run; a chain matches when every link does, and only then are
//! its other actions run and the rule recorded, its disruptive action
//! applied, `skip`/`skipAfter` followed.
//!
//! What makes it fast: a whole collection read through one
//! transformation chain is transformed once per phase (a column, see
//! `group.rs`) and scanned by the literal prefilter once, shared by every
//! rule reading it; a rule then tests only the values that hold one of
//! its literals, and skips the collection at once when none does. Rules
//! without literals (`@detectSQLi`…) and `multiMatch` rules read the same
//! columns.

use std::time::Instant;

use super::group::GroupAt;
use super::store::Str;
use super::values::{Data, Found, Key, Val};
use super::{Intervention, Limit, MatchedRule, TargetOwner, Transaction};
use crate::compile::prefilter::Screen;
use crate::model::{Ctl, Disruptive, EngineMode, Macro, Selector, SetOp, SetVar, Target};
use crate::operator::{self, NumParam, OpKind, Param};
use crate::ruleset::{ChainId, Quick, Rule, RuleIdx, RuleSet, Step, allow_covers};
use crate::vars::Var;

/// How many rules run between two looks at the clock. In a guest a look
/// is a call to the host, and the time limit is hundreds of
/// milliseconds; a rule's own cost is bounded by the limits on what it
/// inspects, so 64 rules past the limit stay well within it.
const CLOCK_EVERY: u32 = 64;

impl Transaction {
    pub(crate) fn run_phase(&mut self, phase: u8) {
        if self.engine == EngineMode::Off {
            return;
        }
        if let Some((scope, at)) = self.allowed
            && allow_covers(scope, at, phase)
        {
            return;
        }
        let started = Instant::now();
        let rules = self.rules.clone();
        self.shared.clear(&rules);
        let steps = &rules.phases[phase as usize];
        let (mut i, mut n) = (0usize, 0u32);
        while i < steps.len() {
            let Step::Rule(idx) = steps[i] else {
                i += 1;
                continue;
            };
            n += 1;
            if n % CLOCK_EVERY == 0 && self.spent + started.elapsed() > self.limits.time {
                self.spent += started.elapsed();
                self.limit_reached(Limit::Time, phase);
                return;
            }
            let may_match = match rules.quick[idx as usize] {
                Quick::Evaluate => true,
                Quick::Columns { screen, lanes } => self.may_match(&rules, screen, lanes),
                Quick::TxValue { slot } => self.tx_may_match(&rules, idx, slot),
            };
            if !may_match {
                // As an evaluation that matched nothing leaves it.
                self.matched_vars.clear();
                i += 1;
                continue;
            }
            let r = rules.rule_at(idx);
            if self.rule_removed(r) {
                i += 1;
                continue;
            }
            self.matched_vars.clear();
            #[cfg(feature = "profile")]
            let timer = crate::profile::Timer::start(r.id);
            let hit = self.eval_chain(&rules, idx);
            #[cfg(feature = "profile")]
            timer.stop();
            if hit {
                self.current_rule = idx;
                self.record(r, phase);
                if self.intervention.is_some() || self.allowed.is_some() {
                    break;
                }
                if r.skip_after.is_some() {
                    i = rules.skip_to[phase as usize][i] as usize;
                    continue;
                }
                if r.skip > 0 {
                    let mut left = r.skip;
                    i += 1;
                    while i < steps.len() && left > 0 {
                        if matches!(steps[i], Step::Rule(_)) {
                            left -= 1;
                        }
                        i += 1;
                    }
                    continue;
                }
            }
            i += 1;
        }
        self.spent += started.elapsed();
    }

    /// Whether a rule of [`Quick::Columns`] can match: whether the group
    /// of one of its targets passes the screen (each group is made here
    /// when no rule has asked for it yet in the phase, as evaluating the
    /// rule would). A rule that cannot match is passed over without
    /// reading it: it would test no value.
    fn may_match(&mut self, rules: &RuleSet, screen: Screen, lanes: (u32, u32)) -> bool {
        let lanes = &rules.lanes[lanes.0 as usize..][..lanes.1 as usize];
        for lane in lanes {
            let g = self.group(
                rules,
                lane.column.expect("a quick rule's lanes are columns"),
            );
            if screen.passes(&self.shared.unions[g.union as usize..]) {
                return true;
            }
        }
        false
    }

    /// Whether a rule of [`Quick::TxValue`] can match: its variable is set
    /// and the operator passes its value (as evaluating the rule would
    /// test it; an excluded target is left to the evaluation).
    fn tx_may_match(&mut self, rules: &RuleSet, idx: RuleIdx, slot: u32) -> bool {
        let r = rules.rule_at(idx);
        self.current_rule = idx;
        self.tx
            .value_at(slot)
            .is_some_and(|v| self.test(r, v).is_some())
    }

    /// Evaluates a rule and the rest of its chain.
    fn eval_chain(&mut self, rules: &RuleSet, idx: RuleIdx) -> bool {
        let r = rules.rule_at(idx);
        self.current_rule = idx;
        let matched = if r.targets.is_empty() {
            self.on_match(r, false, Vec::new());
            true
        } else {
            self.match_targets(rules, r)
        };
        if !matched {
            return false;
        }
        if let Some(next) = r.next {
            if !self.eval_chain(rules, next) {
                return false;
            }
            self.current_rule = idx;
        }
        self.after_full_match(r);
        true
    }

    fn match_targets(&mut self, rules: &RuleSet, r: &Rule) -> bool {
        let mut any = false;
        for (t, lane) in r.targets.iter().zip(rules.lanes_of(r)) {
            any |= match lane.column {
                Some(slot) => self.match_column(rules, r, t, slot),
                None => self.match_values(rules, r, t),
            };
        }
        any
    }

    /// Tests a rule on a target read value by value (not a column).
    fn match_values(&mut self, rules: &RuleSet, r: &Rule, t: &Target) -> bool {
        let mut any = false;
        let mut vals = std::mem::take(&mut self.vals);
        vals.clear();
        self.values(r, t, &mut vals);
        for &v in &vals.list {
            any |= self.match_value(rules, r, t.var, v, &vals.bytes);
        }
        self.vals = vals;
        any
    }

    /// Tests a rule on a whole collection through the shared columns:
    /// only the values the prefilter left when the rule has literals,
    /// every stage that changed a value under `multiMatch`. Values are
    /// tested in collection order (and a value's stages in chain order),
    /// as one value at a time would be.
    fn match_column(&mut self, rules: &RuleSet, r: &Rule, t: &Target, c: u32) -> bool {
        let stages: &[u32] = if r.multi_match {
            rules.column_path(c)
        } else {
            std::slice::from_ref(&c)
        };
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        let mut previous = None;
        for (stage, &pair) in stages.iter().enumerate() {
            let screened = r.prefilter.map(|screen| (screen, self.group(rules, pair)));
            let (at, len) = match screened {
                Some((_, g)) => (g.column, g.len),
                None => self.column(rules, pair),
            };
            if previous == Some(at) {
                // The stage changed no value (its column is the last one).
                continue;
            }
            let (stage, from) = (stage as u32, candidates.len());
            if let Some((slot, g)) = screened {
                self.screened(rules, slot, g, stage, &mut candidates);
            } else {
                // Every value, or only those holding a byte the operator
                // looks for when it says which.
                let cells = self.shared.column(at, len);
                match r.classes {
                    None => candidates.extend((0..len).zip(cells).map(|(i, &tv)| (i, stage, tv))),
                    Some(need) => {
                        let masks = self.shared.column_masks(at, len);
                        for (i, (&tv, &m)) in (0..len).zip(cells.iter().zip(masks)) {
                            if m & need != 0 {
                                candidates.push((i, stage, tv));
                            }
                        }
                    }
                }
            }
            if let Some(p) = previous {
                self.drop_unchanged(&mut candidates, from, p);
            }
            previous = Some(at);
        }
        if stages.len() > 1 {
            candidates.sort_unstable_by_key(|&(i, stage, _)| (i, stage));
        }
        let mut any = false;
        for &(index, _, tv) in &candidates {
            let entry = {
                let view = self.view(t.var, &t.selector).expect("a column's variable");
                *view.get(index as usize)
            };
            let key = self.arena.get(entry.key);
            if !t.selector.selects(key) || self.excluded(r, t.var, key) {
                continue;
            }
            if let Some(caps) = self.test(r, self.arena.get(tv)) {
                let key = match (t.var, &t.selector) {
                    (Var::Xml, Selector::XmlAttributes) => Key::Static("//@*"),
                    (Var::Xml, _) => Key::Static("/*"),
                    _ => Key::Arena(entry.key),
                };
                self.note_match(t.var, key, Found::Arena(tv), &[]);
                self.on_match(r, true, caps);
                any = true;
            }
        }
        self.candidates = candidates;
        any
    }

    /// Appends the entries of group `g` whose prefilter verdict passes
    /// `slot` to `out`, as (entry, stage, value), in collection order.
    fn screened(
        &mut self,
        rules: &RuleSet,
        slot: Screen,
        g: GroupAt,
        stage: u32,
        out: &mut Vec<(u32, u32, Str)>,
    ) {
        if !slot.passes(&self.shared.unions[g.union as usize..]) {
            return;
        }
        // The hottest loop of a form of many fields, once per verdict:
        // the first slot is tested as one word and bit, the others only
        // when it is set.
        let words = rules.prefilter.whole().words();
        let (word, bit) = slot.first_bit();
        let from = out.len();
        let mut marks = std::mem::take(&mut self.shared.marks);
        let mut passed = 0;
        for run in self.shared.runs(g) {
            let bits = &self.pool[run.bits as usize * words..][..words];
            if bits[word] & bit == 0 || !slot.passes_rest(bits) {
                continue;
            }
            passed += 1;
            let hot = self.shared.hot(run).iter();
            if passed == 1 {
                out.extend(hot.map(|h| (h.index, stage, h.tv)));
                continue;
            }
            // Values of several runs: marked by entry, then read in order.
            if passed == 2 {
                marks.clear();
                marks.resize(g.len.div_ceil(64) as usize, 0);
                for &(i, _, _) in &out[from..] {
                    marks[i as usize / 64] |= 1 << (i % 64);
                }
            }
            for h in hot {
                marks[h.index as usize / 64] |= 1 << (h.index % 64);
            }
        }
        if passed > 1 {
            out.truncate(from);
            for (w, &word) in marks.iter().enumerate() {
                let mut left = word;
                while left != 0 {
                    let i = (w * 64) as u32 + left.trailing_zeros();
                    left &= left - 1;
                    out.push((i, stage, self.shared.cell(g.column, i)));
                }
            }
        }
        self.shared.marks = marks;
    }

    /// Drops from `out[from..]` the values a stage left as they were in
    /// the column at `before` (`multiMatch` tests a value again only
    /// when a transformation changed it).
    fn drop_unchanged(&self, out: &mut Vec<(u32, u32, Str)>, from: usize, before: u32) {
        let mut kept = from;
        for k in from..out.len() {
            let (i, _, tv) = out[k];
            let was = self.shared.cell(before, i);
            if was == tv || self.arena.get(was) == self.arena.get(tv) {
                continue;
            }
            out[kept] = out[k];
            kept += 1;
        }
        out.truncate(kept);
    }

    /// Tests one value of target variable `var` (`held`: the bytes of the
    /// [`Vals`] it was read into); `var`'s prefilter screens it.
    ///
    /// [`Vals`]: super::values::Vals
    fn match_value(&mut self, rules: &RuleSet, r: &Rule, var: Var, v: Val, held: &[u8]) -> bool {
        if r.multi_match {
            return self.match_multi(rules, r, var, v, held);
        }
        match v.data {
            Data::Arena(s, mask) => {
                let tv = self.transformed(rules, s, mask, r.chain);
                if let Some(slot) = r.prefilter
                    && !self
                        .scan(rules, var, tv)
                        .is_some_and(|b| slot.passes(self.bits(rules, b)))
                {
                    return false;
                }
                let Some(caps) = self.test(r, self.arena.get(tv)) else {
                    return false;
                };
                self.note_match(v.var, v.key, Found::Arena(tv), held);
                self.on_match(r, true, caps);
                true
            }
            Data::Held(span) => {
                let input = transform_slice(rules, r.chain, span.of(held));
                let Some(caps) = self.test(r, &input) else {
                    return false;
                };
                self.note_match(v.var, v.key, Found::Bytes(&input), held);
                self.on_match(r, true, caps);
                true
            }
        }
    }

    /// `multiMatch`: the operator runs on the value before and after every
    /// transformation that changed it.
    fn match_multi(&mut self, rules: &RuleSet, r: &Rule, var: Var, v: Val, held: &[u8]) -> bool {
        let mut any = false;
        match v.data {
            Data::Arena(s, mask) => {
                let mut prefixes = Vec::new();
                let mut c = Some(r.chain);
                while let Some(id) = c.filter(|&id| id != 0) {
                    prefixes.push(id);
                    c = rules.chains[id as usize].parent;
                }
                let mut stages = vec![s];
                for &p in prefixes.iter().rev() {
                    let t = self.transformed(rules, s, mask, p);
                    if stages.last() != Some(&t)
                        && self.arena.get(t) != self.arena.get(*stages.last().unwrap_or(&s))
                    {
                        stages.push(t);
                    }
                }
                for stage in stages {
                    if let Some(slot) = r.prefilter
                        && !self
                            .scan(rules, var, stage)
                            .is_some_and(|b| slot.passes(self.bits(rules, b)))
                    {
                        continue;
                    }
                    if let Some(caps) = self.test(r, self.arena.get(stage)) {
                        self.note_match(v.var, v.key, Found::Arena(stage), held);
                        self.on_match(r, true, caps);
                        any = true;
                    }
                }
            }
            Data::Held(span) => {
                let mut cur = span.of(held).to_vec();
                let mut stages = vec![cur.clone()];
                for step in &rules.chains[r.chain as usize].steps {
                    if let Some(next) = step.apply(&cur) {
                        cur = next;
                        stages.push(cur.clone());
                    }
                }
                for stage in stages {
                    if let Some(caps) = self.test(r, &stage) {
                        self.note_match(v.var, v.key, Found::Bytes(&stage), held);
                        self.on_match(r, true, caps);
                        any = true;
                    }
                }
            }
        }
        any
    }

    /// Runs rule `r`'s operator on `input`: `Some(captures)` when it
    /// matches (after negation).
    pub(crate) fn test(&self, r: &Rule, input: &[u8]) -> Option<Vec<Vec<u8>>> {
        let mut caps = Vec::new();
        #[cfg(feature = "profile")]
        crate::profile::count(crate::profile::Work::Regex, input.len());
        let hit = match &r.op.kind {
            OpKind::Rx(re) => regex_test(re, input, r.capture, &mut caps),
            OpKind::RxMacro(m) => match operator::regex(&self.expand_text(m)) {
                Ok(re) => regex_test(&re, input, r.capture, &mut caps),
                Err(_) => false,
            },
            OpKind::Pm(set) => match set.automaton.find(input) {
                Some(m) => {
                    if r.capture {
                        caps.push(input[m.range()].to_vec());
                    }
                    true
                }
                None => false,
            },
            OpKind::Str(op, p) => self.with_param(p, |p| operator::string_op(*op, input, p)),
            OpKind::Num(op, NumParam::Lit(n)) => operator::compare(*op, operator::atoi(input), *n),
            OpKind::Num(op, NumParam::Macro(m)) => {
                self.with_param_macro(m, |p| operator::number_op(*op, input, p))
            }
            OpKind::IpMatch(list) => operator::ip_matches(list, input),
            OpKind::ValidateByteRange(allowed) => input.iter().any(|&b| !allowed[b as usize]),
            OpKind::ValidateUrlEncoding => operator::invalid_url_encoding(input),
            OpKind::ValidateUtf8Encoding => std::str::from_utf8(input).is_err(),
            OpKind::DetectSqli => match operator::detect_sqli(input) {
                Some(fingerprint) => {
                    caps.push(fingerprint);
                    true
                }
                None => false,
            },
            OpKind::DetectXss => operator::detect_xss(input),
            OpKind::Unconditional => true,
            OpKind::NoMatch => false,
        };
        if r.op.negated {
            (!hit).then(Vec::new)
        } else {
            hit.then_some(caps)
        }
    }

    /// `f` of an operator's parameter: its text, or its macro expanded
    /// into a buffer kept for the transaction.
    fn with_param<R>(&self, p: &Param, f: impl FnOnce(&[u8]) -> R) -> R {
        match p {
            Param::Lit(b) => f(b),
            Param::Macro(m) => self.with_param_macro(m, f),
        }
    }

    /// `f` of macro `m` expanded into a buffer kept for the transaction.
    fn with_param_macro<R>(&self, m: &Macro, f: impl FnOnce(&[u8]) -> R) -> R {
        let mut buf = self.param_buf.take();
        buf.clear();
        self.expand_into(m, &mut buf);
        let out = f(&buf);
        self.param_buf.set(buf);
        out
    }

    /// A link matched (a value of it, [`Transaction::note_match`]ed, when
    /// `noted`): match variables, captures, the link's `setvar`s.
    fn on_match(&mut self, r: &Rule, noted: bool, caps: Vec<Vec<u8>>) {
        #[cfg(feature = "profile")]
        crate::profile::count(crate::profile::Work::Matched, 0);
        if noted && let Some((name, value)) = self.matched_vars.last() {
            // Copied into the buffers of the match before (no allocation
            // once they have grown).
            self.matched_var.clear();
            self.matched_var.extend_from_slice(value);
            self.matched_var_name.clear();
            self.matched_var_name.push_str(name);
        }
        if r.capture && !caps.is_empty() {
            const DIGITS: [&[u8]; 10] =
                [b"0", b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8", b"9"];
            for (key, c) in DIGITS.iter().zip(caps) {
                self.tx.set(key, c);
            }
        }
        for sv in &r.setvars {
            self.setvar(sv);
        }
    }

    /// Runs one `setvar`. The key and value are expanded into buffers kept
    /// for the transaction, and a value is copied into the variable's own
    /// buffer, so a setvar allocates only when it creates a variable.
    fn setvar(&mut self, sv: &SetVar) {
        let (mut buf, mut value) = std::mem::take(&mut self.setvar_bufs);
        buf.clear();
        value.clear();
        // A numbered `TX` variable's key is a text: no expansion, and the
        // variable is read and written by its number.
        let key: &[u8] = match (sv.slot, sv.key.as_literal()) {
            (Some(_), Some(k)) => k.as_bytes(),
            _ => {
                self.expand_into(&sv.key, &mut buf);
                &buf
            }
        };
        if let SetOp::Set(m) | SetOp::Add(m) | SetOp::Sub(m) = &sv.op {
            self.expand_into(m, &mut value);
        }
        if let SetOp::Add(_) | SetOp::Sub(_) = &sv.op {
            let delta = operator::atoi(&value);
            let cur = match sv.slot {
                Some(slot) => self.tx.value_at(slot),
                None => self.vars_of(sv.collection).and_then(|c| c.get(key)),
            };
            let cur = cur.map(operator::atoi).unwrap_or(0);
            let n = if matches!(sv.op, SetOp::Add(_)) {
                cur.saturating_add(delta)
            } else {
                cur.saturating_sub(delta)
            };
            value.clear();
            operator::write_decimal(n, &mut value);
        }
        match (&sv.op, sv.slot) {
            (SetOp::Delete, Some(slot)) => self.tx.remove_at(slot),
            (SetOp::Delete, None) => match sv.collection {
                Var::Tx => self.tx.remove(key),
                other => {
                    if let Some(c) = self.vars.get_mut(&other) {
                        c.remove(key);
                    }
                }
            },
            (_, Some(slot)) => self.tx.set_bytes_at(slot, key, &value),
            (_, None) => self.vars_mut(sv.collection).set_bytes(key, &value),
        }
        self.setvar_bufs = (buf, value);
    }

    /// The actions a link runs once its whole chain matched.
    fn after_full_match(&mut self, r: &Rule) {
        for c in &r.ctls {
            self.ctl(c);
        }
        for (var, _) in &r.initcols {
            self.vars_mut(*var);
        }
        for (name, value) in &r.setenvs {
            let v = self.expand(value);
            self.env.set(name.as_bytes(), v);
        }
    }

    fn ctl(&mut self, c: &Ctl) {
        match c {
            Ctl::RuleRemoveById(ids) => self.removed_ids.push(ids.clone()),
            Ctl::RuleRemoveByTag(t) => self.removed_tags.push(t.clone()),
            Ctl::RuleRemoveByMsg(m) => self.removed_msgs.push(m.clone()),
            Ctl::RuleRemoveTargetById(ids, x) => self
                .removed_targets
                .push((TargetOwner::Ids(ids.clone()), x.clone())),
            Ctl::RuleRemoveTargetByTag(t, x) => self
                .removed_targets
                .push((TargetOwner::Tag(t.clone()), x.clone())),
            Ctl::RuleRemoveTargetByMsg(m, x) => self
                .removed_targets
                .push((TargetOwner::Msg(m.clone()), x.clone())),
            Ctl::RuleEngine(m) => self.engine = *m,
            Ctl::RequestBodyAccess(b) => self.request_body_access = *b,
            Ctl::ResponseBodyAccess(b) => self.response_body_access = *b,
            Ctl::RequestBodyProcessor(p) => self.processor = Some(*p),
            Ctl::ForceRequestBodyVariable(b) => self.force_body_variable = *b,
            Ctl::RequestBodyLimit(n) => {
                self.limits.body_bytes = self.limits.body_bytes.min(*n as usize)
            }
            Ctl::ResponseBodyLimit(n) => {
                self.limits.response_bytes = self.limits.response_bytes.min(*n as usize)
            }
            Ctl::Logging(s) => self.logging_notes.push(s.clone()),
        }
    }

    fn rule_removed(&self, r: &Rule) -> bool {
        self.removed_ids.iter().any(|ids| ids.contains(r.id))
            || (!self.removed_tags.is_empty()
                && r.tags.iter().any(|t| self.removed_tags.contains(t)))
            || (!self.removed_msgs.is_empty()
                && r.msg
                    .as_ref()
                    .and_then(Macro::as_literal)
                    .is_some_and(|m| self.removed_msgs.iter().any(|x| x == m)))
    }

    /// Whether a `ctl:ruleRemoveTarget…` naming `owner` applies to `r`.
    pub(crate) fn owns(&self, owner: &TargetOwner, r: &Rule) -> bool {
        match owner {
            TargetOwner::Ids(ids) => ids.contains(r.id),
            TargetOwner::Tag(t) => self.rules.rule(r.id).is_some_and(|s| s.tags.contains(t)),
            TargetOwner::Msg(m) => {
                self.rules
                    .rule(r.id)
                    .and_then(|s| s.msg.as_ref())
                    .and_then(Macro::as_literal)
                    == Some(m.as_str())
            }
        }
    }

    /// Records a chain that matched and applies its disruptive action.
    fn record(&mut self, r: &Rule, phase: u8) {
        if let Some(s) = r.severity {
            self.highest_severity = self.highest_severity.min(s);
        }
        // What only a log shows is kept only for rules that log: most
        // matches are `nolog` bookkeeping (CRS: 77 a clean request).
        let (msg, logdata, tags, matched_var) = if r.log {
            (
                r.msg
                    .as_ref()
                    .map(|m| self.expand_text(m))
                    .unwrap_or_default(),
                r.logdata
                    .as_ref()
                    .map(|m| self.expand_text(m))
                    .unwrap_or_default(),
                r.tags.clone(),
                self.matched_var_name.clone(),
            )
        } else {
            Default::default()
        };
        self.matched.push(MatchedRule {
            id: r.id,
            phase,
            msg,
            logdata,
            tags,
            severity: r.severity,
            log: r.log,
            matched_var,
        });
        if self.engine != EngineMode::On {
            return;
        }
        match r.disruptive {
            Some(d @ (Disruptive::Deny | Disruptive::Drop | Disruptive::Redirect)) => {
                let redirect = if d == Disruptive::Redirect {
                    r.redirect.as_ref().map(|m| self.expand_text(m))
                } else {
                    None
                };
                let status = r
                    .status
                    .unwrap_or(if redirect.is_some() { 302 } else { 403 });
                self.intervention = Some(Intervention {
                    status,
                    rule_id: r.id,
                    phase,
                    redirect,
                    drop: d == Disruptive::Drop,
                    limit: None,
                });
            }
            Some(Disruptive::Allow(scope)) => self.allowed = Some((scope, phase)),
            _ => {}
        }
    }
}

/// Runs a regular expression: the lazy DFA decides whether it matches,
/// and only a match with `capture` pays for the capture groups.
fn regex_test(
    re: &regex::bytes::Regex,
    input: &[u8],
    capture: bool,
    caps: &mut Vec<Vec<u8>>,
) -> bool {
    if !re.is_match(input) {
        return false;
    }
    if !capture {
        return true;
    }
    match re.captures(input) {
        Some(c) => {
            for i in 0..c.len().min(10) {
                caps.push(c.get(i).map(|m| m.as_bytes().to_vec()).unwrap_or_default());
            }
            true
        }
        None => false,
    }
}

/// A value through a transformation chain: borrowed when no step
/// changed it.
fn transform_slice<'a>(
    rules: &RuleSet,
    chain: ChainId,
    value: &'a [u8],
) -> std::borrow::Cow<'a, [u8]> {
    let mut value = std::borrow::Cow::Borrowed(value);
    for step in &rules.chains[chain as usize].steps {
        if let Some(next) = step.apply(&value) {
            value = std::borrow::Cow::Owned(next);
        }
    }
    value
}
