//! Rule files held in memory (embedded in a component, or read from a
//! directory by a native tool), found by name relative to the file that
//! names them, as `Include` and `@pmFromFile` expect.

use std::collections::BTreeMap;

use crate::Files;

/// Files by path (`rules/REQUEST-901-INITIALIZATION.conf`).
#[derive(Debug, Default, Clone)]
pub struct MemFiles {
    files: BTreeMap<String, String>,
}

impl MemFiles {
    pub fn new() -> MemFiles {
        MemFiles::default()
    }

    pub fn add(&mut self, path: &str, text: impl Into<String>) {
        self.files.insert(normalize(path), text.into());
    }

    pub fn get(&self, path: &str) -> Option<&str> {
        self.files.get(&normalize(path)).map(String::as_str)
    }

    /// Paths matching `dir/prefix*suffix`, sorted (`rules/*.conf`).
    pub fn glob(&self, pattern: &str) -> Vec<String> {
        let pattern = normalize(pattern);
        let Some((prefix, suffix)) = pattern.split_once('*') else {
            return self
                .files
                .contains_key(&pattern)
                .then_some(pattern)
                .into_iter()
                .collect();
        };
        self.files
            .keys()
            .filter(|k| {
                k.starts_with(prefix) && k.ends_with(suffix) && !k[prefix.len()..].contains('/')
            })
            .cloned()
            .collect()
    }
}

impl Files for MemFiles {
    fn read(&self, name: &str, from: &str) -> Result<String, String> {
        let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
        let joined = if name.starts_with('/') || dir.is_empty() {
            name.to_string()
        } else {
            format!("{dir}/{name}")
        };
        self.get(&joined)
            .or_else(|| self.get(name))
            .map(str::to_string)
            .ok_or_else(|| format!("no file `{joined}`"))
    }
}

fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names_and_globs() {
        let mut m = MemFiles::new();
        m.add("rules/a.conf", "A");
        m.add("rules/b.conf", "B");
        m.add("rules/x.data", "X");
        m.add("rules/sub/c.conf", "C");
        assert_eq!(m.glob("rules/*.conf"), ["rules/a.conf", "rules/b.conf"]);
        assert_eq!(m.read("x.data", "rules/a.conf").unwrap(), "X");
        assert_eq!(m.read("../rules/x.data", "rules/a.conf").unwrap(), "X");
        assert!(m.read("nope", "rules/a.conf").is_err());
    }
}
