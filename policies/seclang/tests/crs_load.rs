//! The vendored OWASP CRS 4 loads whole: every directive, variable,
//! operator, transformation and action it uses is implemented.

use std::path::Path;

use seclang::{MemFiles, RuleSet};

pub fn crs_files() -> MemFiles {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../third_party/coreruleset");
    let mut files = MemFiles::new();
    files.add(
        "crs-setup.conf",
        std::fs::read_to_string(root.join("crs-setup.conf.example")).unwrap(),
    );
    for entry in std::fs::read_dir(root.join("rules")).unwrap() {
        let path = entry.unwrap().path();
        let name = format!("rules/{}", path.file_name().unwrap().to_string_lossy());
        files.add(&name, std::fs::read_to_string(&path).unwrap());
    }
    files
}

#[test]
fn the_core_rule_set_loads() {
    let files = crs_files();
    let started = std::time::Instant::now();
    let rules = RuleSet::from_files("", &["crs-setup.conf", "rules/*.conf"], &files)
        .unwrap_or_else(|e| panic!("{e}"));
    let (screened, all) = rules.prefiltered();
    eprintln!(
        "{} rules ({all} with chain links), {screened} screened by the prefilter, in {:?}",
        rules.rule_count(),
        started.elapsed()
    );
    assert!(rules.rule_count() > 600, "{}", rules.rule_count());
    assert!(rules.rule(942100).is_some());
    assert!(rules.rule(980170).is_some());
}
