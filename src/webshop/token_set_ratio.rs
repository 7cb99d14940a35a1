//! thefuzz 0.19 `fuzz.token_set_ratio` with its difflib backend (no python-Levenshtein installed), which is
//! what WebShop's reward uses to match attributes and options.
//!
//! thefuzz's steps, reproduced one by one:
//! 1. `full_process` with `force_ascii=True`: delete the characters U+0080..=U+00FF (and only those), replace
//!    every non-word character (`\W` of Python's `re`: not alphanumeric and not `_`) with a space, lower-case,
//!    strip. An empty result scores 0.
//! 2. Token sets (split on whitespace); the sorted intersection, and the intersection followed by each
//!    sorted remainder, each joined with spaces and stripped.
//! 3. The best of `ratio(sect, sect+rest1)`, `ratio(sect, sect+rest2)`, `ratio(sect+rest1, sect+rest2)`,
//!    where thefuzz's `ratio` is 100 for equal strings, 0 when either is empty, else
//!    `round(100 * SequenceMatcher(None, a, b).ratio())` with Python's round-half-to-even.
//!    A token set contained in the other therefore scores 100.
//!
//! Known difference: Python's word characters are the letters (L*), numbers (N*) and `_`; Rust's
//! `char::is_alphanumeric` also counts the `Other_Alphabetic` combining marks (some Indic vowel signs,
//! circled letters) as word characters. Such characters do not occur in WebShop's attributes or options.

use std::collections::BTreeSet;

use crate::text::{difflib, py_strip};

/// thefuzz's `utils.full_process(s, force_ascii=True)`.
pub fn full_process(s: &str) -> String {
    let replaced: String = s
        .chars()
        .filter(|c| !('\u{80}'..='\u{ff}').contains(c))
        .map(|c| if c.is_alphanumeric() || c == '_' { c } else { ' ' })
        .collect();
    py_strip(&replaced.to_lowercase()).to_owned()
}

/// thefuzz's `fuzz.token_set_ratio(a, b)` (0..=100).
pub fn token_set_ratio(a: &str, b: &str) -> u32 {
    let p1 = full_process(a);
    let p2 = full_process(b);
    if p1.is_empty() || p2.is_empty() {
        return 0;
    }
    let tokens1: BTreeSet<&str> = p1.split_whitespace().collect();
    let tokens2: BTreeSet<&str> = p2.split_whitespace().collect();
    // BTreeSet iterates in byte order, which for UTF-8 is Python's code-point order of `sorted`.
    let sect = join(tokens1.intersection(&tokens2));
    let rest1 = join(tokens1.difference(&tokens2));
    let rest2 = join(tokens2.difference(&tokens1));
    let combined1 = format!("{sect} {rest1}");
    let combined2 = format!("{sect} {rest2}");
    let (combined1, combined2) = (py_strip(&combined1), py_strip(&combined2));
    ratio(&sect, combined1).max(ratio(&sect, combined2)).max(ratio(combined1, combined2))
}

/// thefuzz's `fuzz.ratio` on already processed strings.
fn ratio(a: &str, b: &str) -> u32 {
    if a == b {
        return 100;
    }
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    // The product is in [0, 100], so the cast after rounding is exact.
    (100.0 * difflib::ratio(a, b)).round_ties_even() as u32
}

fn join<'a>(tokens: impl Iterator<Item = &'a &'a str>) -> String {
    let mut out = String::new();
    for (i, t) in tokens.enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processing_drops_latin1_and_punctuation() {
        assert_eq!(full_process("  Café-Crème_Brûlée!  "), "caf crme_brle");
        assert_eq!(full_process("Home › Kitchen"), "home   kitchen");
        assert_eq!(full_process("ÀÉ"), "");
        assert_eq!(full_process("Łódź"), "łdź");
    }

    #[test]
    fn subsets_and_equal_sets_score_100() {
        assert_eq!(token_set_ratio("red", "z2-red"), 100);
        assert_eq!(token_set_ratio("fuzzy wuzzy was a bear", "wuzzy fuzzy was a bear"), 100);
        assert_eq!(token_set_ratio("Long Lasting", "long lasting!"), 100);
    }

    #[test]
    fn empty_after_processing_scores_0() {
        assert_eq!(token_set_ratio("", "red"), 0);
        assert_eq!(token_set_ratio("!!!", "red"), 0);
        assert_eq!(token_set_ratio("é", "é"), 0);
    }

    #[test]
    fn disjoint_sets_compare_sorted_strings() {
        // No shared token: only ratio("abc", "abd") counts: 2 * 2 / 6 = 0.667 -> 67.
        assert_eq!(token_set_ratio("abc", "abd"), 67);
        // "b a" sorts to "a b"; vs "a c": 2 * 2 / 6 -> 67.
        assert_eq!(token_set_ratio("b a", "c a"), 67);
    }
}
