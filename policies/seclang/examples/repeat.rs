//! Runs one benchmark workload N times with nothing else (no timers per
//! rule, unlike `profile`): the process to count instructions in with
//! `valgrind --tool=cachegrind` (`scripts/bench/waf-instructions.sh`),
//! where the time of a noisy VM cannot show a few percent.
//!
//! `cargo run --release --example repeat -- [crs|baseline|FILE] [filler|1k|64k|fields] [N]`
//! (FILE: rules loaded after the `waf` filter's engine settings)

#[path = "../benches/workload.rs"]
mod workload;

use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let set = args.first().map_or("crs", String::as_str);
    let rules = if set == "crs" || set == "baseline" {
        workload::rules(set == "crs")
    } else {
        let engine = workload::waf_rules("wharf-engine.conf");
        let text = std::fs::read_to_string(set).unwrap_or_else(|e| panic!("{set}: {e}"));
        seclang::RuleSet::from_text(&format!("{engine}\n{text}")).unwrap_or_else(|e| panic!("{e}"))
    };
    let rules = Arc::new(rules);
    let req = match args.get(1).map_or("filler", String::as_str) {
        "64k" => workload::clean_form(64 << 10),
        "fields" => workload::many_fields(64 << 10),
        "1k" => workload::clean_form(1 << 10),
        _ => workload::filler_form(1 << 10),
    };
    let n: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20000);
    let started = Instant::now();
    let mut blocked = 0;
    for _ in 0..n {
        if workload::run(&rules, &req) {
            blocked += 1;
        }
    }
    println!(
        "{}: {:?} per request, {blocked} of {n} blocked",
        req.name,
        started.elapsed() / n.max(1)
    );
}
