//! Runs one benchmark workload many times and prints the time per request
//! and the rules that took the most of it (built with the `profile`
//! feature); also the process to `perf record`.
//!
//! `cargo run --release --features profile --example profile -- [1k|64k|fields|attack|filler] [crs|baseline] [N]`
//! (`PROFILE_ALL=1`: every rule evaluated, not the costliest 20)

#[path = "../benches/workload.rs"]
mod workload;

use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which = args.first().map_or("1k", String::as_str);
    let crs = args.get(1).map_or("crs", String::as_str) == "crs";
    let n: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let rules = Arc::new(workload::rules(crs));
    let req = match which {
        "64k" => workload::clean_form(64 << 10),
        "fields" => workload::many_fields(64 << 10),
        "attack" => workload::attack(),
        "filler" => workload::filler_form(1 << 10),
        _ => workload::clean_form(1 << 10),
    };
    seclang::profile::take();
    let started = Instant::now();
    let mut blocked = 0;
    for _ in 0..n {
        if workload::run(&rules, &req) {
            blocked += 1;
        }
    }
    let per = started.elapsed() / n;
    let rules_run = seclang::profile::take();
    let work = seclang::profile::take_work();
    for (name, (calls, bytes)) in [
        "prefilter scans",
        "operator tests",
        "matches",
        "columns made",
        "prefilter lookups",
        "automaton passes",
    ]
    .iter()
    .zip(work)
    {
        println!(
            "  {name}: {} per request, {} bytes",
            calls / n as u64,
            bytes / n as u64
        );
    }
    let total: std::time::Duration = rules_run.iter().map(|r| r.2).sum();
    let runs: u64 = rules_run.iter().map(|r| r.1).sum();
    println!(
        "{} ({}): {per:?} per request, {blocked} of {n} blocked; {} rule evaluations, {:?} in rules",
        req.name,
        if crs { "CRS PL1" } else { "baseline" },
        runs / n as u64,
        total / n
    );
    let shown = if std::env::var_os("PROFILE_ALL").is_some() {
        rules_run.len()
    } else {
        20
    };
    for (id, count, spent) in rules_run.iter().take(shown) {
        println!(
            "  {id}: {:?} ({} evaluations)",
            *spent / n,
            count / n as u64
        );
    }
}
