//! Golden tests: every `tests/config/invalid/*.kdl` gives exactly the
//! diagnostics in the `.expected` file beside it, and the valid examples
//! parse.

use std::path::Path;

use wharf::config::Config;

#[test]
fn invalid_configs_give_their_expected_messages() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/config/invalid");
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "kdl"))
    {
        let name = path.file_name().unwrap().to_str().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let err = Config::parse(name, &text, Path::new("/"))
            .err()
            .unwrap_or_else(|| panic!("{name} parsed, but it is meant to be invalid"));
        let expected_path = path.with_extension("expected");
        // WHARF_BLESS=1 rewrites the expectations; review the diff before committing.
        if std::env::var_os("WHARF_BLESS").is_some() {
            std::fs::write(&expected_path, format!("{}\n", err.plain())).unwrap();
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{name} has no .expected file"));
        assert_eq!(
            err.plain().trim_end(),
            expected.trim_end(),
            "diagnostics of {name}"
        );
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} golden files found");
}

#[test]
fn shipped_example_configs_are_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for file in ["examples/wharf.kdl", "crates/config/src/default.kdl"] {
        let path = root.join(file);
        Config::load(&path).unwrap_or_else(|e| panic!("{file}: {}", e.plain()));
    }
}

#[test]
fn fancy_rendering_points_at_the_source() {
    let err = Config::parse("w.kdl", "listen 8080\n", Path::new("/")).unwrap_err();
    let fancy = err.fancy();
    assert!(fancy.contains("listen 8080"), "{fancy}");
    assert!(fancy.contains("expects a string"), "{fancy}");
}

#[test]
fn every_kdl_snippet_in_the_readme_and_docs_is_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // The key file the snippets' `trust` blocks name, beside them.
    let base = tempfile::tempdir().unwrap();
    std::fs::create_dir(base.path().join("keys")).unwrap();
    wharf::trust::keygen(&base.path().join("keys/release")).unwrap();
    // The CA file the `push` snippet names.
    let ca = rcgen::generate_simple_self_signed(vec!["hooks.example.com".to_string()]).unwrap();
    std::fs::write(base.path().join("hooks-ca.pem"), ca.cert.pem()).unwrap();
    // The outbound CA, and the listener's pair, the TLS snippets name.
    std::fs::write(base.path().join("internal-ca.pem"), ca.cert.pem()).unwrap();
    std::fs::create_dir(base.path().join("certs")).unwrap();
    std::fs::write(base.path().join("certs/server.pem"), ca.cert.pem()).unwrap();
    std::fs::write(
        base.path().join("certs/server.key"),
        ca.signing_key.serialize_pem(),
    )
    .unwrap();
    let docs = [
        ("docs/configuration.md", 8),
        ("docs/filters.md", 2),
        ("docs/a2a.md", 1),
        ("docs/reload.md", 1),
        ("docs/wasi-http.md", 1),
        ("docs/compose.md", 2),
        ("docs/tls.md", 2),
    ];
    for (doc, least) in docs {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let mut snippets = 0;
        for (i, block) in text.split("```kdl\n").skip(1).enumerate() {
            let kdl = block.split("```").next().unwrap();
            Config::parse(&format!("{doc} snippet {i}"), kdl, base.path())
                .unwrap_or_else(|e| panic!("{}", e.plain()));
            snippets += 1;
        }
        assert!(
            snippets >= least,
            "only {snippets} KDL snippets found in {doc}"
        );
    }
}

/// The fuzz seeds for the configuration parser, and every input that ever
/// crashed it (`fuzz/regressions/config`), parse or give diagnostics.
#[test]
fn fuzz_inputs_for_the_parser_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut seen = 0;
    for dir in ["seeds/config", "regressions/config"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            if let Ok(text) = std::str::from_utf8(&bytes)
                && let Err(err) = Config::parse("fuzz.kdl", text, Path::new("/etc/wharf"))
            {
                assert!(!err.plain().is_empty());
            }
            seen += 1;
        }
    }
    assert!(seen >= 5, "only {seen} inputs found");
}
