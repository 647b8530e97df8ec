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
    pub method: Method,
    /// Path below the agent's mount point; always starts with `/`.
    pub path: String,
    /// Raw query string without `?`; empty when absent.
    pub query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Unique id, echoed as `x-request-id` and attached to logs.
    pub id: Arc<str>,
    pub client: Option<SocketAddr>,
    /// Key that pins a session to an instance; none when absent.
    pub affinity: Option<String>,
}

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
        }
    }
}

/// An agent's answer, validated by the runtime.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
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
