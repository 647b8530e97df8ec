//! Whether a file is a WebAssembly component Wharf can load, checked
//! before anything else reads it (signatures, the compiler).

/// What kind of WebAssembly a byte string is, as a refusal when not a component.
/// Checks that `bytes` are a component, not a core module or anything else.
pub fn check_component(bytes: &[u8]) -> Result<(), NotAComponent> {
    if wasmparser::Parser::is_component(bytes) {
        Ok(())
    } else if wasmparser::Parser::is_core_wasm(bytes) {
        Err(NotAComponent::CoreModule)
    } else {
        Err(NotAComponent::NotWasm)
    }
}

/// What a file that is not a component is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAComponent {
    /// A core module.
    #[error(
        "a core WebAssembly module, not a component (build it for wasm32-wasip2, or wrap it with `wasm-tools component new`)"
    )]
    CoreModule,
    /// Not WebAssembly at all.
    #[error("not a WebAssembly file")]
    NotWasm,
}
