//! Numbering the `TX` variables the rules name in their text: a `TX:key`
//! target, a `setvar:tx.key` whose key is a text, a `%{tx.key}`
//! reference. A transaction gives each its own slot, by that number, so
//! a rule reads and writes them without looking a name up.

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::{Macro, Part, Selector};
use crate::operator::{NumParam, OpKind, Param};
use crate::ruleset::Rule;
use crate::vars::Var;

/// The names numbered so far.
#[derive(Default)]
pub(super) struct TxNames {
    numbers: HashMap<Box<[u8]>, u32>,
    names: Vec<Box<[u8]>>,
}

impl TxNames {
    /// `key`'s number (names are compared without case).
    pub(super) fn number(&mut self, key: &str) -> u32 {
        let name = key.to_ascii_lowercase().into_bytes().into_boxed_slice();
        let next = self.names.len() as u32;
        *self.numbers.entry(name.clone()).or_insert_with(|| {
            self.names.push(name);
            next
        })
    }

    /// The names by number.
    pub(super) fn into_names(self) -> Arc<[Box<[u8]>]> {
        self.names.into()
    }

    /// Numbers the `TX` variables rule `r` names in its `setvar` keys
    /// and its macros, and writes the numbers into the rule.
    pub(super) fn number_rule(&mut self, r: &mut Rule) {
        for t in &mut r.targets {
            if let (Var::Tx, Selector::Key(key)) = (t.var, &t.selector) {
                t.slot = Some(self.number(key));
            }
        }
        for sv in &mut r.setvars {
            if sv.collection == Var::Tx
                && let Some(key) = sv.key.as_literal()
            {
                sv.slot = Some(self.number(key));
            }
            self.number_macro(&mut sv.key);
            match &mut sv.op {
                crate::model::SetOp::Set(m)
                | crate::model::SetOp::Add(m)
                | crate::model::SetOp::Sub(m) => self.number_macro(m),
                crate::model::SetOp::Delete => {}
            }
        }
        match &mut r.op.kind {
            OpKind::RxMacro(m)
            | OpKind::Str(_, Param::Macro(m))
            | OpKind::Num(_, NumParam::Macro(m)) => self.number_macro(m),
            _ => {}
        }
        let texts = [&mut r.msg, &mut r.logdata, &mut r.redirect];
        for m in texts.into_iter().flatten() {
            self.number_macro(m);
        }
        for (_, m) in &mut r.setenvs {
            self.number_macro(m);
        }
        for (_, m) in &mut r.initcols {
            self.number_macro(m);
        }
    }

    /// `%{tx.key}` in `m` read by number.
    fn number_macro(&mut self, m: &mut Macro) {
        for p in &mut m.parts {
            if let Part::Var(Var::Tx, Some(key)) = p {
                *p = Part::Tx(self.number(key));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_numbered_once_without_case() {
        let mut n = TxNames::default();
        assert_eq!(n.number("Score"), 0);
        assert_eq!(n.number("other"), 1);
        assert_eq!(n.number("SCORE"), 0);
        let names = n.into_names();
        assert_eq!(
            &*names,
            &[b"score".to_vec().into(), b"other".to_vec().into()]
        );
    }
}
