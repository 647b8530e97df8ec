//! What a transaction found, as a verdict: the rules whose whole chain
//! matched (logged ones only) with their tags as audit data, the anomaly
//! score as `waf.score` metadata, and a block that names the
//! highest-severity attack rule and every rule that contributed.

use seclang::{Intervention, MatchedRule, Transaction};
use wharf_guest::filter::{Decision, Verdict};
use wharf_guest::json_string;

/// The audit data of the logged rules among `matched`.
pub fn audit(matched: &[MatchedRule]) -> Verdict {
    let mut v = Verdict::allow();
    for m in matched.iter().filter(|m| m.log) {
        let id = m.id.to_string();
        if !v.audit.rule_ids.contains(&id) {
            v.audit.rule_ids.push(id);
        }
        for tag in &m.tags {
            if !v.audit.tags.contains(tag) {
                v.audit.tags.push(tag.clone());
            }
        }
    }
    if let Some(m) = headline(matched) {
        v.audit.reason = m.msg.clone();
    }
    v
}

/// The rule a person wants to read first: the most severe logged rule
/// tagged as an attack (`attack-sqli`…), else the first logged rule with
/// a message. Protocol noise and the anomaly evaluation come last.
fn headline(matched: &[MatchedRule]) -> Option<&MatchedRule> {
    let logged = || matched.iter().filter(|m| m.log && !m.msg.is_empty());
    let attack = logged()
        .filter(|m| m.tags.iter().any(|t| t.starts_with("attack-")))
        .min_by_key(|m| m.severity.unwrap_or(8));
    attack.or_else(|| logged().next())
}

/// The inbound anomaly score so far: CRS 4's blocking score once its
/// evaluation ran, else the sum of the per-level scores up to the
/// blocking level, else the baseline's single score.
pub fn score(tx: &Transaction) -> Option<u32> {
    let get = |k: &str| tx.var("tx", k).and_then(|v| v.trim().parse::<u32>().ok());
    if let Some(s) = get("blocking_inbound_anomaly_score") {
        return Some(s);
    }
    if get("inbound_anomaly_score_pl1").is_some() {
        let level = get("blocking_paranoia_level").unwrap_or(1).clamp(1, 4);
        return Some(
            (1..=level)
                .filter_map(|l| get(&format!("inbound_anomaly_score_pl{l}")))
                .sum(),
        );
    }
    get("inbound_anomaly_score")
}

/// The verdict for the rules matched since the last report (`new`), and
/// the decision if the transaction has one and `decide` (it is reported
/// once).
pub fn verdict(tx: &Transaction, new: &[MatchedRule], decide: bool) -> Verdict {
    let mut v = audit(new);
    let score = score(tx);
    let deciding = decide && tx.intervention().is_some();
    if let (Some(s), false) = (score, new.is_empty() && !deciding) {
        v = v.meta("waf.score", &s.to_string());
    }
    let Some(i) = tx.intervention().filter(|_| decide) else {
        return v;
    };
    let (mut decided, reason) = decision(tx, i);
    decided.audit = v.audit;
    decided.audit.reason = reason;
    decided.metadata = v.metadata;
    if let Some(limit) = i.limit {
        decided
            .audit
            .rule_ids
            .push(format!("limit-{}", limit.name()));
    }
    decided
}

/// A block (or redirect) answering for `i`, naming every logged rule that
/// matched in any phase, and the reason it gives.
fn decision(tx: &Transaction, i: &Intervention) -> (Verdict, String) {
    let whole = audit(tx.matched());
    if let Some(url) = &i.redirect {
        let status = if matches!(i.status, 301 | 302 | 303 | 307 | 308) {
            i.status
        } else {
            302
        };
        return (Verdict::redirect(status, url), whole.audit.reason);
    }
    let reason = match i.limit {
        Some(limit) => format!("past the WAF's inspection limit ({})", limit.name()),
        None if whole.audit.reason.is_empty() => "blocked by a rule".to_string(),
        None => whole.audit.reason,
    };
    let mut ids: Vec<String> = whole.audit.rule_ids;
    if let Some(limit) = i.limit {
        ids.push(format!("limit-{}", limit.name()));
    }
    let body = format!(
        "{{\"error\":{{\"code\":\"blocked\",\"message\":{},\"rule_ids\":[{}]}}}}",
        json_string(&reason),
        ids.iter()
            .map(|r| json_string(r))
            .collect::<Vec<_>>()
            .join(",")
    );
    let status = if (400..600).contains(&i.status) {
        i.status
    } else {
        403
    };
    (
        Verdict::block(status, &[("content-type", "application/json")], body),
        reason,
    )
}

/// The audit data of `a` with the decision, metadata and flags of `b` added.
pub fn merge(a: Verdict, mut b: Verdict) -> Verdict {
    let mut out = a;
    out.want_body |= b.want_body;
    for id in b.audit.rule_ids {
        if !out.audit.rule_ids.contains(&id) {
            out.audit.rule_ids.push(id);
        }
    }
    for tag in b.audit.tags {
        if !out.audit.tags.contains(&tag) {
            out.audit.tags.push(tag);
        }
    }
    if !b.audit.reason.is_empty() {
        out.audit.reason = b.audit.reason;
    }
    // A later score replaces an earlier one.
    out.metadata
        .retain(|(k, _)| !b.metadata.iter().any(|(bk, _)| bk == k));
    out.metadata.append(&mut b.metadata);
    if !matches!(b.decision, Decision::Allow) {
        out.decision = b.decision;
    }
    out
}
