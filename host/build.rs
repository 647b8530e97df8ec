//! Names the commit and the day of the build for `wharf --version` and
//! `wharf_build_info`.

use std::path::Path;
use std::process::Command;

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=WHARF_COMMIT={commit}");
    println!("cargo:rustc-env=WHARF_BUILD_DATE={date}");
    // Built again when the checked-out commit changes.
    let git_dir = Path::new("../.git");
    if git_dir.join("HEAD").is_file() {
        println!("cargo:rerun-if-changed=../.git/HEAD");
    }
    if let Ok(head) = std::fs::read_to_string(git_dir.join("HEAD"))
        && let Some(reference) = head.strip_prefix("ref: ")
        && git_dir.join(reference.trim()).is_file()
    {
        println!("cargo:rerun-if-changed=../.git/{}", reference.trim());
    }
    println!("cargo:rerun-if-changed=build.rs");
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
