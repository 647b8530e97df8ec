//! Generates the A2A v1.0 messages from `proto/a2a.proto` (compiled by
//! protox, in Rust: no `protoc` to install), with serde impls that follow
//! the ProtoJSON mapping (pbjson), which the JSON bindings speak too.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(["a2a.proto"], ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = out.join("a2a.bin");
    std::fs::write(&descriptors, prost::Message::encode_to_vec(&fds))?;
    prost_build::Config::new()
        .compile_well_known_types()
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)?;
    pbjson_build::Builder::new()
        .register_descriptors(&std::fs::read(&descriptors)?)?
        .ignore_unknown_fields()
        .build(&[".lf.a2a.v1"])?;
    Ok(())
}
