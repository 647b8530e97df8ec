//! Bounds on what a client's A2A request may make the host build, checked
//! on its bytes before anything is built from them: a body that would
//! decode into more than a small multiple of its size (a message of a
//! million empty parts, arrays nested a thousand deep) is refused after
//! one pass over it that allocates nothing. Every binding checks its body
//! here (the gRPC binding counts its wire format the same way) before any
//! `serde_json::Value` or typed message exists, so no cost proportional
//! to what the body could become is paid before the request filters.

/// Most parts one message may carry (the `parts` of a message or an
/// artifact).
pub const MAX_PARTS: usize = 256;

/// Deepest nesting of arrays and objects (or of messages, on the wire).
pub const MAX_DEPTH: usize = 32;

/// Values any body may hold whatever its size.
pub const BASE_VALUES: usize = 8192;

/// Past [`BASE_VALUES`], one value may come per this many bytes of body:
/// a decoded value costs about 30 to 100 bytes, so what is built stays
/// within a few times the bytes received.
pub const BYTES_PER_VALUE: usize = 16;

/// Why a body was refused before it was decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundError {
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("nested more than {MAX_DEPTH} levels deep")]
    TooDeep,
    /// A `parts` list longer than [`MAX_PARTS`].
    #[error("a message with more than {MAX_PARTS} parts")]
    TooManyParts,
    /// More values than its size allows.
    #[error(
        "over the bound of {limit} values for its {bytes} bytes ({BASE_VALUES}, and one per {BYTES_PER_VALUE} bytes past them)"
    )]
    TooManyValues {
        /// The most it may hold.
        limit: usize,
        /// Its size.
        bytes: usize,
    },
    /// Not well-formed (the decoder that follows says where).
    #[error("not well-formed")]
    Malformed,
}

/// The most values a body of `bytes` bytes may hold.
pub fn max_values(bytes: usize) -> usize {
    BASE_VALUES + bytes / BYTES_PER_VALUE
}

/// Counts, for one body, what decoding it would build.
#[derive(Debug)]
pub struct Budget {
    values: usize,
    limit: usize,
    bytes: usize,
}

impl Budget {
    /// The budget of a body of `bytes` bytes.
    pub fn of(bytes: usize) -> Budget {
        Budget {
            values: 0,
            limit: max_values(bytes),
            bytes,
        }
    }

    /// One more value; refused past the limit.
    pub fn value(&mut self) -> Result<(), BoundError> {
        self.values += 1;
        if self.values > self.limit {
            return Err(BoundError::TooManyValues {
                limit: self.limit,
                bytes: self.bytes,
            });
        }
        Ok(())
    }
}

/// One open array or object while scanning.
#[derive(Clone, Copy)]
struct Open {
    /// An array (else an object).
    array: bool,
    /// The array is some object's `parts`.
    parts: bool,
    /// Elements seen in it.
    len: usize,
}

/// Checks a JSON body against the bounds without building anything from
/// it: depth, parts, and values for its size. A body that is not JSON may
/// pass or fail as [`BoundError::Malformed`]; the JSON decoder that
/// follows reports it either way.
pub fn check_json(body: &[u8]) -> Result<(), BoundError> {
    let mut budget = Budget::of(body.len());
    let mut stack: Vec<Open> = Vec::with_capacity(MAX_DEPTH);
    // The last object key read, while its value is not yet open.
    let mut key_is_parts = false;
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' | b',' | b':' => {
                i += 1;
                continue;
            }
            b'"' => {
                let end = string_end(body, i + 1)?;
                let in_object = stack.last().is_some_and(|o| !o.array);
                let is_key = in_object && next_significant(body, end) == Some(b':');
                if is_key {
                    key_is_parts = &body[i + 1..end - 1] == b"parts";
                    i = end;
                    continue;
                }
                element(&mut stack, &mut budget)?;
                key_is_parts = false;
                i = end;
            }
            b'[' | b'{' => {
                element(&mut stack, &mut budget)?;
                if stack.len() >= MAX_DEPTH {
                    return Err(BoundError::TooDeep);
                }
                stack.push(Open {
                    array: b == b'[',
                    parts: b == b'[' && key_is_parts,
                    len: 0,
                });
                key_is_parts = false;
                i += 1;
            }
            b']' | b'}' => {
                stack.pop().ok_or(BoundError::Malformed)?;
                i += 1;
            }
            _ => {
                // A number, `true`, `false` or `null`: to the next delimiter.
                element(&mut stack, &mut budget)?;
                key_is_parts = false;
                while i < body.len() && !b",]}: \t\n\r\"".contains(&body[i]) {
                    i += 1;
                }
                if i < body.len() && body[i] == b'"' {
                    return Err(BoundError::Malformed);
                }
            }
        }
    }
    Ok(())
}

/// A value begins inside the innermost open container (or at the top).
fn element(stack: &mut [Open], budget: &mut Budget) -> Result<(), BoundError> {
    budget.value()?;
    if let Some(open) = stack.last_mut() {
        open.len += 1;
        if open.parts && open.len > MAX_PARTS {
            return Err(BoundError::TooManyParts);
        }
    }
    Ok(())
}

/// The index just past the closing quote of a string whose body starts at
/// `from`.
fn string_end(body: &[u8], mut from: usize) -> Result<usize, BoundError> {
    loop {
        let at = memchr::memchr2(b'"', b'\\', &body[from..]).ok_or(BoundError::Malformed)?;
        from += at;
        if body[from] == b'\\' {
            from += 2;
            if from > body.len() {
                return Err(BoundError::Malformed);
            }
            continue;
        }
        return Ok(from + 1);
    }
}

/// The next byte past white space from `from`.
fn next_significant(body: &[u8], from: usize) -> Option<u8> {
    body[from..]
        .iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(n: usize, part: &str) -> String {
        let list = vec![part; n].join(",");
        format!(r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{list}]}}}}"#)
    }

    #[test]
    fn a_message_within_the_bounds_passes() {
        assert_eq!(check_json(parts(256, r#"{"text":"a"}"#).as_bytes()), Ok(()));
        let nested = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(check_json(nested.as_bytes()), Ok(()));
        // Strings with quotes, escapes and brackets inside are one value.
        let tricky = r#"{"parts":[{"text":"a \"parts\": [ {} ] \\"}],"k":"parts"}"#;
        assert_eq!(check_json(tricky.as_bytes()), Ok(()));
        // A `parts` key elsewhere than a message still counts its list;
        // a value named "parts" does not open one.
        assert_eq!(check_json(br#"{"x":"parts","y":[1,2,3]}"#), Ok(()));
    }

    #[test]
    fn too_many_parts_too_deep_or_too_many_values_are_refused_unbuilt() {
        assert_eq!(
            check_json(parts(257, "{}").as_bytes()),
            Err(BoundError::TooManyParts)
        );
        // The issue's body: 0.94 MiB of empty parts.
        let flood = parts(320_000, "{}");
        assert_eq!(check_json(flood.as_bytes()), Err(BoundError::TooManyParts));
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(check_json(deep.as_bytes()), Err(BoundError::TooDeep));
        // A megabyte of empty objects in data: more values than its size allows.
        let data = format!(r#"{{"data":[{}]}}"#, vec!["{}"; 350_000].join(","));
        assert!(matches!(
            check_json(data.as_bytes()),
            Err(BoundError::TooManyValues { .. })
        ));
        // The same count spread over long strings is fine.
        let long = format!(
            r#"{{"data":[{}]}}"#,
            vec![r#""0123456789abcdef""#; 20_000].join(",")
        );
        assert_eq!(check_json(long.as_bytes()), Ok(()));
    }

    #[test]
    fn broken_json_does_not_pass_as_bounded_unless_harmless() {
        assert_eq!(
            check_json(br#"{"a":"unterminated"#),
            Err(BoundError::Malformed)
        );
        assert_eq!(check_json(b"]]]"), Err(BoundError::Malformed));
        assert_eq!(check_json(br#"{"a":1"b"}"#), Err(BoundError::Malformed));
    }
}
