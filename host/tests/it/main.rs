//! Wharf's integration tests: one binary driving real sockets and real
//! guest components built from `guests/` (by `scripts/setup/build-guests.sh`,
//! run once per test binary).

mod a2a;
mod a2a_grpc;
mod a2a_tls;
mod ahead;
mod auth;
mod binary;
mod body_pieces;
mod cache;
mod cli;
mod cli_ops;
mod cluster;
mod cluster_drain;
mod cluster_tasks;
mod cluster_topics;
mod common;
mod compose;
mod config_golden;
mod effects;
mod faults;
mod filters;
mod hazards;
mod headers;
mod http;
mod kept;
mod lang;
mod many;
mod operability;
mod pg_store;
mod registry;
mod reliability;
mod reload;
mod repository;
mod routing;
mod runtime;
mod scaffold;
mod security;
mod streaming;
mod telemetry;
mod tls;
mod topics;
mod unload;
mod waf;
mod wasi_http;
mod wasip3;
