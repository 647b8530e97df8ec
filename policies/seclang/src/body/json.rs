//! JSON bodies into `ARGS_POST`: `{"a":{"b":1},"c":[x,y]}` becomes
//! `json.a.b=1`, `json.c.0=x`, `json.c.1=y` and `json.c=2` (an array's
//! length), as Coraza names them; strings unescaped, other scalars as
//! written, `null` empty. A hand-written parser so nesting is bounded
//! before it is followed (no recursion past the depth limit).

use crate::tx::{Limit, Transaction};

pub fn parse(tx: &mut Transaction, body: &[u8]) {
    let depth = tx.limits.depth.min(tx.rules.config().json_depth_limit);
    let mut p = Parser {
        b: body,
        i: 0,
        out: Vec::new(),
        depth,
    };
    let mut key = b"json".to_vec();
    let result = p.value(&mut key, 0).and_then(|()| {
        p.ws();
        if p.i < p.b.len() {
            Err(Error::Syntax("text after the JSON value"))
        } else {
            Ok(())
        }
    });
    for (k, v) in std::mem::take(&mut p.out) {
        if !tx.add_argument(&k, &v, true) {
            return;
        }
    }
    match result {
        Ok(()) => {}
        Err(Error::TooDeep) => {
            tx.reqbody_error = Some(format!("JSON parsing error: nesting deeper than {depth}"));
            tx.limit_reached(Limit::Depth, 2);
        }
        Err(Error::Syntax(why)) => {
            tx.reqbody_error = Some(format!("JSON parsing error: {why} at byte {}", p.i))
        }
    }
}

enum Error {
    Syntax(&'static str),
    TooDeep,
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    out: Vec<(Vec<u8>, Vec<u8>)>,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn value(&mut self, key: &mut Vec<u8>, level: usize) -> Result<(), Error> {
        self.ws();
        match self.b.get(self.i) {
            Some(b'{') | Some(b'[') if level >= self.depth => Err(Error::TooDeep),
            Some(b'{') => self.object(key, level + 1),
            Some(b'[') => self.array(key, level + 1),
            Some(b'"') => {
                let s = self.string()?;
                self.out.push((key.clone(), s));
                Ok(())
            }
            Some(_) => {
                let start = self.i;
                while self.i < self.b.len()
                    && !matches!(
                        self.b[self.i],
                        b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                {
                    self.i += 1;
                }
                let raw = &self.b[start..self.i];
                if raw.is_empty() {
                    return Err(Error::Syntax("a value is missing"));
                }
                let value = if raw == b"null" {
                    Vec::new()
                } else {
                    raw.to_vec()
                };
                if !(raw == b"true" || raw == b"false" || raw == b"null" || is_number(raw)) {
                    return Err(Error::Syntax("not a JSON value"));
                }
                self.out.push((key.clone(), value));
                Ok(())
            }
            None => Err(Error::Syntax("the body ends early")),
        }
    }

    fn object(&mut self, key: &mut Vec<u8>, level: usize) -> Result<(), Error> {
        self.i += 1;
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return Err(Error::Syntax("an object key is not a string"));
            }
            let name = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(Error::Syntax("`:` expected"));
            }
            self.i += 1;
            let len = key.len();
            key.push(b'.');
            key.extend_from_slice(&name);
            self.value(key, level)?;
            key.truncate(len);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(Error::Syntax("`,` or `}` expected")),
            }
        }
    }

    fn array(&mut self, key: &mut Vec<u8>, level: usize) -> Result<(), Error> {
        self.i += 1;
        self.ws();
        let mut n = 0usize;
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            let len = key.len();
            key.push(b'.');
            key.extend_from_slice(n.to_string().as_bytes());
            self.value(key, level)?;
            key.truncate(len);
            n += 1;
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    self.out.push((key.clone(), n.to_string().into_bytes()));
                    return Ok(());
                }
                _ => return Err(Error::Syntax("`,` or `]` expected")),
            }
        }
    }

    fn string(&mut self) -> Result<Vec<u8>, Error> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.b.get(self.i) else {
                return Err(Error::Syntax("a string is not closed"));
            };
            self.i += 1;
            match c {
                b'"' => return Ok(out),
                b'\\' => {
                    let Some(&e) = self.b.get(self.i) else {
                        return Err(Error::Syntax("a string is not closed"));
                    };
                    self.i += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let hex = self
                                .b
                                .get(self.i..self.i + 4)
                                .ok_or(Error::Syntax("bad \\u escape"))?;
                            let code = std::str::from_utf8(hex)
                                .ok()
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .ok_or(Error::Syntax("bad \\u escape"))?;
                            self.i += 4;
                            let ch = char::from_u32(code).unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(Error::Syntax("bad escape")),
                    }
                }
                _ => out.push(c),
            }
        }
    }
}

fn is_number(raw: &[u8]) -> bool {
    let s = raw.strip_prefix(b"-").unwrap_or(raw);
    !s.is_empty()
        && s[0].is_ascii_digit()
        && s.iter()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::RuleSet;
    use crate::tx::{Limits, Transaction};

    fn args(body: &str, limits: Limits) -> (Vec<(String, String)>, Option<String>, bool) {
        let rules = Arc::new(RuleSet::from_text("SecRequestBodyAccess On\n").unwrap());
        let mut tx = Transaction::new(rules, limits);
        super::parse(&mut tx, body.as_bytes());
        let got = tx
            .args_post
            .entries
            .iter()
            .map(|e| {
                (
                    String::from_utf8_lossy(tx.arena.get(e.key)).into_owned(),
                    String::from_utf8_lossy(tx.arena.get(e.value)).into_owned(),
                )
            })
            .collect();
        (got, tx.reqbody_error.clone(), tx.intervention.is_some())
    }

    #[test]
    fn keys_follow_the_path() {
        let (got, err, _) = args(
            r#"{"a":{"b":1,"s":"x\"y\u0041"},"c":[true,null],"d":[]}"#,
            Limits::default(),
        );
        assert_eq!(err, None);
        let want = [
            ("json.a.b", "1"),
            ("json.a.s", "x\"yA"),
            ("json.c.0", "true"),
            ("json.c.1", ""),
            ("json.c", "2"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn bad_and_deep_bodies() {
        let (_, err, blocked) = args(r#"{"a":"#, Limits::default());
        assert!(err.unwrap().contains("JSON parsing error"));
        assert!(!blocked);
        let deep = "[".repeat(100_000);
        let (_, err, blocked) = args(&deep, Limits::default());
        assert!(err.unwrap().contains("nesting"));
        assert!(blocked);
    }
}
