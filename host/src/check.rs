//! `wharf check`: the configuration file, then every name it gives against
//! the components in its agents directory (read, not compiled), so what
//! `serve` would refuse is reported before it runs.

use std::collections::BTreeMap;
use std::path::Path;

use wharf_config::check::Found;
use wharf_config::{Config, ConfigError, Problem};

/// What a configuration that passed is about to serve.
#[derive(Debug)]
pub struct Passed {
    /// The configuration.
    pub config: Config,
    /// The components found in its agents directory, by name.
    pub found: BTreeMap<String, Found>,
}

/// Checks the file at `path`: its syntax and settings, then its names
/// against its agents directory. Every problem comes in file order.
pub fn check(path: &Path) -> Result<Passed, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, &e))?;
    let name = path.display().to_string();
    let base = path.parent().unwrap_or(Path::new("."));
    let config = Config::parse(&name, &text, base)?;
    let found = match scan(&config) {
        Ok(found) => found,
        Err(why) => {
            let problem = Problem::new(agents_span(&text), why)
                .help("make the directory, or point `agents` at the one holding the .wasm files");
            return Err(ConfigError::new(&name, &text, vec![problem]));
        }
    };
    let problems = wharf_config::check::against(&config, &text, &found);
    if !problems.is_empty() {
        return Err(ConfigError::new(&name, &text, problems));
    }
    Ok(Passed { config, found })
}

/// The `agents` node's place in the file (the top of it when absent).
fn agents_span(text: &str) -> miette::SourceSpan {
    let at = text
        .lines()
        .scan(0usize, |offset, line| {
            let start = *offset;
            *offset += line.len() + 1;
            Some((start, line))
        })
        .find(|(_, line)| line.trim_start().starts_with("agents "))
        .map_or(0, |(start, line)| {
            start + line.len() - line.trim_start().len()
        });
    (at, 6).into()
}

/// Each `.wasm` file of the agents directory, by the name `serve` gives it,
/// and the world its exports say it fits.
fn scan(config: &Config) -> Result<BTreeMap<String, Found>, String> {
    let dir = &config.agents_dir;
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read the agents directory `{}`: {e}", dir.display()))?;
    let mut found = BTreeMap::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let hidden = entry.file_name().as_encoded_bytes().starts_with(b".");
        let wasm = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("wasm"));
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if hidden || !wasm || !wharf_config::valid_agent_name(stem) {
            continue;
        }
        let what = wharf_registry::world_of_file(&path, config.server.component_size);
        found.insert(stem.to_string(), what);
    }
    Ok(found)
}
