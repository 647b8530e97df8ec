//! Steady load: `connections` connections to one target for a duration,
//! each sending request after request (HTTP/1.1 keep-alive, or the binary
//! transport with `depth` requests pipelined), recording every latency and
//! every answer that is not one of the expected statuses.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;

use crate::binary;

/// What to load.
#[derive(Debug, Clone)]
pub enum Target {
    /// POST to `path` on an HTTP listener.
    Http { addr: SocketAddr, path: String },
    /// Requests for `agent` on a binary listener.
    Binary { addr: binary::Addr, agent: String },
}

/// One load run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub target: Target,
    pub connections: usize,
    /// Requests in flight per connection (binary only; HTTP sends one at a time).
    pub depth: usize,
    pub duration: Duration,
    pub body: usize,
    /// Statuses that count as served; any other is an error.
    pub expect: Vec<u16>,
    /// Send a session key (`x-session-id` over HTTP, `affinity` over binary),
    /// one per connection.
    pub sessions: bool,
}

/// What a run saw.
#[derive(Debug, Clone)]
pub struct Report {
    pub requests: u64,
    pub errors: u64,
    pub statuses: BTreeMap<u16, u64>,
    pub seconds: f64,
    latency: Histogram<u64>,
}

impl Report {
    fn new() -> Report {
        Report {
            requests: 0,
            errors: 0,
            statuses: BTreeMap::new(),
            seconds: 0.0,
            latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"),
        }
    }

    fn record(&mut self, status: Option<u16>, took: Duration, expect: &[u16]) {
        self.requests += 1;
        match status {
            Some(s) => {
                *self.statuses.entry(s).or_default() += 1;
                if !expect.contains(&s) {
                    self.errors += 1;
                }
            }
            None => self.errors += 1,
        }
        let _ = self.latency.record((took.as_micros() as u64).max(1));
    }

    pub fn merge(&mut self, other: &Report) {
        self.requests += other.requests;
        self.errors += other.errors;
        for (s, n) in &other.statuses {
            *self.statuses.entry(*s).or_default() += n;
        }
        let _ = self.latency.add(&other.latency);
    }

    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.seconds.max(1e-9)
    }

    /// The latency at quantile `q` (0–1), in microseconds.
    pub fn quantile_us(&self, q: f64) -> u64 {
        self.latency.value_at_quantile(q)
    }

    pub fn error_rate(&self) -> f64 {
        self.errors as f64 / (self.requests.max(1)) as f64
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "requests": self.requests,
            "errors": self.errors,
            "error_rate": self.error_rate(),
            "rps": self.rps().round(),
            "p50_us": self.quantile_us(0.50),
            "p95_us": self.quantile_us(0.95),
            "p99_us": self.quantile_us(0.99),
            "max_us": self.latency.max(),
            "statuses": self.statuses,
        })
    }
}

/// Runs `plan` to its end.
pub async fn run(plan: Plan) -> Report {
    let started = Instant::now();
    let deadline = started + plan.duration;
    let body = Bytes::from(vec![b'x'; plan.body]);
    let tasks: Vec<_> = (0..plan.connections)
        .map(|n| {
            let (plan, body) = (plan.clone(), body.clone());
            let session = plan.sessions.then(|| format!("s-{n}"));
            tokio::spawn(async move {
                match &plan.target {
                    Target::Http { addr, path } => {
                        http_conn(*addr, path, &body, session, &plan.expect, deadline).await
                    }
                    Target::Binary { addr, agent } => {
                        binary_conn(addr, agent, &body, session, &plan, deadline).await
                    }
                }
            })
        })
        .collect();
    let mut report = Report::new();
    for task in tasks {
        if let Ok(part) = task.await {
            report.merge(&part);
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

async fn http_conn(
    addr: SocketAddr,
    path: &str,
    body: &Bytes,
    session: Option<String>,
    expect: &[u16],
    deadline: Instant,
) -> Report {
    let mut report = Report::new();
    while Instant::now() < deadline {
        let Ok(stream) = tokio::net::TcpStream::connect(addr).await else {
            report.record(None, Duration::ZERO, expect);
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Ok((mut sender, conn)) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
        else {
            report.record(None, Duration::ZERO, expect);
            continue;
        };
        tokio::spawn(conn);
        while Instant::now() < deadline {
            let mut req = http::Request::post(path).header("host", "load");
            if let Some(s) = &session {
                req = req.header("x-session-id", s.as_str());
            }
            let req = req.body(Full::new(body.clone())).expect("a valid request");
            let sent = Instant::now();
            let status = match sender.send_request(req).await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    resp.into_body().collect().await.ok().map(|_| status)
                }
                Err(_) => None,
            };
            report.record(status, sent.elapsed(), expect);
            if status.is_none() || sender.ready().await.is_err() {
                break;
            }
        }
    }
    report
}

async fn binary_conn(
    addr: &binary::Addr,
    agent: &str,
    body: &[u8],
    session: Option<String>,
    plan: &Plan,
    deadline: Instant,
) -> Report {
    let mut report = Report::new();
    let mut id = 0u64;
    while Instant::now() < deadline {
        let Ok((mut rd, mut wr)) = binary::connect(addr).await else {
            report.record(None, Duration::ZERO, &plan.expect);
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let mut sent: HashMap<u64, Instant> = HashMap::with_capacity(plan.depth);
        let mut out = BytesMut::new();
        let mut buf = BytesMut::new();
        let mut send = |n: usize, out: &mut BytesMut, sent: &mut HashMap<u64, Instant>| {
            for _ in 0..n {
                id += 1;
                let req = binary::Request {
                    id,
                    agent,
                    affinity: session.as_deref(),
                    body,
                };
                binary::encode(&req, out);
                sent.insert(id, Instant::now());
            }
        };
        send(plan.depth.max(1), &mut out, &mut sent);
        loop {
            if wr.write_all(&out).await.is_err() {
                for _ in sent.drain() {
                    report.record(None, Duration::ZERO, &plan.expect);
                }
                break;
            }
            out.clear();
            match binary::read_answer(&mut rd, &mut buf).await {
                Ok(Some(answer)) => {
                    let took = answer
                        .id
                        .and_then(|id| sent.remove(&id))
                        .map(|t| t.elapsed())
                        .unwrap_or_default();
                    report.record(Some(answer.status), took, &plan.expect);
                    if Instant::now() >= deadline {
                        // Collect what is still in flight, then stop.
                        while !sent.is_empty() {
                            match binary::read_answer(&mut rd, &mut buf).await {
                                Ok(Some(a)) => {
                                    let took = a.id.and_then(|id| sent.remove(&id));
                                    let took = took.map(|t| t.elapsed()).unwrap_or_default();
                                    report.record(Some(a.status), took, &plan.expect);
                                }
                                _ => break,
                            }
                        }
                        return report;
                    }
                    send(1, &mut out, &mut sent);
                }
                _ => {
                    for _ in sent.drain() {
                        report.record(None, Duration::ZERO, &plan.expect);
                    }
                    break;
                }
            }
        }
    }
    report
}
