//! XML bodies into `XML:/*` (the text of every element, trimmed, CDATA
//! included) and `XML://@*` (every attribute value). No entity is
//! resolved beyond the five predefined ones and character references: a
//! DOCTYPE's entities and external references are never fetched or
//! expanded.

use quick_xml::events::Event;

use crate::tx::{Limit, Transaction};

pub fn parse(tx: &mut Transaction, body: &[u8]) {
    let max_depth = tx.limits.depth;
    let mut reader = quick_xml::Reader::from_reader(body);
    reader.config_mut().trim_text(true);
    let mut depth = 0usize;
    let mut texts: Vec<Vec<u8>> = Vec::new();
    let mut attrs: Vec<Vec<u8>> = Vec::new();
    let error = loop {
        let event = reader.read_event();
        let (element, opens) = match &event {
            Ok(Event::Start(e)) => (Some(e), true),
            Ok(Event::Empty(e)) => (Some(e), false),
            _ => (None, false),
        };
        if let Some(e) = element {
            for a in e.attributes().flatten() {
                let v = a
                    .unescape_value()
                    .map(|c| c.into_owned().into_bytes())
                    .unwrap_or_else(|_| a.value.into_owned());
                attrs.push(v);
            }
            if depth + 1 > max_depth {
                break Some(("nesting deeper than the limit".to_string(), true));
            }
            if opens {
                depth += 1;
            }
            continue;
        }
        match event {
            Ok(Event::End(_)) => depth = depth.saturating_sub(1),
            Ok(Event::Text(t)) => {
                let text = t
                    .unescape()
                    .map(|c| c.into_owned().into_bytes())
                    .unwrap_or_else(|_| t.into_inner().into_owned());
                if !text.is_empty() {
                    texts.push(text);
                }
            }
            Ok(Event::CData(c)) => {
                let text = c.into_inner().into_owned();
                if !text.is_empty() {
                    texts.push(text);
                }
            }
            Ok(Event::Eof) => break None,
            Ok(_) => {}
            Err(e) => break Some((e.to_string(), false)),
        }
    };
    for t in texts {
        tx.xml_text.add(&mut tx.arena, b"", &t);
    }
    for a in attrs {
        tx.xml_attrs.add(&mut tx.arena, b"", &a);
    }
    if let Some((why, too_deep)) = error {
        tx.reqbody_error = Some(format!("XML parsing error: {why}"));
        if too_deep {
            tx.limit_reached(Limit::Depth, 2);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::RuleSet;
    use crate::tx::{Limits, Transaction};

    fn parse(body: &str) -> (Vec<String>, Vec<String>, Option<String>) {
        let rules = Arc::new(RuleSet::from_text("SecRequestBodyAccess On\n").unwrap());
        let mut tx = Transaction::new(rules, Limits::default());
        super::parse(&mut tx, body.as_bytes());
        let get = |c: &crate::tx::store::Collection| -> Vec<String> {
            c.entries
                .iter()
                .map(|e| String::from_utf8_lossy(tx.arena.get(e.value)).into_owned())
                .collect()
        };
        (
            get(&tx.xml_text),
            get(&tx.xml_attrs),
            tx.reqbody_error.clone(),
        )
    }

    #[test]
    fn text_and_attributes() {
        let (t, a, e) =
            parse(r#"<a x="1&amp;2"><b> hi &lt;there </b><c y='z'/><![CDATA[<raw>]]></a>"#);
        assert_eq!(e, None);
        assert_eq!(t, ["hi <there", "<raw>"]);
        assert_eq!(a, ["1&2", "z"]);
    }

    #[test]
    fn entities_are_not_expanded_and_bad_xml_is_an_error() {
        let (t, _, _) =
            parse(r#"<!DOCTYPE a [<!ENTITY e SYSTEM "file:///etc/passwd">]><a>&e;</a>"#);
        assert!(t.iter().all(|s| !s.contains("root:")));
        let (_, _, e) = parse("<a><b></a>");
        assert!(e.unwrap().starts_with("XML parsing error"));
    }
}
