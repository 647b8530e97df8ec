//! Topics across the nodes of a cluster, on NATS: a message to a topic no
//! `topic` block keeps goes out on `wharf.topic.<topic>` (core NATS, at
//! most once); a kept one is stored in the JetStream stream
//! [`STREAM`] under `wharf.kept.<block>.<topic>`, whose sequence number
//! is its id on every node. Each node follows the stream into its own
//! copy of the history (what it reads back from) and hands what arrives
//! to its own watchers; an agent's subscription is one queue group, so an
//! event reaches one of the nodes serving the agent.

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, consumer, stream};
use bytes::Bytes;
use futures_util::StreamExt;
use sha2::Digest;

use wharf_config::TopicKeep;

pub use async_nats::jetstream::AckKind;

/// The stream of kept topic messages.
pub const STREAM: &str = "WHARF_TOPICS";
/// Where a message no block keeps goes: `wharf.topic.<topic>`.
const LIVE: &str = "wharf.topic";
/// Where a kept message goes: `wharf.kept.<block>.<topic>`.
const KEPT: &str = "wharf.kept";
const HOPS: &str = "Wharf-Hops";
const ORIGIN: &str = "Wharf-Node";

/// Why a topic message could not cross the cluster.
#[derive(Debug, thiserror::Error)]
pub enum TopicsError {
    /// The stream could not be made or changed.
    #[error("the cluster's topic stream `{STREAM}`: {0}")]
    Stream(String),
    /// A publish was not taken.
    #[error("publishing to the cluster failed: {0}")]
    Publish(String),
    /// Following the stream or a subject failed.
    #[error("following the cluster's topics failed: {0}")]
    Follow(String),
    /// More is waiting to go to NATS than this node holds.
    #[error("{queued} bytes of topic messages wait for NATS (at most {max}): try again shortly")]
    Backlog {
        /// Payload bytes waiting.
        queued: usize,
        /// The most held.
        max: usize,
    },
}

/// The token naming a `topic` block in subjects: its pattern hashed.
pub fn block_token(pattern: &str) -> String {
    let hash = sha2::Sha256::digest(pattern.as_bytes());
    hex::encode(&hash[..8])
}

/// The subjects carrying what `pattern` matches: live, then kept (any
/// block).
pub fn subjects(pattern: &str) -> [String; 2] {
    [format!("{LIVE}.{pattern}"), format!("{KEPT}.*.{pattern}")]
}

/// Every live message, for a node's watchers.
pub fn all_live() -> String {
    format!("{LIVE}.>")
}

/// A topic message as it arrived from NATS.
#[derive(Debug, Clone)]
pub struct Incoming {
    /// The topic it was published to.
    pub topic: String,
    /// The `topic` block keeping it (its token), when kept.
    pub block: Option<String>,
    /// Which republish in a row it is.
    pub hops: u32,
    /// The node it was published on.
    pub origin: String,
    /// Its payload.
    pub payload: Bytes,
    /// Its id and time (ms since the epoch), when read from the stream.
    pub kept: Option<(u64, i64)>,
}

impl Incoming {
    /// Reads a message of `wharf.topic.…` or `wharf.kept.….…`; none when
    /// the subject is neither.
    pub fn parse(subject: &str, headers: Option<&HeaderMap>, payload: Bytes) -> Option<Incoming> {
        let (topic, block) = if let Some(topic) = subject.strip_prefix("wharf.topic.") {
            (topic, None)
        } else {
            let rest = subject.strip_prefix("wharf.kept.")?;
            let (block, topic) = rest.split_once('.')?;
            (topic, Some(block.to_string()))
        };
        let header = |name: &str| headers.and_then(|h| h.get(name)).map(|v| v.as_str());
        Some(Incoming {
            topic: topic.to_string(),
            block,
            hops: header(HOPS).and_then(|h| h.parse().ok()).unwrap_or(0),
            origin: header(ORIGIN).unwrap_or_default().to_string(),
            payload,
            kept: None,
        })
    }
}

impl Incoming {
    /// Reads a message of the stream, with its id and time.
    pub fn kept(m: &jetstream::Message) -> Result<Incoming, TopicsError> {
        let info = m.info().map_err(|e| TopicsError::Follow(e.to_string()))?;
        let id = info.stream_sequence;
        let ms = (info.published.unix_timestamp_nanos() / 1_000_000) as i64;
        let mut incoming = Incoming::parse(&m.subject, m.headers.as_ref(), m.payload.clone())
            .ok_or_else(|| TopicsError::Follow(format!("`{}` is no kept topic", m.subject)))?;
        incoming.kept = Some((id, ms));
        Ok(incoming)
    }
}

/// This node's side of the cluster's topics.
#[derive(Clone)]
pub struct Topics {
    client: async_nats::Client,
    js: jetstream::Context,
    node: String,
}

impl Topics {
    /// Topics over `client`, published as node `node`.
    pub fn new(client: async_nats::Client, node: &str) -> Topics {
        Topics {
            js: jetstream::new(client.clone()),
            client,
            node: node.to_string(),
        }
    }

    /// Makes the stream, or brings its limits to what `keeps` asks: each
    /// block's own limits are applied by [`Topics::trim`] as the nodes'
    /// copies apply them; the stream's own bound is twice their sum, and
    /// the longest `for` when every block has one.
    pub async fn ensure_stream(&self, keeps: &[TopicKeep]) -> Result<(), TopicsError> {
        let sum: u64 = keeps.iter().map(|k| k.keep).sum();
        let age = match keeps.iter().map(|k| k.age).collect::<Option<Vec<_>>>() {
            Some(ages) => ages.into_iter().max().unwrap_or_default(),
            None => Duration::ZERO,
        };
        let config = stream::Config {
            name: STREAM.into(),
            description: Some("Wharf: kept topic messages".into()),
            subjects: vec![format!("{KEPT}.>")],
            storage: stream::StorageType::File,
            discard: stream::DiscardPolicy::Old,
            max_messages: i64::try_from(sum.saturating_mul(2)).unwrap_or(i64::MAX),
            max_age: age,
            ..Default::default()
        };
        self.js
            .create_or_update_stream(config)
            .await
            .map(|_| ())
            .map_err(|e| TopicsError::Stream(e.to_string()))
    }

    async fn stream(&self) -> Result<stream::Stream, TopicsError> {
        self.js
            .get_stream(STREAM)
            .await
            .map_err(|e| TopicsError::Stream(e.to_string()))
    }

    /// The last sequence number in the stream (0 when empty), and which
    /// stream it is: when it was made (in ns since 1970), so a stream
    /// deleted and made again is told from the one before.
    pub async fn last_id(&self) -> Result<(u64, String), TopicsError> {
        let mut stream = self.stream().await?;
        let info = stream
            .info()
            .await
            .map_err(|e| TopicsError::Stream(e.to_string()))?;
        let made = info.created.unix_timestamp_nanos().to_string();
        Ok((info.state.last_sequence, made))
    }

    /// Waits until the connection to NATS is up: what waits to be sent
    /// stays in this node's bounded queue rather than the client's.
    pub async fn connected(&self) {
        while self.client.connection_state() != async_nats::connection::State::Connected {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn headers(&self, hops: u32) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(HOPS, hops.to_string().as_str());
        headers.insert(ORIGIN, self.node.as_str());
        headers
    }

    /// Publishes a message no block keeps: handed to the connection (at
    /// most once).
    pub async fn publish(&self, topic: &str, payload: Bytes, hops: u32) -> Result<(), TopicsError> {
        self.client
            .publish_with_headers(format!("{LIVE}.{topic}"), self.headers(hops), payload)
            .await
            .map_err(|e| TopicsError::Publish(e.to_string()))
    }

    /// Sends a message kept under the block `keep` to the stream; the
    /// future answers its id once the stream acknowledges it. Messages
    /// sent one after another are stored in that order.
    pub async fn publish_kept(
        &self,
        keep: &str,
        topic: &str,
        payload: Bytes,
        hops: u32,
    ) -> Result<impl Future<Output = Result<u64, TopicsError>> + use<>, TopicsError> {
        let subject = format!("{KEPT}.{}.{topic}", block_token(keep));
        let ack = self
            .js
            .publish_with_headers(subject, self.headers(hops), payload)
            .await
            .map_err(|e| TopicsError::Publish(e.to_string()))?;
        Ok(async move {
            ack.await
                .map(|ack| ack.sequence)
                .map_err(|e| TopicsError::Publish(e.to_string()))
        })
    }

    /// Every kept message after id `after`, in id order, then each as it
    /// is stored; the consumer is made again by the client when its
    /// connection is lost, from where it was.
    pub async fn follow(
        &self,
        after: u64,
    ) -> Result<impl futures_util::Stream<Item = Result<Incoming, TopicsError>> + use<>, TopicsError>
    {
        let stream = self.stream().await?;
        let deliver_policy = match after {
            0 => consumer::DeliverPolicy::All,
            after => consumer::DeliverPolicy::ByStartSequence {
                start_sequence: after + 1,
            },
        };
        let consumer = stream
            .create_consumer(consumer::pull::OrderedConfig {
                deliver_policy,
                ..Default::default()
            })
            .await
            .map_err(|e| TopicsError::Follow(e.to_string()))?;
        let messages = consumer
            .messages()
            .await
            .map_err(|e| TopicsError::Follow(e.to_string()))?;
        Ok(messages.map(|m| {
            let m = m.map_err(|e| TopicsError::Follow(e.to_string()))?;
            Incoming::kept(&m)
        }))
    }

    /// Every live message (none of the kept), for this node's watchers.
    pub async fn live(&self) -> Result<async_nats::Subscriber, TopicsError> {
        self.client
            .subscribe(all_live())
            .await
            .map_err(|e| TopicsError::Follow(e.to_string()))
    }

    /// What `pattern` matches, live and kept, shared with the other nodes
    /// serving `agent`'s subscription to it: each message reaches one.
    pub async fn share(
        &self,
        agent: &str,
        pattern: &str,
    ) -> Result<Vec<async_nats::Subscriber>, TopicsError> {
        let group = format!(
            "wharf.sub.{}",
            block_token(&format!("{agent}\u{0}{pattern}"))
        );
        let mut subs = Vec::new();
        for subject in subjects(pattern) {
            let sub = self
                .client
                .queue_subscribe(subject, group.clone())
                .await
                .map_err(|e| TopicsError::Follow(e.to_string()))?;
            subs.push(sub);
        }
        Ok(subs)
    }

    /// The kept messages `pattern` matches for `agent`'s at-least-once
    /// subscription, one at a time across every node serving it (a
    /// durable consumer with one unacknowledged message at most, so they
    /// go in order): each is handed to another node if this one has not
    /// acknowledged it within `ack_wait`. A subscription made for the
    /// first time starts with the next message stored.
    pub async fn durable(
        &self,
        agent: &str,
        pattern: &str,
        ack_wait: Duration,
    ) -> Result<consumer::pull::Stream, TopicsError> {
        let stream = self.stream().await?;
        let name = format!(
            "wharf_sub_{}",
            block_token(&format!("{agent}\u{0}{pattern}"))
        );
        let config = consumer::pull::Config {
            durable_name: Some(name.clone()),
            description: Some(format!("Wharf: {agent} subscribes to {pattern}")),
            deliver_policy: consumer::DeliverPolicy::New,
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait,
            max_ack_pending: 1,
            filter_subject: format!("{KEPT}.*.{pattern}"),
            ..Default::default()
        };
        let consumer = stream
            .get_or_create_consumer(&name, config)
            .await
            .map_err(|e| TopicsError::Follow(e.to_string()))?;
        consumer
            .messages()
            .await
            .map_err(|e| TopicsError::Follow(e.to_string()))
    }

    /// Deletes from the stream the messages of block `keep` up to id
    /// `through` (what retention deleted from the nodes' copies).
    pub async fn trim(&self, keep: &str, through: u64) -> Result<(), TopicsError> {
        let stream = self.stream().await?;
        stream
            .purge()
            .filter(format!("{KEPT}.{}.>", block_token(keep)))
            .sequence(through.saturating_add(1))
            .await
            .map(|_| ())
            .map_err(|e| TopicsError::Stream(e.to_string()))
    }

    /// This node's name.
    pub fn node(&self) -> &str {
        &self.node
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_carry_the_topic_and_its_block() {
        let live = Incoming::parse("wharf.topic.orders.eu", None, Bytes::new()).unwrap();
        assert_eq!((live.topic.as_str(), live.block), ("orders.eu", None));
        let token = block_token("orders.>");
        assert_eq!(token.len(), 16);
        let kept =
            Incoming::parse(&format!("wharf.kept.{token}.orders.eu"), None, Bytes::new()).unwrap();
        assert_eq!(kept.topic, "orders.eu");
        assert_eq!(kept.block.as_deref(), Some(token.as_str()));
        assert!(Incoming::parse("wharf.members", None, Bytes::new()).is_none());
        assert_eq!(
            subjects("orders.*"),
            [
                "wharf.topic.orders.*".to_string(),
                "wharf.kept.*.orders.*".into()
            ]
        );
    }
}
