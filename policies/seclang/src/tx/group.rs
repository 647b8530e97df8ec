//! The per-phase work rules share: a collection's values through a
//! transformation chain (a *column*, one transformed value per entry,
//! built from the column of the chain's parent), the literal prefilter's
//! verdict on each, and the *group* of a column: the entries some rule
//! can match, with the union of their candidate rules, so that a rule no
//! entry can match skips the whole collection at once.
//!
//! Columns and groups are dense runs in a few buffers kept for the whole
//! transaction: a chain step reads its parent's result by position
//! instead of through a cache keyed by value, a phase allocates nothing
//! once the buffers have grown, and a value a chain leaves unchanged
//! reuses the verdict on the raw value.
//!
//! A form of thousands of fields costs per value, not per rule and value:
//! equal verdicts share one index, a group keeps its values in runs by
//! verdict (so a rule tests each distinct verdict once), a step that
//! changes no value of a column leaves its chain on the parent's column
//! (and group), and chains reaching one column through one step share
//! what it makes.

use rustc_hash::FxHashMap;

use super::Transaction;
use super::store::Str;
use crate::model::Selector;
use crate::ruleset::{ChainId, ColumnDef, RuleSet};
use crate::transform::{Mask, Transform, byte_mask, untouched};
use crate::vars::Var;

/// A value of a collection that holds one of the prefilter's literals
/// after a chain's transformations.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hot {
    pub index: u32,
    pub tv: Str,
    pub bits: u32,
}

/// Where a collection's raw values are: its column of the empty chain,
/// and its byte classes and raw verdicts (at `at` in `masks` and `raw`);
/// with the byte classes of all its values together.
#[derive(Debug, Clone, Copy)]
struct Base {
    column: u32,
    at: u32,
    len: u32,
    union: Mask,
}

/// Hot values of one group that share one prefilter verdict: `bits`
/// (an index in the pool) and where they are in `hot`, in collection
/// order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run {
    pub bits: u32,
    pub hot: (u32, u32),
}

/// Where a group is: its runs of hot values by verdict in `runs`, the
/// union of their candidate slots at `union` in `unions`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GroupAt {
    pub runs: (u32, u32),
    pub union: u32,
    /// The group's column (its values by entry) in the cells, and its
    /// length.
    pub column: u32,
    pub len: u32,
}

/// Per phase: the columns, bases and groups computed so far.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Columns back to back; a column is as long as its collection.
    cells: Vec<Str>,
    /// The byte classes of each cell's value.
    cell_masks: Vec<Mask>,
    /// Scratch space for a transformation's output.
    out: Vec<u8>,
    /// Scratch space: a scanned value in ASCII lowercase.
    pub lower: Vec<u8>,
    masks: Vec<Mask>,
    /// The prefilter's verdict on each raw value (`UNSCANNED` until asked).
    raw: Vec<u32>,
    /// By the rule set's collection index (`ColumnDef::base`).
    bases: Vec<Option<Base>>,
    /// Where each (collection, chain) pair's column is, by its index in
    /// `RuleSet::columns` (`UNSET` until made).
    columns: Vec<u32>,
    /// Columns by the column they were made from and the step.
    derived: FxHashMap<(u32, u32, Transform), u32>,
    pub hot: Vec<Hot>,
    runs: Vec<Run>,
    /// A verdict's run in the group being made (`u32::MAX` otherwise),
    /// by verdict index.
    run_of: Vec<u32>,
    /// Scratch space: a group's hot values ordered by run.
    by_run: Vec<Hot>,
    /// Scratch space: the entries a rule tests, one bit each.
    pub marks: Vec<u64>,
    pub unions: Vec<u64>,
    /// Groups by their column's place and length (chains that leave
    /// every value as their parent did share the parent's column, so its
    /// group; an empty column starts where the next one does, hence the
    /// length).
    groups: FxHashMap<(u32, u32), GroupAt>,
    /// The same groups by (collection, chain) pair, as `columns`.
    group_of: Vec<Option<GroupAt>>,
}

impl Shared {
    /// Forgets everything (the collections may have grown), keeping the
    /// buffers' memory, and makes room for `rules`' (collection, chain)
    /// pairs, collections and `TX` keys.
    pub fn clear(&mut self, rules: &RuleSet) {
        self.empty();
        let pairs = rules.columns.len();
        self.columns.resize(pairs, UNSET);
        self.group_of.resize(pairs, None);
        self.bases.resize(rules.bases as usize, None);
    }

    /// Forgets everything, keeping the buffers' memory.
    pub fn empty(&mut self) {
        self.columns.clear();
        self.group_of.clear();
        self.bases.clear();
        self.out.clear();
        self.cells.clear();
        self.cell_masks.clear();
        self.masks.clear();
        self.raw.clear();
        self.derived.clear();
        self.hot.clear();
        self.runs.clear();
        self.by_run.clear();
        self.unions.clear();
        self.groups.clear();
    }

    /// A column's values.
    pub fn column(&self, at: u32, len: u32) -> &[Str] {
        &self.cells[at as usize..(at + len) as usize]
    }

    /// The byte classes of a column's values.
    pub fn column_masks(&self, at: u32, len: u32) -> &[Mask] {
        &self.cell_masks[at as usize..(at + len) as usize]
    }

    /// The value at entry `i` of the column at `column`.
    pub fn cell(&self, column: u32, i: u32) -> Str {
        self.cells[(column + i) as usize]
    }

    /// A group's runs of hot values, one per verdict.
    pub fn runs(&self, g: GroupAt) -> &[Run] {
        &self.runs[g.runs.0 as usize..g.runs.1 as usize]
    }

    /// A run's hot values.
    pub fn hot(&self, run: &Run) -> &[Hot] {
        &self.hot[run.hot.0 as usize..run.hot.1 as usize]
    }
}

/// Values at least this long are also cached by arena slot.
const LONG: u32 = 64;

/// Values shorter than this are screened by their byte classes before
/// their bytes are hashed for the scan cache (a form's short fields).
const TINY: u32 = 16;

const UNSCANNED: u32 = u32::MAX;
const NOTHING: u32 = u32::MAX - 1;
const UNSET: u32 = u32::MAX;

impl Transaction {
    /// The values of (collection, chain) pair `c`'s column that can
    /// match some prefiltered rule, computed once per phase.
    ///
    /// Asked for hundreds of times a phase, mostly for a group made
    /// already: that answer is inlined, the making kept apart.
    #[inline]
    pub(crate) fn group(&mut self, rules: &RuleSet, c: u32) -> GroupAt {
        match self.shared.group_of[c as usize] {
            Some(g) => g,
            None => self.make_group(rules, c),
        }
    }

    #[inline(never)]
    fn make_group(&mut self, rules: &RuleSet, c: u32) -> GroupAt {
        let (column, len) = self.column(rules, c);
        if let Some(&g) = self.shared.groups.get(&(column, len)) {
            self.shared.group_of[c as usize] = Some(g);
            return g;
        }
        let def = rules.columns[c as usize];
        let var = def.var;
        let base = self.base(def);
        let words = rules.prefilter.whole().words();
        let union = self.shared.unions.len();
        self.shared.unions.resize(union + words, 0);
        let first = self.shared.hot.len() as u32;
        let mut last = NOTHING;
        for i in 0..len {
            let tv = self.shared.cells[(column + i) as usize];
            let found = if tv == self.shared.cells[(base.column + i) as usize] {
                let at = (base.at + i) as usize;
                if self.shared.raw[at] == UNSCANNED {
                    self.shared.raw[at] = self.scan(rules, var, tv).unwrap_or(NOTHING);
                }
                self.shared.raw[at]
            } else {
                self.scan(rules, var, tv).unwrap_or(NOTHING)
            };
            if found == NOTHING {
                continue;
            }
            if found != last {
                let bits = found as usize * words;
                for w in 0..words {
                    self.shared.unions[union + w] |= self.pool[bits + w];
                }
                last = found;
            }
            self.shared.hot.push(Hot {
                index: i,
                tv,
                bits: found,
            });
        }
        // Values of a form mostly share a few verdicts (scan results
        // are deduplicated): a rule then tests each verdict once, not
        // each value. The hot values are ordered by run, in collection
        // order within each (a counting sort).
        let runs = self.shared.runs.len();
        self.shared
            .run_of
            .resize(self.pool.len() / words.max(1), u32::MAX);
        for h in &self.shared.hot[first as usize..] {
            let r = &mut self.shared.run_of[h.bits as usize];
            if *r == u32::MAX {
                *r = (self.shared.runs.len() - runs) as u32;
                self.shared.runs.push(Run {
                    bits: h.bits,
                    hot: (0, 0),
                });
            }
            self.shared.runs[runs + *r as usize].hot.1 += 1;
        }
        let mut at = first;
        for run in &mut self.shared.runs[runs..] {
            let n = run.hot.1;
            run.hot = (at, at);
            at += n;
        }
        let mut by_run = std::mem::take(&mut self.shared.by_run);
        by_run.clear();
        by_run.extend_from_slice(&self.shared.hot[first as usize..]);
        for h in &by_run {
            let r = self.shared.run_of[h.bits as usize] as usize;
            let run = &mut self.shared.runs[runs + r];
            self.shared.hot[run.hot.1 as usize] = *h;
            run.hot.1 += 1;
        }
        self.shared.by_run = by_run;
        for run in &self.shared.runs[runs..] {
            self.shared.run_of[run.bits as usize] = u32::MAX;
        }
        let g = GroupAt {
            runs: (runs as u32, self.shared.runs.len() as u32),
            union: union as u32,
            column,
            len,
        };
        self.shared.groups.insert((column, len), g);
        self.shared.group_of[c as usize] = Some(g);
        g
    }

    /// A pair's collection's raw values and byte classes, in view order.
    #[inline]
    fn base(&mut self, def: ColumnDef) -> Base {
        match self.shared.bases[def.base as usize] {
            Some(b) => b,
            None => self.make_base(def),
        }
    }

    #[inline(never)]
    fn make_base(&mut self, def: ColumnDef) -> Base {
        let sel = if def.attrs {
            &Selector::XmlAttributes
        } else {
            &Selector::All
        };
        let (mut cells, mut masks) = (
            std::mem::take(&mut self.shared.cells),
            std::mem::take(&mut self.shared.masks),
        );
        let view = self.view(def.var, sel).expect("a column's variable");
        let mut base = Base {
            column: cells.len() as u32,
            at: masks.len() as u32,
            len: (view.lists[0].len() + view.lists[1].len()) as u32,
            union: 0,
        };
        for e in view.iter() {
            let (s, m) = if view.names {
                (e.key, e.kmask)
            } else {
                (e.value, e.vmask)
            };
            cells.push(s);
            masks.push(m);
            base.union |= m;
        }
        self.shared
            .cell_masks
            .extend_from_slice(&masks[base.at as usize..]);
        self.shared.raw.resize(masks.len(), UNSCANNED);
        (self.shared.cells, self.shared.masks) = (cells, masks);
        self.shared.bases[def.base as usize] = Some(base);
        base
    }

    /// Pair `c`'s collection's values through its chain, by entry (where
    /// they start in the cells, and how many): the parent pair's column
    /// with the chain's last step applied.
    #[inline]
    pub(crate) fn column(&mut self, rules: &RuleSet, c: u32) -> (u32, u32) {
        let at = self.shared.columns[c as usize];
        match self.shared.bases[rules.columns[c as usize].base as usize] {
            // A pair's column is made after its collection's base.
            Some(base) if at != UNSET => (at, base.len),
            _ => self.make_column(rules, c),
        }
    }

    #[inline(never)]
    fn make_column(&mut self, rules: &RuleSet, c: u32) -> (u32, u32) {
        let def = rules.columns[c as usize];
        let base = self.base(def);
        let chain = &rules.chains[def.chain as usize];
        // A chain that leaves every class present as it is leaves every
        // value (a step changes a value only through its trigger bytes),
        // as it leaves an empty collection.
        let at = match def.parent {
            Some(parent) if base.len > 0 && !chain.is_identity_for(base.union) => {
                let (parent, _) = self.column(rules, parent);
                let step = *chain.steps.last().expect("a chain with a parent has steps");
                self.derived_column(parent, base.len, step)
            }
            _ => base.column,
        };
        self.shared.columns[c as usize] = at;
        (at, base.len)
    }

    /// The column of `len` values at `parent` through `step`, made once
    /// (chains that differ only in steps that changed nothing reach the
    /// same parent column).
    fn derived_column(&mut self, parent: u32, len: u32, step: Transform) -> u32 {
        if let Some(&at) = self.shared.derived.get(&(parent, len, step)) {
            return at;
        }
        let at = self.shared.cells.len() as u32;
        #[cfg(feature = "profile")]
        crate::profile::count(crate::profile::Work::Column, len as usize);
        let mut changed = false;
        // A value with none of the step's trigger bytes is left as it is
        // without a call (most values, for most steps).
        let triggers = step.triggers();
        for i in 0..len {
            let p = self.shared.cells[(parent + i) as usize];
            let pm = self.shared.cell_masks[(parent + i) as usize];
            let (tv, mask) = if untouched(triggers, pm) {
                (p, pm)
            } else {
                self.step(step, p, pm)
            };
            changed |= tv != p;
            self.shared.cells.push(tv);
            self.shared.cell_masks.push(mask);
        }
        let at = if !changed {
            // The step changed no value: the parent's column serves.
            self.shared.cells.truncate(at as usize);
            self.shared.cell_masks.truncate(at as usize);
            parent
        } else {
            at
        };
        self.shared.derived.insert((parent, len, step), at);
        at
    }

    /// Arena value `p` (byte classes `mask`) through one step, with the
    /// result's byte classes: `p` itself when the step cannot change it (a
    /// step whose trigger bytes its input lacks leaves it as it is:
    /// transform.rs tests this for every such step) or did not.
    fn step(&mut self, step: Transform, p: Str, mask: Mask) -> (Str, Mask) {
        if untouched(step.triggers(), mask) {
            return (p, mask);
        }
        let mut out = std::mem::take(&mut self.shared.out);
        let changed = step.apply_into(self.arena.get(p), &mut out);
        let result = if changed {
            (self.arena.push(&out), byte_mask(&out))
        } else {
            (p, mask)
        };
        self.shared.out = out;
        result
    }

    /// The prefilter's verdict on an arena value, cached by its bytes
    /// (equal values in other arena slots, such as a field's value
    /// repeated or a chain that left it as another did, are not scanned
    /// again) and, for long values, by arena slot (not hashed again): the
    /// index of its result (see [`Transaction::bits`]), or `None` when no
    /// rule can match it. The verdict does not depend on ASCII case, so a
    /// long value is cached by its bytes without case: its `t:lowercase`
    /// is not scanned again. (Short values are hashed exactly: most calls
    /// are cache hits on short fields, and folding would slow every one.)
    /// `var` is the variable the value was read as, whose prefilter (the
    /// whole set's, or a narrow one: [`Prefilters`]) screens it; results
    /// are kept by prefilter.
    ///
    /// [`Prefilters`]: crate::compile::prefilter::Prefilters
    pub(crate) fn scan(&mut self, rules: &RuleSet, var: Var, s: Str) -> Option<u32> {
        #[cfg(feature = "profile")]
        crate::profile::count(crate::profile::Work::Lookup, s.len as usize);
        let (k, p) = rules.prefilter.of(var as usize);
        let long = s.len >= LONG;
        if s.len < TINY {
            // A tiny value in which no literal can begin is answered by its
            // byte classes: finding that costs less than hashing it.
            let hay = self.arena.get(s);
            if p.literal_start(hay).is_none() {
                return self.by_classes(rules, k, p.bytes_of(hay));
            }
        } else if long
            && let Some(&(by, b)) = self.scanned_long.get(&s)
            && by == k
        {
            return b;
        }
        let bytes = self.arena.get(s);
        let hash = if long {
            folded_hash(bytes)
        } else {
            use std::hash::Hasher;
            let mut h = rustc_hash::FxHasher::default();
            h.write(bytes);
            h.finish()
        };
        // Each prefilter's results apart (`by` is checked on a hit).
        let hash = hash ^ u64::from(k).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        if let Some(&(other, by, b)) = self.scanned_bytes.get(&hash)
            && by == k
            && if long {
                self.arena.get(other).eq_ignore_ascii_case(bytes)
            } else {
                self.arena.get(other) == bytes
            }
        {
            if long {
                self.scanned_long.insert(s, (k, b));
            }
            return b;
        }
        #[cfg(feature = "profile")]
        crate::profile::count(crate::profile::Work::Scan, s.len as usize);
        let found = self.scan_new(rules, k, s);
        self.scanned_bytes.insert(hash, (s, k, found));
        if long {
            self.scanned_long.insert(s, (k, found));
        }
        found
    }

    /// The prefilter's verdict on a value not scanned before. In a value
    /// in which no literal can begin (most fields of a form), the verdict
    /// is that of its byte classes; in the others the automaton's slots
    /// are added to those.
    fn scan_new(&mut self, rules: &RuleSet, k: u8, s: Str) -> Option<u32> {
        let p = rules.prefilter.of_index(k);
        let words = p.words().max(1);
        let hay = self.arena.get(s);
        let set = p.bytes_of(hay);
        let Some(from) = p.literal_start(hay) else {
            return self.by_classes(rules, k, set);
        };
        let at = self.pool.len();
        self.pool.resize(at + words, 0);
        let mut found = p.open_bytes(set, &mut self.pool[at..]);
        found |= p.open_literals(
            &hay[from..],
            &mut self.pool[at..],
            &mut self.seen,
            &mut self.shared.lower,
        );
        if found {
            Some(self.verdict(words))
        } else {
            self.pool.truncate(at);
            None
        }
    }

    /// The verdict of prefilter `k` on a set of byte classes alone, found
    /// once per request.
    fn by_classes(&mut self, rules: &RuleSet, k: u8, set: u64) -> Option<u32> {
        if let Some(&v) = self.scanned_sets.get(&(k, set)) {
            return v;
        }
        let p = rules.prefilter.of_index(k);
        let words = p.words().max(1);
        let at = self.pool.len();
        self.pool.resize(at + words, 0);
        let v = if p.open_bytes(set, &mut self.pool[at..]) {
            Some(self.verdict(words))
        } else {
            self.pool.truncate(at);
            None
        };
        self.scanned_sets.insert((k, set), v);
        v
    }

    /// The index of the verdict just appended to the pool: an equal one
    /// found before if any (and the new one dropped), so that values
    /// opening the same slots share one index.
    fn verdict(&mut self, words: usize) -> u32 {
        use std::hash::Hasher;
        let at = self.pool.len() - words;
        let mut h = rustc_hash::FxHasher::default();
        for &w in &self.pool[at..] {
            h.write_u64(w);
        }
        let index = (at / words) as u32;
        let key = h.finish();
        match self.verdicts.get(&key) {
            Some(&old) if self.pool[old as usize * words..][..words] == self.pool[at..] => {
                self.pool.truncate(at);
                old
            }
            Some(_) => index,
            None => {
                self.verdicts.insert(key, index);
                index
            }
        }
    }

    /// A scan result's candidate slots.
    pub(crate) fn bits(&self, rules: &RuleSet, at: u32) -> &[u64] {
        let words = rules.prefilter.whole().words();
        &self.pool[at as usize * words..(at as usize + 1) * words]
    }

    /// An arena value through a transformation chain, cached; values the
    /// chain cannot change are returned as they are.
    pub(crate) fn transformed(
        &mut self,
        rules: &RuleSet,
        data: Str,
        mask: Mask,
        chain: ChainId,
    ) -> Str {
        let def = &rules.chains[chain as usize];
        if def.is_identity_for(mask) {
            return data;
        }
        if let Some(&s) = self.transformed.get(&(data, chain)) {
            return s;
        }
        let parent = match def.parent {
            Some(p) => self.transformed(rules, data, mask, p),
            None => data,
        };
        let step = *def.steps.last().expect("a chain with a parent has steps");
        // The byte classes of a value a step already changed are not
        // known here: all of them, so the step runs.
        let classes = if parent == data { mask } else { Mask::MAX };
        let (out, _) = self.step(step, parent, classes);
        self.transformed.insert((data, chain), out);
        out
    }
}

/// A hash of `b` that ignores ASCII case: every byte has its 0x20 bit set
/// (which lowercases letters; other bytes that differ only in that bit
/// collide, and the caller compares the bytes).
fn folded_hash(b: &[u8]) -> u64 {
    use std::hash::Hasher;
    const FOLD: u64 = 0x2020_2020_2020_2020;
    let mut h = rustc_hash::FxHasher::default();
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        h.write_u64(u64::from_le_bytes(w.try_into().expect("8 bytes")) | FOLD);
    }
    let mut last = [0u8; 8];
    let rest = words.remainder();
    last[..rest.len()].copy_from_slice(rest);
    h.write_u64(u64::from_le_bytes(last) | FOLD);
    h.write_usize(b.len());
    // Word-wise Fx mixing leaves values that differ in one byte (`v0001`,
    // `v0002`) close together; a final avalanche (MurmurHash3's) spreads
    // them over the cache table's buckets.
    let mut x = h.finish();
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

#[cfg(test)]
mod tests {
    use super::folded_hash;

    #[test]
    fn the_folded_hash_ignores_ascii_case_only() {
        assert_eq!(folded_hash(b"The Quick FOX"), folded_hash(b"the quick fox"));
        assert_eq!(
            folded_hash(b"SELECT * FROM users WHERE id=1"),
            folded_hash(b"select * from USERS where ID=1")
        );
        assert_ne!(folded_hash(b"abc"), folded_hash(b"abcd"));
        assert_ne!(folded_hash(b"abcdefgh"), folded_hash(b"abcdefgh\0"));
        // Bytes that differ only in 0x20 but are not letters may collide;
        // the cache compares them with `eq_ignore_ascii_case`, which tells
        // them apart.
        assert!(!b"a@b".eq_ignore_ascii_case(b"a`b"));
    }
}
