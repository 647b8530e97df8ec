//! The `telemetry { … }` block: where the host sends its traces over
//! OTLP, how many new traces it keeps, and the service name they carry.
//! Without the block nothing is traced.
//!
//! ```kdl
//! telemetry {
//!     endpoint "http://127.0.0.1:4317"  // an OTLP/gRPC receiver (a collector)
//!     sampling 0.25                     // the share of new traces kept, 0 to 1 (default 1)
//!     service "checkout"                // `service.name` (default "wharf")
//! }
//! ```

use kdl::{KdlNode, KdlValue};

use super::diag::Problem;
use super::walker::Walker;

const TELEMETRY: &[&str] = &["endpoint", "sampling", "service"];

/// Where traces go and how many are kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Telemetry {
    /// The OTLP/gRPC receiver, `http://host:port`.
    pub endpoint: String,
    /// The share of traces started here that are kept (0 to 1); a trace
    /// continued from a client's `traceparent` follows its sampled flag.
    pub sampling: f64,
    /// The `service.name` resource of every span.
    pub service: String,
}

impl Walker {
    /// `telemetry { endpoint "…"; sampling R; service "…" }`.
    pub(super) fn telemetry(&mut self, node: &KdlNode) -> Option<Telemetry> {
        let (mut endpoint, mut named) = (None, false);
        let mut telemetry = Telemetry {
            endpoint: String::new(),
            sampling: 1.0,
            service: "wharf".into(),
        };
        for child in self.block(node) {
            match child.name().value() {
                "endpoint" => {
                    named = true;
                    endpoint = self.endpoint(child);
                }
                "sampling" => {
                    if let Some(ratio) = self.ratio(child) {
                        telemetry.sampling = ratio;
                    }
                }
                "service" => {
                    let Some((name, span)) = self.string(child) else {
                        continue;
                    };
                    if name.trim().is_empty() || name.len() > 255 {
                        self.problems.push(
                            Problem::new(span, "`service` must be 1 to 255 characters")
                                .help("name the service traces are grouped under, e.g. \"wharf\""),
                        );
                        continue;
                    }
                    telemetry.service = name;
                }
                _ => self.unknown(child, "in `telemetry`", TELEMETRY),
            }
        }
        let Some(endpoint) = endpoint else {
            if !named {
                self.problems.push(
                    Problem::new(node.name().span(), "`telemetry` names no `endpoint`")
                        .help("write `endpoint \"http://127.0.0.1:4317\"`: an OTLP/gRPC receiver"),
                );
            }
            return None;
        };
        telemetry.endpoint = endpoint;
        Some(telemetry)
    }

    /// An `http://host:port` URL.
    fn endpoint(&mut self, node: &KdlNode) -> Option<String> {
        let (text, span) = self.string(node)?;
        let why = match text.parse::<http::Uri>() {
            Err(e) => format!("`{text}` is not a URL: {e}"),
            Ok(uri) if uri.scheme_str() == Some("https") => {
                format!("`{text}`: TLS to the receiver is not supported")
            }
            Ok(uri) if uri.scheme_str() != Some("http") || uri.host().is_none() => {
                format!("`{text}` is not an http:// URL with a host")
            }
            Ok(_) => return Some(text),
        };
        self.problems.push(Problem::new(span, why).help(
            "name an OTLP/gRPC receiver as `http://host:port` (a collector beside Wharf, port 4317)",
        ));
        None
    }

    /// A number from 0 to 1.
    fn ratio(&mut self, node: &KdlNode) -> Option<f64> {
        let entry = self.sole_entry(node, false)?;
        let value = match entry.value() {
            KdlValue::Float(f) => *f,
            KdlValue::Integer(i) => *i as f64,
            _ => {
                self.wrong_type(entry, "`sampling` expects a number from 0 to 1");
                return None;
            }
        };
        let parsed = if (0.0..=1.0).contains(&value) {
            Ok(value)
        } else {
            Err(format!(
                "`sampling` must be from 0 (none) to 1 (every trace), found {value}"
            ))
        };
        self.check(entry, parsed)
    }
}
