//! `wharf new`: a guest project in one of five languages that builds with
//! its own `build.sh` and serves with `wharf serve`. Each starts as the echo
//! agent Wharf's own contract suite runs, renamed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{Lang, WIT, WIT_FILE, write_file};

/// One file of a scaffold: its path and its text, with `{{name}}` and
/// `{{crate}}` still to fill in.
type Template = (&'static str, &'static str);

const RUST: &[Template] = &[
    ("Cargo.toml", include_str!("templates/rust.Cargo.toml")),
    ("build.sh", include_str!("templates/rust.build.sh")),
    (
        "src/lib.rs",
        include_str!("../../../guests/echo/src/lib.rs"),
    ),
    (
        "wharf-guest/Cargo.toml",
        include_str!("templates/rust.wharf-guest.Cargo.toml"),
    ),
    (
        "wharf-guest/src/lib.rs",
        include_str!("../../../guests/wharf-guest/src/lib.rs"),
    ),
    (
        "wharf-guest/src/filter.rs",
        include_str!("../../../guests/wharf-guest/src/filter.rs"),
    ),
    (
        "wharf-guest/src/a2a.rs",
        include_str!("../../../guests/wharf-guest/src/a2a.rs"),
    ),
    (
        "wharf-guest/src/memcmp.rs",
        include_str!("../../../guests/wharf-guest/src/memcmp.rs"),
    ),
];
const C: &[Template] = &[
    ("build.sh", include_str!("templates/c.build.sh")),
    ("{{name}}.c", include_str!("../../../guests/c/echo.c")),
    (
        "wharf_guest.h",
        include_str!("../../../guests/c/wharf_guest.h"),
    ),
];
const GO: &[Template] = &[
    ("build.sh", include_str!("templates/go.build.sh")),
    (
        "export_wit_world/agent.go",
        include_str!("../../../guests/go/echo/export_wit_world/echo.go"),
    ),
    (
        "wharfguest/wharfguest.go",
        include_str!("../../../guests/go/wharfguest/wharfguest.go"),
    ),
    (
        "wharfpeers/wharfpeers.go",
        include_str!("../../../guests/go/wharfpeers/wharfpeers.go"),
    ),
];
const PYTHON: &[Template] = &[
    ("build.sh", include_str!("templates/python.build.sh")),
    ("app.py", include_str!("../../../guests/python/echo/app.py")),
    (
        "wharf_guest.py",
        include_str!("../../../guests/python/wharf_guest.py"),
    ),
];
const JS: &[Template] = &[
    ("build.sh", include_str!("templates/js.build.sh")),
    ("package.json", include_str!("templates/js.package.json")),
    ("app.js", include_str!("../../../guests/js/echo/app.js")),
    (
        "wharf-guest.js",
        include_str!("../../../guests/js/wharf-guest.js"),
    ),
    (
        "wharf-peers.js",
        include_str!("../../../guests/js/wharf-peers.js"),
    ),
];

/// Edits that turn the echo sources into a project's own: the card's name,
/// and paths that differ between Wharf's tree and a standalone project.
/// Each must apply (a unit test checks), so the sources cannot drift.
fn edits(lang: Lang) -> &'static [(&'static str, &'static str, &'static str)] {
    match lang {
        Lang::Rust => &[
            (
                "src/lib.rs",
                "name: \"echo\".into()",
                "name: \"{{name}}\".into()",
            ),
            (
                "wharf-guest/src/lib.rs",
                "path: \"../../wit\"",
                "path: \"../wit\"",
            ),
        ],
        Lang::C => &[(
            "{{name}}.c",
            "agent_string_dup(&ret->name, \"echo\")",
            "agent_string_dup(&ret->name, \"{{name}}\")",
        )],
        Lang::Go => &[(
            "export_wit_world/agent.go",
            "Name:        \"echo\"",
            "Name:        \"{{name}}\"",
        )],
        Lang::Python => &[("app.py", "name=\"echo\"", "name=\"{{name}}\"")],
        Lang::Js => &[
            ("app.js", "name: 'echo'", "name: '{{name}}'"),
            ("app.js", "'../wharf-guest.js'", "'./wharf-guest.js'"),
            ("app.js", "'../wharf-peers.js'", "'./wharf-peers.js'"),
        ],
    }
}

fn templates(lang: Lang) -> &'static [Template] {
    match lang {
        Lang::Rust => RUST,
        Lang::C => C,
        Lang::Go => GO,
        Lang::Python => PYTHON,
        Lang::Js => JS,
    }
}

/// The file a newcomer edits first.
fn main_source(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "src/lib.rs",
        Lang::C => "{{name}}.c",
        Lang::Go => "export_wit_world/agent.go",
        Lang::Python => "app.py",
        Lang::Js => "app.js",
    }
}

fn language(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "Rust",
        Lang::C => "C",
        Lang::Go => "Go",
        Lang::Python => "Python",
        Lang::Js => "JavaScript",
    }
}

/// Checks a project name: it becomes the agent's name, a file name, a crate
/// name and a package name, so it is kept to what all of them accept.
pub fn check_name(name: &str) -> Result<()> {
    let ok = name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !ok {
        bail!(
            "`{name}` cannot name an agent: use lower-case letters, digits and `-`, \
             starting with a letter (e.g. `my-agent`)"
        );
    }
    Ok(())
}

/// The project's files, rendered for `name`.
pub fn render(name: &str, lang: Lang) -> Vec<(String, String)> {
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{language}}", language(lang))
            .replace("{{source}}", &main_source(lang).replace("{{name}}", name))
    };
    let mut files: Vec<(String, String)> = templates(lang)
        .iter()
        .map(|(path, text)| {
            let mut text = text.to_string();
            for (file, from, to) in edits(lang) {
                if file == path {
                    text = text.replace(from, to);
                }
            }
            (fill(path), fill(&text))
        })
        .collect();
    files.push(("test.sh".into(), fill(include_str!("templates/test.sh"))));
    files.push((
        "wharf.kdl".into(),
        fill(include_str!("templates/wharf.kdl")),
    ));
    files.push((format!("wit/{WIT_FILE}"), WIT.to_string()));
    files.push((
        "README.md".into(),
        fill(include_str!("templates/README.md")),
    ));
    files.push((
        ".gitignore".into(),
        include_str!("templates/gitignore").into(),
    ));
    files
}

/// Writes a new project for `name` into `parent/name` and returns its
/// directory. Refuses a directory that exists and is not empty.
pub fn create(parent: &Path, name: &str, lang: Lang) -> Result<PathBuf> {
    check_name(name)?;
    let dir = parent.join(name);
    if dir.exists()
        && std::fs::read_dir(&dir)
            .with_context(|| format!("cannot read {}", dir.display()))?
            .next()
            .is_some()
    {
        bail!("{} already exists and is not empty", dir.display());
    }
    for (path, text) in render(name, lang) {
        let path = dir.join(path);
        write_file(&path, text.as_bytes())?;
        #[cfg(unix)]
        if path.extension().is_some_and(|e| e == "sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Lang; 5] = [Lang::Rust, Lang::C, Lang::Go, Lang::Python, Lang::Js];

    #[test]
    fn every_edit_applies_to_its_source() {
        for lang in ALL {
            for (file, from, _) in edits(lang) {
                let (_, text) = templates(lang)
                    .iter()
                    .find(|(path, _)| path == file)
                    .unwrap_or_else(|| panic!("{lang}: no template {file}"));
                assert!(text.contains(from), "{lang}: `{from}` not in {file}");
            }
        }
    }

    #[test]
    fn rendered_projects_name_the_agent_and_leave_no_placeholder() {
        for lang in ALL {
            let files = render("my-agent", lang);
            assert!(files.iter().any(|(p, _)| p == "build.sh"), "{lang}");
            assert!(files.iter().any(|(p, _)| p == "wit/wharf.wit"), "{lang}");
            for (path, text) in &files {
                assert!(
                    !path.contains("{{") && !text.contains("{{"),
                    "{lang}: {path}"
                );
            }
            let source = main_source(lang).replace("{{name}}", "my-agent");
            let (_, text) = files.iter().find(|(p, _)| *p == source).unwrap();
            assert!(
                text.contains("my-agent"),
                "{lang}: {source} keeps the echo name"
            );
        }
    }

    #[test]
    fn names_are_checked() {
        for good in ["a", "my-agent", "agent2"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "My", "2a", "a_b", "a-", "a.b", "../x", &"a".repeat(64)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
