//! The A2A v1.0 protocol's Protobuf messages (`lf.a2a.v1`), generated from
//! the specification's normative `proto/a2a.proto`, for the gRPC binding.
//! Every message also (de)serializes as ProtoJSON, the form the JSON-RPC
//! and HTTP+JSON bindings speak, so a gRPC call is served by the same code
//! as theirs: decoded here, read as JSON, answered as JSON, encoded here.

#![allow(missing_docs, clippy::all, clippy::pedantic)]

/// `lf.a2a.v1`: every message of the A2A v1.0 proto.
pub mod v1 {
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
}

/// The gRPC service's full name: its methods are at `/{SERVICE}/{Method}`.
pub const SERVICE: &str = "lf.a2a.v1.A2AService";
