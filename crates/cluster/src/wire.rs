//! What crosses NATS between nodes, all of it: a request forwarded to
//! another node and its answer, as MessagePack maps with bodies and header
//! values as `bin` (no base64); the calls one node makes to another about
//! an A2A task whose turn runs there, and their answers; and the subjects
//! they travel on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use serde::{Deserialize, Serialize};

use wharf_core::request::{Request, Response};

/// Agent and node names may hold `.`, which NATS reads as a separator:
/// it is written `=` (no name holds `=`), in subjects and KV keys alike.
pub fn token(name: &str) -> String {
    name.replace('.', "=")
}

/// The subject every node serving `agent` answers as one queue group.
pub fn agent_subject(agent: &str) -> String {
    format!("wharf.agent.{}", token(agent))
}

/// The subject only `node` answers for `agent` (a session pinned there).
pub fn node_subject(node: &str, agent: &str) -> String {
    format!("wharf.node.{}.{}", token(node), token(agent))
}

/// Where other nodes ask `node` about A2A tasks whose turns run there.
pub fn tasks_subject(node: &str) -> String {
    format!("wharf.tasks.{}", token(node))
}

/// Where nodes announce themselves.
pub const MEMBERS: &str = "wharf.members";

/// A request as another node receives it.
#[derive(Serialize, Deserialize)]
pub struct Forwarded<'a> {
    /// The agent or pipeline it is for.
    pub agent: String,
    /// Its method.
    pub method: String,
    /// Its path below the agent.
    pub path: String,
    /// Its query string.
    pub query: String,
    /// Its headers, values as bytes.
    pub headers: Vec<(String, serde_bytes::ByteBuf)>,
    #[serde(with = "serde_bytes", borrow)]
    /// Its body.
    pub body: std::borrow::Cow<'a, [u8]>,
    /// Its request id.
    pub id: String,
    /// The client's address.
    pub client: Option<String>,
    /// Its session key.
    pub session: Option<String>,
    /// Time left before the caller's deadline, in milliseconds.
    pub deadline_ms: Option<u64>,
    /// The agents on the call path (calls between agents), outermost first.
    pub call_path: Vec<String>,
    /// The node that forwarded it.
    pub from: String,
    /// Sent to one node for a session pinned there: answered there, never
    /// forwarded again.
    pub direct: bool,
    /// How many events led to it one after the other (`Hop::relayed`);
    /// absent from a node that predates it, read as 0.
    #[serde(default)]
    pub relayed: u32,
}

/// Another node's answer.
#[derive(Serialize, Deserialize)]
pub struct Answer<'a> {
    /// The status.
    pub status: u16,
    /// The headers, values as bytes.
    pub headers: Vec<(String, serde_bytes::ByteBuf)>,
    #[serde(with = "serde_bytes", borrow)]
    /// The body, whole.
    pub body: std::borrow::Cow<'a, [u8]>,
    /// The node that answered.
    pub node: String,
}

fn pairs(headers: &HeaderMap) -> Vec<(String, serde_bytes::ByteBuf)> {
    headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                serde_bytes::ByteBuf::from(v.as_bytes()),
            )
        })
        .collect()
}

/// Why a message from another node cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// Not the MessagePack this version writes.
    #[error("unreadable MessagePack: {0}")]
    Decode(#[from] rmp_serde::decode::Error),
    /// A method HTTP does not allow.
    #[error("invalid method `{0}`")]
    Method(String),
    /// A status outside 100–999.
    #[error("invalid status {0}")]
    Status(u16),
    /// A header name HTTP does not allow.
    #[error("invalid header name `{0}`")]
    HeaderName(String),
    /// A header value HTTP does not allow.
    #[error("invalid value of header `{0}`")]
    HeaderValue(String),
}

fn header_map(pairs: Vec<(String, serde_bytes::ByteBuf)>) -> Result<HeaderMap, WireError> {
    let mut headers = HeaderMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| WireError::HeaderName(name.clone()))?;
        let value = HeaderValue::from_bytes(&value)
            .map_err(|_| WireError::HeaderValue(name.to_string()))?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// `req` (its body read whole) for `agent`, as MessagePack.
pub fn encode_request(agent: &str, req: &Request, from: &str, direct: bool) -> Vec<u8> {
    let forwarded = Forwarded {
        agent: agent.to_string(),
        method: req.method.as_str().to_string(),
        path: req.path.clone(),
        query: req.query.clone(),
        headers: pairs(&req.headers),
        body: std::borrow::Cow::Borrowed(&req.body),
        id: req.id.to_string(),
        client: req.client.map(|c| c.to_string()),
        session: req.affinity.clone(),
        deadline_ms: req
            .hop
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64),
        call_path: req
            .hop
            .path
            .iter()
            .flat_map(|p| p.iter().map(|a| a.to_string()))
            .collect(),
        from: from.to_string(),
        direct,
        relayed: req.hop.relayed,
    };
    rmp_serde::to_vec_named(&forwarded).expect("a request always encodes")
}

/// A forwarded request as this node runs it, and the agent it is for.
pub fn decode_request(payload: &[u8]) -> Result<(String, Request), WireError> {
    let f: Forwarded = rmp_serde::from_slice(payload)?;
    let method =
        Method::from_bytes(f.method.as_bytes()).map_err(|_| WireError::Method(f.method.clone()))?;
    let mut req = Request::new(method, f.path);
    req.query = f.query;
    req.headers = header_map(f.headers)?;
    req.body = Bytes::from(f.body.into_owned());
    req.id = f.id.into();
    req.client = f.client.and_then(|c| c.parse().ok());
    req.affinity = f.session;
    req.hop.deadline = f
        .deadline_ms
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    if !f.call_path.is_empty() {
        req.hop.path = Some(f.call_path.into_iter().map(Arc::from).collect());
    }
    req.hop.from_node = Some(f.from.into());
    req.hop.pinned_here = f.direct;
    req.hop.relayed = f.relayed;
    Ok((f.agent, req))
}

/// `resp` (its body collected) as MessagePack.
pub fn encode_answer(status: StatusCode, headers: &HeaderMap, body: &[u8], node: &str) -> Bytes {
    let answer = Answer {
        status: status.as_u16(),
        headers: pairs(headers),
        body: std::borrow::Cow::Borrowed(body),
        node: node.to_string(),
    };
    rmp_serde::to_vec_named(&answer)
        .expect("an answer always encodes")
        .into()
}

/// Another node's answer as a response, and the node that gave it.
pub fn decode_answer(payload: &[u8]) -> Result<(Response, String), WireError> {
    let a: Answer = rmp_serde::from_slice(payload)?;
    let status = StatusCode::from_u16(a.status).map_err(|_| WireError::Status(a.status))?;
    let resp = Response::new(
        status,
        header_map(a.headers)?,
        Bytes::from(a.body.into_owned()),
    );
    Ok((resp, a.node))
}

/// What one node asks another about an A2A task whose turn runs there.
#[derive(Debug, Serialize, Deserialize)]
pub struct TaskCall {
    /// What it asks.
    pub op: TaskOp,
    /// The agent serving the task.
    pub agent: String,
    /// The task.
    pub task_id: String,
    /// Where a subscriber wants the events.
    pub inbox: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
/// What a task call asks.
pub enum TaskOp {
    /// Cancel the task.
    Cancel,
    /// Send its events to the call's inbox.
    Subscribe,
    /// Whether the turn still runs there.
    Status,
}

/// The running node's answer.
#[derive(Debug, Serialize, Deserialize)]
pub enum TaskAnswer {
    /// The task (JSON), canceled.
    Task(#[serde(with = "serde_bytes")] Vec<u8>),
    /// The turn runs there (for a subscriber: its events follow on the
    /// inbox).
    Running,
    /// No turn of the task runs here (it ended meanwhile).
    NotRunning,
    /// The call failed, as an A2A error.
    Error {
        /// The JSON-RPC error code.
        code: i64,
        /// The error's message.
        message: String,
        /// `A2aError::metadata` as JSON.
        metadata: String,
    },
}

/// `call` as MessagePack.
pub fn encode_task_call(call: &TaskCall) -> Bytes {
    rmp_serde::to_vec_named(call)
        .expect("a task call encodes")
        .into()
}

/// A task call another node sent.
pub fn decode_task_call(payload: &[u8]) -> Result<TaskCall, WireError> {
    Ok(rmp_serde::from_slice(payload)?)
}

/// `answer` as MessagePack.
pub fn encode_task_answer(answer: &TaskAnswer) -> Bytes {
    rmp_serde::to_vec(answer)
        .expect("a task answer encodes")
        .into()
}

/// The answer to a task call.
pub fn decode_task_answer(payload: &[u8]) -> Result<TaskAnswer, WireError> {
    Ok(rmp_serde::from_slice(payload)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_crosses_with_its_bytes_as_bin() {
        let mut headers = HeaderMap::new();
        headers.insert("x-session-id", HeaderValue::from_static("alice"));
        let body = Bytes::from_static(b"\x00\xffraw");
        let mut req = Request::new(Method::PUT, "/a/b");
        (req.query, req.headers, req.body) = ("q=1".into(), headers, body);
        req.affinity = Some("alice".into());
        req.hop.relayed = 3;
        let wire = encode_request("echo.v2", &req, "n1", true);
        // The body travels as a MessagePack bin 8 (0xc4) of its own length.
        let at = wire.windows(5).position(|w| w == b"\x00\xffraw").unwrap();
        assert_eq!(&wire[at - 2..at], &[0xc4, 5]);
        let (agent, back) = decode_request(&wire).unwrap();
        assert_eq!((agent.as_str(), back.hop.pinned_here), ("echo.v2", true));
        assert_eq!(back.method, Method::PUT);
        assert_eq!((back.path.as_str(), back.query.as_str()), ("/a/b", "q=1"));
        assert_eq!(back.headers["x-session-id"], "alice");
        assert_eq!(&back.body[..], b"\x00\xffraw");
        assert_eq!(back.affinity.as_deref(), Some("alice"));
        assert_eq!(back.hop.from_node.as_deref(), Some("n1"));
        assert_eq!(
            back.hop.relayed, 3,
            "a delivered event's republishes cross too"
        );
        assert_eq!(agent_subject("echo.v2"), "wharf.agent.echo=v2");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode_request(b"\x93\x01\x02").is_err());
        assert!(decode_answer(b"").is_err());
        let bad = rmp_serde::to_vec_named(&Answer {
            status: 99,
            headers: vec![],
            body: std::borrow::Cow::Borrowed(b""),
            node: "n".into(),
        })
        .unwrap();
        assert!(decode_answer(&bad).is_err());
    }
}
