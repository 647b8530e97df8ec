//! The metric catalog against what uses it: every family the code
//! registers is in it, `docs/metrics.md` lists exactly its families, and
//! every family renders with its `# HELP` line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use wharf_core::metrics::catalog::{FAMILIES, Kind};
use wharf_core::metrics::{Metrics, counter, gauge, histogram};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `wharf_…` names in `text`: string literals when `quoted`, else words.
fn names_in(text: &str, quoted: bool) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("wharf_") {
        let start = i + at;
        let end = start
            + text[start..]
                .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(text.len() - start);
        let before = start.checked_sub(1).map(|b| bytes[b]);
        let after = bytes.get(end).copied();
        let delimited = if quoted {
            before == Some(b'"') && after == Some(b'"')
        } else {
            !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        };
        if delimited {
            found.insert(text[start..end].to_string());
        }
        i = end.max(start + 1);
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn catalog() -> BTreeSet<String> {
    FAMILIES.iter().map(|f| f.name.to_string()).collect()
}

#[test]
fn catalog_holds_every_family_the_code_registers() {
    let mut files = Vec::new();
    for dir in ["crates", "host/src"] {
        rust_files(&root().join(dir), &mut files);
    }
    let catalog = catalog();
    let mut used = BTreeSet::new();
    let this_file = Path::new(file!()).file_name().unwrap();
    for file in files
        .iter()
        .filter(|f| !f.ends_with("catalog.rs") && f.file_name() != Some(this_file))
    {
        let text = std::fs::read_to_string(file).unwrap();
        for name in names_in(&text, true) {
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s).filter(|f| catalog.contains(*f)))
                .map_or(name.clone(), str::to_string);
            used.insert((family, file.display().to_string()));
        }
    }
    assert!(
        used.len() > 30,
        "the scan found the code's families: {used:?}"
    );
    let missing: Vec<_> = used.iter().filter(|(n, _)| !catalog.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "registered but not in the catalog: {missing:?}"
    );
    let names: BTreeSet<&String> = used.iter().map(|(n, _)| n).collect();
    let unused: Vec<_> = catalog.iter().filter(|n| !names.contains(n)).collect();
    assert!(
        unused.is_empty(),
        "in the catalog but never registered: {unused:?}"
    );
}

#[test]
fn catalog_is_what_docs_metrics_md_lists() {
    let doc = std::fs::read_to_string(root().join("docs/metrics.md")).unwrap();
    let listed = names_in(&doc, false);
    assert_eq!(listed, catalog(), "docs/metrics.md and the catalog differ");
    for family in FAMILIES {
        assert!(
            doc.contains(&format!("| `{}` |", family.name)),
            "{} has no row in docs/metrics.md",
            family.name
        );
    }
}

#[test]
fn every_family_renders_with_its_help_and_type() {
    let metrics = Metrics::new();
    let r = metrics.recorder();
    for family in FAMILIES {
        let labels = family
            .labels
            .iter()
            .map(|l| metrics::Label::new(l.split('|').next().unwrap().to_string(), "x"))
            .collect();
        match family.kind {
            Kind::Counter => counter(r, family.name, labels).increment(1),
            Kind::Gauge => gauge(r, family.name, labels).set(1.0),
            Kind::Histogram => histogram(r, family.name, labels).record(0.001),
        }
    }
    metrics.upkeep();
    let text = metrics.render();
    for family in FAMILIES {
        let kind = match family.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        assert!(
            text.contains(&format!("# HELP {} {}\n", family.name, family.help)),
            "no HELP for {}:\n{text}",
            family.name
        );
        assert!(text.contains(&format!("# TYPE {} {kind}\n", family.name)));
    }
    // The process's own figures, sampled at the render.
    assert!(
        text.contains("# TYPE process_resident_memory_bytes gauge"),
        "{text}"
    );
    assert!(text.contains("process_open_fds "), "{text}");
}
