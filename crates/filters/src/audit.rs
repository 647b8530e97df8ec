//! The audit log: one JSON line per request that any filter flagged (a
//! non-allow decision, a rule id, a tag, a reason, or a failure), written by
//! one background thread so the request path never waits on a disk.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use serde::Serialize;

use wharf_config::AuditSink;

/// Lines that may wait for the writer; past it lines are dropped (counted).
const QUEUE: usize = 16_384;

/// One filter's verdict (or failure) in one phase.
#[derive(Debug, Clone, Serialize)]
pub struct AuditVerdict {
    /// The filter.
    pub filter: String,
    /// The phase (`request_headers`, …).
    pub phase: &'static str,
    /// `allow`, `block`, `redirect`, or `failed`.
    pub decision: &'static str,
    /// False in detect mode, and for a failure the filter's mode let pass.
    pub enforced: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    /// The rules that matched.
    pub rule_ids: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    /// Their tags.
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    /// Why, in the filter's words.
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// How the filter failed, when it did.
    pub failure: Option<&'static str>,
}

/// The record of one request.
#[derive(Debug, Serialize)]
pub struct AuditRecord<'a> {
    /// When (RFC 3339, UTC).
    pub time: String,
    /// The request's id (`x-request-id`).
    pub request_id: &'a str,
    /// The agent, pipeline or `topics`.
    pub agent: &'a str,
    /// The request's method.
    pub method: &'a str,
    /// The path below the agent.
    pub path: &'a str,
    /// The client's address.
    pub client: String,
    /// The status answered.
    pub status: u16,
    /// Each filter's verdict, in order.
    pub verdicts: &'a [AuditVerdict],
    /// The metadata filters attached.
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// Where records go; cheap to clone.
#[derive(Clone)]
pub struct AuditLog {
    tx: Option<SyncSender<String>>,
    dropped: Arc<AtomicU64>,
}

impl AuditLog {
    /// Opens the sink (a file is opened for appending now, so a path that
    /// cannot be written stops the start) and starts the writer thread.
    pub fn open(sink: &AuditSink) -> std::io::Result<AuditLog> {
        let out: Box<dyn Write + Send> = match sink {
            AuditSink::Off => {
                return Ok(AuditLog {
                    tx: None,
                    dropped: Arc::default(),
                });
            }
            AuditSink::Stderr => Box::new(std::io::stderr()),
            AuditSink::File(path) => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| {
                        std::io::Error::new(
                            e.kind(),
                            format!("audit file `{}`: {e}", path.display()),
                        )
                    })?,
            ),
        };
        let (tx, rx) = sync_channel(QUEUE);
        std::thread::Builder::new()
            .name("wharf-audit".into())
            .spawn(move || write_lines(rx, out))?;
        Ok(AuditLog {
            tx: Some(tx),
            dropped: Arc::default(),
        })
    }

    /// A log that records nothing.
    pub fn off() -> AuditLog {
        AuditLog {
            tx: None,
            dropped: Arc::default(),
        }
    }

    /// Queues `record` for the writer thread; dropped (and counted) when the queue is full.
    pub fn record(&self, record: &AuditRecord<'_>) {
        let Some(tx) = &self.tx else {
            return;
        };
        let line = serde_json::to_string(record).expect("audit records serialize");
        match tx.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                if self
                    .dropped
                    .fetch_add(1, Ordering::Relaxed)
                    .is_multiple_of(1000)
                {
                    tracing::warn!("the audit writer is behind: audit records dropped");
                }
            }
        }
    }
}

fn write_lines(rx: Receiver<String>, out: Box<dyn Write + Send>) {
    let mut out = std::io::BufWriter::new(out);
    while let Ok(line) = rx.recv() {
        let mut ok = writeln!(out, "{line}").is_ok();
        // Write whatever else is queued, then flush once.
        while let Ok(line) = rx.try_recv() {
            ok &= writeln!(out, "{line}").is_ok();
        }
        if !ok || out.flush().is_err() {
            tracing::warn!("cannot write the audit log");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_reach_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&AuditSink::File(path.clone())).unwrap();
        let verdicts = [AuditVerdict {
            filter: "waf".into(),
            phase: "request_headers",
            decision: "block",
            enforced: true,
            rule_ids: vec!["942100".into()],
            tags: vec![],
            reason: "SQL injection".into(),
            failure: None,
        }];
        log.record(&AuditRecord {
            time: wharf_core::time::now_rfc3339(),
            request_id: "r1",
            agent: "echo",
            method: "GET",
            path: "/",
            client: String::new(),
            status: 403,
            verdicts: &verdicts,
            metadata: Default::default(),
        });
        let mut text = String::new();
        for _ in 0..200 {
            text = std::fs::read_to_string(&path).unwrap();
            if !text.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(line["verdicts"][0]["rule_ids"][0], "942100");
        assert_eq!(line["status"], 403);
        assert!(line["verdicts"][0].get("tags").is_none());
    }

    #[test]
    fn an_unwritable_file_is_an_error() {
        let err = AuditLog::open(&AuditSink::File("/nonexistent-dir/x/audit".into()))
            .err()
            .unwrap();
        assert!(err.to_string().contains("audit file"));
    }
}
