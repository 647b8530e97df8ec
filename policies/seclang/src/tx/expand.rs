//! Macro expansion: `%{tx.score}`, `%{MATCHED_VAR}`, `%{rule.id}`,
//! `%{REQUEST_HEADERS.host}` replaced by the transaction's current value
//! (the first one, for a collection); an unset variable expands to
//! nothing, as in ModSecurity.

use super::Transaction;
use super::values::Data;
use crate::model::{Macro, Part, Selector};
use crate::vars::Var;

impl Transaction {
    /// `m` with every reference replaced.
    pub(crate) fn expand(&self, m: &Macro) -> Vec<u8> {
        let mut out = Vec::new();
        self.expand_into(m, &mut out);
        out
    }

    /// `m` with every reference replaced, appended to `out`.
    pub(crate) fn expand_into(&self, m: &Macro, out: &mut Vec<u8>) {
        for p in &m.parts {
            match p {
                Part::Lit(s) => out.extend_from_slice(s.as_bytes()),
                Part::Var(var, key) => self.expand_var(*var, key.as_deref(), out),
                Part::Tx(slot) => {
                    if let Some(v) = self.tx.value_at(*slot) {
                        out.extend_from_slice(v);
                    }
                }
            }
        }
    }

    /// `m` expanded, as text.
    pub(crate) fn expand_text(&self, m: &Macro) -> String {
        match m.as_literal() {
            Some(s) => s.to_string(),
            None => String::from_utf8_lossy(&self.expand(m)).into_owned(),
        }
    }

    fn expand_var(&self, var: Var, key: Option<&str>, out: &mut Vec<u8>) {
        if let Some(view) = self.view(var, &Selector::All) {
            let hit = view.iter().find(|e| {
                key.is_none_or(|k| self.arena.get(e.key).eq_ignore_ascii_case(k.as_bytes()))
            });
            if let Some(e) = hit {
                out.extend_from_slice(self.arena.get(if view.names { e.key } else { e.value }));
            }
            return;
        }
        if !var.is_collection() {
            // A held value is appended to `out` itself.
            if let Some(Data::Arena(s, _)) = self.single(var, out) {
                out.extend_from_slice(self.arena.get(s));
            }
            return;
        }
        let key = key.unwrap_or("");
        match var {
            Var::Rule => {
                let r = self.rules.rule_at(self.current_rule);
                match key {
                    "id" => out.extend_from_slice(r.id.to_string().as_bytes()),
                    "phase" => out.extend_from_slice(r.phase.to_string().as_bytes()),
                    "severity" => {
                        if let Some(s) = r.severity {
                            out.extend_from_slice(s.to_string().as_bytes());
                        }
                    }
                    "msg" => {
                        if let Some(m) = r.msg.as_ref().and_then(Macro::as_literal) {
                            out.extend_from_slice(m.as_bytes());
                        }
                    }
                    "ver" => {
                        if let Some(v) = &r.ver {
                            out.extend_from_slice(v.as_bytes());
                        }
                    }
                    _ => {}
                }
            }
            Var::MatchedVars => {
                if let Some((_, v)) = self.matched_vars.last() {
                    out.extend_from_slice(v);
                }
            }
            Var::MatchedVarsNames => {
                if let Some((k, _)) = self.matched_vars.last() {
                    out.extend_from_slice(k.as_bytes());
                }
            }
            Var::Env => {
                if let Some(v) = self.env.get(key.as_bytes()) {
                    out.extend_from_slice(v);
                }
            }
            _ => {
                if let Some(v) = self.vars_of(var).and_then(|c| c.get(key.as_bytes())) {
                    out.extend_from_slice(v);
                }
            }
        }
    }
}
