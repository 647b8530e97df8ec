//! Required literals of a regular expression: a few small sets of byte
//! strings such that every match contains a member of each set (`(?:select
//! |;)\s+(?:if|sleep)\s*\(` needs one of `select`, `;`, one of `if`,
//! `sleep`, and `(`). Found on the parsed expression (`regex-syntax` HIR),
//! lowercased, so that a case-insensitive scan finding a member of every
//! set is a necessary condition for the expression to match. Empty when
//! no useful set exists (the expression can match without fixed text).

use regex_syntax::hir::{Class, Hir, HirKind};

/// Most strings a set may hold.
const MAX_SET: usize = 64;
/// Most strings a set of strings of [`WIDE_MIN`] bytes or more may hold
/// (CRS 932260's command list makes about 550, 240 once those containing
/// another are dropped): such strings are rare in ordinary text, so a
/// large set of them still screens well.
const MAX_WIDE_SET: usize = 1024;
const WIDE_MIN: usize = 3;
/// Longest string kept (a prefix of a required string is required too).
const MAX_LEN: usize = 24;
/// Largest class expanded into single bytes within an exact string.
const MAX_CLASS: usize = 6;
/// Largest class accepted as a required set of single bytes.
const MAX_REQUIRED_CLASS: usize = 48;

type Set = Vec<Vec<u8>>;

/// Most sets a pattern is screened by.
const MAX_SETS: usize = 3;

/// Parses `pattern` as the engine compiles it and returns its required
/// literal sets, the most selective first, at most [`MAX_SETS`]: the best
/// set, then others only when they are rare in ordinary text (strings of
/// two bytes or more, or punctuation), so that a value screened by all of
/// them rarely reaches the expression without matching it.
pub fn required_literals(pattern: &str) -> Vec<Set> {
    let Ok(hir) = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .dot_matches_new_line(true)
        .build()
        .parse(pattern)
    else {
        return Vec::new();
    };
    let mut sets: Vec<Set> = requirements(&hir).into_iter().filter(useful).collect();
    sets.sort_by_key(|s| std::cmp::Reverse(score(s)));
    sets.dedup();
    let mut out = Vec::new();
    for set in sets {
        let set = minimal(set);
        // A set every member of a chosen one contains a member of adds
        // nothing (`.` beside `..`).
        if out.iter().any(|chosen: &Set| {
            chosen
                .iter()
                .all(|x| set.iter().any(|y| memchr::memmem::find(x, y).is_some()))
        }) {
            continue;
        }
        if out.is_empty() || (out.len() < MAX_SETS && rare(&set)) {
            out.push(set);
        }
    }
    out
}

/// `s` without the strings that contain another of its strings (a value
/// holding `atobm"` holds `atobm`): the same screen, fewer literals.
fn minimal(mut s: Set) -> Set {
    s.sort_by_key(Vec::len);
    let mut kept: Set = Vec::with_capacity(s.len());
    for x in s {
        if !kept.iter().any(|k| memchr::memmem::find(&x, k).is_some()) {
            kept.push(x);
        }
    }
    kept.sort();
    kept
}

/// Sets every match of `h` contains a member of each of.
fn requirements(h: &Hir) -> Vec<Set> {
    match h.kind() {
        HirKind::Capture(c) => requirements(&c.sub),
        HirKind::Repetition(r) if (2..=4).contains(&r.min) => {
            // At least `min` copies in a row: their concatenations.
            let repeated = exact(&r.sub).and_then(|sub| {
                let mut acc = vec![Vec::new()];
                for _ in 0..r.min {
                    acc = cross(&acc, &sub)?;
                }
                Some(acc)
            });
            match repeated {
                Some(set) => vec![set],
                None => requirements(&r.sub),
            }
        }
        HirKind::Repetition(r) if r.min >= 1 => requirements(&r.sub),
        HirKind::Concat(hs) => {
            let mut all = Vec::new();
            let mut run: Set = vec![Vec::new()];
            for h in hs {
                match exact(h) {
                    Some(ex) => match cross(&run, &ex) {
                        Some(next) => run = next,
                        None => all.push(std::mem::replace(&mut run, ex)),
                    },
                    None => {
                        let done = std::mem::replace(&mut run, vec![Vec::new()]);
                        all.push(continued(&done, h).unwrap_or(done));
                        all.extend(requirements(h));
                    }
                }
            }
            all.push(run);
            all
        }
        _ => required(h).into_iter().collect(),
    }
}

/// Whether a set's members are rare in ordinary text: none is a single
/// letter, digit or space.
fn rare(s: &Set) -> bool {
    s.iter()
        .all(|x| x.len() >= 2 || !(x[0].is_ascii_alphanumeric() || x[0].is_ascii_whitespace()))
}

/// The set of exact strings `h` matches, when small.
fn exact(h: &Hir) -> Option<Set> {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Some(vec![Vec::new()]),
        HirKind::Literal(lit) => {
            let s = lit.0.to_ascii_lowercase();
            (s.len() <= MAX_LEN).then(|| vec![s])
        }
        HirKind::Class(class) => {
            class_set(class, MAX_CLASS).map(|bytes| bytes.into_iter().map(|b| vec![b]).collect())
        }
        HirKind::Capture(c) => exact(&c.sub),
        HirKind::Repetition(r) => match (r.min, r.max) {
            (1, Some(1)) => exact(&r.sub),
            (0, Some(1)) => {
                let mut s = exact(&r.sub)?;
                s.push(Vec::new());
                dedup(s)
            }
            (n, Some(m)) if n == m && n <= 4 => {
                let sub = exact(&r.sub)?;
                let mut acc = vec![Vec::new()];
                for _ in 0..n {
                    acc = cross(&acc, &sub)?;
                }
                Some(acc)
            }
            _ => None,
        },
        HirKind::Concat(hs) => {
            let mut acc = vec![Vec::new()];
            for h in hs {
                acc = cross(&acc, &exact(h)?)?;
            }
            Some(acc)
        }
        HirKind::Alternation(hs) => {
            let mut out = Vec::new();
            for h in hs {
                out.extend(exact(h)?);
                if out.len() > MAX_SET * 4 {
                    return None;
                }
            }
            dedup(out)
        }
    }
}

/// A set every match of `h` contains a member of, or `None`.
fn required(h: &Hir) -> Option<Set> {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => None,
        HirKind::Literal(lit) => {
            // A literal too long to be exact still requires its prefix.
            let s = lit.0.to_ascii_lowercase();
            Some(vec![s[..s.len().min(MAX_LEN)].to_vec()])
        }
        HirKind::Class(class) => match exact(h) {
            Some(s) if useful(&s) => Some(s),
            _ => class_set(class, MAX_REQUIRED_CLASS)
                .map(|b| b.into_iter().map(|x| vec![x]).collect()),
        },
        HirKind::Capture(c) => required(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => required(&r.sub),
        HirKind::Repetition(_) => None,
        HirKind::Alternation(hs) => union(hs, required),
        HirKind::Concat(hs) => {
            let mut candidates: Vec<Set> = Vec::new();
            let mut run: Set = vec![Vec::new()];
            for h in hs {
                match exact(h) {
                    Some(ex) => match cross(&run, &ex) {
                        Some(next) => run = next,
                        None => {
                            candidates.push(std::mem::replace(&mut run, ex));
                        }
                    },
                    None => {
                        let done = std::mem::replace(&mut run, vec![Vec::new()]);
                        candidates.push(continued(&done, h).unwrap_or(done));
                        if let Some(r) = required(h) {
                            candidates.push(r);
                        }
                    }
                }
            }
            candidates.push(run);
            candidates.into_iter().filter(useful).max_by_key(score)
        }
    }
}

/// The exact text `run` continued by the strings every match of `h`
/// begins with (`c` then `(?:hmod|hown|url\b)` needs one of `chmod`,
/// `chown`, `curl`), when that makes a set: it implies `run`, so it
/// replaces it.
fn continued(run: &Set, h: &Hir) -> Option<Set> {
    if run.iter().all(Vec::is_empty) {
        return None;
    }
    cross(run, &prefixes(h)?).filter(useful)
}

/// Strings every match of `h` begins with one of (lowercased), or `None`
/// when a match may begin otherwise (or be empty).
fn prefixes(h: &Hir) -> Option<Set> {
    match h.kind() {
        HirKind::Literal(_) | HirKind::Class(_) => exact(h),
        HirKind::Capture(c) => prefixes(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => prefixes(&r.sub),
        HirKind::Alternation(hs) => union(hs, prefixes),
        HirKind::Concat(hs) => {
            let mut acc: Set = vec![Vec::new()];
            for h in hs {
                // Each part's text continues the prefixes while the set
                // stays small; a prefix of a prefix is one too.
                let (part, last) = match exact(h) {
                    Some(ex) => (ex, false),
                    None => match prefixes(h) {
                        Some(p) => (p, true),
                        None => break,
                    },
                };
                match cross(&acc, &part) {
                    Some(next) => acc = next,
                    None => break,
                }
                if last {
                    break;
                }
            }
            acc.iter().all(|x| !x.is_empty()).then_some(acc)
        }
        HirKind::Empty | HirKind::Look(_) | HirKind::Repetition(_) => None,
    }
}

/// The union of `f` over the branches of an alternation, when every
/// branch has one and it stays small.
fn union(branches: &[Hir], f: fn(&Hir) -> Option<Set>) -> Option<Set> {
    let mut out = Vec::new();
    for h in branches {
        out.extend(f(h)?);
    }
    dedup(out).filter(small)
}

fn useful(s: &Set) -> bool {
    !s.is_empty() && small(s) && s.iter().all(|x| !x.is_empty())
}

/// Whether a set is small enough to screen by: at most [`MAX_SET`]
/// strings, or [`MAX_WIDE_SET`] of [`WIDE_MIN`] bytes or more.
fn small(s: &Set) -> bool {
    s.len() <= MAX_SET || (s.len() <= MAX_WIDE_SET && s.iter().all(|x| x.len() >= WIDE_MIN))
}

/// Longer shortest strings first, then fewer strings.
fn score(s: &Set) -> (usize, isize) {
    let shortest = s.iter().map(Vec::len).min().unwrap_or(0).min(6);
    (shortest, -(s.len() as isize))
}

/// Concatenations of every pair, when the result stays small; strings
/// past `MAX_LEN` are cut (a prefix of a required string is required).
fn cross(a: &Set, b: &Set) -> Option<Set> {
    if a.len() * b.len() > MAX_SET {
        return None;
    }
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            let mut s = x.clone();
            s.extend_from_slice(y);
            if s.len() > MAX_LEN {
                return None;
            }
            out.push(s);
        }
    }
    dedup(out)
}

fn dedup(mut s: Set) -> Option<Set> {
    s.sort();
    s.dedup();
    Some(s)
}

/// The bytes of a class of at most `max` members (after lowercasing).
fn class_set(class: &Class, max: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match class {
        Class::Bytes(c) => {
            for r in c.ranges() {
                if (r.end() - r.start()) as usize >= max * 2 {
                    return None;
                }
                out.extend((r.start()..=r.end()).map(|b| b.to_ascii_lowercase()));
            }
        }
        Class::Unicode(c) => {
            for r in c.ranges() {
                let (s, e) = (r.start() as u32, r.end() as u32);
                if e > 0x7f || e - s >= (max * 2) as u32 {
                    return None;
                }
                out.extend((s..=e).map(|b| (b as u8).to_ascii_lowercase()));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    (out.len() <= max).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(p: &str) -> Option<Vec<String>> {
        required_literals(p).into_iter().next().map(|s| {
            s.into_iter()
                .map(|x| String::from_utf8_lossy(&x).into_owned())
                .collect()
        })
    }

    fn all(p: &str) -> Vec<Vec<String>> {
        required_literals(p)
            .into_iter()
            .map(|s| {
                s.into_iter()
                    .map(|x| String::from_utf8_lossy(&x).into_owned())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_concatenation_requires_each_of_its_rare_parts() {
        assert_eq!(
            all(r"(?i)(?:select|;)[\s\x0b]+(?:benchmark|if|sleep)[\s\x0b]*?\("),
            vec![
                vec!["benchmark".to_string(), "if".into(), "sleep".into()],
                // The run continues into the first byte of `[\s\x0b]+`.
                [";", "select"]
                    .iter()
                    .flat_map(|w| ["\t", "\n", "\x0b", "\x0c", "\r", " "].map(|s| format!("{w}{s}")))
                    .collect(),
                vec!["(".into()],
            ]
        );
        // A set of letters or spaces screens nothing in text: left out
        // (`while` goes on into the space that follows it).
        assert_eq!(
            all(r"while\s+x"),
            vec![
                ["\t", "\n", "\x0b", "\x0c", "\r", " "]
                    .map(|s| format!("while{s}"))
                    .to_vec()
            ]
        );
        assert_eq!(
            all(r"(?:^|[/;\x5c])\.{2,3}[/;\x5c]"),
            vec![
                vec!["..".to_string()],
                vec!["/".into(), ";".into(), "\\".into()]
            ]
        );
        // At most three sets; none for an alternation of bare words' parts.
        assert_eq!(all("a(b|c)d(e|f)g").len(), 1);
        assert!(all("[^a]").is_empty());
    }

    #[test]
    fn exact_text_continues_into_what_the_next_part_begins_with() {
        // `c` alone would be a set of one letter; what follows every `c`
        // begins with one of a few strings, so the run goes on.
        assert_eq!(
            req(r"(?i)c(?:hmod|url\b|h(?:own|grp)[^a-z]{1,3})"),
            Some(vec![
                "chgrp".into(),
                "chmod".into(),
                "chown".into(),
                "curl".into()
            ])
        );
        // A command list past 64 names still screens: its names are of
        // three bytes or more (CRS 932260's shape), and names containing
        // another one are left out.
        let names: Vec<String> = (0..300).map(|i| format!("cmd{i:03}x")).collect();
        let pattern = format!(r"(?:^|;)\s*(?:{})(?:\s|$)", names.join("|"));
        let set = req(&pattern).expect("a set of command names");
        assert_eq!(set.len(), 300);
        assert_eq!(
            req(r"(?:ab|abc|xabd|zz)q"),
            Some(vec![
                "abcq".into(),
                "abq".into(),
                "xabdq".into(),
                "zzq".into()
            ])
        );
        assert_eq!(
            minimal(vec![
                b"abc".to_vec(),
                b"ab".to_vec(),
                b"xab".to_vec(),
                b"q".to_vec()
            ]),
            vec![b"ab".to_vec(), b"q".to_vec()]
        );
    }

    #[test]
    fn literals_of_typical_rules() {
        assert_eq!(
            req(r"(?i)\bunion\b.{1,100}?\bselect\b"),
            Some(vec!["select".into()])
        );
        assert_eq!(
            req("(?i)(?:onerror|onload)="),
            Some(vec!["onerror=".into(), "onload=".into()])
        );
        assert_eq!(req("abc|x"), Some(vec!["abc".into(), "x".into()]));
        assert_eq!(req("[0-9]+").map(|s| s.len()), Some(10));
        assert_eq!(req("[^a]"), None);
        assert_eq!(
            req("class\\.module\\.classLoader\\.resources|springframework"),
            Some(vec![
                "class.module.classloader".into(),
                "springframework".into()
            ])
        );
        assert_eq!(req("a?b?"), None);
        assert_eq!(req("^$"), None);
        assert_eq!(req(r"\.\./"), Some(vec!["../".into()]));
        // A case-sensitive expression still yields lowercase literals.
        assert_eq!(req("SELECT"), Some(vec!["select".into()]));
    }

    #[test]
    fn every_match_contains_a_literal() {
        // The guarantee the prefilter rests on, checked on sampled inputs.
        let patterns = [
            r"(?i)(?:union|select)\s+(?:all|distinct)?",
            r"(?:<script|javascript:)",
            r"(?i)\b(?:eval|exec)\s*\(",
            r"(?:\.\./|\.\.\\)",
            r"(?i)on(?:error|load|mouse\w+)\s*=",
        ];
        let inputs = [
            "UNION all",
            "select distinct",
            "<script>",
            "JaVaScRiPt:x",
            "EVAL (",
            "exec(1)",
            "../a",
            "..\\b",
            "onerror =",
            "ONMOUSEover=",
            "nothing here",
            "union",
            "on=",
        ];
        for p in patterns {
            let re = crate::operator::regex(p).unwrap();
            let sets = required_literals(p);
            assert!(!sets.is_empty(), "{p}");
            for i in inputs {
                if re.is_match(i.as_bytes()) {
                    let lower = i.to_ascii_lowercase();
                    for set in &sets {
                        assert!(
                            set.iter()
                                .any(|l| memchr::memmem::find(lower.as_bytes(), l).is_some()),
                            "{p} matches {i:?} without any of {set:?}"
                        );
                    }
                }
            }
        }
    }
}
