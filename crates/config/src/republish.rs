//! Loops of republishing agents, found in the configuration: an agent
//! whose `publishes` pattern overlaps a `subscribe` pattern of its own, or
//! agents that publish to each other's subscriptions around a cycle
//! (themselves, or through agents they call), can republish an event
//! without end. At run time `topics { max-hops }` cuts such a loop;
//! `wharf check` and the start-up log name it beforehand.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::Config;
use crate::topic::overlap;

/// One edge of a loop: what `from` publishes, itself or through an agent
/// it calls, reaches `to`'s subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Republish {
    /// The subscribed agent that serves the event.
    pub from: String,
    /// The agent that publishes: `from`, or one `from` calls (directly or
    /// through other calls).
    pub publisher: String,
    /// The publisher's `publishes` pattern.
    pub publishes: String,
    /// The subscribed agent.
    pub to: String,
    /// Its `subscribe` pattern, which overlaps `publishes`.
    pub subscribe: String,
}

/// A cycle of republishes: each edge's `to` is the next edge's `from`, and
/// the last edge's `to` the first edge's `from`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicLoop(pub Vec<Republish>);

impl fmt::Display for TopicLoop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let edges = &self.0;
        if let [only] = edges.as_slice()
            && only.publisher == only.from
        {
            return write!(
                f,
                "`{}` may republish its own events: it subscribes to `{}` and publishes `{}`",
                only.from, only.subscribe, only.publishes
            );
        }
        if edges.len() == 1 {
            write!(f, "`{}` may republish its own events:", edges[0].from)?;
        } else {
            let mut agents: Vec<String> = edges.iter().map(|e| format!("`{}`", e.from)).collect();
            agents.push(format!("`{}`", edges[0].from));
            let agents = agents.join(" → ");
            write!(f, "{agents} may republish each other's events in a loop:")?;
        }
        for (n, e) in edges.iter().enumerate() {
            let sep = if n == 0 { " " } else { "; " };
            let who = if e.publisher == e.from {
                format!("`{}`", e.from)
            } else {
                format!("`{}` calls `{}`, which", e.from, e.publisher)
            };
            write!(
                f,
                "{sep}{who} publishes `{}`, which `{}` subscribes to as `{}`",
                e.publishes, e.to, e.subscribe
            )?;
        }
        Ok(())
    }
}

/// A subscribed agent: its name, `(publisher, pattern)` for what it may
/// publish while it serves an event, and its `subscribe` patterns.
type Subscribed<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<&'a str>);

/// Every loop of republishing agents among `config`'s agent blocks: one
/// per group of agents that can reach each other (the shortest cycle
/// through the first of them by name), in name order.
///
/// Cost: only agents that both subscribe and publish can be on a loop; for
/// `k` of them, `k²` pairs of pattern lists are compared.
pub fn topic_loops(config: &Config) -> Vec<TopicLoop> {
    // The subscribed agents, and what each may publish while it serves an
    // event: its own `publishes` and those of every agent it may call.
    let agents: Vec<Subscribed<'_>> = config
        .agents
        .iter()
        .filter(|(_, p)| !p.subscribes.is_empty())
        .map(|(name, p)| {
            let subs = p.subscribes.iter().map(|s| s.pattern.as_str()).collect();
            (name.as_str(), publishes_through_calls(config, name), subs)
        })
        .filter(|(_, publishes, _)| !publishes.is_empty())
        .collect();
    // edges[i]: (j, the first overlapping pair) for each agent j that i's
    // publishes reach.
    let edges: Vec<Vec<(usize, Republish)>> = agents
        .iter()
        .map(|(from, publishes, _)| {
            agents
                .iter()
                .enumerate()
                .filter_map(|(j, (to, _, subscribes))| {
                    let ((publisher, p), s) = publishes.iter().find_map(|pp| {
                        subscribes
                            .iter()
                            .find(|s| overlap(pp.1, s))
                            .map(|s| (pp, s))
                    })?;
                    Some((
                        j,
                        Republish {
                            from: from.to_string(),
                            publisher: publisher.to_string(),
                            publishes: p.to_string(),
                            to: to.to_string(),
                            subscribe: s.to_string(),
                        },
                    ))
                })
                .collect()
        })
        .collect();
    let mut covered = vec![false; agents.len()];
    let mut loops = Vec::new();
    for start in 0..agents.len() {
        if covered[start] {
            continue;
        }
        let Some(cycle) = shortest_cycle(&edges, start) else {
            continue;
        };
        // Everything on a cycle through `start` reaches it and back: the
        // same group, reported once.
        let (ahead, back) = (reaching_from(&edges, start), reaching(&edges, start));
        for (i, c) in covered.iter_mut().enumerate() {
            *c |= ahead[i] && back[i];
        }
        loops.push(TopicLoop(cycle));
    }
    loops
}

/// `(publisher, pattern)` for each `publishes` pattern of `agent` and of
/// the agents it may call, one call after another (pipelines are not
/// followed).
fn publishes_through_calls<'a>(config: &'a Config, agent: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut seen = BTreeSet::from([agent]);
    let mut todo = vec![agent];
    let mut out = Vec::new();
    while let Some(name) = todo.pop() {
        let Some(policy) = config.agents.get(name) else {
            continue;
        };
        out.extend(policy.publishes.iter().map(|p| (name, p.as_str())));
        for callee in &policy.calls {
            if seen.insert(callee) {
                todo.push(callee);
            }
        }
    }
    out
}

/// The shortest cycle from `start` back to it (breadth first), as edges.
fn shortest_cycle(edges: &[Vec<(usize, Republish)>], start: usize) -> Option<Vec<Republish>> {
    let mut came: BTreeMap<usize, (usize, &Republish)> = BTreeMap::new();
    let mut frontier = vec![start];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for &at in &frontier {
            for (to, edge) in &edges[at] {
                if *to == start {
                    let mut cycle = vec![edge.clone()];
                    let mut back = at;
                    while back != start {
                        let (prev, e) = came[&back];
                        cycle.push(e.clone());
                        back = prev;
                    }
                    cycle.reverse();
                    return Some(cycle);
                }
                if !came.contains_key(to) {
                    came.insert(*to, (at, edge));
                    next.push(*to);
                }
            }
        }
        frontier = next;
    }
    None
}

/// Which agents `start` reaches.
fn reaching_from(edges: &[Vec<(usize, Republish)>], start: usize) -> Vec<bool> {
    let mut seen = vec![false; edges.len()];
    let mut stack = vec![start];
    while let Some(at) = stack.pop() {
        for (to, _) in &edges[at] {
            if !seen[*to] {
                seen[*to] = true;
                stack.push(*to);
            }
        }
    }
    seen
}

/// Which agents reach `start`.
fn reaching(edges: &[Vec<(usize, Republish)>], start: usize) -> Vec<bool> {
    let mut reverse: Vec<Vec<(usize, Republish)>> = vec![Vec::new(); edges.len()];
    for (from, out) in edges.iter().enumerate() {
        for (to, e) in out {
            reverse[*to].push((from, e.clone()));
        }
    }
    reaching_from(&reverse, start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loops(kdl: &str) -> Vec<String> {
        let config = Config::parse("t.kdl", kdl, std::path::Path::new("/")).unwrap();
        topic_loops(&config).iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn an_agent_that_may_republish_its_own_events_is_named() {
        assert_eq!(
            loops(r#"agent "echo" { subscribe "chat.*"; publishes "chat.>"; }"#),
            [
                "`echo` may republish its own events: it subscribes to `chat.*` and publishes `chat.>`"
            ]
        );
    }

    #[test]
    fn a_cycle_through_several_agents_is_named_once_with_its_edges() {
        let found = loops(
            r#"
            agent "a" { subscribe "ping.>"; publishes "pong.>"; }
            agent "b" { subscribe "pong.*"; publishes "relay.>"; }
            agent "c" { subscribe "relay.>"; publishes "ping.x"; }
            agent "d" { subscribe "relay.>"; publishes "elsewhere.>"; }
            "#,
        );
        assert_eq!(
            found,
            [
                "`a` → `b` → `c` → `a` may republish each other's events in a loop: \
                 `a` publishes `pong.>`, which `b` subscribes to as `pong.*`; \
                 `b` publishes `relay.>`, which `c` subscribes to as `relay.>`; \
                 `c` publishes `ping.x`, which `a` subscribes to as `ping.>`"
            ]
        );
    }

    #[test]
    fn a_loop_through_a_call_is_named_with_the_agent_called() {
        assert_eq!(
            loops(
                r#"
                agent "ping" { subscribe "ping.>"; calls "helper"; }
                agent "helper" { publishes "ping.>"; }
                "#
            ),
            [
                "`ping` may republish its own events: `ping` calls `helper`, which publishes `ping.>`, which `ping` subscribes to as `ping.>`"
            ]
        );
    }

    #[test]
    fn chains_that_end_are_not_loops() {
        assert!(
            loops(
                r#"
                agent "audit" { subscribe "orders.>"; publishes "audit.>"; }
                agent "store" { subscribe "audit.>"; publishes "stored.>"; }
                agent "loud" { publishes "orders.created"; }
                "#
            )
            .is_empty()
        );
        assert!(topic_loops(&Config::embedded()).is_empty());
    }

    #[test]
    fn two_separate_loops_are_each_named() {
        let found = loops(
            r#"
            agent "x" { subscribe "x.>"; publishes "x.>"; }
            agent "y" { subscribe "y.a"; publishes "z.a"; }
            agent "z" { subscribe "z.*"; publishes "y.*"; }
            "#,
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("`x` may republish its own events"));
        assert!(found[1].starts_with("`y` → `z` → `y`"), "{}", found[1]);
    }
}
