//! Lists the rules the literal prefilter does not screen, with why (CRS,
//! or the `waf` baseline with the argument `baseline`).
use seclang::{MemFiles, RuleSet};
fn main() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../third_party/coreruleset");
    let mut files = MemFiles::new();
    files.add(
        "crs-setup.conf",
        std::fs::read_to_string(root.join("crs-setup.conf.example")).unwrap(),
    );
    for e in std::fs::read_dir(root.join("rules")).unwrap() {
        let p = e.unwrap().path();
        files.add(
            &format!("rules/{}", p.file_name().unwrap().to_string_lossy()),
            std::fs::read_to_string(p).unwrap(),
        );
    }
    let rules = if std::env::args().nth(1).as_deref() == Some("baseline") {
        let waf = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../waf/rules");
        let text = ["wharf-engine.conf", "wharf-baseline.conf"]
            .map(|f| std::fs::read_to_string(waf.join(f)).unwrap())
            .join("\n");
        RuleSet::from_text(&text).unwrap()
    } else {
        RuleSet::from_files("", &["crs-setup.conf", "rules/*.conf"], &files).unwrap()
    };
    for line in rules.describe_prefilter() {
        println!("{line}");
    }
}
