//! Wharf: a WebAssembly component host for agents and inspection filters.
//!
//! The data flow is transport → pipeline → registry/runtime → guest; each
//! stage is a module and they meet only in [`pipeline`].

pub mod a2a;
pub mod app;
pub mod cluster;
pub mod compose;
pub mod config;
pub mod egress;
pub mod filter;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod inspect;
pub mod metrics;
pub mod pipeline;
pub mod placement;
pub mod registry;
pub mod reload;
pub mod request;
pub mod router;
pub mod runtime;
pub mod stream;
pub mod streams;
pub mod time;
pub mod toolchain;
pub mod topics;
pub mod transport;
pub mod trust;
pub mod verdict;
