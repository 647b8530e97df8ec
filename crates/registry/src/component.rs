//! Whether a file is a WebAssembly component Wharf can load, checked
//! before anything else reads it (signatures, the compiler).

/// What kind of WebAssembly a byte string is, as a refusal when not a component.
pub fn check_component(bytes: &[u8]) -> Result<(), String> {
    if wasmparser::Parser::is_component(bytes) {
        Ok(())
    } else if wasmparser::Parser::is_core_wasm(bytes) {
        Err(
            "a core WebAssembly module, not a component (build it for wasm32-wasip2, \
             or wrap it with `wasm-tools component new`)"
                .into(),
        )
    } else {
        Err("not a WebAssembly file".into())
    }
}
