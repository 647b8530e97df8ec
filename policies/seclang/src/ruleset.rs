//! A compiled rule set: the rules of each phase in order, the engine
//! configuration its directives set, the interned transformation chains
//! and the literal prefilter. Immutable once built; every transaction
//! reads it and none changes it.

use std::collections::HashMap;
use std::sync::Arc;

use crate::compile::prefilter::{Prefilters, Screen};
use crate::error::Location;
use crate::model::{AllowScope, Ctl, Disruptive, EngineMode, Exclusion, Macro, SetVar, Target};
use crate::operator::Operator;
use crate::transform::{Mask, Transform};
use crate::vars::Var;

/// Index of a rule in [`RuleSet::rules`].
pub type RuleIdx = u32;

/// Index of an interned transformation chain.
pub type ChainId = u32;

/// One compiled rule or chain link.
#[derive(Debug)]
pub struct Rule {
    /// The chain starter's id (links carry their starter's).
    pub id: u32,
    pub phase: u8,
    pub at: Location,
    pub targets: Vec<Target>,
    pub exclusions: Vec<Exclusion>,
    pub op: Operator,
    pub chain: ChainId,
    pub multi_match: bool,
    pub capture: bool,
    pub setvars: Vec<SetVar>,
    pub ctls: Vec<Ctl>,
    pub initcols: Vec<(Var, Macro)>,
    pub setenvs: Vec<(String, Macro)>,
    /// Resolved (`block` became the phase's default); links have none.
    pub disruptive: Option<Disruptive>,
    pub status: Option<u16>,
    pub redirect: Option<Macro>,
    pub skip: u32,
    pub skip_after: Option<String>,
    pub msg: Option<Macro>,
    pub logdata: Option<Macro>,
    pub tags: Vec<String>,
    pub severity: Option<u8>,
    pub ver: Option<String>,
    pub log: bool,
    pub auditlog: bool,
    /// The next link of the chain.
    pub next: Option<RuleIdx>,
    /// Whether this is a chain link (not a starter).
    pub link: bool,
    /// The rule's slots in the prefilter, when its operator can only
    /// match a value that contains a member of each of a few literal sets.
    pub prefilter: Option<Screen>,
    /// The byte classes (`transform::Mask`) of which a value must hold
    /// one for the operator to match it, when its operator says so
    /// (`@validateByteRange 1-255` matches only a value with a NUL):
    /// values of none are not tested.
    pub classes: Option<crate::transform::Mask>,
    /// Where this rule's [`Lane`]s start in the set's (one per target).
    pub(crate) lanes: u32,
}

/// How a rule reads one of its targets, decided when the set is
/// compiled, in one array for the whole set (read in rule order, apart
/// from the targets themselves).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lane {
    /// When the target is a whole arena-backed collection read through
    /// the phase's shared columns: its (collection, rule's transformation
    /// chain) pair's index in [`RuleSet::columns`].
    pub column: Option<u32>,
}

/// A (collection, transformation chain) pair a column lane reads, or one
/// of the prefixes of its chain: what a phase finds its column and group
/// by, in dense arrays, without hashing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ColumnDef {
    pub var: Var,
    /// Whether the collection is `XML://@*` (the attributes).
    pub attrs: bool,
    pub chain: ChainId,
    /// The pair of the chain without its last step (none for the empty
    /// chain).
    pub parent: Option<u32>,
    /// The collection's index among the set's collections read as
    /// columns.
    pub base: u32,
    /// Where the pairs of the chain's prefixes, from the empty chain to
    /// this one, are in [`RuleSet::column_paths`] (the stages
    /// `multiMatch` tests).
    pub path: (u32, u32),
}

/// What a phase checks to pass over a rule that cannot match, before
/// reading it (one small array for the set).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Quick {
    /// Nothing: the rule is evaluated.
    Evaluate,
    /// Every target a column lane, screened by the prefilter (not
    /// `multiMatch`): the rule can match only when some target's group
    /// passes `screen`. `lanes`: where the rule's lanes start in
    /// [`RuleSet::lanes`], and how many.
    Columns { screen: Screen, lanes: (u32, u32) },
    /// One target, `TX:key`, neither counted nor transformed: the rule can
    /// match only when the variable is set and its value passes the
    /// operator (CRS's paranoia-level and score checks). `slot`: the
    /// variable's number ([`RuleSet::tx_names`]).
    TxValue { slot: u32 },
}

/// One entry of a phase's rule list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Rule(RuleIdx),
    Marker(String),
}

/// What happens when a request body is past `SecRequestBodyLimit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitAction {
    Reject,
    ProcessPartial,
}

/// The engine configuration the directives set (per rule set).
#[derive(Debug, Clone)]
pub struct Config {
    pub engine: EngineMode,
    pub request_body_access: bool,
    pub response_body_access: bool,
    pub request_body_limit: u64,
    pub request_body_no_files_limit: u64,
    pub request_body_limit_action: LimitAction,
    pub response_body_limit: u64,
    pub response_body_limit_action: LimitAction,
    pub response_mime_types: Vec<String>,
    pub argument_separator: u8,
    /// `SecArgumentsLimit`: arguments past it are not added.
    pub arguments_limit: usize,
    /// `SecRequestBodyJsonDepthLimit`.
    pub json_depth_limit: usize,
    pub component_signature: Vec<String>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            engine: EngineMode::On,
            request_body_access: false,
            response_body_access: false,
            request_body_limit: 13_107_200,
            request_body_no_files_limit: 1_048_576,
            request_body_limit_action: LimitAction::Reject,
            response_body_limit: 524_288,
            response_body_limit_action: LimitAction::ProcessPartial,
            response_mime_types: vec!["text/plain".into(), "text/html".into()],
            argument_separator: b'&',
            arguments_limit: 1000,
            json_depth_limit: 512,
            component_signature: Vec::new(),
        }
    }
}

/// An interned transformation chain and the bytes that can change it.
#[derive(Debug, Clone)]
pub struct ChainDef {
    pub steps: Vec<Transform>,
    /// Union of the steps' trigger masks.
    pub triggers: Mask,
    /// The chain without its last step (for sharing prefixes).
    pub parent: Option<ChainId>,
    /// Every prefix of the chain, from the empty chain to this one (the
    /// stages `multiMatch` tests).
    pub path: Vec<ChainId>,
}

impl ChainDef {
    /// Whether the chain leaves a value with byte classes `mask` as it is.
    pub fn is_identity_for(&self, mask: Mask) -> bool {
        crate::transform::untouched(self.triggers, mask)
    }
}

/// A compiled, immutable rule set.
#[derive(Debug)]
pub struct RuleSet {
    pub(crate) rules: Vec<Rule>,
    /// Phases 1–5 at indexes 1–5.
    pub(crate) phases: [Vec<Step>; 6],
    /// Per phase and step: where a matched rule's `skipAfter` goes on.
    pub(crate) skip_to: [Vec<u32>; 6],
    pub(crate) config: Config,
    pub(crate) chains: Vec<ChainDef>,
    pub(crate) prefilter: Prefilters,
    /// Every rule's [`Lane`]s, rule after rule.
    pub(crate) lanes: Vec<Lane>,
    /// The (collection, chain) pairs the column lanes read, with their
    /// chains' prefixes.
    pub(crate) columns: Vec<ColumnDef>,
    /// Every pair's path (see [`ColumnDef::path`]), back to back.
    pub(crate) column_paths: Vec<u32>,
    /// How many collections the pairs read.
    pub(crate) bases: u32,
    /// Every rule's [`Quick`], by index.
    pub(crate) quick: Vec<Quick>,
    /// The `TX` variables the rules name in their text (targets,
    /// `setvar` keys, `%{tx.…}` references), lowercase, by number: every
    /// transaction gives them its first `TX` slots, so a rule reads and
    /// writes them by number, without looking their names up.
    pub(crate) tx_names: Arc<[Box<[u8]>]>,
    pub(crate) by_id: HashMap<u32, RuleIdx>,
    pub(crate) notices: Vec<String>,
}

impl RuleSet {
    /// The number of rules (chain starters), as ModSecurity counts them.
    pub fn rule_count(&self) -> usize {
        self.rules.iter().filter(|r| !r.link).count()
    }

    /// Directives that loaded but change nothing here (logging paths the
    /// host owns, memory limits of a buffering model Wharf does not
    /// use), each with its `file:line` and why.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The engine configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The rule with `id` (its chain starter).
    pub fn rule(&self, id: u32) -> Option<&Rule> {
        self.by_id.get(&id).map(|&i| &self.rules[i as usize])
    }

    /// How many rules' operators the literal prefilter screens, of all.
    pub fn prefiltered(&self) -> (usize, usize) {
        let n = self.rules.iter().filter(|r| r.prefilter.is_some()).count();
        (n, self.rules.len())
    }

    /// The narrow prefilters (of variables few screened rules read): how
    /// many, and the bytes their automata take.
    pub fn narrow_prefilters(&self) -> (usize, usize) {
        self.prefilter.narrow()
    }

    /// One line per rule: its id, operator, and the literals that screen
    /// it (or why none do).
    pub fn describe_prefilter(&self) -> Vec<String> {
        let whole = self.prefilter.whole();
        let (narrow, narrow_bytes) = self.prefilter.narrow();
        let head = format!(
            "prefilter: {} slots, {} literals, {} bytes; {narrow} narrow ones of {narrow_bytes} bytes",
            whole.slots(),
            whole.literals(),
            whole.memory(),
        );
        std::iter::once(head)
            .chain(self.rules.iter().map(|r| {
                let lits = r
                    .prefilter
                    .map(|s| {
                        s.slots()
                            .iter()
                            .map(|&slot| whole.describe(slot))
                            .collect::<Vec<_>>()
                            .join(" & ")
                    })
                    .unwrap_or_else(|| "-".into());
                let targets: Vec<String> =
                    r.targets.iter().map(|t| t.var.name().to_string()).collect();
                let pattern = match &r.op.kind {
                    crate::operator::OpKind::Rx(re) => re.as_str().chars().take(80).collect(),
                    _ => String::new(),
                };
                format!(
                    "{} {}{} [{}] {} :: {}",
                    r.id,
                    if r.op.negated { "!" } else { "" },
                    r.op.name,
                    targets.join("|"),
                    lits,
                    pattern
                )
            }))
            .collect()
    }

    /// The rules whose operator matches `input` (as the rule runs it, no
    /// transformation) though the prefilter of one of their targets (the
    /// whole set's, or a narrow one) would have screened them out of a
    /// value holding exactly these bytes: empty unless a prefilter is
    /// unsound (`tests/prefilter.rs`).
    pub fn screened_wrongly(&self, input: &[u8]) -> Vec<u32> {
        self.rules
            .iter()
            .filter(|r| {
                let Some(screen) = r.prefilter else {
                    return false;
                };
                let passes = |p: &crate::compile::prefilter::Prefilter| {
                    p.scan(input).is_some_and(|b| screen.passes(&b))
                };
                if passes(self.prefilter.whole())
                    && r.targets
                        .iter()
                        .all(|t| passes(self.prefilter.of(t.var as usize).1))
                {
                    return false;
                }
                let hit = match &r.op.kind {
                    crate::operator::OpKind::Rx(re) => re.is_match(input),
                    crate::operator::OpKind::Pm(set) => set.automaton.is_match(input),
                    crate::operator::OpKind::Str(op, crate::operator::Param::Lit(p)) => {
                        crate::operator::string_op(*op, input, p)
                    }
                    _ => false,
                };
                hit != r.op.negated
            })
            .map(|r| r.id)
            .collect()
    }

    pub(crate) fn rule_at(&self, idx: RuleIdx) -> &Rule {
        &self.rules[idx as usize]
    }

    /// The pairs of column `c`'s chain's prefixes, from the empty chain
    /// to its own.
    pub(crate) fn column_path(&self, c: u32) -> &[u32] {
        let (at, n) = self.columns[c as usize].path;
        &self.column_paths[at as usize..][..n as usize]
    }

    /// Rule `r`'s lanes, one per target.
    pub(crate) fn lanes_of(&self, r: &Rule) -> &[Lane] {
        &self.lanes[r.lanes as usize..][..r.targets.len()]
    }
}

/// Whether an `allow` stops a later phase.
pub fn allow_covers(scope: AllowScope, allowed_in: u8, phase: u8) -> bool {
    match scope {
        AllowScope::All => phase > allowed_in && phase != 5,
        AllowScope::Phase => false,
        AllowScope::Request => phase > allowed_in && phase <= 2,
    }
}
