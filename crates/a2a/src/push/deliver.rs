//! Delivering one webhook's notifications: one worker per webhook posts
//! them in order, each to an address the allow-list admits (resolved
//! again for every attempt), retrying failures that may pass (no answer,
//! timeouts, 408, 429, 5xx) with exponential backoff, and giving up at once
//! on answers that will not change (other 3xx and 4xx: redirects are not
//! followed). `https://` webhooks are posted to over TLS ([`super::tls`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use metrics::Counter;
use tokio::sync::mpsc;
use wharf_tasks::TaskPushNotificationConfig;

use super::guard::Webhook;
use wharf_config::Push as Policy;
use wharf_runtime::ClientTls as Tls;

/// The most of a webhook's answer the host reads: its status is all that
/// counts.
const ANSWER_CAP: usize = 16 << 10;

/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How deliveries ended, counted by outcome.
pub(super) struct Counters {
    pub delivered: Counter,
    pub failed: Counter,
    pub retried: Counter,
    pub dropped: Counter,
}

/// One webhook's worker, fed through `queue`.
pub(super) struct Hook {
    pub config: TaskPushNotificationConfig,
    pub queue: mpsc::Sender<Bytes>,
    /// Set when the config is deleted: nothing more is sent.
    pub closed: Arc<AtomicBool>,
    /// Set after the first notification dropped for a full queue (logged once).
    pub overflowed: AtomicBool,
}

/// Notifications a webhook may have waiting.
const QUEUE: usize = 1024;

impl Hook {
    pub fn spawn(
        config: TaskPushNotificationConfig,
        webhook: Webhook,
        policy: Arc<Policy>,
        tls: Arc<Tls>,
        counters: Arc<Counters>,
        agent: String,
    ) -> Hook {
        let (queue, rx) = mpsc::channel(QUEUE);
        let closed = Arc::new(AtomicBool::new(false));
        let worker = Worker {
            config: config.clone(),
            webhook,
            policy,
            tls,
            counters,
            agent,
            closed: closed.clone(),
        };
        tokio::spawn(worker.run(rx));
        Hook {
            config,
            queue,
            closed,
            overflowed: AtomicBool::new(false),
        }
    }
}

struct Worker {
    config: TaskPushNotificationConfig,
    webhook: Webhook,
    policy: Arc<Policy>,
    tls: Arc<Tls>,
    counters: Arc<Counters>,
    agent: String,
    closed: Arc<AtomicBool>,
}

/// Why an attempt failed, and whether another could pass.
enum Failure {
    Retry(String),
    Final(String),
}

impl Worker {
    async fn run(self, mut rx: mpsc::Receiver<Bytes>) {
        while let Some(body) = rx.recv().await {
            let mut wait = self.policy.backoff;
            for attempt in 1..=self.policy.attempts {
                if self.closed.load(Ordering::Relaxed) {
                    return;
                }
                let why = match self.attempt(&body).await {
                    Ok(()) => {
                        self.counters.delivered.increment(1);
                        break;
                    }
                    Err(Failure::Retry(why)) if attempt < self.policy.attempts => {
                        self.counters.retried.increment(1);
                        tracing::debug!(agent = %self.agent, task = %self.config.task_id, attempt, %why, "webhook failed; retrying");
                        tokio::time::sleep(wait).await;
                        wait = (wait * 2).min(MAX_BACKOFF);
                        continue;
                    }
                    Err(Failure::Retry(why) | Failure::Final(why)) => why,
                };
                self.counters.failed.increment(1);
                tracing::warn!(
                    agent = %self.agent,
                    task = %self.config.task_id,
                    config = %self.config.id,
                    attempts = attempt,
                    "a push notification was not delivered: {why}"
                );
                break;
            }
        }
    }

    async fn attempt(&self, body: &Bytes) -> Result<(), Failure> {
        let limit = self.policy.timeout;
        match tokio::time::timeout(limit, self.post(body)).await {
            Ok(result) => result,
            Err(_) => Err(Failure::Retry(format!("no answer within {limit:?}"))),
        }
    }

    async fn post(&self, body: &Bytes) -> Result<(), Failure> {
        let addrs =
            wharf_core::egress::resolve(&self.webhook.host, self.webhook.port, &self.policy.allow)
                .await
                .map_err(|e| Failure::Retry(e.to_string()))?;
        let mut last = String::new();
        let mut stream = None;
        for addr in addrs {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = format!("cannot connect to {addr}: {e}"),
            }
        }
        let stream = stream.ok_or(Failure::Retry(last))?;
        if self.webhook.tls {
            let stream = self
                .tls
                .connect(&self.webhook.host, stream)
                .await
                .map_err(|e| Failure::Retry(e.to_string()))?;
            self.exchange(stream, body).await
        } else {
            self.exchange(stream, body).await
        }
    }

    /// Posts `body` over `io` (plain or TLS) and reads the answer's status.
    async fn exchange<IO>(&self, io: IO, body: &Bytes) -> Result<(), Failure>
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let retry = |e: hyper::Error| Failure::Retry(format!("the webhook connection failed: {e}"));
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(retry)?;
        tokio::spawn(conn);
        let request = self
            .request(body)
            .map_err(|e| Failure::Final(e.to_string()))?;
        let response = sender.send_request(request).await.map_err(retry)?;
        let status = response.status();
        // Read what little the receiver answers so the connection ends
        // cleanly, and no more: a webhook answering a gigabyte costs the
        // host `ANSWER_CAP` bytes at most (the connection is dropped).
        let _ = http_body_util::Limited::new(response.into_body(), ANSWER_CAP)
            .collect()
            .await;
        match status {
            s if s.is_success() => Ok(()),
            StatusCode::REQUEST_TIMEOUT | StatusCode::TOO_MANY_REQUESTS => {
                Err(Failure::Retry(format!("the webhook answered {status}")))
            }
            s if s.is_server_error() => Err(Failure::Retry(format!("the webhook answered {s}"))),
            s => Err(Failure::Final(format!("the webhook answered {s}"))),
        }
    }

    fn request(&self, body: &Bytes) -> http::Result<Request<Full<Bytes>>> {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(self.webhook.path.as_str())
            .header(header::HOST, self.webhook.authority.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .header(
                header::USER_AGENT,
                concat!("wharf/", env!("CARGO_PKG_VERSION")),
            );
        if !self.config.token.is_empty() {
            req = req.header("x-a2a-notification-token", self.config.token.as_str());
        }
        if let Some(auth) = &self.config.authentication
            && !auth.credentials.is_empty()
        {
            req = req.header(
                header::AUTHORIZATION,
                format!("{} {}", auth.scheme, auth.credentials),
            );
        }
        req.body(Full::new(body.clone()))
    }
}
