//! The one-shot commands: `check`, `inspect`, `sign`, `verify`, the guest
//! toolchain's, and shell completions.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use wharf::toolchain::{self, Lang};

pub(crate) fn sign(file: &Path, key: &Path, out: Option<&Path>) -> ExitCode {
    let out = out.unwrap_or(file);
    match wharf::trust::sign(file, key, out) {
        Ok(id) => {
            println!("{}: signed by {id}", out.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn read_keys(keys: &[PathBuf]) -> Result<Vec<wharf::trust::TrustedKey>, String> {
    keys.iter()
        .map(|k| wharf::trust::TrustedKey::read(k).map_err(|e| format!("`{}`: {e}", k.display())))
        .collect()
}

pub(crate) fn verify(file: &Path, keys: &[PathBuf]) -> ExitCode {
    let result = read_keys(keys).and_then(|trusted| {
        let bytes = std::fs::read(file).map_err(|e| format!("cannot read it: {e}"))?;
        wharf::trust::verify(&bytes, &trusted).map_err(|e| match e {
            wharf::trust::Unverified::Unsigned => {
                "it is not signed (sign it with `wharf sign FILE --key KEY`)".to_string()
            }
            other => other.to_string(),
        })
    });
    match result {
        Ok(id) => {
            println!("{}: good signature by {id}", file.display());
            ExitCode::SUCCESS
        }
        Err(reason) => {
            eprintln!("error: `{}`: {reason}", file.display());
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn check(file: &Path) -> ExitCode {
    if !file.exists() {
        eprintln!(
            "error: no configuration file `{}` (give its path: `wharf check FILE`)",
            file.display()
        );
        return ExitCode::FAILURE;
    }
    match wharf::check::check(file) {
        Ok(passed) => {
            let config = &passed.config;
            let count = |f: fn(&wharf::config::check::Found) -> bool| {
                passed.found.values().filter(|x| f(x)).count()
            };
            use wharf::config::check::Found;
            println!(
                "{}: ok (listen {}, agents directory {}: {} agent(s), {} filter(s); {} agent block(s), {} pipeline(s))",
                file.display(),
                config.listen,
                config.agents_dir.display(),
                count(|f| matches!(f, Found::Agent | Found::A2aAgent | Found::WasiHttp)),
                count(|f| *f == Found::Filter),
                config.agents.len(),
                config.pipelines.len(),
            );
            for (name, found) in &passed.found {
                if let Found::Unusable(why) = found {
                    println!("  note: `{name}.wasm` will not be served: {why}");
                }
            }
            for found in wharf::config::republish::topic_loops(config) {
                println!(
                    "  warning: {found}; each event stops after `topics {{ max-hops {} }}` republishes in a row",
                    config.topics.max_hops
                );
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{}", err.fancy());
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn inspect(file: &Path, json: bool, keys: &[PathBuf]) -> ExitCode {
    let trusted = match read_keys(keys) {
        Ok(keys) => keys,
        Err(why) => {
            eprintln!("error: {why}");
            return ExitCode::FAILURE;
        }
    };
    match wharf::inspect::inspect_with_keys(file, &trusted) {
        Ok(report) => {
            if json {
                match serde_json::to_string_pretty(&report) {
                    Ok(text) => println!("{text}"),
                    Err(err) => {
                        eprintln!("error: {err}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", report.human());
            }
            if report.world.is_some() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(reason) => {
            eprintln!("error: `{}`: {reason}", file.display());
            ExitCode::FAILURE
        }
    }
}

/// Prints the files a toolchain command wrote, or its error.
pub(crate) fn report(result: anyhow::Result<Vec<PathBuf>>) -> ExitCode {
    match result {
        Ok(paths) => {
            for path in paths {
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn componentize(module: &Path, world: &str, out: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let bytes =
        std::fs::read(module).with_context(|| format!("cannot read {}", module.display()))?;
    let component = toolchain::componentize(&bytes, world)
        .with_context(|| format!("cannot componentize {}", module.display()))?;
    std::fs::write(out, component).with_context(|| format!("cannot write {}", out.display()))
}

pub(crate) fn new_project(parent: &Path, name: &str, lang: Lang) -> ExitCode {
    match toolchain::scaffold::create(parent, name, lang) {
        Ok(dir) => {
            println!("created {} ({lang})", dir.display());
            println!("next: cd {} && ./build.sh && wharf serve", dir.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
