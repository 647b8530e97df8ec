//! Lists the vendored OWASP CRS files (`third_party/coreruleset`) for the
//! `crs` module to embed: every `rules/*.conf` and `rules/*.data` file and
//! `crs-setup.conf.example`, in name order.

use std::path::Path;

fn main() {
    let out = std::env::var("OUT_DIR").expect("OUT_DIR");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../third_party/coreruleset");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut names: Vec<String> = std::fs::read_dir(root.join("rules"))
        .expect("third_party/coreruleset/rules")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".conf") || n.ends_with(".data"))
        .map(|n| format!("rules/{n}"))
        .collect();
    names.sort();
    names.insert(0, "crs-setup.conf.example".into());
    let mut code = String::from(
        "/// The embedded files: (path, text).\npub const FILES: &[(&str, &str)] = &[\n",
    );
    for n in &names {
        let path = root.join(n);
        code.push_str(&format!(
            "    ({n:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    code.push_str("];\n");
    std::fs::write(Path::new(&out).join("crs_files.rs"), code).expect("write crs_files.rs");
}
