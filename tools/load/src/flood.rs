//! Connection floods against an HTTP listener: connections that send part
//! of a request head and stall, keep-alive connections left idle after one
//! request, and connections opened and dropped mid-request, all while good
//! clients keep making requests on new connections. What matters is what
//! the good clients see.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::load::{self, Plan, Report, Target};

/// One flood.
#[derive(Debug, Clone)]
pub struct Flood {
    pub addr: SocketAddr,
    /// Connections that send a partial request head, then nothing.
    pub stalled: usize,
    /// Connections that make one request, then stay open and idle.
    pub idle: usize,
    /// Connections opened and dropped mid-request, per second.
    pub churn_per_sec: usize,
    /// Good clients, each on its own keep-alive connection.
    pub good: usize,
    /// The agent path the good clients POST to.
    pub path: String,
    pub duration: Duration,
}

/// What the flood achieved and what the good clients saw.
#[derive(Debug)]
pub struct Outcome {
    pub stalled_opened: usize,
    pub idle_opened: usize,
    pub churned: usize,
    pub good: Report,
}

impl Outcome {
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "stalled_opened": self.stalled_opened,
            "idle_opened": self.idle_opened,
            "churned": self.churned,
            "good": self.good.json(),
        })
    }
}

/// Runs the flood; the bad connections are opened first and held until
/// the good clients are done.
pub async fn run(flood: Flood) -> Outcome {
    let addr = flood.addr;
    let mut held = Vec::with_capacity(flood.stalled + flood.idle);
    let mut stalled_opened = 0;
    for _ in 0..flood.stalled {
        if let Ok(mut s) = TcpStream::connect(addr).await
            && s.write_all(b"POST /agents/echo HTTP/1.1\r\nhost: flood\r\nx-partial: ")
                .await
                .is_ok()
        {
            held.push(s);
            stalled_opened += 1;
        }
    }
    let mut idle_opened = 0;
    for _ in 0..flood.idle {
        if let Ok(mut s) = TcpStream::connect(addr).await
            && s.write_all(b"GET /healthz HTTP/1.1\r\nhost: flood\r\n\r\n")
                .await
                .is_ok()
        {
            let mut buf = [0u8; 512];
            let read = tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await;
            if matches!(read, Ok(Ok(n)) if n > 0) {
                idle_opened += 1;
            }
            held.push(s);
        }
    }
    let churn = tokio::spawn(churn(addr, flood.churn_per_sec, flood.duration));
    let good = load::run(Plan {
        target: Target::Http {
            addr,
            path: flood.path.clone(),
        },
        connections: flood.good,
        depth: 1,
        duration: flood.duration,
        body: 1024,
        expect: vec![200],
        sessions: false,
    })
    .await;
    let churned = churn.await.unwrap_or(0);
    drop(held);
    Outcome {
        stalled_opened,
        idle_opened,
        churned,
        good,
    }
}

/// Opens connections and drops them half-way: in the head, or after the
/// head with the body only begun.
async fn churn(addr: SocketAddr, per_sec: usize, duration: Duration) -> usize {
    if per_sec == 0 {
        return 0;
    }
    let end = Instant::now() + duration;
    let mut tick = tokio::time::interval(Duration::from_secs(1) / per_sec as u32);
    let mut n = 0;
    while Instant::now() < end {
        tick.tick().await;
        if let Ok(mut s) = TcpStream::connect(addr).await {
            let partial: &[u8] = if n % 2 == 0 {
                b"POST /agents/echo HTTP/1.1\r\nhost: churn\r\ncontent-le"
            } else {
                b"POST /agents/echo HTTP/1.1\r\nhost: churn\r\ncontent-length: 1000\r\n\r\nabc"
            };
            let _ = s.write_all(partial).await;
            n += 1;
        }
    }
    n
}
