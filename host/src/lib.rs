//! Wharf: a WebAssembly component host for agents and inspection filters.
//!
//! This crate is the `wharf` binary's own part: the command line, starting
//! and stopping a server ([`app`]) and hot reload ([`reload`]). Each stage
//! of a request is a crate of its own, along the request's path (see
//! `docs/architecture.md`): a transport (`wharf-transport`) hands the
//! pipeline (`wharf-pipeline`) a neutral request (`wharf-core`); the
//! pipeline runs the filter chain (`wharf-filters`) and the agent's route
//! (`wharf-routing`) over the loaded components (`wharf-registry`) in the
//! runtime (`wharf-runtime`, the only user of wasmtime), all configured by
//! `wharf-config`. They are re-exported here under the names the tests,
//! benches and fuzz targets use.

#![deny(missing_docs)]

pub mod app;
pub mod check;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod memory;
pub mod reload;
pub mod startup;
pub mod telemetry;

/// This build's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit this build was made from (`unknown` outside a git checkout).
pub const COMMIT: &str = env!("WHARF_COMMIT");
/// The day this build was made (UTC).
pub const BUILD_DATE: &str = env!("WHARF_BUILD_DATE");

pub use wharf_a2a as a2a;
pub use wharf_cluster as cluster;
pub use wharf_config as config;
pub use wharf_core::{egress, metrics, request, streams, time, verdict};
pub use wharf_filters as filter;
pub use wharf_pipeline as pipeline;
pub use wharf_pipeline::{compose, topics};
pub use wharf_registry as registry;
pub use wharf_registry::{inspect, trust};
pub use wharf_routing as router;
pub use wharf_routing::stream;
pub use wharf_runtime as runtime;
pub use wharf_toolchain as toolchain;
pub use wharf_transport as transport;
