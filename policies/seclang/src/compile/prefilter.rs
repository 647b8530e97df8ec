//! The literal prefilter: for every screened operator (regular
//! expressions, `@pm` phrase lists, `@contains`…) one to three sets of
//! literals (its slots, a [`Screen`]), a member of each of which any
//! matching value contains. One pass over a value yields the slots it
//! opens, so the rules that can match it; the others are skipped without
//! running their operator. Sound by construction: a rule is skipped only
//! when for one of its sets none of the literals occurs in the value
//! (compared without ASCII case; `tests/prefilter.rs` checks it on CRS).
//!
//! Single-byte literals (from character classes) are checked against the
//! value's bytes, not searched for: they occur in most text, and an
//! automaton reporting them would stop at nearly every byte. Bytes that
//! open the same slots share a class (CRS's 102 such bytes fall in 49), a
//! table gives each byte its class's bit, and a value's classes (one
//! `u64`, one lookup a byte) give the slots it opens, so a value costs one
//! row of slots per class in it, not one test per slot; a caller may keep
//! that result by the classes, for the values in which no longer literal
//! can begin. Longer literals are
//! searched with one Aho-Corasick automaton of the literals in lowercase
//! (smaller and faster than one that folds case itself: 1.5 MB against
//! 2.0 MB on CRS). The automaton is a DFA that folds case (one table
//! lookup a byte, every value stepped through it) when its table stays
//! under [`DFA_BUDGET`], as for a small rule set; a contiguous NFA
//! otherwise (CRS's DFA would take 42 MB of every instance for a few per
//! cent), through which a short value is stepped, each byte lowercased as
//! it is read, and a long one goes through the library's search loop in a
//! lowercase copy. A value reaches the automaton only from its first
//! pair of bytes that some literal begins with (a table of byte pairs):
//! no literal can begin before it, and a value with no such pair is not
//! stepped through at all.

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{Anchored, MatchKind, StartKind};

/// The most memory a DFA of the literals may take; past it the
/// automaton is a contiguous NFA.
const DFA_BUDGET: usize = 1 << 20;

/// The literals' automaton and its unanchored start state.
#[derive(Debug)]
enum Literals {
    Dfa(DFA, StateID),
    Nfa(NFA, StateID),
}

impl Literals {
    fn build(literals: &[Vec<u8>], dfa_budget: usize) -> Result<Literals, String> {
        // A DFA's size is about its states times its byte classes; its
        // states are the literals' bytes at most, so only a set small
        // enough to fit is tried.
        let bytes: usize = literals.iter().map(Vec::len).sum();
        if bytes * 4 * 64 <= dfa_budget
            && let Ok(dfa) = DFA::builder()
                .match_kind(MatchKind::Standard)
                .start_kind(StartKind::Unanchored)
                .ascii_case_insensitive(true)
                .prefilter(false)
                .build(literals)
            && dfa.memory_usage() <= dfa_budget
        {
            let start = dfa.start_state(Anchored::No).map_err(|e| e.to_string())?;
            return Ok(Literals::Dfa(dfa, start));
        }
        let nfa = NFA::builder()
            .match_kind(MatchKind::Standard)
            .build(literals)
            .map_err(|e| e.to_string())?;
        let start = nfa.start_state(Anchored::No).map_err(|e| e.to_string())?;
        Ok(Literals::Nfa(nfa, start))
    }

    fn memory(&self) -> usize {
        match self {
            Literals::Dfa(a, _) => a.memory_usage(),
            Literals::Nfa(a, _) => a.memory_usage(),
        }
    }
}

/// Values shorter than this are scanned by an NFA's transitions one at a
/// time; longer ones with its search loop.
const SHORT: usize = 64;

/// Which bytes occur in a value (after ASCII lowercasing).
pub type ByteSet = [u64; 4];

#[derive(Debug, Default)]
pub struct Prefilter {
    /// The automaton of the literals of two bytes or more.
    automaton: Option<Literals>,
    /// Literal id → the slots (rules) that need it.
    slots_of: Vec<Vec<u32>>,
    literals: Vec<Vec<u8>>,
    /// Slots with single-byte literals, and those bytes (for reports).
    byte_slots: Vec<(u32, ByteSet)>,
    /// Byte → its class: one bit, shared by the bytes that open the same
    /// slots (both cases of a letter, most digits…); 0 for a byte that
    /// opens none.
    class_of: Classes,
    /// Class (bit) → the slots its bytes open: [`Prefilter::words`] words
    /// from `bit * words`.
    class_slots: Vec<u64>,
    /// The pairs of bytes the automaton's literals begin with.
    starts: Starts,
    slots: u32,
}

/// Byte → the bit of its class (see [`byte_classes`]).
#[derive(Debug, Clone)]
struct Classes(Box<[u64; 256]>);

impl Default for Classes {
    fn default() -> Classes {
        Classes(Box::new([0; 256]))
    }
}

/// A set of byte pairs, bit `a << 8 | b`: the pairs the automaton's
/// literals begin with, in either case of each byte. No literal begins
/// in a value before its first such pair, so the automaton starts there,
/// and a value with none (`aaaa…`, `v0001`) is not stepped through it at
/// all. One lookup a byte that waits on nothing, where the automaton's
/// step waits on the step before.
#[derive(Debug, Clone)]
struct Starts(Box<[u64; 1024]>);

impl Default for Starts {
    fn default() -> Starts {
        Starts(Box::new([0; 1024]))
    }
}

impl Starts {
    fn of(literals: &[Vec<u8>]) -> Starts {
        let mut set = Starts::default();
        for lit in literals {
            let [a, b, ..] = lit[..] else { continue };
            for a in [a.to_ascii_lowercase(), a.to_ascii_uppercase()] {
                for b in [b.to_ascii_lowercase(), b.to_ascii_uppercase()] {
                    let k = usize::from(a) << 8 | usize::from(b);
                    set.0[k >> 6] |= 1 << (k & 63);
                }
            }
        }
        set
    }

    #[inline(always)]
    fn has(&self, a: u8, b: u8) -> bool {
        let k = u16::from(a) << 8 | u16::from(b);
        self.0[usize::from(k >> 6)] & (1 << (k & 63)) != 0
    }

    /// Where the first pair of `hay` in the set begins. Eight pairs are
    /// looked up before one branch.
    fn first(&self, hay: &[u8]) -> Option<usize> {
        let pairs = hay.len().saturating_sub(1);
        let mut at = 0;
        while at + 8 <= pairs {
            let w = &hay[at..at + 9];
            let mut any = false;
            for k in 0..8 {
                any |= self.has(w[k], w[k + 1]);
            }
            if any {
                break;
            }
            at += 8;
        }
        (at..pairs).find(|&i| self.has(hay[i], hay[i + 1]))
    }
}

/// Byte classes of the slots' single-byte literals: bytes that open the
/// same slots share a class, one bit of a `u64`; the slots each class
/// opens (`words` words a class). A rule set whose bytes fall in more than
/// 64 classes (CRS's fall in 49) shares the last bit among the rest, with
/// the union of their slots: such a byte then opens more slots than its
/// own, never fewer, so a rule is still skipped only when it cannot match.
fn byte_classes(byte_slots: &[(u32, ByteSet)], words: usize) -> (Classes, Vec<u64>) {
    let mut row = vec![0u64; 256 * words];
    for (slot, bytes) in byte_slots {
        for b in 0..256usize {
            if bytes[b >> 6] & (1 << (b & 63)) != 0 {
                row[b * words + *slot as usize / 64] |= 1u64 << (slot % 64);
            }
        }
    }
    let mut class_of = Classes::default();
    let mut class_slots: Vec<u64> = Vec::new();
    let mut rows: std::collections::HashMap<&[u64], usize> = Default::default();
    for b in 0..256 {
        let r = &row[b * words..(b + 1) * words];
        if r.iter().all(|&w| w == 0) {
            continue;
        }
        let next = rows.len();
        let c = (*rows.entry(r).or_insert(next)).min(63);
        if class_slots.len() < (c + 1) * words {
            class_slots.resize((c + 1) * words, 0);
        }
        for (s, w) in class_slots[c * words..].iter_mut().zip(r) {
            *s |= w;
        }
        class_of.0[b] = 1 << c;
    }
    (class_of, class_slots)
}

impl Prefilter {
    /// Builds the prefilter; `needs[slot]` is the literal set of the rule
    /// in that slot.
    pub fn build(needs: &[Vec<Vec<u8>>]) -> Result<Prefilter, String> {
        Prefilter::build_within(needs, DFA_BUDGET)
    }

    /// [`Prefilter::build`] with a DFA only within `dfa_budget` bytes.
    fn build_within(needs: &[Vec<Vec<u8>>], dfa_budget: usize) -> Result<Prefilter, String> {
        let mut ids: std::collections::HashMap<Vec<u8>, u32> = Default::default();
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut slots_of: Vec<Vec<u32>> = Vec::new();
        let mut byte_slots = Vec::new();
        for (slot, set) in needs.iter().enumerate() {
            let mut bytes = [0u64; 4];
            for lit in set {
                let lower = lit.to_ascii_lowercase();
                if let [b] = lower[..] {
                    for b in [b, b.to_ascii_uppercase()] {
                        bytes[(b >> 6) as usize] |= 1 << (b & 63);
                    }
                    continue;
                }
                let id = *ids.entry(lower.clone()).or_insert_with(|| {
                    literals.push(lower);
                    slots_of.push(Vec::new());
                    (literals.len() - 1) as u32
                });
                slots_of[id as usize].push(slot as u32);
            }
            if bytes != [0; 4] {
                byte_slots.push((slot as u32, bytes));
            }
        }
        let words = needs.len().div_ceil(64);
        let (class_of, class_slots) = byte_classes(&byte_slots, words);
        let automaton = if literals.is_empty() {
            None
        } else {
            Some(Literals::build(&literals, dfa_budget)?)
        };
        Ok(Prefilter {
            automaton,
            starts: Starts::of(&literals),
            slots_of,
            literals,
            byte_slots,
            class_of,
            class_slots,
            slots: needs.len() as u32,
        })
    }

    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Literals the automaton searches for.
    pub fn literals(&self) -> usize {
        self.literals.len()
    }

    /// Bytes the automaton takes.
    pub fn memory(&self) -> usize {
        self.automaton.as_ref().map_or(0, Literals::memory)
    }

    /// The literals of a slot, for reports.
    pub fn describe(&self, slot: u32) -> String {
        let mut out: Vec<String> = Vec::new();
        for (id, slots) in self.slots_of.iter().enumerate() {
            if slots.contains(&slot) {
                out.push(String::from_utf8_lossy(&self.literals[id]).into_owned());
            }
        }
        if let Some((_, bytes)) = self.byte_slots.iter().find(|(s, _)| *s == slot) {
            let n: u32 = bytes.iter().map(|w| w.count_ones()).sum();
            out.push(format!("{n} bytes"));
        }
        let n = out.len();
        out.truncate(8);
        format!("{n}:{out:?}")
    }

    /// Words (of 64 slots) in one scan result.
    pub fn words(&self) -> usize {
        (self.slots as usize).div_ceil(64)
    }

    /// Scans `hay`: when some rule can match it, appends its candidate
    /// slots to `out` ([`Prefilter::words`] words) and returns true; when
    /// none can, leaves `out` as it was. `seen` (one bit per literal, left
    /// cleared) and `lower` (the value in lowercase) are scratch space, so
    /// a scan allocates nothing once the buffers have grown. The same as
    /// [`Prefilter::open_bytes`] of [`Prefilter::bytes_of`], then
    /// [`Prefilter::open_literals`] from [`Prefilter::literal_start`]: a
    /// caller may keep the first part's result for values of one set of
    /// byte classes.
    pub fn scan_into(
        &self,
        hay: &[u8],
        out: &mut Vec<u64>,
        seen: &mut Vec<u64>,
        lower: &mut Vec<u8>,
    ) -> bool {
        let start = out.len();
        out.resize(start + self.words(), 0);
        let bits = &mut out[start..];
        let mut any = self.open_bytes(self.bytes_of(hay), bits);
        if let Some(from) = self.literal_start(hay) {
            any |= self.open_literals(&hay[from..], bits, seen, lower);
        }
        if !any {
            out.truncate(start);
        }
        any
    }

    /// The classes of the bytes of `hay` that open some slot (one of the
    /// slots' single-byte literals): the only part of its bytes a scan
    /// reads. One table lookup a byte, four bytes at a time with no
    /// lookup waiting on another.
    pub fn bytes_of(&self, hay: &[u8]) -> u64 {
        let class = &*self.class_of.0;
        let (mut a, mut b, mut c, mut d) = (0u64, 0u64, 0u64, 0u64);
        let mut quads = hay.chunks_exact(4);
        for q in &mut quads {
            a |= class[q[0] as usize];
            b |= class[q[1] as usize];
            c |= class[q[2] as usize];
            d |= class[q[3] as usize];
        }
        for &x in quads.remainder() {
            a |= class[x as usize];
        }
        a | b | c | d
    }

    /// Sets in `bits` the slots the byte classes `set` open; whether there
    /// was one.
    pub fn open_bytes(&self, set: u64, bits: &mut [u64]) -> bool {
        let words = bits.len();
        let mut left = set;
        while left != 0 {
            let c = left.trailing_zeros() as usize;
            left &= left - 1;
            let opens = &self.class_slots[c * words..(c + 1) * words];
            for (bit, open) in bits.iter_mut().zip(opens) {
                *bit |= open;
            }
        }
        set != 0
    }

    /// Where in `hay` the automaton's literals can begin (its first pair
    /// of bytes some literal begins with), if anywhere.
    pub fn literal_start(&self, hay: &[u8]) -> Option<usize> {
        self.automaton.as_ref()?;
        self.starts.first(hay)
    }

    /// Sets in `bits` the slots of the automaton's literals that occur in
    /// `hay` (from [`Prefilter::literal_start`] on); whether there was one.
    pub fn open_literals(
        &self,
        hay: &[u8],
        bits: &mut [u64],
        seen: &mut Vec<u64>,
        lower: &mut Vec<u8>,
    ) -> bool {
        let Some(automaton) = self.automaton.as_ref() else {
            return false;
        };
        #[cfg(feature = "profile")]
        crate::profile::count(crate::profile::Work::Stepped, hay.len());
        seen.resize(self.slots_of.len().div_ceil(64), 0);
        let found = |id: usize, seen: &mut Vec<u64>, bits: &mut [u64]| {
            let (w, b) = (id / 64, 1u64 << (id % 64));
            if seen[w] & b == 0 {
                seen[w] |= b;
                for &slot in &self.slots_of[id] {
                    bits[slot as usize / 64] |= 1u64 << (slot % 64);
                }
            }
        };
        let matched = match automaton {
            Literals::Dfa(a, s) => step::<_, false>(a, *s, hay, |id| found(id, seen, bits)),
            Literals::Nfa(a, s) if hay.len() < SHORT => {
                step::<_, true>(a, *s, hay, |id| found(id, seen, bits))
            }
            Literals::Nfa(a, _) => search(a, hay, lower, |id| found(id, seen, bits)),
        };
        if matched {
            seen.fill(0);
        }
        matched
    }

    /// The rules that can match `hay` (a scan into new buffers).
    pub fn scan(&self, hay: &[u8]) -> Option<Vec<u64>> {
        let mut out = Vec::new();
        self.scan_into(hay, &mut out, &mut Vec::new(), &mut Vec::new())
            .then_some(out)
    }
}

/// Reports every literal of `automaton` that occurs in `hay` to `found`,
/// and whether there was one, stepping through its transitions a byte at
/// a time (lowercased first when `LOWER`, for an automaton of lowercase
/// literals that does not fold case itself): with standard semantics a
/// state holds every literal that ends there, so this finds what an
/// overlapping search finds, without setting one up. A DFA's step is one
/// table lookup, so every value goes this way; an NFA's short ones do.
#[inline(always)]
fn step<A: Automaton, const LOWER: bool>(
    automaton: &A,
    start: StateID,
    hay: &[u8],
    mut found: impl FnMut(usize),
) -> bool {
    let mut matched = false;
    let mut sid = start;
    for &byte in hay {
        let byte = if LOWER {
            byte.to_ascii_lowercase()
        } else {
            byte
        };
        sid = automaton.next_state(Anchored::No, sid, byte);
        if automaton.is_special(sid) && automaton.is_match(sid) {
            matched = true;
            for k in 0..automaton.match_len(sid) {
                found(automaton.match_pattern(sid, k).as_usize());
            }
        }
    }
    matched
}

/// The same over a long value through the library's search loop, faster
/// per byte than an NFA's transitions, in a lowercase copy.
fn search<A: Automaton>(
    automaton: &A,
    hay: &[u8],
    lower: &mut Vec<u8>,
    mut found: impl FnMut(usize),
) -> bool {
    let mut matched = false;
    lower.clear();
    lower.extend(hay.iter().map(u8::to_ascii_lowercase));
    let input = aho_corasick::Input::new(&lower[..]);
    let mut state = aho_corasick::automaton::OverlappingState::start();
    loop {
        automaton
            .try_find_overlapping(&input, &mut state)
            .expect("an unanchored search of a standard automaton");
        match state.get_match() {
            Some(m) => {
                matched = true;
                found(m.pattern().as_usize());
            }
            None => return matched,
        }
    }
}

/// The most memory the narrow prefilters of a rule set may take together.
const NARROW_BUDGET: usize = 4 << 20;

/// A rule set's prefilters: one over every slot, and narrower ones for
/// collections that only a few screened rules read (`REQUEST_BODY`,
/// `REQUEST_URI`…). A narrow one holds only the literals of the rules
/// reading its collections, so its automaton can be a DFA (one lookup a
/// byte) where the whole set's must be an NFA: a 64 KiB body then goes
/// through a table of its dozen rules' literals, not CRS's 7,000. Its
/// verdicts use the same slots; a slot of a rule that does not read the
/// collection never opens, and no rule testing the collection's values
/// has one.
#[derive(Debug, Default)]
pub struct Prefilters {
    /// Index 0 holds every slot.
    all: Vec<Prefilter>,
    /// `Var as usize` → its prefilter's index in `all`.
    of_var: Vec<u8>,
}

impl Prefilters {
    /// Builds the prefilters: `needs[slot]` is a slot's literal set,
    /// `reads[var]` the slots of the rules with a target reading `var`.
    pub fn build(needs: &[Vec<Vec<u8>>], reads: &[Vec<u32>]) -> Result<Prefilters, String> {
        let all = Prefilter::build(needs)?;
        let narrowable = matches!(all.automaton, Some(Literals::Nfa(..)));
        let mut set = Prefilters {
            all: vec![all],
            of_var: vec![0; reads.len()],
        };
        if !narrowable {
            return Ok(set);
        }
        let mut built: std::collections::HashMap<Vec<u32>, u8> = Default::default();
        let mut memory = 0;
        for (var, slots) in reads.iter().enumerate() {
            let mut slots = slots.clone();
            slots.sort_unstable();
            slots.dedup();
            if slots.is_empty() || slots.len() == needs.len() {
                continue;
            }
            if let Some(&k) = built.get(&slots) {
                set.of_var[var] = k;
                continue;
            }
            let mut mine = vec![Vec::new(); needs.len()];
            for &slot in &slots {
                mine[slot as usize] = needs[slot as usize].clone();
            }
            let narrow = Prefilter::build(&mine)?;
            let k = if matches!(narrow.automaton, Some(Literals::Nfa(..)))
                || memory + narrow.memory() > NARROW_BUDGET
                || set.all.len() > u8::MAX as usize
            {
                0
            } else {
                memory += narrow.memory();
                set.all.push(narrow);
                (set.all.len() - 1) as u8
            };
            built.insert(slots, k);
            set.of_var[var] = k;
        }
        Ok(set)
    }

    /// The prefilter over every slot.
    pub fn whole(&self) -> &Prefilter {
        &self.all[0]
    }

    /// The prefilter that screens values of the collection at `var`
    /// (`Var as usize`), with its index.
    #[inline]
    pub fn of(&self, var: usize) -> (u8, &Prefilter) {
        let k = self.of_var.get(var).copied().unwrap_or(0);
        (k, &self.all[k as usize])
    }

    /// The prefilter at `k` (from [`Prefilters::of`]).
    #[inline]
    pub fn of_index(&self, k: u8) -> &Prefilter {
        &self.all[k as usize]
    }

    /// The narrow prefilters: how many, and the memory they take.
    pub fn narrow(&self) -> (usize, usize) {
        let n = self.all.len() - 1;
        (n, self.all[1..].iter().map(Prefilter::memory).sum())
    }
}

/// A rule's slots, one per required literal set (rules needing the same
/// set share its slot): a value can match the rule only when its scan
/// result has all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screen {
    slots: [u32; 3],
    n: u8,
}

impl Screen {
    /// A screen of one to three slots.
    pub fn new(slots: &[u32]) -> Screen {
        let mut s = [0; 3];
        s[..slots.len()].copy_from_slice(slots);
        Screen {
            slots: s,
            n: slots.len() as u8,
        }
    }

    pub fn slots(&self) -> &[u32] {
        &self.slots[..self.n as usize]
    }

    /// Whether a scan result (or a union of them) has every slot.
    pub fn passes(self, bits: &[u64]) -> bool {
        self.slots().iter().all(|&s| has(bits, s))
    }

    /// The word and bit of the first slot in a scan result.
    pub fn first_bit(self) -> (usize, u64) {
        (self.slots[0] as usize / 64, 1u64 << (self.slots[0] % 64))
    }

    /// Whether a scan result has every slot after the first.
    #[inline]
    pub fn passes_rest(self, bits: &[u64]) -> bool {
        self.n == 1 || self.slots()[1..].iter().all(|&s| has(bits, s))
    }
}

/// Whether `slot` is set in a scan result.
pub fn has(bits: &[u64], slot: u32) -> bool {
    bits[slot as usize / 64] & (1u64 << (slot % 64)) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_finds_the_rules_whose_literals_occur() {
        let p = Prefilter::build(&[
            vec![b"select".to_vec()],
            vec![b"<script".to_vec(), b"javascript:".to_vec()],
            vec![b"Select".to_vec()],
            vec![b"<".to_vec(), b">".to_vec()],
            vec![b"Q".to_vec()],
        ])
        .unwrap();
        assert_eq!(p.literals(), 3);
        assert!(p.scan(b"hello world").is_none());
        let bits = p.scan(b"x SELECT y").unwrap();
        assert_eq!(bits.len(), p.words());
        assert!(has(&bits, 0) && !has(&bits, 1) && has(&bits, 2) && !has(&bits, 3));
        let bits = p.scan(b"JavaScript:alert(1)").unwrap();
        assert!(!has(&bits, 0) && has(&bits, 1) && !has(&bits, 3));
        let bits = p.scan(b"a>b").unwrap();
        assert!(has(&bits, 3) && !has(&bits, 1));
        // The verdict does not depend on ASCII case (scans are cached by
        // the bytes without case).
        for (a, b) in [
            (&b"x SELECT y"[..], &b"x select y"[..]),
            (b"JAVASCRIPT:", b"javascript:"),
            (b"A>B", b"a>b"),
        ] {
            assert_eq!(p.scan(a), p.scan(b));
        }
        // A single-byte literal matches a letter in either case.
        assert!(has(&p.scan(b"q").unwrap(), 4) && has(&p.scan(b"xQ").unwrap(), 4));
        assert!(p.scan(b"z").is_none());
    }

    /// Short values (stepped through the automaton) and long ones (an
    /// NFA's search loop) open exactly the slots one of whose literals
    /// they hold, in either case, overlapping ones included, through a
    /// DFA and an NFA; bytes no literal holds (`xyz`) make runs the scan
    /// starts after, or values it skips.
    #[test]
    fn both_scans_find_every_literal_in_any_case() {
        let mut next = 0x0bad_5eed_1234_5678u64;
        let mut rand = move |n: u64| {
            next ^= next << 13;
            next ^= next >> 7;
            next ^= next << 17;
            next % n
        };
        let letters = b"abcABxyzxyzxyz";
        let needs: Vec<Vec<Vec<u8>>> = (0..90)
            .map(|_| {
                (0..1 + rand(3))
                    .map(|_| (0..2 + rand(4)).map(|_| b"abc"[rand(3) as usize]).collect())
                    .collect()
            })
            .collect();
        let dfa = Prefilter::build(&needs).unwrap();
        let nfa = Prefilter::build_within(&needs, 0).unwrap();
        assert!(matches!(dfa.automaton, Some(Literals::Dfa(..))));
        assert!(matches!(nfa.automaton, Some(Literals::Nfa(..))));
        for p in [dfa, nfa] {
            for len in [2usize, 5, 20, SHORT - 1, SHORT, SHORT + 1, 200] {
                for _ in 0..40 {
                    // Runs of one kind: literal bytes or others.
                    let mut hay = Vec::new();
                    while hay.len() < len {
                        let kind = rand(2) as usize * 5;
                        let run = 1 + rand(len as u64) as usize;
                        hay.extend((0..run).map(|_| letters[kind + rand(5) as usize]));
                    }
                    hay.truncate(len);
                    let lower = hay.to_ascii_lowercase();
                    let bits = p.scan(&hay);
                    for (slot, set) in needs.iter().enumerate() {
                        let want = set
                            .iter()
                            .any(|lit| lower.windows(lit.len()).any(|w| w == &lit[..]));
                        let got = bits.as_ref().is_some_and(|b| has(b, slot as u32));
                        assert_eq!(got, want, "slot {slot} on {hay:?}");
                    }
                }
            }
        }
    }

    /// The first pair a literal begins with is found wherever it is in a
    /// value, in either case, and only there.
    #[test]
    fn the_scan_starts_at_the_first_pair_a_literal_begins_with() {
        let starts = Starts::of(&[b"ab".to_vec(), b"q".to_vec(), b"<sc".to_vec()]);
        for len in [0usize, 1, 2, 8, 9, 10, 17, 40] {
            for at in 0..len.saturating_sub(1) {
                for pair in [b"ab", b"aB", b"Ab", b"<S"] {
                    let mut hay = vec![b'z'; len];
                    hay[at..at + 2].copy_from_slice(pair);
                    assert_eq!(starts.first(&hay), Some(at), "{hay:?}");
                }
            }
            assert_eq!(starts.first(&vec![b'q'; len]), None);
            assert_eq!(starts.first(&b"ba".repeat(len)), (len > 1).then_some(1));
            assert_eq!(starts.first(&b"bs<".repeat(len)), None);
        }
    }

    /// The byte classes open exactly the slots one of whose bytes a value
    /// holds, over several words of slots and every byte value; past 64
    /// classes a byte of the merged ones opens every slot it should, and
    /// maybe more.
    #[test]
    fn single_byte_slots_open_when_one_of_their_bytes_occurs() {
        let mut next = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            next ^= next << 13;
            next ^= next >> 7;
            next ^= next << 17;
            next
        };
        for slots in [40, 150] {
            let needs: Vec<Vec<Vec<u8>>> = (0..slots)
                .map(|_| (0..1 + rand() % 3).map(|_| vec![rand() as u8]).collect())
                .collect();
            let p = Prefilter::build(&needs).unwrap();
            let classes = p.class_of.0.iter().fold(0u64, |a, c| a | c).count_ones();
            // 40 slots of 1–3 random bytes: at most 80 bytes, nearly all
            // in a class of their own (both cases of a letter share one).
            let exact = slots == 40;
            assert!(if exact { classes < 64 } else { classes == 64 });
            for len in [0usize, 1, 2, 3, 4, 5, 7, 40, 255, 256, 300, 2000] {
                for _ in 0..50 {
                    let hay: Vec<u8> = (0..len).map(|_| rand() as u8).collect();
                    let bits = p.scan(&hay);
                    for (slot, set) in needs.iter().enumerate() {
                        let want = set
                            .iter()
                            .any(|lit| hay.iter().any(|h| h.eq_ignore_ascii_case(&lit[0])));
                        let got = bits.as_ref().is_some_and(|b| has(b, slot as u32));
                        assert!(got == want || !exact && got, "slot {slot} on {hay:?}");
                    }
                }
            }
        }
    }
}
