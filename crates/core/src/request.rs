//! The transport-neutral request and response every transport produces and
//! consumes. Nothing here knows about sockets or wasmtime.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};

/// One request for one agent.
#[derive(Debug, Clone)]
pub struct Request {
    /// The HTTP method.
    pub method: Method,
    /// Path below the agent's mount point; always starts with `/`.
    pub path: String,
    /// Raw query string without `?`; empty when absent.
    pub query: String,
    /// The request's headers.
    pub headers: HeaderMap,
    /// The whole body, once read (empty while it is still with the transport).
    pub body: Bytes,
    /// Unique id, echoed as `x-request-id` and attached to logs.
    pub id: Arc<str>,
    /// The client's address, when the transport knows it.
    pub client: Option<SocketAddr>,
    /// Key that pins a session to an instance; none when absent.
    pub affinity: Option<String>,
    /// The agent the request is for (set by the pipeline); filters read it
    /// in the head as `agent` to keep per-route settings apart.
    pub agent: Arc<str>,
    /// Key/value pairs filters attached, in the order they were attached;
    /// the agent sees them in its request head as `meta.KEY`.
    pub metadata: Vec<(String, String)>,
    /// What to call in the agent: `handle`, or one turn of an A2A task.
    pub call: Call,
    /// The body as it arrives, for an agent that reads it so (a
    /// `wasi:http` component when no filter needs the body); `body` is
    /// empty then.
    pub incoming: Option<Incoming>,
    /// Where the request stands among calls between agents: the agents
    /// that called it, its deadline, and what its agent may reach.
    pub hop: Hop,
    /// Which attempt at the call this is: 0, then 1 for a retry after a trap.
    pub attempt: u32,
    /// Whether a body comes with the request, whatever its headers say
    /// (an HTTP/2 request may send one without `content-length`): guests
    /// read it in the head as `body` (`none`, else `some`). The pipeline
    /// sets it from the transport's body; until then, true.
    pub has_body: bool,
    /// The span the stage at hand starts its own under, when the host
    /// exports traces; none with tracing off.
    pub trace: Option<crate::trace::Trace>,
}

/// A request's place in a chain of calls between agents. Empty for a
/// request from a transport.
#[derive(Debug, Clone, Default)]
pub struct Hop {
    /// The agents on the call path, outermost first; none from a transport.
    pub path: Option<Arc<[Arc<str>]>>,
    /// When the call must end at the latest: the caller's own deadline.
    pub deadline: Option<std::time::Instant>,
    /// What the agent this request is for may reach through the host
    /// (set by the pipeline for an agent whose block allows calls or
    /// publishing).
    pub reach: Option<Reach>,
    /// The node that forwarded this request to this one (a cluster's
    /// nodes): it is answered here, never forwarded again.
    pub from_node: Option<Arc<str>>,
    /// Sent to this node alone, for a session pinned on it.
    pub pinned_here: bool,
    /// How many events led to this request one after the other: 0 from a
    /// transport; for a delivered event, one more than the republishes
    /// behind it. Calls between agents and other nodes carry it on, so an
    /// event an agent publishes here counts every republish before it.
    pub relayed: u32,
}

impl Hop {
    /// How many agents called this request, one after the other.
    pub fn depth(&self) -> usize {
        self.path.as_ref().map_or(0, |p| p.len())
    }
}

/// What a guest may reach beyond its own agent during one call: other
/// agents and topics, through the host.
#[derive(Clone)]
pub struct Reach {
    /// The host, as the guest reaches it.
    pub peers: Arc<dyn Peers>,
    /// The agents on the call path, the calling agent last.
    pub path: Arc<[Arc<str>]>,
    /// The request's [`Hop::relayed`]: what the guest publishes is one
    /// republish further.
    pub relayed: u32,
}

impl std::fmt::Debug for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reach")
            .field("path", &self.path)
            .field("relayed", &self.relayed)
            .finish()
    }
}

/// Why a call from one agent to another gave no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    #[error("{0}")]
    /// The caller's block does not allow it.
    Denied(String),
    #[error("{0}")]
    /// No such agent or pipeline.
    NotFound(String),
    #[error("{0}")]
    /// A cycle, or past the depth limit.
    Loop(String),
    #[error("{1}")]
    /// The callee answered no response (a status and why).
    Failed(u16, String),
}

/// The host as a guest reaches it: calls to other agents and publishing to
/// topics. The pipeline implements it; the runtime only holds it.
pub trait Peers: Send + Sync {
    /// Calls `callee` with `req` for the agent at the end of `path`, ending
    /// by `deadline` at the latest.
    fn call(
        &self,
        path: Arc<[Arc<str>]>,
        deadline: std::time::Instant,
        callee: String,
        req: Request,
    ) -> BoxFuture<Result<Response, PeerError>>;

    /// Publishes `payload` to `topic` for the agent `from`, serving a
    /// request `relayed` events led to (its [`Hop::relayed`]), its
    /// deliveries traced under `trace`; how many subscribers it was queued
    /// for.
    fn publish(
        &self,
        from: &str,
        relayed: u32,
        topic: &str,
        payload: Bytes,
        trace: Option<&crate::trace::Trace>,
    ) -> Result<usize, PublishError>;
}

/// Why a guest's publish was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    /// The host is stopping.
    #[error("the host is shutting down")]
    ShuttingDown,
    /// The publishing agent is no longer loaded.
    #[error("`{0}` is not loaded")]
    NotLoaded(String),
    /// No pattern of the agent's `publishes` matches the topic.
    #[error("`{from}` may not publish to `{topic}`: no pattern in its `publishes` matches it")]
    NotAllowed {
        /// The publishing agent.
        from: String,
        /// The topic.
        topic: String,
    },
    /// The topic, or the payload, cannot be published (the bus says why).
    #[error("{0}")]
    Refused(String),
    /// The event would be one republish past `topics { max-hops }`: a
    /// loop of agents republishing each other's events ends here.
    #[error(
        "`{from}` may not publish to `{topic}`: the event would be republish {hops} in a row, past this host's `topics {{ max-hops {max} }}` (do agents republish each other's events in a loop?)"
    )]
    TooManyHops {
        /// The publishing agent.
        from: String,
        /// The topic.
        topic: String,
        /// Which republish in a row the event would be.
        hops: u32,
        /// The host's `max-hops`.
        max: u32,
    },
}

/// A request body's chunks as they arrive, failing past the body limit.
pub type Chunks =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// A request body an agent reads as it arrives: taken once (a call that
/// took it cannot be retried).
#[derive(Clone)]
pub struct Incoming(Arc<std::sync::Mutex<Option<Chunks>>>);

impl Incoming {
    /// A body arriving as `chunks`.
    pub fn new(chunks: Chunks) -> Self {
        Incoming(Arc::new(std::sync::Mutex::new(Some(chunks))))
    }

    /// The chunks, the first time.
    pub fn take(&self) -> Option<Chunks> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl std::fmt::Debug for Incoming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Incoming")
    }
}

/// Which export of the agent a request calls.
#[derive(Debug, Clone, Default)]
pub enum Call {
    /// `handle`: the request is the agent's input, its response the output.
    #[default]
    Handle,
    /// `on-message`: one turn of an A2A task; progress and the outcome
    /// arrive on the turn's event channel, and the response is empty.
    Turn(Arc<Turn>),
    /// `handle`, for an agent that may stream its answer: what it writes
    /// before it returns goes to the sink.
    Streamed(Sink),
}

/// Where a `handle` call that streams its answer writes it: the head once,
/// then chunks of the body, checked against the response-body limit as
/// they are written.
#[derive(Debug, Clone)]
pub struct Sink(Arc<SinkInner>);

#[derive(Debug)]
struct SinkInner {
    tx: tokio::sync::mpsc::UnboundedSender<Piece>,
    started: std::sync::atomic::AtomicBool,
    /// Body bytes written so far; past `limit`, the answer is cut off.
    written: std::sync::atomic::AtomicUsize,
    overflowed: std::sync::atomic::AtomicBool,
    limit: usize,
}

/// What a streaming call has written.
#[derive(Debug)]
pub enum Piece {
    /// The status and headers, once.
    Head(StatusCode, HeaderMap),
    /// A chunk of the body.
    Chunk(Bytes),
}

impl Sink {
    /// A sink for a body of at most `limit` bytes, and where its pieces arrive.
    pub fn new(limit: usize) -> (Sink, tokio::sync::mpsc::UnboundedReceiver<Piece>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let inner = SinkInner {
            tx,
            started: Default::default(),
            written: Default::default(),
            overflowed: Default::default(),
            limit,
        };
        (Sink(Arc::new(inner)), rx)
    }

    /// Whether the head has been sent: the call can no longer be retried.
    pub fn started(&self) -> bool {
        self.0.started.load(Ordering::Acquire)
    }

    /// Whether a write passed the limit: the answer must be cut off.
    pub fn overflowed(&self) -> bool {
        self.0.overflowed.load(Ordering::Acquire)
    }

    /// Body bytes written so far, and the limit.
    pub fn written(&self) -> (usize, usize) {
        (self.0.written.load(Ordering::Acquire), self.0.limit)
    }

    /// Sends the head (once).
    pub fn start(&self, status: StatusCode, headers: HeaderMap) -> Result<(), SinkError> {
        if self.0.started.swap(true, Ordering::AcqRel) {
            return Err(SinkError::Started);
        }
        // A receiver gone means the client is gone: the call is dropped soon.
        let _ = self.0.tx.send(Piece::Head(status, headers));
        Ok(())
    }

    /// Sends one chunk of the body.
    pub fn write(&self, chunk: Bytes) -> Result<(), SinkError> {
        if !self.started() {
            return Err(SinkError::NotStarted);
        }
        if self.overflowed() {
            return Err(SinkError::Overflowed);
        }
        let before = self.0.written.fetch_add(chunk.len(), Ordering::AcqRel);
        if before + chunk.len() > self.0.limit {
            self.0.overflowed.store(true, Ordering::Release);
            return Err(SinkError::WouldOverflow(self.0.limit));
        }
        if !chunk.is_empty() {
            let _ = self.0.tx.send(Piece::Chunk(chunk));
        }
        Ok(())
    }
}

/// Why a streamed answer's head or chunk was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinkError {
    /// `start` was called twice.
    #[error("the response has already started")]
    Started,
    /// `write` before `start`.
    #[error("call `start` before `write`")]
    NotStarted,
    /// A write after the limit was passed.
    #[error("the response body passed its limit: the response is cut off")]
    Overflowed,
    /// This write would pass the limit (in bytes).
    #[error("the response body would pass its limit of {0} bytes: the response is cut off")]
    WouldOverflow(usize),
}

/// One turn of an A2A task, as the runtime runs it.
#[derive(Debug)]
pub struct Turn {
    /// The task the turn belongs to.
    pub task_id: String,
    /// The task's context.
    pub context_id: String,
    /// The client's new message.
    pub message: wharf_a2a_model::Message,
    /// The task's earlier messages, oldest first.
    pub history: Vec<wharf_a2a_model::Message>,
    /// The request's `metadata` object as JSON text; empty when none.
    pub metadata: String,
    /// Where the guest's progress and the turn's outcome go.
    pub events: tokio::sync::mpsc::UnboundedSender<TurnEvent>,
    /// Set by a cancel: the guest is interrupted at its next epoch tick.
    pub cancel: Arc<std::sync::atomic::AtomicBool>,
}

/// What a turn reports while it runs, and how it ends.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// The task is working; the message says on what.
    Working(Option<wharf_a2a_model::Message>),
    /// An artifact or a chunk of one.
    Artifact {
        /// The artifact, or a chunk of it.
        artifact: wharf_a2a_model::Artifact,
        /// Whether it continues an artifact already reported.
        append: bool,
        /// Whether this is the artifact's last chunk.
        last_chunk: bool,
    },
    /// The turn ended with a direct reply: this message instead of a task
    /// (the task is kept only if it was already shown).
    Replied(wharf_a2a_model::Message),
    /// The turn ended: the task's new state and status message.
    Finished {
        /// The state the turn ends in.
        state: wharf_a2a_model::TaskState,
        /// What the agent says with it.
        message: Option<wharf_a2a_model::Message>,
    },
}

/// A streamed response body: chunks as they are produced; an error cuts
/// the response off (the client sees it incomplete).
pub type BodyStream = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + Sync>,
>;

impl Request {
    /// A request with a fresh id and no headers, body or client.
    pub fn new(method: Method, path: impl Into<String>) -> Self {
        Request {
            method,
            path: path.into(),
            query: String::new(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
            id: next_request_id(),
            client: None,
            affinity: None,
            agent: Arc::from(""),
            metadata: Vec::new(),
            call: Call::Handle,
            incoming: None,
            hop: Hop::default(),
            attempt: 0,
            has_body: true,
            trace: None,
        }
    }

    /// The span a request runs in, whichever transport it came in on: its
    /// id, agent and method; its binding (A2A), instance, affinity and
    /// OpenTelemetry trace id (when traces are exported) are recorded as
    /// they become known (by the first attempt: a retry logs
    /// its own instance).
    pub fn span(&self, agent: &str) -> tracing::Span {
        tracing::info_span!(
            "wharf.request",
            id = %self.id,
            agent = agent,
            method = %self.method,
            binding = tracing::field::Empty,
            instance = tracing::field::Empty,
            affinity = tracing::field::Empty,
            trace_id = tracing::field::Empty,
        )
    }
}

/// Why a request body could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("the request body is over the limit of {0} bytes")]
    /// Past the limit (in bytes).
    TooLarge(usize),
    #[error("the request body could not be read")]
    /// The client's bytes could not be read.
    Unreadable,
}

type BoxFuture<T> = std::pin::Pin<Box<dyn Future<Output = T> + Send>>;

/// A body still on the wire, as a transport reads it: whole, or as chunks
/// as they arrive; never past a limit.
pub trait Wire: Send {
    /// The whole body, at most `limit` bytes.
    fn read(self: Box<Self>, limit: usize) -> BoxFuture<Result<Bytes, BodyError>>;
    /// The chunks as they arrive, failing once past `limit` bytes.
    fn chunks(self: Box<Self>, limit: usize) -> Chunks;
    /// Whether the transport knows already that no byte will come (its
    /// framing said so); false when it may not know.
    fn is_end_stream(&self) -> bool {
        false
    }
}

/// A request body as a transport hands it over: already in memory, or still
/// on the wire. The pipeline reads a body on the wire only after the
/// request-headers filters had their say (an auth filter refuses before the
/// upload is read), with the agent's body limit: whole, or, for an agent
/// that reads it as it arrives, as chunks.
pub enum Body {
    /// Read already.
    Ready(Bytes),
    /// Still with the transport, read when the pipeline asks.
    Wire(Box<dyn Wire>),
}

impl Body {
    /// Whether the body is known to be empty before it is read.
    pub fn is_known_empty(&self) -> bool {
        match self {
            Body::Ready(bytes) => bytes.is_empty(),
            Body::Wire(wire) => wire.is_end_stream(),
        }
    }

    /// The whole body, at most `limit` bytes.
    pub async fn read(self, limit: usize) -> Result<Bytes, BodyError> {
        match self {
            Body::Ready(bytes) if bytes.len() > limit => Err(BodyError::TooLarge(limit)),
            Body::Ready(bytes) => Ok(bytes),
            Body::Wire(wire) => wire.read(limit).await,
        }
    }

    /// The body as chunks as they arrive, failing once past `limit` bytes.
    pub fn chunks(self, limit: usize) -> Chunks {
        match self {
            Body::Wire(wire) => wire.chunks(limit),
            ready => Box::pin(futures_util::stream::once(ready.read(limit))),
        }
    }
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &self.body.len())
            .field("streamed", &self.stream.is_some())
            .finish()
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Ready(b) => write!(f, "Body::Ready({} bytes)", b.len()),
            Body::Wire(_) => f.write_str("Body::Wire"),
        }
    }
}

/// An agent's answer, validated by the runtime.
pub struct Response {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The whole body; empty when the body is streamed.
    pub body: Bytes,
    /// A body that leaves as it is produced (server-sent events): it
    /// follows `body`, and response-body filters do not see it.
    pub stream: Option<BodyStream>,
    /// Which stage gave it: the agent, unless a filter answered or
    /// changed it.
    pub answered_by: crate::metrics::Stage,
}

/// A streamed answer that ended in an error before it was whole.
#[derive(Debug, thiserror::Error)]
#[error("the answer was cut off: {0}")]
pub struct CutOff(#[from] pub std::io::Error);

impl Response {
    /// This response with a streamed body gathered into `body` (a stream
    /// is already bounded by its agent's response-body limit).
    pub async fn gathered(mut self) -> Result<Response, CutOff> {
        use futures_util::StreamExt;
        let Some(mut stream) = self.stream.take() else {
            return Ok(self);
        };
        let mut body = bytes::BytesMut::from(&self.body[..]);
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk?);
        }
        self.body = body.freeze();
        Ok(self)
    }

    /// A response with a whole body.
    pub fn new(status: StatusCode, headers: HeaderMap, body: Bytes) -> Response {
        Response {
            status,
            headers,
            body,
            stream: None,
            answered_by: crate::metrics::Stage::Agent,
        }
    }

    /// A 200 whose body is `stream`, as server-sent events
    /// (`content-type: text/event-stream`, `cache-control: no-cache`).
    pub fn event_stream(stream: BodyStream) -> Response {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("no-cache"),
        );
        let mut resp = Response::new(StatusCode::OK, headers, Bytes::new());
        resp.stream = Some(stream);
        resp
    }
}

impl Request {
    /// The request to send on to the agent, taking the body (and the
    /// headers, unless `keep_headers`: the response filters still need them).
    pub fn forward(&mut self, keep_headers: bool) -> Request {
        Request {
            method: self.method.clone(),
            path: self.path.clone(),
            query: self.query.clone(),
            headers: if keep_headers {
                self.headers.clone()
            } else {
                std::mem::take(&mut self.headers)
            },
            body: std::mem::take(&mut self.body),
            id: self.id.clone(),
            client: self.client,
            affinity: self.affinity.clone(),
            agent: self.agent.clone(),
            metadata: self.metadata.clone(),
            call: self.call.clone(),
            incoming: self.incoming.clone(),
            hop: self.hop.clone(),
            attempt: self.attempt,
            has_body: self.has_body,
            trace: self.trace.clone(),
        }
    }
}

/// Request ids: a per-process prefix from the start time, then a counter.
pub fn next_request_id() -> Arc<str> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static PREFIX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let prefix = PREFIX.get_or_init(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        (now.as_nanos() as u32) ^ std::process::id().rotate_left(16)
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix:08x}-{n:010x}").into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_unique() {
        let a = next_request_id();
        let b = next_request_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 19);
    }
}
