//! The decoding bounds of `wharf_tasks::bounds` on a gRPC request's wire
//! bytes, before prost decodes them: the message's fields are walked along
//! the proto's shape (a `SendMessageRequest`'s message, its parts, every
//! `google.protobuf.Struct`, `Value` and `ListValue` in them) without
//! building anything, and a request that would decode into more than its
//! size allows (too many parts, fields or levels) is refused as the JSON
//! bindings refuse theirs.

use wharf_tasks::bounds::{BoundError, Budget, MAX_DEPTH, MAX_PARTS};

use super::Rpc;

/// The messages whose fields the walk follows; every other field is one
/// value, skipped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    Leaf,
    SendMessageRequest,
    Message,
    Part,
    Configuration,
    Struct,
    StructEntry,
    Value,
    ListValue,
}

impl Shape {
    /// The shape of field `number` of a message of this shape.
    fn field(self, number: u64) -> Shape {
        match (self, number) {
            (Shape::SendMessageRequest, 2) => Shape::Message,
            (Shape::SendMessageRequest, 3) => Shape::Configuration,
            (Shape::SendMessageRequest, 4) => Shape::Struct,
            (Shape::Message, 5) => Shape::Part,
            (Shape::Message, 6) => Shape::Struct,
            (Shape::Part, 4) => Shape::Value,
            (Shape::Part, 5) => Shape::Struct,
            (Shape::Struct, 1) => Shape::StructEntry,
            (Shape::StructEntry, 2) => Shape::Value,
            (Shape::Value, 5) => Shape::Struct,
            (Shape::Value, 6) => Shape::ListValue,
            (Shape::ListValue, 1) => Shape::Value,
            _ => Shape::Leaf,
        }
    }
}

/// Checks a request message of `rpc` against the bounds.
pub(super) fn check(rpc: Rpc, message: &[u8]) -> Result<(), BoundError> {
    let shape = match rpc {
        Rpc::SendMessage | Rpc::SendStreamingMessage => Shape::SendMessageRequest,
        _ => Shape::Leaf,
    };
    let mut budget = Budget::of(message.len());
    walk(message, shape, 0, &mut budget)
}

fn walk(
    mut bytes: &[u8],
    shape: Shape,
    depth: usize,
    budget: &mut Budget,
) -> Result<(), BoundError> {
    if depth > MAX_DEPTH {
        return Err(BoundError::TooDeep);
    }
    let mut parts = 0;
    while !bytes.is_empty() {
        let tag = varint(&mut bytes)?;
        let (number, wire) = (tag >> 3, tag & 7);
        budget.value()?;
        match wire {
            0 => {
                varint(&mut bytes)?;
            }
            1 => bytes = bytes.get(8..).ok_or(BoundError::Malformed)?,
            5 => bytes = bytes.get(4..).ok_or(BoundError::Malformed)?,
            2 => {
                let len =
                    usize::try_from(varint(&mut bytes)?).map_err(|_| BoundError::Malformed)?;
                let (inner, rest) = bytes.split_at_checked(len).ok_or(BoundError::Malformed)?;
                bytes = rest;
                let child = if shape == Shape::Leaf {
                    Shape::Leaf
                } else {
                    shape.field(number)
                };
                if shape == Shape::Message && number == 5 {
                    parts += 1;
                    if parts > MAX_PARTS {
                        return Err(BoundError::TooManyParts);
                    }
                }
                if child != Shape::Leaf {
                    walk(inner, child, depth + 1, budget)?;
                }
            }
            _ => return Err(BoundError::Malformed),
        }
    }
    Ok(())
}

/// Reads one varint off the front of `bytes`.
fn varint(bytes: &mut &[u8]) -> Result<u64, BoundError> {
    let mut value = 0u64;
    for (i, b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Ok(value);
        }
    }
    Err(BoundError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;
    use wharf_a2a_proto::v1;

    fn request(parts: usize, part: v1::Part) -> Vec<u8> {
        v1::SendMessageRequest {
            message: Some(v1::Message {
                message_id: "m".into(),
                parts: vec![part; parts],
                ..Default::default()
            }),
            ..Default::default()
        }
        .encode_to_vec()
    }

    fn text(t: &str) -> v1::Part {
        v1::Part {
            content: Some(v1::part::Content::Text(t.into())),
            ..Default::default()
        }
    }

    #[test]
    fn a_request_within_the_bounds_passes_and_floods_are_refused_undecoded() {
        assert_eq!(check(Rpc::SendMessage, &request(256, text("a"))), Ok(()));
        assert_eq!(
            check(Rpc::SendMessage, &request(257, text("a"))),
            Err(BoundError::TooManyParts)
        );
        // The call: 0.86 MiB of empty parts.
        let flood = request(450_000, v1::Part::default());
        assert!(flood.len() > 800_000);
        assert_eq!(
            check(Rpc::SendMessage, &flood),
            Err(BoundError::TooManyParts)
        );
        // Other methods: their fields counted, never decoded here.
        let get = v1::GetTaskRequest {
            id: "t".into(),
            ..Default::default()
        }
        .encode_to_vec();
        assert_eq!(check(Rpc::GetTask, &get), Ok(()));
        assert_eq!(
            check(Rpc::GetTask, &[0x0a, 0x05, b'a']),
            Err(BoundError::Malformed)
        );
    }

    #[test]
    fn values_nested_in_a_part_count_against_the_size() {
        use pbjson_types::{ListValue, Value, value::Kind};
        let number = Value {
            kind: Some(Kind::NumberValue(1.0)),
        };
        // A data part holding a list of 200,000 numbers in about 2 MB:
        // more values than one per 16 bytes.
        let list = Value {
            kind: Some(Kind::ListValue(ListValue {
                values: vec![number; 200_000],
            })),
        };
        let part = v1::Part {
            content: Some(v1::part::Content::Data(list)),
            ..Default::default()
        };
        assert!(matches!(
            check(Rpc::SendMessage, &request(1, part)),
            Err(BoundError::TooManyValues { .. })
        ));
        // Lists nested past the depth limit.
        let mut deep = Value {
            kind: Some(Kind::NullValue(0)),
        };
        for _ in 0..40 {
            deep = Value {
                kind: Some(Kind::ListValue(ListValue { values: vec![deep] })),
            };
        }
        let part = v1::Part {
            content: Some(v1::part::Content::Data(deep)),
            ..Default::default()
        };
        assert_eq!(
            check(Rpc::SendMessage, &request(1, part)),
            Err(BoundError::TooDeep)
        );
    }
}
