//! The vocabulary every stage of Wharf shares: the neutral request and
//! response a transport hands to the pipeline ([`request`]), the filter
//! verdicts ([`verdict`]), the metrics handles ([`metrics`]), the budget of
//! long-lived streams ([`streams`]), a request's place in a trace
//! ([`trace`]), the address checks of outbound
//! connections ([`egress`]) and the wall clock of audit records ([`time`]).
//! Nothing here knows about sockets, wasmtime or a transport.

#![deny(missing_docs)]

pub mod effects;
pub mod egress;
pub mod metrics;
pub mod request;
pub mod streams;
pub mod time;
pub mod trace;
pub mod verdict;
