//! Sessions pinned to nodes, in a NATS JetStream key-value bucket whose
//! entries expire after the pin TTL: a session's first request creates
//! its pin (only one node wins the create), later ones follow it, and a
//! node that finds the pinned node gone takes the pin over with a
//! compare-and-swap on the entry's revision, so two nodes never both do.
//! A lookup is remembered for a few seconds, as long as the connection
//! that read it lasts: a node takes over another's pin only when that
//! node has no subscription left, so while a node stays connected its
//! own pins stay its own, and a remembered pin elsewhere that turns out
//! gone is read again before it is taken over.

use crate::ClusterError;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::kv::{self, Operation, Store};
use bytes::Bytes;
use sha2::{Digest, Sha256};

/// Longest a lookup is remembered (a quarter of the TTL when that is less).
const REMEMBER: Duration = Duration::from_secs(5);

/// Lookups remembered before stale ones are dropped.
const REMEMBERED_MAX: usize = 100_000;

/// The bucket every node shares.
pub const BUCKET: &str = "wharf-pins";

/// Where a session is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// On this node (pinned here now, or already).
    Here,
    /// On another node, at this revision of its pin.
    At {
        /// The node.
        node: String,
        /// The pin's revision in the bucket, for a take-over.
        revision: u64,
    },
}

/// What a lookup did, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// No pin existed: this node made it.
    Created,
    /// Read from the bucket.
    Found,
    /// Found without reading the bucket: looked up moments ago.
    Remembered,
}

/// The pins, as one node uses them.
pub struct Pins {
    store: Store,
    node: String,
    ttl: Duration,
    /// Recent lookups: where, when, and the connection (by its count of
    /// connects) that read them.
    recent: dashmap::DashMap<String, (Place, Instant, u64)>,
    remember: Duration,
    stats: Arc<async_nats::Statistics>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The key of `agent`'s session `session`: the agent's token and a hash
/// of the session (any bytes a client sends become a valid key).
pub fn key(agent: &str, session: &str) -> String {
    let hash = Sha256::digest(session.as_bytes());
    format!("{}.{}", super::wire::token(agent), hex::encode(&hash[..16]))
}

impl Pins {
    /// The bucket (made when no node has made it yet).
    pub async fn open(
        client: &async_nats::Client,
        node: &str,
        ttl: Duration,
    ) -> Result<Pins, ClusterError> {
        let js = async_nats::jetstream::new(client.clone());
        let config = kv::Config {
            bucket: BUCKET.into(),
            description: "Wharf: session -> node".into(),
            history: 1,
            max_age: ttl,
            storage: async_nats::jetstream::stream::StorageType::Memory,
            ..Default::default()
        };
        let store = js
            .create_or_update_key_value(config)
            .await
            .map_err(|e| ClusterError::Bucket(e.to_string()))?;
        Ok(Pins {
            store,
            node: node.to_string(),
            ttl,
            recent: dashmap::DashMap::new(),
            remember: REMEMBER.min(ttl / 4),
            stats: client.statistics(),
        })
    }

    fn value(&self) -> Bytes {
        format!("{} {}", self.node, now_ms()).into()
    }

    /// Where `key`'s session is served; a session without a pin is pinned
    /// here. A pin of this node older than half the TTL is written again,
    /// so a session in use does not expire.
    pub async fn place(&self, key: &str) -> Result<(Place, Outcome), ClusterError> {
        let connects = self.stats.connects.load(Ordering::Relaxed);
        if let Some(hit) = self.recent.get(key) {
            let (place, at, read_by) = hit.value();
            if at.elapsed() < self.remember && *read_by == connects {
                return Ok((place.clone(), Outcome::Remembered));
            }
        }
        let placed = self.read(key).await?;
        if self.recent.len() >= REMEMBERED_MAX {
            self.recent
                .retain(|_, (_, at, _)| at.elapsed() < self.remember);
        }
        self.recent.insert(
            key.to_string(),
            (placed.0.clone(), Instant::now(), connects),
        );
        Ok(placed)
    }

    /// [`Pins::place`] from the bucket.
    async fn read(&self, key: &str) -> Result<(Place, Outcome), ClusterError> {
        for _ in 0..3 {
            let entry = self
                .store
                .entry(key)
                .await
                .map_err(|e| ClusterError::Pin(e.to_string()))?;
            match entry {
                Some(e) if e.operation == Operation::Put => {
                    let text = String::from_utf8_lossy(&e.value);
                    let (node, at) = text.split_once(' ').unwrap_or((&text, "0"));
                    if node != self.node {
                        let place = Place::At {
                            node: node.to_string(),
                            revision: e.revision,
                        };
                        return Ok((place, Outcome::Found));
                    }
                    let age = now_ms().saturating_sub(at.parse().unwrap_or(0));
                    if age > self.ttl.as_millis() as u64 / 2 {
                        // Another node may have taken it meanwhile: that is fine.
                        let _ = self.store.update(key, self.value(), e.revision).await;
                    }
                    return Ok((Place::Here, Outcome::Found));
                }
                _ => match self.store.create(key, self.value()).await {
                    Ok(_) => return Ok((Place::Here, Outcome::Created)),
                    Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(ClusterError::Pin(e.to_string())),
                },
            }
        }
        Err(ClusterError::Contended)
    }

    /// Takes over the pin at `revision` (its node is gone): true when this
    /// node now holds it, false when another node took it first.
    pub async fn take_over(&self, key: &str, revision: u64) -> Result<bool, ClusterError> {
        // Whatever happens, the next lookup reads the bucket.
        self.recent.remove(key);
        match self.store.update(key, self.value(), revision).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(false),
            Err(e) => Err(ClusterError::Pin(e.to_string())),
        }
    }
}
