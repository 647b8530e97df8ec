//! Filter benchmarks, through the whole in-process pipeline (filters,
//! router, agent) with a warm echo agent, each beside the same request
//! without filters in the same run:
//! - `filter_overhead`: a header-phase filter that allows (`allow`), warm
//!   and fresh; `allow` with `body "on"`, warm, asking for the body and
//!   allowing it (`body_allow_warm`: the path of a body-reading filter
//!   such as the `waf`, with no work of its own); `headers` alone and in
//!   the `auth` (HS256 JWT) + `headers` chain, with its declared effects
//!   and with `declare "off"` (`_called`); and no filter, `allow`,
//!   `headers` and the chain again with the data caches swept (every
//!   cache line of 2 MiB and of 32 MiB written) or the TLB (one byte in
//!   every page of 64 MiB) before each request, untimed (`_*swept_*`);
//! - `auth`: the `auth` filter alone, warm, with an HS256 and an ES256 JWT
//!   and an API key, each presented again and again (as one client does);
//!   beside an earlier revision of the filter (`*_before` rows) when
//!   `scripts/bench/policy-at.sh auth REV` has built it;
//! - `waf`: the baseline rules and the embedded OWASP Core Rule Set 4 at
//!   paranoia level 1: clean 1 KiB and 64 KiB form posts, 64 KiB of ~7,400
//!   short fields (with equal values, and with distinct ones), and an
//!   attack; warm instances, and fresh instances
//!   started from the `preinit` snapshot (for the baseline also without
//!   it, each instance compiling the rules); beside the old engine
//!   (zentinel-modsec) when `scripts/bench/waf-old-engine.sh` has built it;
//!   and the filter built with wasm SIMD when `scripts/bench/waf-simd.sh` has;
//!   and an earlier revision of the filter (`*_before` rows) when
//!   `scripts/bench/waf-at.sh REV` has built it; with `WAF_KEEP_MIB=N`,
//!   freed pool slots keep up to N MiB of dirty pages each (`waf_engine`);
//! - `waf_curve`: CRS over a clean form from 1 KiB to about 1 MiB;
//! - `filter_call`: the `allow` filter's header call alone, as Wharf's
//!   runtime makes it (`FilterLive::phase`) and as a bare, synchronous
//!   wasmtime typed call of the same export with blobs of about the same
//!   size: what the call costs before the chain and the pipeline add
//!   theirs (`filter_overhead`);
//! - `deadline_checks`: no filter, `allow`, and the `waf` baseline and CRS
//!   on a clean 1 KiB form, each through an engine that compiles guests
//!   with wasmtime's epoch checks (Wharf's) and through one without: what
//!   bounding every call by its deadline costs.
//!
//! Run with `cargo bench --bench filters`; results go in BENCHMARKS.md.

mod common;
mod inproc;

/// The allocator the `wharf` binary serves with (`host/src/cli/main.rs`),
/// so this bench measures what the binary does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http::{HeaderValue, Method};
use inproc::{pipeline, pipeline_with, run, run_swept, runtime};
use wharf::request::Request;
use wharf::runtime::EngineSettings;

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
        filter "headers-called" { instances { mode "warm"; max 2 }; config { declare "off" } }
        filter "allow-body" { instances { mode "warm"; max 2 }; config { body "on" } }
        agent "plain" { filters #false }
        agent "fresh" { filters "allow" }
        agent "warm" { filters "allow-warm" }
        agent "chain" { filters "headers" "auth" }
        agent "chain-called" { filters "headers-called" "auth" }
        agent "hdr" { filters "headers" }
        agent "hdr-called" { filters "headers-called" }
        agent "body" { filters "allow-body" }
    "#;
    let guests = [
        ("plain", "echo"),
        ("fresh", "echo"),
        ("warm", "echo"),
        ("chain", "echo"),
        ("chain-called", "echo"),
        ("hdr", "echo"),
        ("hdr-called", "echo"),
        ("body", "echo"),
        ("allow", "allow"),
        ("allow-warm", "allow"),
        ("auth", "auth"),
        ("headers", "headers"),
        ("headers-called", "headers"),
        ("allow-body", "allow"),
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
        ("body_allow_warm", "body"),
        ("headers_warm", "hdr"),
        ("headers_called_warm", "hdr-called"),
        ("headers_auth_warm", "chain"),
        ("headers_auth_called_warm", "chain-called"),
    ] {
        g.bench_function(label, |b| {
            b.iter_custom(|n| run(&rt, &pipeline, agent, &req, 200, n))
        });
    }
    g.finish();
    // The same requests with the data caches swept before each: what the
    // filters add when their code and data are not already in cache, as
    // over a socket, where the kernel and the client run between requests.
    for (sweep, name) in [
        ((2 << 20, 64), "swept_2MiB"),
        ((32 << 20, 64), "swept_32MiB"),
        ((64 << 20, 4096), "pages_swept_64MiB"),
    ] {
        let mut g = c.benchmark_group(format!("filter_overhead_1KiB_{name}"));
        for (label, agent) in [
            ("no_filter", "plain"),
            ("allow_warm", "warm"),
            ("headers_warm", "hdr"),
            ("headers_auth_warm", "chain"),
        ] {
            g.bench_function(label, |b| {
                b.iter_custom(|n| run_swept(&rt, &pipeline, agent, &req, sweep, n))
            });
        }
        g.finish();
    }
}

/// The `filter` world's types, for the bare typed call.
mod raw {
    wasmtime::component::bindgen!({ path: "../wit", world: "filter" });
}

/// The `allow` filter's header call without the chain: through Wharf's
/// runtime (head and headers encoded, the deadline armed, the call made
/// on a fiber, the verdict checked) and as a bare, synchronous wasmtime
/// typed call of `on-request-headers` with blobs encoded once.
fn call(c: &mut Criterion) {
    use wharf::runtime::{Runtime, encode_headers};
    use wharf::verdict::Phase;
    let dir = tempfile::tempdir().unwrap();
    let file = common::guests_dir().join("allow.wasm");
    std::fs::copy(&file, dir.path().join("allow.wasm")).unwrap();
    let config = wharf::config::Config::parse("bench.kdl", "", dir.path()).unwrap();
    let runtime = Runtime::new(&wharf::runtime::EngineSettings::default()).unwrap();
    let snapshot = wharf::registry::load_dir(&runtime, &config, dir.path()).unwrap();
    let image = &snapshot.filters["allow"].image;
    let mut req = request("", vec![0x5a; 1 << 10]);
    req.agent = "plain".into();
    let rt = runtime_current();
    let mut g = c.benchmark_group("filter_call");
    let mut live = rt.block_on(image.instantiate_async()).unwrap();
    g.bench_function("wharf_phase", |b| {
        b.iter_custom(|n| {
            rt.block_on(async {
                let started = std::time::Instant::now();
                for _ in 0..n {
                    let v = live.phase(Phase::RequestHeaders, &req, None, None).await;
                    std::hint::black_box(v.unwrap());
                }
                started.elapsed()
            })
        })
    });
    // The head's eight fields as pairs, about as long as Wharf's own
    // head blob: the `allow` guest reads neither blob.
    let mut head = http::HeaderMap::new();
    for (name, value) in [
        ("method", "POST"),
        ("path", "/"),
        ("query", ""),
        ("id", "0190a1b2c3d4e5f6"),
        ("client", "127.0.0.1:40000"),
        ("affinity", ""),
        ("agent", "plain"),
        ("body", "some"),
    ] {
        head.insert(name, HeaderValue::from_static(value));
    }
    let (head, headers) = (encode_headers(&head), encode_headers(&req.headers));
    let (mut store, instance) = common::raw_instance(&runtime, &file);
    type Verdict = raw::wharf::plugin::filtering::Verdict;
    let f = instance
        .get_typed_func::<(&[u8], &[u8]), (Verdict,)>(&mut store, "on-request-headers")
        .unwrap();
    g.bench_function("wasmtime_typed_call", |b| {
        b.iter(|| std::hint::black_box(f.call(&mut store, (&head, &headers)).unwrap()))
    });
    g.finish();
}

/// A runtime whose `block_on` runs the timed loop on this thread, as one
/// connection's task runs on one worker.
fn runtime_current() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The `auth` filter with each kind of credential, a warm instance
/// seeing the same credential on every request.
fn auth(c: &mut Criterion) {
    let fixture = |name: &str| {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/jwt")
                .join(name),
        )
        .unwrap()
    };
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let claims = serde_json::json!({ "sub": "bench", "exp": exp, "scope": "read" });
    use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
    let hs256 = encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(b"bench secret"),
    )
    .unwrap();
    let es256 = encode(
        &Header::new(Algorithm::ES256),
        &claims,
        &EncodingKey::from_ec_pem(&fixture("ec.key")).unwrap(),
    )
    .unwrap();
    let public = serde_json::to_string(&String::from_utf8(fixture("ec.pub")).unwrap()).unwrap();
    // sha256("bench-key-0123456789") for the API key `bench`.
    let key_hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
        b"bench-key-0123456789",
    ));
    let before = common::guests_dir().join("auth-before.wasm").is_file();
    let mut kdl = String::from("instances { mode \"warm\"; max 2 }\n");
    let mut guests = vec![("echo", "echo")];
    let mut rows = Vec::new();
    for (build, file) in [("", "auth"), ("_before", "auth-before")] {
        if build == "_before" && !before {
            continue;
        }
        for (kind, config) in [
            ("hs256", "secret \"bench secret\"".to_string()),
            ("es256", format!("public-key {public}")),
            ("api_key", format!("api-keys \"bench:{key_hash}\"")),
        ] {
            let filter: &'static str = Box::leak(format!("auth-{kind}{build}").into_boxed_str());
            let agent: &'static str = Box::leak(format!("echo-{kind}{build}").into_boxed_str());
            kdl.push_str(&format!(
                "filter \"{filter}\" {{ instances {{ mode \"warm\"; max 2 }}; config {{ {config} }} }}\n\
                 agent \"{agent}\" {{ filters \"{filter}\" }}\n"
            ));
            guests.push((filter, file));
            guests.push((agent, "echo"));
            rows.push((format!("{kind}_warm{build}"), agent, kind));
        }
    }
    let (pipeline, _dir) = pipeline(&guests, &kdl);
    let rt = runtime();
    let mut g = c.benchmark_group("auth");
    for (label, agent, kind) in rows {
        let mut req = request("", vec![0x5a; 1 << 10]);
        let (name, value) = match kind {
            "hs256" => ("authorization", format!("Bearer {hs256}")),
            "es256" => ("authorization", format!("Bearer {es256}")),
            _ => ("x-api-key", "bench-key-0123456789".to_string()),
        };
        req.headers
            .insert(name, HeaderValue::from_str(&value).unwrap());
        g.bench_function(&label, |b| {
            b.iter_custom(|n| run(&rt, &pipeline, agent, &req, 200, n))
        });
    }
    g.finish();
}

/// The old engine's component (zentinel-modsec, before Wharf's own
/// SecLang engine), when `scripts/bench/waf-old-engine.sh` has built it.
fn old_engine() -> bool {
    common::guests_dir().join("waf-zentinel.wasm").is_file()
}

/// The `waf` component built with wasm SIMD (`+simd128`), when
/// `scripts/bench/waf-simd.sh` has built it.
fn simd_build() -> bool {
    common::guests_dir().join("waf-simd.wasm").is_file()
}

/// The `waf` component of an earlier revision, when
/// `scripts/bench/waf-at.sh REV` has built it.
fn before_build() -> bool {
    common::guests_dir().join("waf-before.wasm").is_file()
}

/// A clean form of `n` bytes: `name=Ishmael&note=aaa…`.
fn form(n: usize) -> Vec<u8> {
    let mut body = b"name=Ishmael&note=".to_vec();
    body.resize(n, b'a');
    body
}

/// A form of short fields up to `bytes`: `f0=ab&f1=ab&…`, or with
/// `distinct` values (`f0=v0&f1=v1&…`), as an attacker would send them so
/// that no value is the same bytes as another.
fn many_fields(bytes: usize, distinct: bool) -> Vec<u8> {
    let mut body = Vec::with_capacity(bytes + 16);
    let mut i = 0;
    while body.len() < bytes {
        let field = if distinct {
            format!("f{i}=v{i}&")
        } else {
            format!("f{i}=ab&")
        };
        body.extend_from_slice(field.as_bytes());
        i += 1;
    }
    body.pop();
    body
}

/// The `waf` group's engine: the default, or with `WAF_KEEP_MIB=N` a pool
/// whose freed slots keep up to N MiB of dirty pages each (what
/// `server { instance-slots 200 }` gives a node: 1 MiB), for the fresh rows.
fn waf_engine() -> EngineSettings {
    let keep = std::env::var("WAF_KEEP_MIB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    if keep == 0 {
        return EngineSettings::default();
    }
    EngineSettings {
        keep_resident: keep << 20,
        idle_resident: 64 << 30,
        ..EngineSettings::default()
    }
}

fn waf(c: &mut Criterion) {
    let old = old_engine();
    if !old {
        eprintln!(
            "scripts/bench/waf-old-engine.sh has not built the old engine: its rows are skipped"
        );
    }
    let crs_dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../third_party/coreruleset");
    let mut kdl = String::from(
        r#"
        instances { mode "warm"; max 2 }
        filter "waf" { instances { mode "warm"; max 2 }; deadline "10s"; config { max-time-ms 5000 } }
        filter "waf-fresh" { deadline "10s"; config { max-time-ms 5000 } }
        filter "waf-raw" { preinit #false; deadline "10s"; config { max-time-ms 5000 } }
        filter "crs" { instances { mode "warm"; max 2 }; deadline "10s"; config { ruleset "crs"; paranoia 1; max-time-ms 5000 } }
        filter "crs-fresh" { deadline "10s"; config { ruleset "crs"; paranoia 1; max-time-ms 5000 } }
        agent "plain" { filters #false }
        agent "baseline" { filters "waf" }
        agent "baseline-fresh" { filters "waf-fresh" }
        agent "baseline-fresh-raw" { filters "waf-raw" }
        agent "crs-echo" { filters "crs" }
        agent "crs-fresh-echo" { filters "crs-fresh" }
        "#,
    );
    let mut guests = vec![
        ("plain", "echo"),
        ("baseline", "echo"),
        ("baseline-fresh", "echo"),
        ("baseline-fresh-raw", "echo"),
        ("crs-echo", "echo"),
        ("crs-fresh-echo", "echo"),
        ("waf", "waf"),
        ("waf-fresh", "waf"),
        ("waf-raw", "waf"),
        ("crs", "waf"),
        ("crs-fresh", "waf"),
    ];
    if old {
        // The old engine reads CRS 4 from files: the same vendored rules.
        kdl.push_str(&format!(
            r#"filter "old-waf" {{ instances {{ mode "warm"; max 2 }}; deadline "10s" }}
            filter "old-crs" {{
                instances {{ mode "warm"; max 2 }}
                deadline "10s"
                files "{}"
                config {{ rules "crs-setup.conf.example rules/*.conf"; paranoia 1 }}
            }}
            agent "old-baseline" {{ filters "old-waf" }}
            agent "old-crs-echo" {{ filters "old-crs" }}
            "#,
            crs_dir.display()
        ));
        guests.extend([
            ("old-baseline", "echo"),
            ("old-crs-echo", "echo"),
            ("old-waf", "waf-zentinel"),
            ("old-crs", "waf-zentinel"),
        ]);
    }
    let simd = simd_build();
    if simd {
        kdl.push_str(
            r#"filter "crs-simd" { instances { mode "warm"; max 2 }; deadline "10s"; config { ruleset "crs"; paranoia 1; max-time-ms 5000 } }
            filter "waf-simd" { instances { mode "warm"; max 2 }; deadline "10s"; config { max-time-ms 5000 } }
            agent "crs-simd-echo" { filters "crs-simd" }
            agent "baseline-simd" { filters "waf-simd" }
            "#,
        );
        guests.extend([
            ("crs-simd-echo", "echo"),
            ("crs-simd", "waf-simd"),
            ("baseline-simd", "echo"),
            ("waf-simd", "waf-simd"),
        ]);
    }
    let before = before_build();
    if before {
        kdl.push_str(
            r#"filter "waf-before" { instances { mode "warm"; max 2 }; deadline "10s"; config { max-time-ms 5000 } }
            filter "crs-before" { instances { mode "warm"; max 2 }; deadline "10s"; config { ruleset "crs"; paranoia 1; max-time-ms 5000 } }
            agent "baseline-before" { filters "waf-before" }
            agent "crs-before-echo" { filters "crs-before" }
            "#,
        );
        guests.extend([
            ("baseline-before", "echo"),
            ("crs-before-echo", "echo"),
            ("waf-before", "waf-before"),
            ("crs-before", "waf-before"),
        ]);
    }
    let (pipeline, _dir) = pipeline_with(&guests, &kdl, &waf_engine());
    let rt = runtime();
    let attack = request("q=1%27%20OR%20%271%27%3D%271", form(1 << 10));
    let mut g = c.benchmark_group("waf");
    let mut agents: Vec<(&str, &'static str)> = vec![
        ("no_filter", "plain"),
        ("baseline", "baseline"),
        ("baseline_fresh_preinit", "baseline-fresh"),
        ("baseline_fresh_no_preinit", "baseline-fresh-raw"),
        ("crs_pl1", "crs-echo"),
        ("crs_pl1_fresh_preinit", "crs-fresh-echo"),
    ];
    if simd {
        agents.push(("baseline_simd128", "baseline-simd"));
        agents.push(("crs_pl1_simd128", "crs-simd-echo"));
    }
    if before {
        agents.push(("baseline_before", "baseline-before"));
        agents.push(("crs_pl1_before", "crs-before-echo"));
    }
    if old {
        agents.push(("old_baseline", "old-baseline"));
        agents.push(("old_crs_pl1", "old-crs-echo"));
    }
    let workloads = [
        ("clean_1KiB", request("", form(1 << 10))),
        ("clean_64KiB", request("", form(64 << 10))),
        ("fields_64KiB", request("", many_fields(64 << 10, false))),
        (
            "distinct_fields_64KiB",
            request("", many_fields(64 << 10, true)),
        ),
    ];
    for (label, agent) in agents {
        for (name, req) in &workloads {
            g.bench_function(format!("{label}/{name}"), |b| {
                b.iter_custom(|n| run(&rt, &pipeline, agent, req, 200, n))
            });
        }
        if agent != "plain" {
            g.bench_function(format!("{label}/attack_1KiB"), |b| {
                b.iter_custom(|n| run(&rt, &pipeline, agent, &attack, 403, n))
            });
        }
    }
    g.finish();
    // Linearity: CRS (warm) and no filter over a clean form from 1 KiB to
    // about 1 MiB (the engine inspects up to 1 MiB by default).
    let mut g = c.benchmark_group("waf_curve");
    for size in [1usize << 10, 16 << 10, 256 << 10, 1_000_000] {
        let req = request("", form(size));
        for (label, agent) in [("no_filter", "plain"), ("crs_pl1", "crs-echo")] {
            g.bench_function(format!("{label}/{size}"), |b| {
                b.iter_custom(|n| run(&rt, &pipeline, agent, &req, 200, n))
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

/// What wasmtime's epoch checks cost: the same requests through an
/// engine that compiles guests with them, as Wharf always does, and
/// through one without (`EngineSettings::epoch_interruption`, which
/// nothing that serves requests turns off: without the checks no deadline
/// can stop a call). Wasmtime checks the epoch at every function entry and
/// loop header of guest code, so the cost grows with the guest's own work.
fn deadline_checks(c: &mut Criterion) {
    let kdl = r#"
        instances { mode "warm"; max 2 }
        filter "allow" { instances { mode "warm"; max 2 } }
        filter "waf" { instances { mode "warm"; max 2 }; deadline "10s"; config { max-time-ms 5000 } }
        filter "crs" { instances { mode "warm"; max 2 }; deadline "10s"; config { ruleset "crs"; paranoia 1; max-time-ms 5000 } }
        agent "plain" { filters #false }
        agent "warm" { filters "allow" }
        agent "baseline" { filters "waf" }
        agent "crs-echo" { filters "crs" }
    "#;
    let guests = [
        ("plain", "echo"),
        ("warm", "echo"),
        ("baseline", "echo"),
        ("crs-echo", "echo"),
        ("allow", "allow"),
        ("waf", "waf"),
        ("crs", "waf"),
    ];
    let (checked, _checked_dir) = pipeline(&guests, kdl);
    let unchecked_settings = EngineSettings {
        epoch_interruption: false,
        ..EngineSettings::default()
    };
    let (unchecked, _unchecked_dir) = pipeline_with(&guests, kdl, &unchecked_settings);
    let rt = runtime();
    let req = request("", form(1 << 10));
    let mut g = c.benchmark_group("deadline_checks");
    for (label, agent) in [
        ("no_filter", "plain"),
        ("allow", "warm"),
        ("waf_baseline", "baseline"),
        ("waf_crs_pl1", "crs-echo"),
    ] {
        for (engine, pipeline) in [("checked", &checked), ("unchecked", &unchecked)] {
            g.bench_function(format!("{label}/{engine}"), |b| {
                b.iter_custom(|n| run(&rt, pipeline, agent, &req, 200, n))
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = filters;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = overhead, call, auth, waf, deadline_checks
}
criterion_main!(filters);
