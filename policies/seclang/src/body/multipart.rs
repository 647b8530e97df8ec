//! multipart/form-data bodies: fields into `ARGS_POST`, files into `FILES`,
//! `FILES_NAMES`, `FILES_SIZES`, each part's header lines into
//! `MULTIPART_PART_HEADERS` (keyed by the part's name), and the strictness
//! flags ModSecurity sets (`MULTIPART_*`, `MULTIPART_STRICT_ERROR`).
//! Quoted parameters are read as quoted strings: `name="a;b"` is `a;b`.

use crate::tx::{MultipartFlags, Transaction};

pub fn parse(tx: &mut Transaction, content_type: &[u8], body: &[u8]) {
    let mut f = MultipartFlags::default();
    let result = parse_body(tx, content_type, body, &mut f);
    tx.multipart = f;
    if let Err(why) = result {
        tx.reqbody_error = Some(format!("Multipart parsing error: {why}"));
    }
}

fn parse_body(
    tx: &mut Transaction,
    content_type: &[u8],
    body: &[u8],
    f: &mut MultipartFlags,
) -> Result<(), &'static str> {
    let boundary = boundary(content_type, f).ok_or("no boundary in the Content-Type")?;
    let mut delim = b"--".to_vec();
    delim.extend_from_slice(&boundary);
    let mut pos = line_start_find(body, &delim, 0).ok_or("no boundary in the body")?;
    if !body[..pos].iter().all(|b| b.is_ascii_whitespace()) {
        f.data_before = true;
    }
    let (mut crlf, mut lf) = (false, false);
    loop {
        let after = pos + delim.len();
        if body[after..].starts_with(b"--") {
            if !body[after + 2..].iter().all(|b| b.is_ascii_whitespace()) {
                f.data_after = true;
            }
            break;
        }
        let nl = memchr::memchr(b'\n', &body[after..]).ok_or("the body ends in a boundary line")?
            + after;
        let rest = &body[after..nl];
        let rest = rest.strip_suffix(b"\r").map_or_else(
            || {
                lf = true;
                rest
            },
            |r| {
                crlf = true;
                r
            },
        );
        if !rest.iter().all(|&b| b == b' ' || b == b'\t') {
            f.unmatched_boundary = true;
        }
        let start = nl + 1;
        let mut needle = b"\n".to_vec();
        needle.extend_from_slice(&delim);
        let Some(next) = memchr::memmem::find(&body[start.saturating_sub(1)..], &needle)
            .map(|i| i + start.saturating_sub(1))
            .filter(|&n| n + 1 >= start)
        else {
            f.unmatched_boundary = true;
            return Err("the final boundary is missing");
        };
        let mut end = next.max(start);
        if end > start && body[end - 1] == b'\r' {
            end -= 1;
            crlf = true;
        } else {
            lf = true;
        }
        part(tx, &body[start..end], f, &mut crlf, &mut lf)?;
        pos = next + 1;
    }
    f.lf_line = lf;
    f.crlf_lf_lines = crlf && lf;
    Ok(())
}

/// The `boundary` parameter of a multipart Content-Type.
fn boundary(ct: &[u8], f: &mut MultipartFlags) -> Option<Vec<u8>> {
    let lower = ct.to_ascii_lowercase();
    let at = memchr::memmem::find(&lower, b"boundary")?;
    let mut rest = &ct[at + 8..];
    while let [b' ' | b'\t', r @ ..] = rest {
        f.boundary_whitespace = true;
        rest = r;
    }
    rest = rest.strip_prefix(b"=")?;
    if rest.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
        f.boundary_whitespace = true;
        rest = crate::decode::trim(rest, true, false);
    }
    let value = if let Some(q) = rest.strip_prefix(b"\"") {
        f.boundary_quoted = true;
        let end = q.iter().position(|&b| b == b'"')?;
        &q[..end]
    } else {
        let end = rest
            .iter()
            .position(|&b| b == b';' || b == b',')
            .unwrap_or(rest.len());
        crate::decode::trim(&rest[..end], false, true)
    };
    (!value.is_empty()).then(|| value.to_vec())
}

/// The first `needle` at the start of a line, from `from`.
fn line_start_find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(at) = memchr::memmem::find(&hay[i..], needle) {
        let at = at + i;
        if at == 0 || hay[at - 1] == b'\n' {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

fn part(
    tx: &mut Transaction,
    part: &[u8],
    f: &mut MultipartFlags,
    crlf: &mut bool,
    lf: &mut bool,
) -> Result<(), &'static str> {
    let mut headers: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut i = 0;
    let body_start = loop {
        let Some(nl) = memchr::memchr(b'\n', &part[i..]).map(|n| n + i) else {
            f.invalid_part = true;
            break part.len();
        };
        let line = match part[i..nl].strip_suffix(b"\r") {
            Some(l) => {
                *crlf = true;
                l
            }
            None => {
                *lf = true;
                &part[i..nl]
            }
        };
        i = nl + 1;
        if line.is_empty() {
            break i;
        }
        if matches!(line[0], b' ' | b'\t') {
            f.header_folding = true;
            match headers.last_mut() {
                Some((_, v)) => {
                    v.push(b' ');
                    v.extend_from_slice(crate::decode::trim(line, true, true));
                }
                None => f.invalid_header_folding = true,
            }
            continue;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            f.invalid_part = true;
            return Err("a part header has no colon");
        };
        let name = crate::decode::trim(&line[..colon], true, true).to_vec();
        let value = crate::decode::trim(&line[colon + 1..], true, true).to_vec();
        headers.push((name, value));
    };
    let data = &part[body_start.min(part.len())..];
    let Some((_, disposition)) = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(b"content-disposition"))
    else {
        f.invalid_part = true;
        return Err("a part has no Content-Disposition");
    };
    let (name, filename) = disposition_params(disposition, f)?;
    let name = name.ok_or_else(|| {
        f.invalid_part = true;
        "a part has no name"
    })?;
    for (n, v) in &headers {
        let mut line = n.clone();
        line.extend_from_slice(b": ");
        line.extend_from_slice(v);
        tx.mp_headers.add(&mut tx.arena, &name, &line);
    }
    tx.s.multipart_name = tx.arena.push(&name);
    match filename {
        Some(file) => {
            tx.files.add(&mut tx.arena, &name, &file);
            tx.files_names.add(&mut tx.arena, &name, &name);
            let size = data.len().to_string();
            tx.files_sizes.add(&mut tx.arena, &name, size.as_bytes());
            tx.s.files_combined_size += data.len();
            tx.s.multipart_filename = tx.arena.push(&file);
        }
        None => {
            tx.add_argument(&name, data, true);
        }
    }
    Ok(())
}

type Params = (Option<Vec<u8>>, Option<Vec<u8>>);

/// `form-data; name="a"; filename="b"` → (name, filename).
fn disposition_params(v: &[u8], f: &mut MultipartFlags) -> Result<Params, &'static str> {
    let lower = v.to_ascii_lowercase();
    if !lower.starts_with(b"form-data") {
        f.invalid_part = true;
        return Err("Content-Disposition is not form-data");
    }
    let b = &v[9..];
    let (mut name, mut filename) = (None, None);
    let mut i = 0;
    loop {
        while i < b.len() && matches!(b[i], b' ' | b'\t') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if b[i] == b';' {
            i += 1;
            while i < b.len() && matches!(b[i], b' ' | b'\t') {
                i += 1;
            }
        } else {
            f.missing_semicolon = true;
        }
        if i >= b.len() {
            break;
        }
        let key_start = i;
        while i < b.len() && b[i] != b'=' && b[i] != b';' {
            i += 1;
        }
        let key = crate::decode::trim(&b[key_start..i], true, true).to_ascii_lowercase();
        if b.get(i) != Some(&b'=') {
            f.invalid_part = true;
            continue;
        }
        i += 1;
        while i < b.len() && matches!(b[i], b' ' | b'\t') {
            i += 1;
        }
        let value = if b.get(i) == Some(&b'"') {
            i += 1;
            let mut out = Vec::new();
            loop {
                match b.get(i) {
                    None => {
                        f.invalid_quoting = true;
                        break;
                    }
                    Some(b'\\') if matches!(b.get(i + 1), Some(b'"' | b'\\')) => {
                        out.push(b[i + 1]);
                        i += 2;
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        out.push(c);
                        i += 1;
                    }
                }
            }
            out
        } else {
            let start = i;
            while i < b.len() && b[i] != b';' {
                i += 1;
            }
            let raw = crate::decode::trim(&b[start..i], true, true);
            if raw.iter().any(|&c| c == b'"' || c == b'\'') {
                f.invalid_quoting = true;
            }
            raw.to_vec()
        };
        match key.as_slice() {
            b"name" => name = Some(value),
            b"filename" | b"filename*" => filename = Some(value),
            _ => f.invalid_part = true,
        }
    }
    Ok((name, filename))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::RuleSet;
    use crate::tx::{Limits, Transaction};

    fn run(ct: &str, body: &str) -> Transaction {
        let rules = Arc::new(RuleSet::from_text("SecRequestBodyAccess On\n").unwrap());
        let mut tx = Transaction::new(rules, Limits::default());
        super::parse(&mut tx, ct.as_bytes(), body.as_bytes());
        tx
    }

    fn list(tx: &Transaction, c: &crate::tx::store::Collection) -> Vec<(String, String)> {
        c.entries
            .iter()
            .map(|e| {
                (
                    String::from_utf8_lossy(tx.arena.get(e.key)).into_owned(),
                    String::from_utf8_lossy(tx.arena.get(e.value)).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn fields_files_and_headers() {
        let body = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--b\r\nContent-Disposition: form-data; name=\"fi;le\"; filename=\"x.php\"\r\nContent-Type: text/plain\r\n\r\n<?php\r\n--b--\r\n";
        let tx = run("multipart/form-data; boundary=b", body);
        assert_eq!(tx.reqbody_error, None);
        assert_eq!(list(&tx, &tx.args_post), [("a".into(), "1".into())]);
        assert_eq!(list(&tx, &tx.files), [("fi;le".into(), "x.php".into())]);
        assert_eq!(
            list(&tx, &tx.files_names),
            [("fi;le".into(), "fi;le".into())]
        );
        let headers = list(&tx, &tx.mp_headers);
        assert!(headers.contains(&("fi;le".into(), "Content-Type: text/plain".into())));
        assert!(!tx.multipart.strict_error(), "{:?}", tx.multipart);
    }

    #[test]
    fn strictness_flags_and_errors() {
        let tx = run(
            "multipart/form-data; boundary=\"b\"",
            "junk\n--b\nContent-Disposition: form-data; name=a\n\nv\n--b--\n",
        );
        assert!(tx.multipart.boundary_quoted && tx.multipart.data_before && tx.multipart.lf_line);
        let tx = run("multipart/form-data", "--b\r\n");
        assert!(tx.reqbody_error.unwrap().contains("boundary"));
        let tx = run(
            "multipart/form-data; boundary=b",
            "--b\r\nContent-Disposition: form-data; name=a\r\n\r\nv",
        );
        assert!(tx.reqbody_error.unwrap().contains("final boundary"));
    }
}
