//! Checks of a client's message before any task is made from it: an id,
//! at least one part, and parts that each hold exactly one kind of content
//! (with `raw` valid base64), every refusal an `InvalidParams` naming what.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use wharf_tasks::{A2aError, A2aErrorKind, Message, Role};

/// Most parts one message may carry.
const MAX_PARTS: usize = 256;

pub(super) fn message(m: &Message) -> Result<(), A2aError> {
    if m.message_id.trim().is_empty() {
        return Err(invalid("message.messageId must not be empty"));
    }
    if m.role == Role::Agent {
        return Err(invalid(
            "message.role must be ROLE_USER for a client's message",
        ));
    }
    if m.parts.is_empty() {
        return Err(invalid("message.parts must hold at least one part"));
    }
    if m.parts.len() > MAX_PARTS {
        return Err(invalid(&format!(
            "message.parts holds {} parts; at most {MAX_PARTS} are accepted",
            m.parts.len()
        )));
    }
    for (i, part) in m.parts.iter().enumerate() {
        let kinds = [
            part.text.is_some(),
            part.raw.is_some(),
            part.url.is_some(),
            part.data.is_some(),
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err(invalid(&format!(
                "message.parts[{i}] must hold exactly one of text, raw, url or data"
            )));
        }
        if let Some(raw) = &part.raw
            && BASE64.decode(raw).is_err()
        {
            return Err(invalid(&format!(
                "message.parts[{i}].raw is not valid base64"
            )));
        }
    }
    Ok(())
}

fn invalid(why: &str) -> A2aError {
    A2aError::new(A2aErrorKind::InvalidParams).message(format!("Invalid parameters: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wharf_tasks::Part;

    fn msg(parts: Vec<Part>) -> Message {
        Message {
            message_id: "m1".into(),
            context_id: None,
            task_id: None,
            role: Role::User,
            parts,
            metadata: None,
            extensions: vec![],
            reference_task_ids: vec![],
        }
    }

    #[test]
    fn messages_are_checked_part_by_part() {
        assert!(message(&msg(vec![Part::text("hi")])).is_ok());
        let err = message(&msg(vec![])).unwrap_err();
        assert!(err.message.contains("at least one part"), "{}", err.message);
        let both = Part {
            text: Some("a".into()),
            url: Some("http://x".into()),
            ..Part::default()
        };
        let err = message(&msg(vec![Part::text("ok"), both])).unwrap_err();
        assert!(err.message.contains("parts[1]"), "{}", err.message);
        let bad = Part {
            raw: Some("not base64!".into()),
            ..Part::default()
        };
        let err = message(&msg(vec![bad])).unwrap_err();
        assert_eq!(err.kind, A2aErrorKind::InvalidParams);
        assert!(err.message.contains("base64"));
        let mut from_agent = msg(vec![Part::text("hi")]);
        from_agent.role = Role::Agent;
        assert!(message(&from_agent).is_err());
        let mut no_id = msg(vec![Part::text("hi")]);
        no_id.message_id = " ".into();
        assert!(message(&no_id).is_err());
    }
}
