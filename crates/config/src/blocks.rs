//! The routing blocks of `wharf.kdl` (`instances`, `health`, `breaker`,
//! `affinity`, `rate-limit`), valid at the top level and in `agent` blocks;
//! each changes only the fields it names.

use std::time::Duration;

use kdl::KdlNode;

use super::diag::Problem;
use super::walker::{Walker, clamp_u32, set};
use super::{Affinity, AffinitySource, Breaker, Health, Instances, Load, Mode, RateKey, RateLimit};

pub(super) const INSTANCES: &[&str] = &[
    "mode",
    "max",
    "max-uses",
    "max-memory",
    "queue",
    "ahead",
    "unload-after",
];
pub(super) const HEALTH: &[&str] = &["interval", "idle-interval", "unhealthy-after"];
pub(super) const BREAKER: &[&str] = &["failures", "cool-down"];
pub(super) const AFFINITY: &[&str] = &["header", "cookie", "ttl", "capacity"];
pub(super) const RATE_LIMIT: &[&str] = &["requests", "per", "burst", "by"];

impl Walker {
    pub(super) fn instances(&mut self, node: &KdlNode, i: &mut Instances) {
        for child in self.block(node) {
            match child.name().value() {
                "mode" => set(&mut i.mode, self.mode(child)),
                "max" => set(&mut i.max, self.count(child)),
                "max-uses" => set(&mut i.max_uses, self.count(child).map(|n| n as u64)),
                "max-memory" => {
                    if let Some(size) = self.size(child) {
                        i.max_memory = Some(size);
                    }
                }
                "queue" => set(&mut i.queue, self.count(child)),
                "ahead" => set(&mut i.ahead, self.count(child)),
                "unload-after" => {
                    if let Some(after) = self.duration_or_off(child) {
                        i.unload_after = after;
                    }
                }
                _ => self.unknown(child, "in `instances`", INSTANCES),
            }
        }
    }

    fn mode(&mut self, node: &KdlNode) -> Option<Mode> {
        let (text, span) = self.string(node)?;
        match text.as_str() {
            "fresh" => Some(Mode::Fresh),
            "warm" => Some(Mode::Warm),
            _ => {
                self.problems.push(
                    Problem::new(span, format!("unknown instance mode `{text}`"))
                        .help("use \"fresh\" (a new instance per request) or \"warm\" (a pool)"),
                );
                None
            }
        }
    }

    pub(super) fn load(&mut self, node: &KdlNode) -> Option<Load> {
        let (text, span) = self.string(node)?;
        match text.as_str() {
            "before-serving" => Some(Load::BeforeServing),
            "while-serving" => Some(Load::WhileServing),
            _ => {
                self.problems.push(
                    Problem::new(span, format!("unknown load `{text}`"))
                        .help("use \"before-serving\" (every component before the first request) or \"while-serving\" (filters first, agents while serving)"),
                );
                None
            }
        }
    }

    pub(super) fn health(&mut self, node: &KdlNode, h: &mut Health) {
        for child in self.block(node) {
            match child.name().value() {
                "interval" => set(&mut h.interval, self.duration(child)),
                "idle-interval" => set(&mut h.idle_interval, self.duration(child)),
                "unhealthy-after" => set(&mut h.unhealthy_after, self.count(child).map(clamp_u32)),
                _ => self.unknown(child, "in `health`", HEALTH),
            }
        }
    }

    pub(super) fn breaker(&mut self, node: &KdlNode, b: &mut Breaker) {
        for child in self.block(node) {
            match child.name().value() {
                "failures" => set(&mut b.failures, self.count(child).map(clamp_u32)),
                "cool-down" => set(&mut b.cool_down, self.duration(child)),
                _ => self.unknown(child, "in `breaker`", BREAKER),
            }
        }
    }

    pub(super) fn affinity(&mut self, node: &KdlNode, slot: &mut Option<Affinity>) {
        let mut source = slot.as_ref().map(|a| a.source.clone());
        let mut ttl = slot.as_ref().map_or(Duration::from_secs(600), |a| a.ttl);
        let mut capacity = slot.as_ref().map_or(10_000, |a| a.capacity);
        // An invalid `header`/`cookie` is reported once, not again as missing.
        let mut named_source = false;
        for child in self.block(node) {
            match child.name().value() {
                "header" => {
                    named_source = true;
                    if let Some((name, span)) = self.string(child) {
                        match http::HeaderName::from_bytes(name.as_bytes()) {
                            Ok(h) => source = Some(AffinitySource::Header(h)),
                            Err(_) => self.problems.push(Problem::new(
                                span,
                                format!("`{name}` is not a valid header name"),
                            )),
                        }
                    }
                }
                "cookie" => {
                    named_source = true;
                    if let Some((name, _)) = self.string(child) {
                        source = Some(AffinitySource::Cookie(name));
                    }
                }
                "ttl" => set(&mut ttl, self.duration(child)),
                "capacity" => set(&mut capacity, self.count(child)),
                _ => self.unknown(child, "in `affinity`", AFFINITY),
            }
        }
        match source {
            Some(source) => {
                *slot = Some(Affinity {
                    source,
                    ttl,
                    capacity,
                })
            }
            None if named_source => {}
            None => self.problems.push(
                Problem::new(node.name().span(), "`affinity` needs a key source")
                    .help("add `header \"x-session-id\"` or `cookie \"session\"`"),
            ),
        }
    }

    pub(super) fn rate_limit(&mut self, node: &KdlNode, slot: &mut Option<RateLimit>) {
        let mut requests = slot.map(|r| r.requests);
        let mut per = slot.map_or(Duration::from_secs(1), |r| r.per);
        let mut burst = slot.map(|r| r.burst);
        let mut by = slot.map_or(RateKey::Ip, |r| r.by);
        for child in self.block(node) {
            match child.name().value() {
                "requests" => requests = self.count(child).map(clamp_u32).or(requests),
                "per" => set(&mut per, self.duration(child)),
                "burst" => burst = self.count(child).map(clamp_u32).or(burst),
                "by" => {
                    if let Some((text, span)) = self.string(child) {
                        match text.as_str() {
                            "ip" => by = RateKey::Ip,
                            "affinity" => by = RateKey::Affinity,
                            _ => self.problems.push(
                                Problem::new(span, format!("unknown rate-limit key `{text}`"))
                                    .help("use \"ip\" or \"affinity\""),
                            ),
                        }
                    }
                }
                _ => self.unknown(child, "in `rate-limit`", RATE_LIMIT),
            }
        }
        match requests {
            Some(requests) => {
                *slot = Some(RateLimit {
                    requests,
                    per,
                    burst: burst.unwrap_or(requests),
                    by,
                })
            }
            None => self.problems.push(
                Problem::new(node.name().span(), "`rate-limit` needs `requests`")
                    .help("e.g. `rate-limit { requests 100; per \"1s\" }`"),
            ),
        }
    }
}
