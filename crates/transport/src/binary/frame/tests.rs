use super::*;

use rmp::encode as e;

/// A request map with `fields` written by `body`.
fn map(fields: u32, body: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut buf = Vec::new();
    e::write_map_len(&mut buf, fields).unwrap();
    body(&mut buf);
    buf
}

fn kv_str(buf: &mut Vec<u8>, k: &str, v: &str) {
    e::write_str(buf, k).unwrap();
    e::write_str(buf, v).unwrap();
}

#[test]
fn a_full_request_borrows_its_body() {
    let frame = map(8, |b| {
        e::write_str(b, "id").unwrap();
        e::write_uint(b, 7).unwrap();
        kv_str(b, "agent", "echo");
        kv_str(b, "method", "PUT");
        kv_str(b, "path", "/a/b");
        kv_str(b, "query", "x=1");
        kv_str(b, "affinity", "s1");
        e::write_str(b, "headers").unwrap();
        e::write_array_len(b, 2).unwrap();
        e::write_array_len(b, 2).unwrap();
        kv_str(b, "content-type", "text/plain");
        e::write_array_len(b, 2).unwrap();
        e::write_str(b, "x-raw").unwrap();
        e::write_bin(b, &[0xff, 0x00]).unwrap();
        e::write_str(b, "body").unwrap();
        e::write_bin(b, b"hello").unwrap();
    });
    let req = decode_request(&frame).unwrap();
    assert_eq!(req.id, 7);
    assert_eq!(
        (req.target, req.method, req.path, req.query),
        (Target::Agent("echo"), "PUT", "/a/b", "x=1")
    );
    assert_eq!(req.affinity, Some("s1"));
    assert_eq!(
        req.headers,
        vec![
            ("content-type", &b"text/plain"[..]),
            ("x-raw", &[0xff, 0x00][..])
        ]
    );
    assert_eq!(req.body, b"hello");
    // The body is a slice of the frame itself: nothing was copied.
    let range = frame.as_ptr_range();
    assert!(range.contains(&req.body.as_ptr()));
}

#[test]
fn a_topic_names_what_to_publish_to() {
    let frame = map(3, |b| {
        e::write_str(b, "id").unwrap();
        e::write_uint(b, 9).unwrap();
        kv_str(b, "topic", "orders.created");
        e::write_str(b, "body").unwrap();
        e::write_bin(b, b"{}").unwrap();
    });
    let req = decode_request(&frame).unwrap();
    assert_eq!(
        (req.target, req.body),
        (Target::Topic("orders.created"), &b"{}"[..])
    );
}

#[test]
fn defaults_headers_as_a_map_and_unknown_keys() {
    let frame = map(4, |b| {
        kv_str(b, "agent", "echo");
        e::write_str(b, "future").unwrap();
        e::write_array_len(b, 2).unwrap();
        e::write_map_len(b, 1).unwrap();
        kv_str(b, "k", "v");
        e::write_f64(b, 1.5).unwrap();
        e::write_str(b, "headers").unwrap();
        e::write_map_len(b, 1).unwrap();
        kv_str(b, "x-a", "1");
        e::write_str(b, "id").unwrap();
        e::write_uint(b, u64::MAX).unwrap();
    });
    let req = decode_request(&frame).unwrap();
    assert_eq!(
        (req.id, req.method, req.path, req.body),
        (u64::MAX, "POST", "/", &b""[..])
    );
    assert_eq!(req.headers, vec![("x-a", &b"1"[..])]);
}

#[test]
fn faults_name_the_field_and_keep_the_id_when_read() {
    let cases: Vec<(Vec<u8>, Option<u64>, &str)> = vec![
        (
            vec![0x91, 0x01],
            None,
            "a request frame is a MessagePack map",
        ),
        (map(1, |b| kv_str(b, "agent", "x")), None, "has no `id`"),
        (
            map(2, |b| {
                e::write_str(b, "id").unwrap();
                e::write_uint(b, 3).unwrap();
                e::write_str(b, "agent").unwrap();
                e::write_uint(b, 1).unwrap();
            }),
            Some(3),
            "`agent`: expected a string, found an integer",
        ),
        (
            map(2, |b| {
                e::write_str(b, "id").unwrap();
                e::write_uint(b, 4).unwrap();
                kv_str(b, "path", "nope");
            }),
            Some(4),
            "names no `agent`",
        ),
        (
            map(3, |b| {
                e::write_str(b, "id").unwrap();
                e::write_uint(b, 6).unwrap();
                kv_str(b, "agent", "echo");
                kv_str(b, "topic", "orders.created");
            }),
            Some(6),
            "both an `agent` and a `topic`",
        ),
        (
            map(3, |b| {
                e::write_str(b, "id").unwrap();
                e::write_uint(b, 5).unwrap();
                kv_str(b, "agent", "a");
                kv_str(b, "path", "relative");
            }),
            Some(5),
            "must start with `/`",
        ),
        (
            map(1, |b| {
                e::write_str(b, "id").unwrap();
                e::write_sint(b, -1).unwrap();
            }),
            None,
            "expected an unsigned integer",
        ),
    ];
    for (frame, id, expected) in cases {
        let err = decode_request(&frame).unwrap_err();
        assert_eq!(err.id, id, "{expected}");
        assert!(
            err.message.contains(expected),
            "{} vs {expected}",
            err.message
        );
    }
}

#[test]
fn hostile_lengths_and_depth_are_refused_without_allocating() {
    // A bin header claiming 4 GiB with three bytes behind it.
    let frame = map(2, |b| {
        e::write_str(b, "id").unwrap();
        e::write_uint(b, 1).unwrap();
        b.extend_from_slice(&[
            0xa4, b'b', b'o', b'd', b'y', 0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3,
        ]);
    });
    let err = decode_request(&frame).unwrap_err();
    assert!(
        err.message.contains("runs past the frame"),
        "{}",
        err.message
    );
    // A map claiming 4 billion fields, and 65,535 headers.
    assert!(decode_request(&[0xdf, 0xff, 0xff, 0xff, 0xff]).is_err());
    let many = map(1, |b| {
        e::write_str(b, "headers").unwrap();
        b.extend_from_slice(&[0xdc, 0xff, 0xff]);
    });
    assert!(
        decode_request(&many)
            .unwrap_err()
            .message
            .contains("at most 256")
    );
    // Deep nesting under an unknown key.
    let deep = map(1, |b| {
        e::write_str(b, "x").unwrap();
        b.extend(std::iter::repeat_n(0x91, 10_000));
        b.push(0x01);
    });
    assert!(
        decode_request(&deep)
            .unwrap_err()
            .message
            .contains("nest deeper")
    );
    // Trailing bytes after the map.
    let mut trailing = map(2, |b| {
        e::write_str(b, "id").unwrap();
        e::write_uint(b, 1).unwrap();
        kv_str(b, "agent", "a");
    });
    trailing.push(0xc0);
    assert!(
        decode_request(&trailing)
            .unwrap_err()
            .message
            .contains("follow the request")
    );
    // Every prefix of a good frame fails cleanly.
    let good = map(3, |b| {
        e::write_str(b, "id").unwrap();
        e::write_uint(b, 9).unwrap();
        kv_str(b, "agent", "echo");
        e::write_str(b, "body").unwrap();
        e::write_bin(b, &[7; 300]).unwrap();
    });
    assert!(decode_request(&good).is_ok());
    for end in 0..good.len() {
        assert!(decode_request(&good[..end]).is_err());
    }
}

#[test]
fn answers_and_errors_are_framed_maps() {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", "text/plain".parse().unwrap());
    headers.insert("x-bin", http::HeaderValue::from_bytes(&[0xfe]).unwrap());
    let head = answer_head(42, 200, &headers, 5);
    let mut frame = head.to_vec();
    frame.extend_from_slice(b"hello");
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - PREFIX);
    let value: rmpv::Value = rmpv::decode::read_value(&mut &frame[PREFIX..]).unwrap();
    assert_eq!(value["id"], rmpv::Value::from(42));
    assert_eq!(value["status"], rmpv::Value::from(200));
    assert_eq!(value["body"], rmpv::Value::Binary(b"hello".to_vec()));
    let headers = value["headers"].as_array().unwrap();
    assert_eq!(headers[0][1], rmpv::Value::from("text/plain"));
    assert_eq!(headers[1][1], rmpv::Value::Binary(vec![0xfe]));

    let err = error_frame(None, 400, "bad_frame", "why", Some(2)).to_vec();
    let value: rmpv::Value = rmpv::decode::read_value(&mut &err[PREFIX..]).unwrap();
    assert_eq!(value["id"], rmpv::Value::Nil);
    assert_eq!(value["error"]["code"], rmpv::Value::from("bad_frame"));
    assert_eq!(value["retry_after"], rmpv::Value::from(2));
}

/// The fuzz seeds decode, and every input a fuzzer ever found (kept in
/// `fuzz/regressions/frame`) is refused or decoded without a panic.
#[test]
fn fuzz_seeds_decode_and_regressions_stay_fixed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let files = |dir: &str| -> Vec<Vec<u8>> {
        match std::fs::read_dir(root.join(dir)) {
            Ok(entries) => entries
                .map(|e| std::fs::read(e.unwrap().path()).unwrap())
                .collect(),
            Err(_) => Vec::new(),
        }
    };
    let seeds = files("seeds/frame");
    assert!(seeds.len() >= 3);
    for seed in &seeds {
        decode_request(seed).expect("a seed is a valid request");
    }
    for input in files("regressions/frame") {
        let _ = decode_request(&input);
    }
}
