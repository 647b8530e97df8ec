//! One transaction: the request and response data fed by the embedder,
//! the five phases run in order, and what they decided. The embedder
//! feeds the connection, request line and headers, calls
//! [`Transaction::process_request_headers`] (phase 1), feeds the body and
//! calls [`Transaction::process_request_body`] (phase 2), and likewise
//! for the response (phases 3 and 4) and logging (phase 5).

mod eval;
mod expand;
mod group;
mod request;
pub(crate) mod store;
mod values;

pub(crate) use values::arena_backed;

use std::sync::Arc;
use std::time::Duration;

use rustc_hash::FxHashMap;

use crate::model::{AllowScope, BodyProcessor, EngineMode, Exclusion, IdRanges};
use crate::ruleset::{ChainId, RuleSet};
use crate::vars::Var;
use store::{Arena, Collection, Entry, Str, Vars};

/// What stops a request once inspection is past a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PastLimit {
    /// Block the request (the default): an attacker cannot pad a payload
    /// past what is inspected.
    Block,
    /// Let it through uninspected beyond the limit (counted).
    Pass,
}

/// Bounds on what one transaction may cost, with the decision past them.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Arguments (query, form, JSON, multipart fields) inspected.
    pub arguments: usize,
    /// Request body bytes inspected.
    pub body_bytes: usize,
    /// Response body bytes inspected.
    pub response_bytes: usize,
    /// Nesting of JSON and XML bodies.
    pub depth: usize,
    /// Time spent running rules over the whole transaction.
    pub time: Duration,
    pub past: PastLimit,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            arguments: 10_000,
            body_bytes: 1 << 20,
            response_bytes: 1 << 20,
            depth: 64,
            time: Duration::from_millis(400),
            past: PastLimit::Block,
        }
    }
}

/// Which limit a request went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Arguments,
    BodyBytes,
    ResponseBytes,
    Depth,
    Time,
}

impl Limit {
    pub fn name(self) -> &'static str {
        match self {
            Limit::Arguments => "arguments",
            Limit::BodyBytes => "body-bytes",
            Limit::ResponseBytes => "response-bytes",
            Limit::Depth => "depth",
            Limit::Time => "time",
        }
    }
}

/// The decision a rule (or a limit) made for the transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intervention {
    pub status: u16,
    /// The rule that decided (0 for a limit).
    pub rule_id: u32,
    pub phase: u8,
    pub redirect: Option<String>,
    /// `drop`: close the connection.
    pub drop: bool,
    /// The limit that decided, if one did.
    pub limit: Option<Limit>,
}

/// A rule whose whole chain matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchedRule {
    pub id: u32,
    pub phase: u8,
    pub msg: String,
    pub logdata: String,
    pub tags: Vec<String>,
    pub severity: Option<u8>,
    /// Whether the rule logs (`log`, not `nolog`): what an error log shows.
    pub log: bool,
    /// The variable of the last match (`ARGS:q`); empty, as `msg`,
    /// `logdata` and `tags` are, for a rule that does not log.
    pub matched_var: String,
}

/// Parsed multipart flags (`MULTIPART_*`).
#[derive(Debug, Default, Clone, Copy)]
pub struct MultipartFlags {
    pub boundary_quoted: bool,
    pub boundary_whitespace: bool,
    pub crlf_lf_lines: bool,
    pub data_after: bool,
    pub data_before: bool,
    pub file_limit_exceeded: bool,
    pub header_folding: bool,
    pub invalid_header_folding: bool,
    pub invalid_part: bool,
    pub invalid_quoting: bool,
    pub lf_line: bool,
    pub missing_semicolon: bool,
    pub unmatched_boundary: bool,
}

impl MultipartFlags {
    pub fn strict_error(&self) -> bool {
        self.boundary_quoted
            || self.boundary_whitespace
            || self.data_after
            || self.data_before
            || self.file_limit_exceeded
            || self.header_folding
            || self.invalid_header_folding
            || self.invalid_part
            || self.invalid_quoting
            || self.lf_line
            || self.missing_semicolon
            || self.unmatched_boundary
    }
}

/// The request-wide values (`REQUEST_URI`, …) as arena strings.
#[derive(Debug, Default)]
pub(crate) struct Singles {
    pub method: Str,
    pub uri_raw: Str,
    pub uri: Str,
    pub protocol: Str,
    pub request_line: Str,
    pub query: Str,
    pub filename: Str,
    pub basename: Str,
    pub remote_addr: Str,
    pub remote_port: Str,
    pub server_addr: Str,
    pub server_port: Str,
    pub server_name: Str,
    pub auth_type: Str,
    pub unique_id: Str,
    pub request_body: Str,
    pub request_body_len: usize,
    pub status: Str,
    pub response_protocol: Str,
    pub response_content_type: Str,
    pub response_body: Str,
    pub response_body_len: usize,
    pub multipart_filename: Str,
    pub multipart_name: Str,
    pub files_combined_size: usize,
}

/// A run of one rule set over one request and its response.
pub struct Transaction {
    pub(crate) rules: Arc<RuleSet>,
    pub(crate) limits: Limits,
    pub(crate) arena: Arena,
    pub(crate) s: Singles,
    pub(crate) args_get: Collection,
    pub(crate) args_post: Collection,
    pub(crate) req_headers: Collection,
    pub(crate) cookies: Collection,
    pub(crate) resp_headers: Collection,
    pub(crate) files: Collection,
    pub(crate) files_names: Collection,
    pub(crate) files_sizes: Collection,
    pub(crate) mp_headers: Collection,
    pub(crate) xml_text: Collection,
    pub(crate) xml_attrs: Collection,
    /// `TX`, apart from the other writable collections: its variables
    /// named in the rules' text have numbers ([`RuleSet::tx_names`]).
    pub(crate) tx: Vars,
    pub(crate) vars: FxHashMap<Var, Vars>,
    pub(crate) env: Vars,
    pub(crate) matched_var: Vec<u8>,
    pub(crate) matched_var_name: String,
    pub(crate) matched_vars: values::MatchedVars,
    pub(crate) body: Vec<u8>,
    pub(crate) response: Vec<u8>,
    pub(crate) processor: Option<BodyProcessor>,
    pub(crate) force_body_variable: bool,
    pub(crate) reqbody_error: Option<String>,
    pub(crate) multipart: MultipartFlags,
    pub(crate) inbound_data_error: bool,
    pub(crate) outbound_data_error: bool,
    pub(crate) urlencoded_error: bool,
    pub(crate) engine: EngineMode,
    pub(crate) request_body_access: bool,
    pub(crate) response_body_access: bool,
    pub(crate) removed_ids: Vec<IdRanges>,
    pub(crate) removed_tags: Vec<String>,
    pub(crate) removed_msgs: Vec<String>,
    pub(crate) removed_targets: Vec<(TargetOwner, Exclusion)>,
    pub(crate) transformed: FxHashMap<(Str, ChainId), Str>,
    /// The byte classes of long request-wide values (`REQUEST_BODY`),
    /// found once rather than by every rule that reads them.
    pub(crate) long_masks: std::cell::RefCell<FxHashMap<Str, crate::transform::Mask>>,
    /// Prefilter results by the value's bytes and the prefilter (a hash,
    /// then the bytes and the prefilter's index compared): the result's
    /// index in `pool`.
    pub(crate) scanned_bytes: FxHashMap<u64, (Str, u8, Option<u32>)>,
    /// The same results for long values by arena slot.
    pub(crate) scanned_long: FxHashMap<Str, (u8, Option<u32>)>,
    /// The prefilter's verdict on a set of slot-opening byte classes alone: the
    /// whole verdict on a value in which no literal can begin (most
    /// fields of a form), the start of the others'.
    pub(crate) scanned_sets: FxHashMap<(u8, u64), Option<u32>>,
    /// Prefilter results, each `RuleSet::prefilter.words()` words, indexed
    /// by `scanned_bytes` and `Hot::bits`.
    pub(crate) pool: Vec<u64>,
    /// The verdicts in `pool` by a hash of their words.
    pub(crate) verdicts: FxHashMap<u64, u32>,
    /// Scratch space for the prefilter.
    pub(crate) seen: Vec<u64>,
    /// Columns and groups of the phase being run.
    pub(crate) shared: group::Shared,
    /// Scratch space: the (entry, stage, value) a rule tests.
    pub(crate) candidates: Vec<(u32, u32, Str)>,
    /// Scratch space: the values of a target read one at a time.
    pub(crate) vals: values::Vals,
    /// Scratch space: a `setvar`'s expanded key and value.
    pub(crate) setvar_bufs: (Vec<u8>, Vec<u8>),
    /// Scratch space: an operator's parameter, expanded.
    pub(crate) param_buf: std::cell::Cell<Vec<u8>>,
    pub(crate) intervention: Option<Intervention>,
    pub(crate) allowed: Option<(AllowScope, u8)>,
    pub(crate) matched: Vec<MatchedRule>,
    pub(crate) highest_severity: u8,
    pub(crate) current_rule: u32,
    pub(crate) phases_run: [bool; 6],
    pub(crate) spent: Duration,
    pub(crate) logging_notes: Vec<String>,
}

/// Which rules a `ctl:ruleRemoveTarget…` applies to.
#[derive(Debug, Clone)]
pub(crate) enum TargetOwner {
    Ids(IdRanges),
    Tag(String),
    Msg(String),
}

/// What a finished transaction leaves the next one: its arena, its
/// request collections, body, caches and scratch space, emptied, in the
/// memory they grew to, so that a host running one request after another
/// does not allocate and grow them again each time; and its writable
/// variables (`TX`…), every one unset, so that the next transaction sets
/// them again in their memory. Only what the engine fills from empty or
/// unset is kept; nothing of the request it held is readable through it
/// (`tests/scratch.rs`).
#[derive(Debug, Default)]
pub struct Scratch {
    arena: Vec<u8>,
    collections: [Vec<Entry>; 4],
    body: Vec<u8>,
    transformed: FxHashMap<(Str, ChainId), Str>,
    scanned_bytes: FxHashMap<u64, (Str, u8, Option<u32>)>,
    scanned_long: FxHashMap<Str, (u8, Option<u32>)>,
    scanned_sets: FxHashMap<(u8, u64), Option<u32>>,
    pool: Vec<u64>,
    verdicts: FxHashMap<u64, u32>,
    seen: Vec<u64>,
    shared: group::Shared,
    candidates: Vec<(u32, u32, Str)>,
    /// The writable collections, every variable unset.
    tx: Vars,
    vars: FxHashMap<Var, Vars>,
    matched_vars: values::MatchedVars,
    matched: Vec<MatchedRule>,
}

fn emptied<T>(mut v: Vec<T>) -> Vec<T> {
    v.clear();
    v
}

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Transaction {
    /// A new transaction of `rules`, bounded by `limits`.
    pub fn new(rules: Arc<RuleSet>, limits: Limits) -> Transaction {
        Transaction::reusing(rules, limits, Scratch::default())
    }

    /// A new transaction, as [`Transaction::new`], in the memory of
    /// `scratch` (from [`Transaction::into_scratch`]).
    pub fn reusing(rules: Arc<RuleSet>, limits: Limits, scratch: Scratch) -> Transaction {
        let Scratch {
            arena,
            collections: [args_get, args_post, req_headers, cookies],
            body,
            mut transformed,
            mut scanned_bytes,
            mut scanned_long,
            mut scanned_sets,
            pool,
            mut verdicts,
            seen,
            mut shared,
            candidates,
            mut tx,
            vars,
            matched_vars,
            matched,
        } = scratch;
        tx.preset(&rules.tx_names);
        transformed.clear();
        scanned_bytes.clear();
        scanned_long.clear();
        scanned_sets.clear();
        verdicts.clear();
        shared.empty();
        let config = rules.config().clone();
        let mut arena = Arena::reusing(arena);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let unique_id = arena.push(format!("{id:016x}").as_bytes());
        Transaction {
            limits,
            s: Singles {
                unique_id,
                ..Singles::default()
            },
            arena,
            args_get: Collection {
                entries: emptied(args_get),
            },
            args_post: Collection {
                entries: emptied(args_post),
            },
            req_headers: Collection {
                entries: emptied(req_headers),
            },
            cookies: Collection {
                entries: emptied(cookies),
            },
            resp_headers: Collection::default(),
            files: Collection::default(),
            files_names: Collection::default(),
            files_sizes: Collection::default(),
            mp_headers: Collection::default(),
            xml_text: Collection::default(),
            xml_attrs: Collection::default(),
            tx,
            vars,
            env: Vars::default(),
            matched_var: Vec::new(),
            matched_var_name: String::new(),
            matched_vars: matched_vars.kept(),
            body: emptied(body),
            response: Vec::new(),
            processor: None,
            force_body_variable: false,
            reqbody_error: None,
            multipart: MultipartFlags::default(),
            inbound_data_error: false,
            outbound_data_error: false,
            urlencoded_error: false,
            engine: config.engine,
            request_body_access: config.request_body_access,
            response_body_access: config.response_body_access,
            removed_ids: Vec::new(),
            removed_tags: Vec::new(),
            removed_msgs: Vec::new(),
            removed_targets: Vec::new(),
            transformed,
            long_masks: Default::default(),
            scanned_bytes,
            scanned_long,
            scanned_sets,
            pool: emptied(pool),
            verdicts,
            // All zeros: a scan leaves it cleared, and `resize` fills.
            seen: emptied(seen),
            shared,
            candidates: emptied(candidates),
            vals: values::Vals::default(),
            setvar_bufs: Default::default(),
            param_buf: Default::default(),
            intervention: None,
            allowed: None,
            matched: emptied(matched),
            highest_severity: 255,
            current_rule: 0,
            phases_run: [false; 6],
            spent: Duration::ZERO,
            logging_notes: Vec::new(),
            rules,
        }
    }

    /// Ends the transaction, keeping its buffers' memory, emptied, for
    /// the next ([`Transaction::reusing`]).
    pub fn into_scratch(mut self) -> Scratch {
        self.transformed.clear();
        self.scanned_bytes.clear();
        self.scanned_long.clear();
        self.scanned_sets.clear();
        self.verdicts.clear();
        self.shared.empty();
        self.tx.unset_all();
        for v in self.vars.values_mut() {
            v.unset_all();
        }
        Scratch {
            arena: emptied(self.arena.into_buffer()),
            collections: [
                emptied(self.args_get.entries),
                emptied(self.args_post.entries),
                emptied(self.req_headers.entries),
                emptied(self.cookies.entries),
            ],
            body: emptied(self.body),
            transformed: self.transformed,
            scanned_bytes: self.scanned_bytes,
            scanned_long: self.scanned_long,
            scanned_sets: self.scanned_sets,
            pool: emptied(self.pool),
            verdicts: self.verdicts,
            seen: emptied(self.seen),
            shared: self.shared,
            candidates: emptied(self.candidates),
            tx: self.tx,
            vars: self.vars,
            matched_vars: self.matched_vars.kept(),
            matched: emptied(self.matched),
        }
    }

    /// Sets `UNIQUE_ID` (the embedder's request id).
    pub fn set_unique_id(&mut self, id: &str) {
        self.s.unique_id = self.arena.push(id.as_bytes());
    }

    /// The client's and the server's addresses.
    pub fn connection(&mut self, client: &str, client_port: u16, server: &str, server_port: u16) {
        self.s.remote_addr = self.arena.push(client.as_bytes());
        self.s.remote_port = self.arena.push(client_port.to_string().as_bytes());
        self.s.server_addr = self.arena.push(server.as_bytes());
        self.s.server_port = self.arena.push(server_port.to_string().as_bytes());
    }

    /// The rules whose whole chain matched, in the order they matched.
    pub fn matched(&self) -> &[MatchedRule] {
        &self.matched
    }

    /// The decision, once a rule (or a limit) made one.
    pub fn intervention(&self) -> Option<&Intervention> {
        self.intervention.as_ref()
    }

    /// A writable variable's value (`var("tx", "blocking_inbound_anomaly_score")`).
    pub fn var(&self, collection: &str, key: &str) -> Option<String> {
        let v = Var::parse(collection)?;
        self.vars_of(v)?
            .get(key.as_bytes())
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// The writable collection `var`, if it exists.
    pub(crate) fn vars_of(&self, var: Var) -> Option<&Vars> {
        match var {
            Var::Tx => Some(&self.tx),
            _ => self.vars.get(&var),
        }
    }

    /// The writable collection `var`, made when it does not exist.
    pub(crate) fn vars_mut(&mut self, var: Var) -> &mut Vars {
        match var {
            Var::Tx => &mut self.tx,
            _ => self.vars.entry(var).or_default(),
        }
    }

    /// `ctl:auditEngine` and other logging changes rules asked for.
    pub fn logging_notes(&self) -> &[String] {
        &self.logging_notes
    }

    /// Time spent running rules so far.
    pub fn spent(&self) -> Duration {
        self.spent
    }

    /// Runs phase 1 (request headers).
    pub fn process_request_headers(&mut self) -> Option<&Intervention> {
        self.phase(1)
    }

    /// Runs phase 2 (request body): the body fed so far is parsed by its
    /// processor first.
    pub fn process_request_body(&mut self) -> Option<&Intervention> {
        if self.intervention.is_none() && !self.phases_run[2] {
            self.parse_request_body();
        }
        self.phase(2)
    }

    /// The response status and protocol (before phase 3).
    pub fn response_status(&mut self, status: u16, protocol: &str) {
        self.s.status = self.arena.push(status.to_string().as_bytes());
        self.s.response_protocol = self.arena.push(protocol.as_bytes());
    }

    /// Runs phase 3 (response headers).
    pub fn process_response_headers(&mut self) -> Option<&Intervention> {
        self.phase(3)
    }

    /// Runs phase 4 (response body).
    pub fn process_response_body(&mut self) -> Option<&Intervention> {
        if self.intervention.is_none() && !self.phases_run[4] {
            let body = std::mem::take(&mut self.response);
            self.s.response_body_len = body.len();
            self.s.response_body = self.arena.push(&body);
        }
        self.phase(4)
    }

    /// Runs phase 5 (logging), whatever was decided before.
    pub fn process_logging(&mut self) {
        if !self.phases_run[5] {
            self.phases_run[5] = true;
            self.run_phase(5);
        }
    }

    fn phase(&mut self, phase: u8) -> Option<&Intervention> {
        if self.intervention.is_none() && !self.phases_run[phase as usize] {
            self.phases_run[phase as usize] = true;
            self.run_phase(phase);
        }
        self.intervention.as_ref()
    }
}
