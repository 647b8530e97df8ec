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

pub(crate) use wharf_runtime::top_level_items;

/// Why a WASIp3 component is not served, naming what it exports (or
/// imports) of WASI 0.3; none for any other component, and none for one
/// that exports `wasi:http/handler@0.3.x` (served like a WASIp2 one).
pub fn wasip3_refusal(bytes: &[u8]) -> Option<String> {
    let (imports, exports) = top_level_items(bytes)?;
    refusal_of(&imports, &exports)
}

/// [`wasip3_refusal`] from a component's top-level imports and exports.
fn refusal_of(imports: &[String], exports: &[String]) -> Option<String> {
    if exports.iter().any(|e| wharf_runtime::is_p3_handler(e)) {
        return None;
    }
    let p3 = |name: &&String| name.starts_with("wasi:") && name.contains("@0.3");
    let (how, name) = match exports.iter().find(p3) {
        Some(name) => ("exports", name),
        None => ("imports", imports.iter().find(p3)?),
    };
    Some(format!(
        "a WASIp3 component (it {how} `{name}`) that is not an HTTP handler: Wharf serves \
         wasi:http components (wasi:http/handler@0.3.x, wasi:http/incoming-handler@0.2.x) \
         and its own agent, A2A and filter worlds"
    ))
}

/// The world a component's exports say it fits, read from its export
/// section alone (no compiling): what `wharf check` knows of a file. The
/// loader still checks every import and type when it serves it.
pub fn world_of(bytes: &[u8]) -> Result<wharf_config::check::Found, NotAComponent> {
    use wharf_config::check::Found;
    check_component(bytes)?;
    let Some((imports, exports)) = top_level_items(bytes) else {
        return Ok(Found::Unusable("it is not a valid component".into()));
    };
    let has = |prefix: &str| exports.iter().any(|e| e.starts_with(prefix));
    let is = |name: &str| exports.iter().any(|e| e == name);
    Ok(if has("wharf:plugin/a2a-handler") {
        Found::A2aAgent
    } else if is("handle") {
        Found::Agent
    } else if is("on-request-headers") || is("phases") {
        Found::Filter
    } else if has("wasi:http/incoming-handler")
        || exports.iter().any(|e| wharf_runtime::is_p3_handler(e))
    {
        Found::WasiHttp
    } else if let Some(why) = refusal_of(&imports, &exports) {
        Found::Unusable(why)
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
