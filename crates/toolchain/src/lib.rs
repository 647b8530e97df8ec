//! Guest toolchain: Wharf's WIT, bindings for C and Go guests, and turning a
//! core WebAssembly module into a component, all in-process (no CLI installs).

#![deny(missing_docs)]

pub mod scaffold;

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use wit_bindgen_core::{Files, WorldGenerator};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::{Resolve, WorldId};

/// Wharf's guest contract, the same text as `wit/wharf.wit`.
pub const WIT: &str = include_str!("../../../wit/wharf.wit");
/// The file name the WIT is written under.
pub const WIT_FILE: &str = "wharf.wit";

/// The Go support package the Go bindings import
/// (`go.bytecodealliance.org/pkg`), shipped with Wharf so that Go guests
/// build without fetching it; `wharf bindgen --lang go` writes it beside the
/// bindings and points `go.mod` at it.
const GO_SUPPORT: &[(&str, &str)] = &[
    ("go.mod", include_str!("../../../third_party/go-pkg/go.mod")),
    (
        "LICENSE",
        include_str!("../../../third_party/go-pkg/LICENSE"),
    ),
    (
        "wit/async/async.go",
        include_str!("../../../third_party/go-pkg/wit/async/async.go"),
    ),
    (
        "wit/async/empty.s",
        include_str!("../../../third_party/go-pkg/wit/async/empty.s"),
    ),
    (
        "wit/runtime/runtime.go",
        include_str!("../../../third_party/go-pkg/wit/runtime/runtime.go"),
    ),
    (
        "wit/runtime/empty.s",
        include_str!("../../../third_party/go-pkg/wit/runtime/empty.s"),
    ),
    (
        "wit/types/future.go",
        include_str!("../../../third_party/go-pkg/wit/types/future.go"),
    ),
    (
        "wit/types/option.go",
        include_str!("../../../third_party/go-pkg/wit/types/option.go"),
    ),
    (
        "wit/types/result.go",
        include_str!("../../../third_party/go-pkg/wit/types/result.go"),
    ),
    (
        "wit/types/stream.go",
        include_str!("../../../third_party/go-pkg/wit/types/stream.go"),
    ),
    (
        "wit/types/tuple.go",
        include_str!("../../../third_party/go-pkg/wit/types/tuple.go"),
    ),
    (
        "wit/types/unit.go",
        include_str!("../../../third_party/go-pkg/wit/types/unit.go"),
    ),
];
/// Where the Go support package goes, relative to the bindings.
const GO_SUPPORT_DIR: &str = "witpkg";

/// Languages Wharf can scaffold guests for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// Rust, with wit-bindgen.
    Rust,
    /// Python, with componentize-py.
    Python,
    /// JavaScript, with componentize-js.
    Js,
    /// C, with wasi-libc.
    C,
    /// Go (1.24 or newer).
    Go,
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
            Lang::C => "c",
            Lang::Go => "go",
        })
    }
}

/// Languages whose bindings Wharf generates itself (the others bring their
/// own generator: wit-bindgen's Rust macro, componentize-py, componentize-js).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BindingsLang {
    /// C, with wit-bindgen's C generator.
    C,
    /// Go, with wit-bindgen's Go generator.
    Go,
}

fn resolve(world: &str) -> Result<(Resolve, WorldId)> {
    let mut resolve = Resolve::default();
    let pkg = resolve.push_str(WIT_FILE, WIT)?;
    let id = resolve
        .select_world(&[pkg], Some(world))
        .with_context(|| format!("Wharf's WIT has no world `{world}` (try `agent` or `filter`)"))?;
    Ok((resolve, id))
}

/// Writes Wharf's WIT into `dir` (created if missing) and returns the file.
pub fn write_wit(dir: &Path) -> Result<PathBuf> {
    write_file(&dir.join(WIT_FILE), WIT.as_bytes())
}

/// Generates guest bindings for `world` into `out` and returns the files
/// written. C bindings include the object file carrying the component type;
/// Go bindings need the type embedded by [`componentize`] instead.
pub fn bindgen(lang: BindingsLang, world: &str, out: &Path) -> Result<Vec<PathBuf>> {
    let (mut resolve, id) = resolve(world)?;
    let mut generator: Box<dyn WorldGenerator> = match lang {
        BindingsLang::C => wit_bindgen_c::Opts::default().build(),
        BindingsLang::Go => wit_bindgen_go::Opts::default().build(),
    };
    let mut files = Files::default();
    generator.generate(&mut resolve, id, &mut files)?;
    if lang == BindingsLang::Go {
        let go_mod = files.remove("go.mod").unwrap_or_default();
        let mut go_mod = String::from_utf8(go_mod).context("generated go.mod is not UTF-8")?;
        go_mod.push_str(&format!(
            "\nreplace go.bytecodealliance.org/pkg => ./{GO_SUPPORT_DIR}\n"
        ));
        files.push("go.mod", go_mod.as_bytes());
        for (name, contents) in GO_SUPPORT {
            files.push(&format!("{GO_SUPPORT_DIR}/{name}"), contents.as_bytes());
        }
    }
    let mut written = Vec::new();
    for (name, contents) in files.iter() {
        written.push(write_file(&out.join(name), contents)?);
    }
    Ok(written)
}

/// Writes a file, creating its directory.
pub(crate) fn write_file(path: &Path, contents: &[u8]) -> Result<PathBuf> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path.to_path_buf())
}

/// Whether a core module already carries a `component-type` custom section.
fn has_component_type(module: &[u8]) -> Result<bool> {
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let wasmparser::Payload::CustomSection(section) =
            payload.context("not a valid WebAssembly module")?
            && section.name().starts_with("component-type")
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Turns a core module built for `wasm32-wasip1` (reactor) into a component
/// of `world`: embeds the world's type when the module lacks it, then adapts
/// WASI preview 1 imports to preview 2 with the adapter that matches this
/// host's wasmtime.
pub fn componentize(module: &[u8], world: &str) -> Result<Vec<u8>> {
    if wasmparser::Parser::is_component(module) {
        bail!("this is already a component");
    }
    if !wasmparser::Parser::is_core_wasm(module) {
        bail!("not a WebAssembly module");
    }
    let mut module = module.to_vec();
    if !has_component_type(&module)? {
        let (resolve, id) = resolve(world)?;
        wit_component::embed_component_metadata(&mut module, &resolve, id, StringEncoding::UTF8)?;
    }
    ComponentEncoder::default()
        .validate(true)
        .module(&module)?
        .adapter(
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )?
        .encode()
}
