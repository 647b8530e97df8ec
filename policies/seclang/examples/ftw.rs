//! Replays CRS regression cases (the JSON-lines format of
//! `third_party/coreruleset/tests/regression-tests.jsonl.gz`) through the engine in
//! process, without HTTP: a fast loop for working on the engine. The
//! figures that count come from `scripts/conformance/crs-conformance.sh`, over HTTP
//! against a real `wharf serve`.
//!
//! `cargo run --release --example ftw -- CASES.jsonl.gz [--pl N] [--decision] [--only PREFIX] [-v] [--dump]`
//!
//! `--dump` prints every case's status and matched rules, so two builds of
//! the engine can be compared answer by answer (`diff`).

use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::Arc;

use seclang::{Limits, MemFiles, RuleSet, Scratch, Transaction};
use serde_json::Value;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cases = args
        .first()
        .expect("usage: ftw CASES.jsonl.gz [--pl N] [--decision]");
    let flag = |name: &str| args.iter().position(|a| a == name);
    let pl: u8 = flag("--pl")
        .map(|i| args[i + 1].parse().unwrap())
        .unwrap_or(4);
    let decision = flag("--decision").is_some();
    let verbose = flag("-v").is_some();
    let dump = flag("--dump").is_some();
    let only = flag("--only").map(|i| args[i + 1].clone());

    let rules = Arc::new(load(pl, !decision));
    let mut reader: Box<dyn Read> = Box::new(std::fs::File::open(cases).unwrap());
    if cases.ends_with(".gz") {
        reader = Box::new(flate2::read::GzDecoder::new(reader));
    }
    let (mut pass, mut fail, mut skipped) = (0, 0, 0);
    let mut failures = std::collections::BTreeMap::<String, Vec<String>>::new();
    let started = std::time::Instant::now();
    for line in std::io::BufReader::new(reader).lines() {
        let case: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let id = case["id"].as_str().unwrap().to_string();
        if only.as_ref().is_some_and(|p| !id.starts_with(p.as_str())) {
            continue;
        }
        let Some(req) = request_of(&case) else {
            skipped += 1;
            continue;
        };
        let (matched, status) = run(&rules, &req, &case);
        if std::env::var_os("FTW_DUMP").is_some() {
            println!(
                "DUMP {}",
                serde_json::json!({"id": id, "matched": matched, "status": status})
            );
        }
        let ok = if decision {
            let blocked = status >= 400;
            match case["expect"].as_str() {
                Some("block") => blocked,
                _ => !blocked,
            }
        } else {
            let has = |v: &Value| matched.contains(&(v.as_u64().unwrap() as u32));
            case["expect_ids"].as_array().unwrap().iter().all(has)
                && !case["no_expect_ids"].as_array().unwrap().iter().any(has)
        };
        if dump {
            println!("{id} {status} {matched:?}");
        }
        if ok {
            pass += 1;
        } else {
            fail += 1;
            let rule = case["rule"].to_string();
            failures.entry(rule).or_default().push(id.clone());
            if verbose {
                eprintln!(
                    "FAIL {id}: matched {matched:?} status {status} expect {} {} no {}",
                    case["expect_ids"], case["expect"], case["no_expect_ids"]
                );
            }
        }
    }
    let total = pass + fail;
    println!(
        "{} PL{pl}: {pass}/{total} passed ({:.1} %), {skipped} skipped, in {:?}",
        if decision { "decision" } else { "per-rule" },
        100.0 * pass as f64 / total.max(1) as f64,
        started.elapsed()
    );
    for (rule, ids) in &failures {
        println!("  {rule}: {} failed ({})", ids.len(), ids.join(" "));
    }
}

fn load(pl: u8, detection_only: bool) -> RuleSet {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = MemFiles::new();
    let engine =
        std::fs::read_to_string(root.join("policies/waf/rules/wharf-engine.conf")).unwrap();
    files.add("wharf-engine.conf", engine);
    let crs = root.join("third_party/coreruleset");
    files.add(
        "crs-setup.conf",
        std::fs::read_to_string(crs.join("crs-setup.conf.example")).unwrap(),
    );
    for e in std::fs::read_dir(crs.join("rules")).unwrap() {
        let p = e.unwrap().path();
        files.add(
            &format!("rules/{}", p.file_name().unwrap().to_string_lossy()),
            std::fs::read_to_string(&p).unwrap(),
        );
    }
    let mut prelude = format!(
        "SecAction \"id:900000,phase:1,pass,nolog,setvar:tx.blocking_paranoia_level={pl}\"\n"
    );
    if detection_only {
        // The CRS test suite's own settings (its limits let the 920 size
        // rules be tested).
        prelude.push_str(
            "SecAction \"id:900005,phase:1,pass,nolog,setvar:tx.crs_validate_utf8_encoding=1,setvar:tx.arg_name_length=100,setvar:tx.arg_length=400,setvar:tx.total_arg_length=64000,setvar:tx.max_num_args=255,setvar:tx.max_file_size=64100,setvar:tx.combined_file_sizes=65535\"\n",
        );
    }
    if detection_only {
        prelude.push_str("SecRuleEngine DetectionOnly\n");
    }
    files.add("settings.conf", prelude);
    RuleSet::from_files(
        "",
        &[
            "wharf-engine.conf",
            "settings.conf",
            "crs-setup.conf",
            "rules/*.conf",
        ],
        &files,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

struct Request {
    method: String,
    uri: String,
    version: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

fn request_of(case: &Value) -> Option<Request> {
    if let Some(raw) = case["raw_request_b64"].as_str() {
        let bytes = seclang::base64_decode(raw.as_bytes());
        return parse_raw(&bytes);
    }
    let mut headers: Vec<(String, Vec<u8>)> = case["headers"]
        .as_array()?
        .iter()
        .map(|h| {
            (
                h[0].as_str().unwrap().to_string(),
                h[1].as_str().unwrap().as_bytes().to_vec(),
            )
        })
        .collect();
    let body = case["body"]
        .as_str()
        .map(|b| b.as_bytes().to_vec())
        .unwrap_or_default();
    if case["autocomplete_headers"].as_bool() == Some(true)
        && !body.is_empty()
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-length"))
    {
        headers.push(("Content-Length".into(), body.len().to_string().into_bytes()));
    }
    Some(Request {
        method: case["method"].as_str()?.to_string(),
        uri: case["uri"].as_str()?.to_string(),
        version: case["version"].as_str().unwrap_or("HTTP/1.1").to_string(),
        headers,
        body,
    })
}

fn parse_raw(b: &[u8]) -> Option<Request> {
    let end = b.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&b[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let mut rl = lines.next()?.splitn(3, ' ');
    let (method, uri, version) = (
        rl.next()?.to_string(),
        rl.next()?.to_string(),
        rl.next().unwrap_or("HTTP/1.1").to_string(),
    );
    let headers: Vec<(String, Vec<u8>)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().as_bytes().to_vec()))
        .collect();
    let mut body = b[end + 4..].to_vec();
    if headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case(b"chunked")
    }) {
        body = dechunk(&body);
    }
    Some(Request {
        method,
        uri,
        version,
        headers,
        body,
    })
}

fn dechunk(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(nl) = b[i..].windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&b[i..i + nl]).unwrap_or("0").trim(), 16)
                .unwrap_or(0);
        i += nl + 2;
        if size == 0 || i + size > b.len() {
            break;
        }
        out.extend_from_slice(&b[i..i + size]);
        i += size + 2;
    }
    out
}

fn run(rules: &Arc<RuleSet>, req: &Request, case: &Value) -> (Vec<u32>, u16) {
    // In the memory of the case before, as the `waf` filter runs one
    // request after another.
    let mut tx = Transaction::reusing(rules.clone(), Limits::default(), SPARE.take());
    tx.connection("127.0.0.1", 40000, "127.0.0.1", 80);
    tx.request_line(&req.method, &req.uri, &req.version);
    for (n, v) in &req.headers {
        tx.request_header(n.as_bytes(), v);
    }
    let mut status = 200;
    let done = |tx: &Transaction| tx.intervention().map(|i| i.status);
    if let Some(s) = tx.process_request_headers().map(|i| i.status) {
        status = s;
    } else {
        tx.request_body(&req.body);
        if let Some(s) = tx.process_request_body().map(|i| i.status) {
            status = s;
        } else if let Some(resp) = case.get("response").filter(|r| !r.is_null()) {
            let code = resp["status"].as_u64().unwrap_or(200) as u16;
            tx.response_status(code, "HTTP/1.1");
            if let Some(h) = resp["headers"].as_object() {
                for (k, v) in h {
                    tx.response_header(k.as_bytes(), v.as_str().unwrap_or("").as_bytes());
                }
            }
            if resp["headers"]
                .as_object()
                .is_none_or(|h| !h.keys().any(|k| k.eq_ignore_ascii_case("content-type")))
            {
                tx.response_header(b"Content-Type", b"text/plain");
            }
            tx.process_response_headers();
            tx.response_body(resp["body"].as_str().unwrap_or("").as_bytes());
            tx.process_response_body();
            status = done(&tx).unwrap_or(code);
        }
    }
    tx.process_logging();
    let ids = tx
        .matched()
        .iter()
        .filter(|m| m.log)
        .map(|m| m.id)
        .collect();
    SPARE.set(tx.into_scratch());
    (ids, status)
}

thread_local! {
    static SPARE: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}
