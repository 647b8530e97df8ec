//! SecLang semantics through the public API, on small rule sets: a chain
//! is reported only when every link matched, `setvar` scores and a later
//! rule reads the score, a screened rule matches through any of its
//! targets and chains, a `TX:key` check reads the variable as it is when
//! it runs, `skipAfter` skips to its marker, `nolog` rules
//! are matched but not logged, a collection's matches come in its order
//! whatever the prefilter grouped, `multiMatch` tests every stage that
//! changed a value, the validating operators skip only values without
//! the bytes they look for, `MATCHED_VARS` is the current rule's own in
//! every transaction, values copied out of changing variables (`TX`, a
//! count) carry their own names, a `TX` variable named in a rule and one
//! named by a request are the same, rules past the time limit stop and
//! block, and a rule file using something the engine
//! does not implement refuses to load with `file:line` and its name.

use std::sync::Arc;

use seclang::{Limits, RuleSet, Transaction};

/// Runs a GET of `uri` through phases 1 and 2; the matched rule ids and
/// the decided status.
fn run(rules: &str, uri: &str) -> (Vec<(u32, bool)>, Option<u16>) {
    let rules = Arc::new(RuleSet::from_text(rules).unwrap_or_else(|e| panic!("{e}")));
    let mut tx = Transaction::new(rules, Limits::default());
    tx.connection("127.0.0.1", 40000, "127.0.0.1", 80);
    tx.request_line("GET", uri, "HTTP/1.1");
    tx.request_header(b"Host", b"localhost");
    tx.process_request_headers();
    tx.process_request_body();
    tx.process_logging();
    let status = tx.intervention().map(|i| i.status);
    (tx.matched().iter().map(|m| (m.id, m.log)).collect(), status)
}

const CHAIN: &str = r#"SecRuleEngine On
SecRule ARGS:a "@streq one" "id:10,phase:2,pass,log,chain"
    SecRule ARGS:b "@streq two" "t:none"
"#;

#[test]
fn a_chain_is_reported_only_when_every_link_matched() {
    assert_eq!(run(CHAIN, "/?a=one&b=nope").0, []);
    assert_eq!(run(CHAIN, "/?a=one&b=two").0, [(10, true)]);
    assert_eq!(run(CHAIN, "/?a=nope&b=two").0, []);
}

const SCORING: &str = r#"SecRuleEngine On
SecAction "id:1,phase:1,pass,nolog,setvar:tx.score=0"
SecRule ARGS "@contains attack" "id:2,phase:2,pass,log,setvar:'tx.score=+5'"
SecRule ARGS "@contains worse" "id:3,phase:2,pass,log,setvar:'tx.score=+5'"
SecRule TX:SCORE "@ge 10" "id:4,phase:2,deny,status:403,log"
"#;

#[test]
fn setvar_scores_and_a_later_rule_reads_the_score() {
    assert_eq!(run(SCORING, "/?q=attack").1, None);
    let (ids, status) = run(SCORING, "/?q=attack%20worse");
    assert_eq!(status, Some(403));
    assert_eq!(ids, [(1, false), (2, true), (3, true), (4, true)]);
}

/// Screened rules over shared columns: a rule whose literals occur in
/// none of its targets is passed over unread, so what must hold is that
/// one whose literals occur in any target, through any chain (made first
/// by this rule or by one before it), still matches, and that a rule
/// passed over leaves `MATCHED_VAR` as a rule that matched nothing does:
/// as the last match set it (ModSecurity keeps it across rules).
const SCREENED: &str = r#"SecRuleEngine On
SecRule ARGS|ARGS_NAMES "@contains needle" "id:1,phase:2,pass,log,t:none"
SecRule REQUEST_COOKIES|ARGS_NAMES|ARGS "@contains <hay" "id:2,phase:2,pass,log,t:none,t:urlDecodeUni"
SecRule ARGS_NAMES|ARGS "@rx stack[0-9]" "id:3,phase:2,pass,log,t:none,t:urlDecodeUni,t:lowercase"
SecRule ARGS "@contains absent" "id:4,phase:2,pass,log,t:none,t:urlDecodeUni"
SecRule MATCHED_VAR "@streq stack7" "id:5,phase:2,pass,log"
"#;

#[test]
fn a_screened_rule_matches_through_any_of_its_targets_and_chains() {
    assert_eq!(run(SCREENED, "/?a=b").0, []);
    assert_eq!(run(SCREENED, "/?needle=b").0, [(1, true)]);
    assert_eq!(run(SCREENED, "/?a=%253Chay").0, [(2, true)]);
    // Rule 3's chain is first asked for by rule 3; rule 4 is passed over
    // and leaves rule 3's MATCHED_VAR for rule 5.
    assert_eq!(run(SCREENED, "/?x=STACK7").0, [(3, true), (5, true)]);
    assert_eq!(
        run(SCREENED, "/?STACK7=y&b=%3Chay").0,
        [(2, true), (3, true), (5, true)]
    );
    assert_eq!(
        run(SCREENED, "/?x=stack7&y=absent").0,
        [(3, true), (4, true)]
    );
}

/// `TX:key` checks, which a phase answers from the variable's slot
/// found once: the variable as it is when each runs (created after a
/// check that found it unset, changed, removed), in any case of its name.
const TX_CHECKS: &str = r#"SecRuleEngine On
SecRule TX:foo "@eq 5" "id:1,phase:1,pass,log"
SecAction "id:2,phase:1,pass,nolog,setvar:tx.foo=5"
SecRule TX:FOO "@eq 5" "id:3,phase:1,pass,log"
SecAction "id:4,phase:1,pass,nolog,setvar:tx.Foo=+1"
SecRule TX:foo "@eq 5" "id:5,phase:1,pass,log"
SecRule TX:foo "@eq 6" "id:6,phase:1,pass,log"
SecAction "id:7,phase:1,pass,nolog,setvar:!tx.foo"
SecRule TX:foo "@rx ^" "id:8,phase:1,pass,log"
SecRule ARGS:again "@streq yes" "id:9,phase:2,pass,nolog,setvar:tx.foo=6"
SecRule TX:foo "@eq 6" "id:10,phase:2,pass,log"
"#;

#[test]
fn tx_checks_read_the_variable_as_it_is_when_they_run() {
    assert_eq!(
        run(TX_CHECKS, "/").0,
        [(2, false), (3, true), (4, false), (6, true), (7, false)]
    );
    assert_eq!(
        run(TX_CHECKS, "/?again=yes").0,
        [
            (2, false),
            (3, true),
            (4, false),
            (6, true),
            (7, false),
            (9, false),
            (10, true)
        ]
    );
}

const SKIP: &str = r#"SecRuleEngine On
SecRule ARGS:skip "@streq yes" "id:1,phase:2,pass,nolog,skipAfter:END"
SecRule ARGS "@contains x" "id:2,phase:2,deny,status:403,log"
SecMarker END
SecRule ARGS "@contains x" "id:3,phase:2,pass,log"
"#;

#[test]
fn skip_after_jumps_to_its_marker() {
    assert_eq!(run(SKIP, "/?q=x").1, Some(403));
    let (ids, status) = run(SKIP, "/?q=x&skip=yes");
    assert_eq!(status, None);
    assert_eq!(ids, [(1, false), (3, true)]);
}

/// A marker name may appear more than once: a skip goes to the first one
/// after the rule (one before it does not count), and past the last, to
/// the end of the phase.
const SKIP_TWICE: &str = r#"SecRuleEngine On
SecMarker END
SecRule ARGS:skip "@streq yes" "id:1,phase:2,pass,nolog,skipAfter:END"
SecRule ARGS "@contains x" "id:2,phase:2,pass,log"
SecMarker END
SecRule ARGS:again "@streq yes" "id:3,phase:2,pass,nolog,skipAfter:END"
SecRule ARGS "@contains x" "id:4,phase:2,pass,log"
SecMarker END
SecRule ARGS "@contains x" "id:5,phase:2,pass,log"
SecRule ARGS:last "@streq yes" "id:6,phase:2,pass,nolog,skipAfter:END"
SecRule ARGS "@contains x" "id:7,phase:2,pass,log"
"#;

#[test]
fn skip_after_goes_to_the_next_marker_of_its_name() {
    let ids = |uri| {
        run(SKIP_TWICE, uri)
            .0
            .into_iter()
            .map(|(id, _)| id)
            .collect::<Vec<_>>()
    };
    assert_eq!(ids("/?q=x"), [2, 4, 5, 7]);
    assert_eq!(ids("/?q=x&skip=yes"), [1, 4, 5, 7]);
    assert_eq!(ids("/?q=x&skip=yes&again=yes"), [1, 3, 5, 7]);
    assert_eq!(ids("/?q=x&last=yes"), [2, 4, 5, 6]);
}

/// The rules that matched a GET of `uri`, with the variable of each
/// one's last match.
fn last_matches(rules: &str, uri: &str) -> Vec<(u32, String)> {
    let rules = Arc::new(RuleSet::from_text(rules).unwrap_or_else(|e| panic!("{e}")));
    let mut tx = Transaction::new(rules, Limits::default());
    tx.request_line("GET", uri, "HTTP/1.1");
    tx.process_request_headers();
    tx.process_request_body();
    tx.matched()
        .iter()
        .map(|m| (m.id, m.matched_var.clone()))
        .collect()
}

/// Values of a collection whose prefilter verdicts differ (`xyzz` also
/// holds rule 9's literal) are tested in collection order all the same;
/// an empty collection read through the same transformations first
/// (no cookies) hides nothing of the next one.
const VERDICT_ORDER: &str = r#"SecRuleEngine On
SecRule REQUEST_COOKIES|ARGS "@contains xy" "id:1,phase:2,pass,log"
SecRule ARGS "@contains zz" "id:9,phase:2,pass,log"
"#;

#[test]
fn matches_keep_collection_order_across_prefilter_verdicts() {
    let ids = last_matches(VERDICT_ORDER, "/?a=xyzz&b=xy1&c=xyzz");
    assert_eq!(ids, [(1, "ARGS:c".into()), (9, "ARGS:c".into())]);
    let ids = last_matches(VERDICT_ORDER, "/?a=xyzz&b=xyzz&c=xy1");
    assert_eq!(ids, [(1, "ARGS:c".into()), (9, "ARGS:b".into())]);
}

/// `multiMatch` tests each value again at every transformation that
/// changed it, in collection order.
const MULTI: &str = r#"SecRuleEngine On
SecRule ARGS "@contains <x" "id:1,phase:2,pass,log,t:none,t:urlDecodeUni,t:lowercase,multiMatch"
"#;

#[test]
fn multi_match_tests_every_stage_that_changed_a_value() {
    assert_eq!(last_matches(MULTI, "/?a=%25253Cx&b=plain"), []);
    assert_eq!(
        last_matches(MULTI, "/?a=%253CX&b=%3CX"),
        [(1, "ARGS:b".into())]
    );
    assert_eq!(
        last_matches(MULTI, "/?a=%253Cx&b=%3Cx"),
        [(1, "ARGS:b".into())]
    );
    assert_eq!(
        last_matches(MULTI, "/?a=%3Cx&b=<x&c=y"),
        [(1, "ARGS:b".into())]
    );
    assert_eq!(
        last_matches(MULTI, "/?a=<x&b=%3Cx&c=%3CX"),
        [(1, "ARGS:c".into())]
    );
}

#[test]
fn what_is_not_implemented_refuses_to_load_with_its_place() {
    let err = RuleSet::from_text(
        "SecRuleEngine On\nSecRule ARGS \"@noSuchOperator x\" \"id:1,phase:2,pass\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(":2") && err.contains("noSuchOperator"),
        "{err}"
    );
    let err =
        RuleSet::from_text("SecRule ARGS \"@rx a\" \"id:1,phase:2,pass,t:noSuchTransform\"\n")
            .unwrap_err()
            .to_string();
    assert!(
        err.contains(":1") && err.contains("noSuchTransform"),
        "{err}"
    );
}

const VALIDATORS: &str = r#"SecRuleEngine On
SecRule ARGS "@validateByteRange 1-255" "id:30,phase:2,pass,log,t:none,t:urlDecodeUni"
SecRule ARGS|ARGS_NAMES "@validateUtf8Encoding" "id:31,phase:2,pass,log,t:none,t:urlDecodeUni"
SecRule ARGS "@validateUrlEncoding" "id:32,phase:2,pass,log,t:none"
SecRule ARGS "@validateByteRange 32-126" "id:33,phase:2,pass,log,t:none"
SecRule ARGS "!@validateByteRange 1-255" "id:34,phase:2,pass,log,t:none"
SecRule ARGS "@detectSQLi" "id:35,phase:2,pass,log,t:none"
SecRule ARGS "@detectXSS" "id:36,phase:2,pass,log,t:none,t:urlDecodeUni"
"#;

/// The validating and libinjection operators test only the values holding
/// a byte they look for (a NUL, a byte past ASCII, a `%`, a byte outside
/// `[A-Za-z0-9_]`, a `<` or `=`): each still fires on such a value among
/// many clean ones, after the transformation that made the byte, and a
/// negated one still sees every value.
#[test]
fn validators_skip_only_values_without_the_bytes_they_look_for() {
    let ids = |uri: &str| -> Vec<u32> { run(VALIDATORS, uri).0.iter().map(|m| m.0).collect() };
    let clean: String = (0..200).map(|i| format!("f{i}=v{i}&")).collect();
    // Clean values: only the negated rule (every value is in range).
    assert_eq!(ids(&format!("/?{clean}z=1")), [34]);
    // A NUL made by the decoding step, among 200 clean fields.
    assert_eq!(ids(&format!("/?{clean}z=a%2500b")), [30, 34]);
    // A `%` not followed by two hex digits (once the query is decoded).
    assert_eq!(ids(&format!("/?{clean}z=a%25zz")), [32, 34]);
    assert_eq!(ids(&format!("/?{clean}z=a%00b")), [30, 33, 34]);
    // Bad UTF-8 in a name, after decoding.
    assert_eq!(ids(&format!("/?{clean}%C3%28=1")), [31, 34]);
    // A tab is outside 32-126 though it is in no class the first rule needs.
    assert_eq!(ids(&format!("/?{clean}z=a%09b")), [33, 34]);
    // libinjection's operators, on a value among clean words; the `<`
    // made by the decoding step.
    assert_eq!(
        ids(&format!("/?{clean}z=1%27%20OR%20%271%27%3D%271")),
        [34, 35]
    );
    assert_eq!(
        ids(&format!("/?{clean}z=%253Cscript%253Ealert(1)")),
        [34, 36]
    );
}

/// `MATCHED_VARS` holds the variables the rule being evaluated matched,
/// all of them, for its chain's later links: not those of a rule before,
/// nor those of the transaction before in the same buffers.
#[test]
fn matched_vars_are_the_rules_own_in_every_transaction() {
    let rules = Arc::new(
        RuleSet::from_text(
            r#"SecRuleEngine On
SecRule ARGS "@rx ^x" "id:1,phase:2,pass,log,chain"
    SecRule MATCHED_VARS "@streq xa" "t:none"
SecRule ARGS "@streq zz" "id:2,phase:2,pass,log,chain"
    SecRule MATCHED_VARS_NAMES "@streq ARGS:a" "t:none"
"#,
        )
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let mut scratch = seclang::Scratch::default();
    for (uri, want) in [
        ("/?a=xa&c=xc&d=zz", vec![1]),
        ("/?a=yy&c=xc&d=zz", vec![]),
        ("/?a=xa&b=xb&c=xc&d=xd&e=xe", vec![1]),
        ("/?a=zz", vec![2]),
        ("/?b=xa&c=zz", vec![1]),
    ] {
        let mut tx = Transaction::reusing(rules.clone(), Limits::default(), scratch);
        tx.request_line("GET", uri, "HTTP/1.1");
        tx.process_request_headers();
        tx.process_request_body();
        let ids: Vec<u32> = tx.matched().iter().map(|m| m.id).collect();
        assert_eq!(ids, want, "{uri}");
        scratch = tx.into_scratch();
    }
}

const CHANGING: &str = r#"SecRuleEngine On
SecAction "id:1,phase:1,pass,nolog,setvar:tx.alpha=first,setvar:tx.beta=Second"
SecRule TX:/^(alpha|beta)$/ "@rx ^(?:first|second)$" "id:2,phase:1,pass,nolog,t:lowercase,setvar:'tx.seen=%{tx.seen}|%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'"
SecRule &TX:alpha "@eq 1" "id:3,phase:1,pass,nolog,setvar:'tx.count=%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'"
SecRule &ARGS "@eq 2" "id:4,phase:2,pass,nolog,setvar:'tx.args=%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'"
SecRule ARGS_COMBINED_SIZE "@gt 0" "id:5,phase:2,pass,nolog,setvar:'tx.size=%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'"
SecRule ARGS "@rx o" "id:6,phase:2,pass,nolog,chain"
    SecRule MATCHED_VARS_NAMES "@rx ^ARGS:b$" "setvar:'tx.names=%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'"
SecRule TX:beta "!@rx ^first$" "id:7,phase:2,pass,nolog,setvar:'tx.key=%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'"
"#;

/// Values copied out of variables that change while rules run (`TX`, a
/// count, a number, `MATCHED_VARS_NAMES`) carry their own names and
/// values into `MATCHED_VAR_NAME` and `MATCHED_VAR`, rule after rule.
#[test]
fn values_of_changing_variables_carry_their_names() {
    let rules = Arc::new(RuleSet::from_text(CHANGING).unwrap_or_else(|e| panic!("{e}")));
    let mut tx = Transaction::new(rules, Limits::default());
    tx.connection("127.0.0.1", 40000, "127.0.0.1", 80);
    tx.request_line("GET", "/?a=one&b=two", "HTTP/1.1");
    tx.request_header(b"Host", b"localhost");
    tx.process_request_headers();
    tx.process_request_body();
    let var = |k: &str| tx.var("tx", k).unwrap_or_else(|| panic!("tx.{k} unset"));
    assert_eq!(var("seen"), "|TX:alpha=first|TX:beta=second");
    assert_eq!(var("count"), "TX:alpha=1");
    assert_eq!(var("args"), "ARGS=2");
    assert_eq!(var("size"), "ARGS_COMBINED_SIZE=8");
    assert_eq!(var("names"), "MATCHED_VARS_NAMES:ARGS:b=ARGS:b");
    assert_eq!(var("key"), "TX:beta=Second");
}

const NUMBERED: &str = r#"SecRuleEngine On
SecAction "id:1,phase:1,pass,nolog,setvar:tx.Score=5,setvar:tx.gone=x"
SecAction "id:2,phase:1,pass,nolog,setvar:tx.score=+2,setvar:!tx.GONE"
SecRule ARGS_NAMES "@rx ^k$" "id:3,phase:2,pass,nolog,setvar:'tx.%{MATCHED_VAR}=%{tx.SCORE}'"
SecRule ARGS_NAMES "@rx (?i)^score$" "id:4,phase:2,pass,nolog,setvar:'tx.%{MATCHED_VAR}=+10'"
SecRule TX:score "@eq 17" "id:5,phase:2,pass,log"
SecRule TX:/^(score|k|gone)$/ "@rx ." "id:6,phase:2,pass,nolog,setvar:'tx.seen=%{tx.seen}|%{MATCHED_VAR_NAME}=%{MATCHED_VAR}'"
SecRule TX:k "@streq 7" "id:7,phase:2,pass,log,setvar:!tx.k"
SecRule &TX:k "@eq 0" "id:8,phase:2,pass,log"
"#;

/// A `TX` variable the rules name in their text and one whose name a
/// request makes are the same variable, whatever the case of either:
/// set, added to, deleted, read in a macro and listed (under its name as
/// last written, in the order first set) alike, in every transaction.
#[test]
fn tx_variables_named_in_rules_and_by_requests_are_the_same() {
    let rules = Arc::new(RuleSet::from_text(NUMBERED).unwrap_or_else(|e| panic!("{e}")));
    let mut scratch = seclang::Scratch::default();
    for _ in 0..2 {
        let mut tx = Transaction::reusing(rules.clone(), Limits::default(), scratch);
        tx.connection("127.0.0.1", 40000, "127.0.0.1", 80);
        tx.request_line("GET", "/?k=1&SCORE=1", "HTTP/1.1");
        tx.process_request_headers();
        tx.process_request_body();
        let ids: Vec<u32> = tx.matched().iter().map(|m| m.id).collect();
        assert_eq!(ids, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(tx.var("tx", "score").as_deref(), Some("17"));
        assert_eq!(tx.var("tx", "gone"), None);
        assert_eq!(tx.var("tx", "k"), None);
        assert_eq!(tx.var("tx", "seen").as_deref(), Some("|TX:SCORE=17|TX:k=7"));
        scratch = tx.into_scratch();
    }
}

/// Rules past the time limit stop, and the request is blocked for it
/// (or passes, when the limits say so): the clock is read every few
/// dozen rules, so a phase of 200 rules stops well before its end.
#[test]
fn rules_past_the_time_limit_stop_and_block() {
    let mut text = String::from("SecRuleEngine On\n");
    for id in 1..=200 {
        text.push_str(&format!("SecAction \"id:{id},phase:1,pass,log\"\n"));
    }
    let rules = Arc::new(RuleSet::from_text(&text).unwrap_or_else(|e| panic!("{e}")));
    for past in [seclang::PastLimit::Block, seclang::PastLimit::Pass] {
        let limits = Limits {
            time: std::time::Duration::ZERO,
            past,
            ..Limits::default()
        };
        let mut tx = Transaction::new(rules.clone(), limits);
        tx.request_line("GET", "/", "HTTP/1.1");
        tx.process_request_headers();
        let (ran, decided) = (tx.matched().len(), tx.intervention().cloned());
        assert!(ran > 0 && ran < 200, "{ran} rules ran");
        match past {
            seclang::PastLimit::Block => {
                let i = decided.expect("blocked");
                assert_eq!((i.status, i.limit), (403, Some(seclang::Limit::Time)));
            }
            seclang::PastLimit::Pass => assert_eq!(decided, None),
        }
    }
}
