//! The engine's cost per request, natively, beside the engine the `waf`
//! filter used before (zentinel-modsec 0.5.0) on the same requests in the
//! same run: Wharf's baseline rules and the OWASP CRS at paranoia level
//! 1, a clean 1 KiB form, a 60 KiB text field, 64 KiB of ~4,700 fields,
//! an attack, and the clean form from 1 KiB to 1 MiB (linearity).
//!
//! `cargo bench --manifest-path policies/Cargo.toml -p wharf-seclang --bench engine`

mod workload;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use seclang::{MemFiles, RuleSet};
use workload::Req;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn crs_dir() -> PathBuf {
    root().join("third_party/coreruleset")
}

fn crs_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(crs_dir().join("rules"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".conf"))
        .collect();
    names.sort();
    names
}

/// Wharf's engine: the engine settings, then CRS or the baseline.
fn seclang(crs: bool) -> Arc<RuleSet> {
    let mut files = MemFiles::new();
    files.add(
        "engine.conf",
        read(&root().join("policies/waf/rules/wharf-engine.conf")),
    );
    files.add(
        "baseline.conf",
        read(&root().join("policies/waf/rules/wharf-baseline.conf")),
    );
    files.add(
        "settings.conf",
        "SecAction \"id:900000,phase:1,pass,nolog,setvar:tx.blocking_paranoia_level=1\"\n",
    );
    files.add(
        "crs-setup.conf",
        read(&crs_dir().join("crs-setup.conf.example")),
    );
    for e in std::fs::read_dir(crs_dir().join("rules")).unwrap() {
        let p = e.unwrap().path();
        files.add(
            &format!("rules/{}", p.file_name().unwrap().to_string_lossy()),
            read(&p),
        );
    }
    let paths: &[&str] = if crs {
        &[
            "engine.conf",
            "settings.conf",
            "crs-setup.conf",
            "rules/*.conf",
        ]
    } else {
        &["engine.conf", "baseline.conf"]
    };
    Arc::new(RuleSet::from_files("", paths, &files).unwrap())
}

/// The old engine, loaded as the old `waf` filter loaded it.
fn zentinel(crs: bool) -> zentinel_modsec::ModSecurity {
    let mut text = String::from("SecRuleEngine On\nSecRequestBodyAccess On\n");
    if crs {
        text.push_str(
            "SecAction \"id:900000,phase:1,pass,nolog,setvar:tx.blocking_paranoia_level=1\"\n",
        );
        text.push_str(&read(&crs_dir().join("crs-setup.conf.example")));
        text.push('\n');
        let dir = crs_dir().join("rules");
        for name in crs_names() {
            let body = read(&dir.join(&name));
            let abs = format!("{}/", dir.display());
            text.push_str(&body.replace("@pmFromFile ", &format!("@pmFromFile {abs}")));
            text.push('\n');
        }
    } else {
        text.push_str(&read(
            &root().join("policies/waf/rules/wharf-baseline.conf"),
        ));
    }
    zentinel_modsec::ModSecurity::from_string(&text).unwrap()
}

fn run_zentinel(m: &zentinel_modsec::ModSecurity, r: &Req) -> bool {
    let mut tx = m.new_transaction();
    tx.process_uri(&r.uri, "POST", "HTTP/1.1").unwrap();
    for (n, v) in &r.headers {
        tx.add_request_header(n, v).unwrap();
    }
    tx.process_request_headers().unwrap();
    tx.append_request_body(&r.body).unwrap();
    tx.process_request_body().unwrap();
    tx.intervention().is_some()
}

fn bench(c: &mut Criterion) {
    for crs in [false, true] {
        let set = if crs { "crs-pl1" } else { "baseline" };
        let (new, old) = (seclang(crs), zentinel(crs));
        let mut g = c.benchmark_group(format!("engine/{set}"));
        for req in [
            workload::clean_form(1024),
            workload::clean_form(64 << 10),
            workload::many_fields(64 << 10),
            workload::attack(),
        ] {
            assert_eq!(
                workload::run(&new, &req),
                req.name == "attack",
                "{set} {}",
                req.name
            );
            g.bench_function(format!("{} / seclang", req.name), |b| {
                b.iter_batched(|| (), |()| workload::run(&new, &req), BatchSize::SmallInput)
            });
            g.bench_function(format!("{} / zentinel-modsec", req.name), |b| {
                b.iter_batched(|| (), |()| run_zentinel(&old, &req), BatchSize::SmallInput)
            });
        }
        g.finish();
        let mut g = c.benchmark_group(format!("engine/{set}/curve"));
        g.sample_size(20);
        for size in [
            1usize << 10,
            4 << 10,
            16 << 10,
            64 << 10,
            256 << 10,
            1 << 20,
        ] {
            let req = workload::clean_form(size);
            g.bench_function(format!("{} / seclang", req.name), |b| {
                b.iter(|| workload::run(&new, &req))
            });
            if size <= 64 << 10 {
                g.bench_function(format!("{} / zentinel-modsec", req.name), |b| {
                    b.iter(|| run_zentinel(&old, &req))
                });
            }
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
