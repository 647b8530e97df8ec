//! Whether a file is a WebAssembly component Wharf can load, checked
//! before anything else reads it (signatures, the compiler), and which
//! world its exports say it fits, read without compiling it.

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

/// [`world_of`] the file at `path`, read as the loader reads it (at most
/// `max` bytes); a file that cannot be read is unusable, with why.
pub fn world_of_file(path: &std::path::Path, max: u64) -> wharf_config::check::Found {
    use wharf_config::check::Found;
    match crate::read_capped(path, max) {
        Ok(bytes) => world_of(&bytes).unwrap_or_else(|e| Found::Unusable(e.to_string())),
        Err(why) => Found::Unusable(why),
    }
}

/// The world a component's exports say it fits, read from its export
/// section alone (no compiling): what `wharf check` knows of a file. The
/// loader still checks every import and type when it serves it.
pub fn world_of(bytes: &[u8]) -> Result<wharf_config::check::Found, NotAComponent> {
    use wharf_config::check::Found;
    check_component(bytes)?;
    let mut exports = Vec::new();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let Ok(payload) = payload else {
            return Ok(Found::Unusable("it is not a valid component".into()));
        };
        match payload {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentExportSection(reader) if depth == 1 => {
                for export in reader.into_iter().flatten() {
                    exports.push(export.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    let has = |prefix: &str| exports.iter().any(|e| e.starts_with(prefix));
    let is = |name: &str| exports.iter().any(|e| e == name);
    Ok(if has("wharf:plugin/a2a-handler") {
        Found::A2aAgent
    } else if is("handle") {
        Found::Agent
    } else if is("on-request-headers") || is("phases") {
        Found::Filter
    } else if has("wasi:http/incoming-handler") {
        Found::WasiHttp
    } else if has("wasi:http/handler@0.3") || is("wasi:http/handler") {
        Found::Unusable(
            "a WASIp3 component (wasi:http/handler@0.3), which Wharf does not serve yet".into(),
        )
    } else {
        Found::Unusable(format!(
            "its exports ({}) fit no world Wharf serves",
            if exports.is_empty() {
                "none".to_string()
            } else {
                exports.join(", ")
            }
        ))
    })
}
