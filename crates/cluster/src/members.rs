//! Who is in the cluster: each node announces itself (its agents, whether
//! it serves or drains) on one NATS subject every heartbeat, and keeps
//! the view it hears from the others. A node not heard from for three
//! heartbeats is gone. Soft state: nothing is stored.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// What a node says of itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Announce {
    /// Its name.
    pub node: String,
    /// `serving`, `draining` or `left` (its last word).
    pub state: String,
    /// The agents it serves.
    pub agents: Vec<String>,
    /// Requests this node is answering for other nodes now.
    pub in_flight: u64,
}

/// One node as this one sees it.
#[derive(Debug, Clone, Serialize)]
pub struct Member {
    /// Its name.
    pub node: String,
    /// `serving`, `draining` or `left`.
    pub state: String,
    /// The agents it serves.
    pub agents: Vec<String>,
    /// Requests it is answering for other nodes.
    pub in_flight: u64,
    /// Milliseconds since it was last heard from.
    pub last_seen_ms: u64,
}

/// The nodes heard from lately.
#[derive(Default)]
pub struct Members {
    seen: std::sync::Mutex<BTreeMap<String, (Announce, Instant)>>,
}

impl Members {
    /// Records what a node said; `left` removes it at once.
    pub fn heard(&self, announce: Announce) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if announce.state == "left" {
            seen.remove(&announce.node);
        } else {
            seen.insert(announce.node.clone(), (announce, Instant::now()));
        }
    }

    /// The nodes heard from within three heartbeats, by name; older ones
    /// are forgotten.
    pub fn view(&self, heartbeat: Duration) -> Vec<Member> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.retain(|_, (_, at)| at.elapsed() < heartbeat * 3);
        seen.values()
            .map(|(a, at)| Member {
                node: a.node.clone(),
                state: a.state.clone(),
                agents: a.agents.clone(),
                in_flight: a.in_flight,
                last_seen_ms: at.elapsed().as_millis() as u64,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn say(node: &str, state: &str) -> Announce {
        Announce {
            node: node.into(),
            state: state.into(),
            agents: vec!["echo".into()],
            in_flight: 0,
        }
    }

    #[test]
    fn nodes_come_drain_leave_and_fall_silent() {
        let members = Members::default();
        members.heard(say("a", "serving"));
        members.heard(say("b", "serving"));
        members.heard(say("b", "draining"));
        let view = members.view(Duration::from_secs(1));
        let states: Vec<_> = view.iter().map(|m| (&*m.node, &*m.state)).collect();
        assert_eq!(states, [("a", "serving"), ("b", "draining")]);
        members.heard(say("b", "left"));
        assert_eq!(members.view(Duration::from_secs(1)).len(), 1);
        std::thread::sleep(Duration::from_millis(40));
        assert!(members.view(Duration::from_millis(10)).is_empty());
    }
}
