//! Filter benchmarks, through the whole in-process pipeline (filters,
//! router, agent) with a warm echo agent, each beside the same request
//! without filters in the same run:
//! - `filter_overhead`: a header-phase filter that allows (`allow`), warm
//!   and fresh; the `auth` (HS256 JWT) + `headers` chain;
//! - `waf`: the baseline rules and, where Debian's `modsecurity-crs` is
//!   installed, the OWASP Core Rule Set 3.3 at paranoia level 1: clean
//!   1 KiB and 64 KiB form posts, and an attack; warm instances, and fresh
//!   instances started from the `preinit` snapshot (for the baseline also
//!   without it, each instance compiling the rules).
//!
//! Run with `cargo bench --bench filters`; results go in BENCHMARKS.md.

mod common;
mod inproc;

use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http::{HeaderValue, Method};
use inproc::{pipeline, run, runtime};
use wharf::request::Request;

fn request(query: &str, body: Vec<u8>) -> Request {
    let mut req = Request::new(Method::POST, "/");
    req.query = query.to_string();
    req.body = Bytes::from(body);
    for (name, value) in [
        ("host", "bench.example"),
        ("user-agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0"),
        ("accept", "*/*"),
        ("content-type", "application/x-www-form-urlencoded"),
    ] {
        req.headers.insert(name, HeaderValue::from_static(value));
    }
    let len = req.body.len().to_string();
    req.headers
        .insert("content-length", HeaderValue::from_str(&len).unwrap());
    req
}

fn overhead(c: &mut Criterion) {
    // HS256 token for the auth chain, signed once.
    let token = {
        use jsonwebtoken::{EncodingKey, Header, encode};
        let exp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 3600;
        let claims = serde_json::json!({ "sub": "bench", "exp": exp });
        encode(
            &Header::default(),
            &claims,
            &EncodingKey::from_secret(b"bench secret"),
        )
        .unwrap()
    };
    let kdl = r#"
        instances { mode "warm"; max 2 }
        filter "allow-warm" { instances { mode "warm"; max 2 } }
        filter "auth" { instances { mode "warm"; max 2 }; config { secret "bench secret" } }
        filter "headers" { instances { mode "warm"; max 2 } }
        agent "plain" { filters #false }
        agent "fresh" { filters "allow" }
        agent "warm" { filters "allow-warm" }
        agent "chain" { filters "headers" "auth" }
    "#;
    let guests = [
        ("plain", "echo"),
        ("fresh", "echo"),
        ("warm", "echo"),
        ("chain", "echo"),
        ("allow", "allow"),
        ("allow-warm", "allow"),
        ("auth", "auth"),
        ("headers", "headers"),
    ];
    let (pipeline, _dir) = pipeline(&guests, kdl);
    let rt = runtime();
    let mut req = request("", vec![0x5a; 1 << 10]);
    let bearer = format!("Bearer {token}");
    req.headers
        .insert("authorization", HeaderValue::from_str(&bearer).unwrap());
    let mut g = c.benchmark_group("filter_overhead_1KiB");
    for (label, agent) in [
        ("no_filter", "plain"),
        ("allow_warm", "warm"),
        ("allow_fresh", "fresh"),
        ("headers_auth_warm", "chain"),
    ] {
        g.bench_function(label, |b| {
            b.iter_custom(|n| run(&rt, &pipeline, agent, &req, 200, n))
        });
    }
    g.finish();
}

fn waf(c: &mut Criterion) {
    let crs = common::crs_files();
    if crs.is_none() {
        eprintln!("modsecurity-crs is not installed: the CRS rows are skipped");
    }
    let mut kdl = String::from(
        r#"
        instances { mode "warm"; max 2 }
        filter "waf" { instances { mode "warm"; max 2 } }
        filter "waf-raw" { preinit #false }
        agent "plain" { filters #false }
        agent "baseline" { filters "waf" }
        agent "baseline-fresh" { filters "waf-fresh" }
        agent "baseline-fresh-raw" { filters "waf-raw" }
        "#,
    );
    let mut guests = vec![
        ("plain", "echo"),
        ("baseline", "echo"),
        ("baseline-fresh", "echo"),
        ("baseline-fresh-raw", "echo"),
        ("waf", "waf"),
        ("waf-fresh", "waf"),
        ("waf-raw", "waf"),
    ];
    if let Some(dir) = &crs {
        kdl.push_str(&format!(
            r#"filter "crs" {{
                instances {{ mode "warm"; max 2 }}
                files "{0}"
                config {{ rules "crs-setup.conf rules/*.conf"; paranoia 1 }}
            }}
            filter "crs-fresh" {{
                files "{0}"
                config {{ rules "crs-setup.conf rules/*.conf"; paranoia 1 }}
            }}
            agent "crs-echo" {{ filters "crs" }}
            agent "crs-fresh-echo" {{ filters "crs-fresh" }}
            "#,
            dir.path().display()
        ));
        guests.extend([
            ("crs-echo", "echo"),
            ("crs", "waf"),
            ("crs-fresh-echo", "echo"),
            ("crs-fresh", "waf"),
        ]);
    }
    let (pipeline, _dir) = pipeline(&guests, &kdl);
    let rt = runtime();
    let form = |n: usize| {
        let mut body = b"name=Ishmael&note=".to_vec();
        body.resize(n, b'a');
        body
    };
    let attack = request("q=1%27%20OR%20%271%27%3D%271", form(1 << 10));
    let mut g = c.benchmark_group("waf");
    let mut agents: Vec<(&str, &'static str)> = vec![
        ("no_filter", "plain"),
        ("baseline", "baseline"),
        ("baseline_fresh_preinit", "baseline-fresh"),
        ("baseline_fresh_no_preinit", "baseline-fresh-raw"),
    ];
    if crs.is_some() {
        agents.push(("crs_pl1", "crs-echo"));
        agents.push(("crs_pl1_fresh_preinit", "crs-fresh-echo"));
    }
    for (label, agent) in agents {
        for (size, name) in [(1usize << 10, "clean_1KiB"), (64 << 10, "clean_64KiB")] {
            let req = request("", form(size));
            g.bench_function(format!("{label}/{name}"), |b| {
                b.iter_custom(|n| run(&rt, &pipeline, agent, &req, 200, n))
            });
        }
        if agent != "plain" {
            g.bench_function(format!("{label}/attack_1KiB"), |b| {
                b.iter_custom(|n| run(&rt, &pipeline, agent, &attack, 403, n))
            });
        }
    }
    g.finish();
    // Memory of a warm WAF instance after all of the above.
    pipeline.metrics().upkeep();
    for line in pipeline.metrics().render().lines() {
        if line.starts_with("wharf_instance_memory_max_bytes") && !line.contains("echo\"") {
            eprintln!("{line}");
        }
    }
}

criterion_group! {
    name = filters;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = overhead, waf
}
criterion_main!(filters);
