//! scikit-learn's `TfidfVectorizer(max_features=…)` with its other defaults, as ProxMO fits it: `fit_transform`
//! over a list of documents.
//!
//! - Preprocessing: Python's `str.lower()` (here `str::to_lowercase`: both apply Unicode's full lowercase
//!   mappings and the final-sigma rule; they differ only where their Unicode versions do).
//! - Tokens: `(?u)\b\w\w+\b`, where Python's Unicode `\w` is a letter (general category L*), a number (N*) or
//!   `_` — not a combining mark, unlike Rust's `\w` — so a token is a maximal run of at least two such code
//!   points. Raw counts (no binary, no sublinear tf), unigrams, no stop words, no accent stripping.
//! - Vocabulary: sorted (Python's string order is code point order, which is UTF-8 byte order); with
//!   `max_features`, the terms with the largest total counts over the corpus are kept. sklearn orders them with
//!   numpy's default (unstable) argsort, so which of several terms tied at the cutoff survive is unspecified
//!   there; here ties keep the alphabetically first. Equal to sklearn whenever the vocabulary has at most
//!   `max_features` terms or no tie straddles the cutoff.
//! - idf = ln((1 + n) / (1 + df)) + 1 (smooth idf), n the number of documents, df the documents holding the term
//!   (after the cut); value = count · idf; each row scaled to unit L2 norm (an all-zero row stays zero).
//! - A corpus without any token is an error, as sklearn's "empty vocabulary" `ValueError`.

use std::sync::OnceLock;

use foldhash::{HashMap, HashMapExt};
use regex::Regex;

/// ProxMO's `max_features`.
pub const PROXMO_MAX_FEATURES: usize = 1024;

/// A fitted and transformed corpus.
#[derive(Clone, Debug, PartialEq)]
pub struct Tfidf {
    /// Kept terms in sklearn's column order (sorted).
    pub vocabulary: Vec<String>,
    /// idf of each column.
    pub idf: Vec<f64>,
    /// Each document's non-zero entries (column, value), by column.
    pub rows: Vec<Vec<(u32, f64)>>,
}

/// No document has a token (sklearn raises `ValueError: empty vocabulary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("empty vocabulary: no document has a token of two or more word characters")]
pub struct EmptyVocabulary;

fn token_regex() -> &'static Regex {
    static TOKEN: OnceLock<Regex> = OnceLock::new();
    // Python's `\b\w\w+\b` with Unicode `\w` = [\p{L}\p{N}_]: a maximal run of two or more.
    TOKEN.get_or_init(|| Regex::new(r"[\p{L}\p{N}_]{2,}").unwrap_or_else(|e| panic!("token regex: {e}")))
}

/// The tokens sklearn's default analyzer gives `doc`, in order.
pub fn tokenize(doc: &str) -> Vec<String> {
    let lower = doc.to_lowercase();
    token_regex().find_iter(&lower).map(|m| m.as_str().to_string()).collect()
}

/// `TfidfVectorizer(max_features=max_features).fit_transform(docs)`.
pub fn fit_transform<S: AsRef<str>>(docs: &[S], max_features: Option<usize>) -> Result<Tfidf, EmptyVocabulary> {
    // Term ids in order of first appearance, and each document's counts.
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut terms: Vec<String> = Vec::new();
    let mut counts: Vec<Vec<(u32, u32)>> = Vec::with_capacity(docs.len());
    for doc in docs {
        let lower = doc.as_ref().to_lowercase();
        let mut doc_counts: HashMap<u32, u32> = HashMap::new();
        for m in token_regex().find_iter(&lower) {
            let id = match ids.get(m.as_str()) {
                Some(&id) => id,
                None => {
                    let id = terms.len() as u32;
                    terms.push(m.as_str().to_string());
                    ids.insert(m.as_str().to_string(), id);
                    id
                }
            };
            *doc_counts.entry(id).or_insert(0) += 1;
        }
        let mut doc_counts: Vec<(u32, u32)> = doc_counts.into_iter().collect();
        doc_counts.sort_unstable();
        counts.push(doc_counts);
    }
    if terms.is_empty() {
        return Err(EmptyVocabulary);
    }
    // Columns in sorted term order; the cut keeps the largest total counts (ties: alphabetical order).
    let mut order: Vec<u32> = (0..terms.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| terms[a as usize].cmp(&terms[b as usize]));
    if let Some(limit) = max_features.filter(|&l| l < order.len()) {
        let mut total = vec![0u64; terms.len()];
        for doc in &counts {
            for &(id, c) in doc {
                total[id as usize] += u64::from(c);
            }
        }
        let mut by_count = order.clone();
        by_count.sort_by(|&a, &b| total[b as usize].cmp(&total[a as usize]));
        by_count.truncate(limit);
        let mut kept = vec![false; terms.len()];
        for &id in &by_count {
            kept[id as usize] = true;
        }
        order.retain(|&id| kept[id as usize]);
    }
    let mut column = vec![u32::MAX; terms.len()];
    for (j, &id) in order.iter().enumerate() {
        column[id as usize] = j as u32;
    }
    let mut df = vec![0u64; order.len()];
    let mut rows: Vec<Vec<(u32, f64)>> = counts
        .iter()
        .map(|doc| {
            let mut row: Vec<(u32, f64)> = doc
                .iter()
                .filter(|&&(id, _)| column[id as usize] != u32::MAX)
                .map(|&(id, c)| (column[id as usize], f64::from(c)))
                .collect();
            row.sort_unstable_by_key(|&(j, _)| j);
            for &(j, _) in &row {
                df[j as usize] += 1;
            }
            row
        })
        .collect();
    let n = docs.len() as f64;
    let idf: Vec<f64> = df.iter().map(|&d| ((1.0 + n) / (1.0 + d as f64)).ln() + 1.0).collect();
    for row in &mut rows {
        for (j, v) in row.iter_mut() {
            *v *= idf[*j as usize];
        }
        l2_normalize(row);
    }
    let vocabulary = order.into_iter().map(|id| std::mem::take(&mut terms[id as usize])).collect();
    Ok(Tfidf { vocabulary, idf, rows })
}

/// Scale a sparse row to unit L2 norm; an all-zero row is left as it is.
pub fn l2_normalize(row: &mut [(u32, f64)]) {
    let norm = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
    if norm > 0.0 {
        for (_, v) in row.iter_mut() {
            *v /= norm;
        }
    }
}

/// Dot product of two sparse rows sorted by column.
pub fn dot(a: &[(u32, f64)], b: &[(u32, f64)]) -> f64 {
    let (mut i, mut j, mut sum) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                sum += a[i].1 * b[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_follow_pythons_unicode_word_characters() {
        assert_eq!(tokenize("Hello, WORLD a b2 x_y"), ["hello", "world", "b2", "x_y"]);
        // A combining mark is not a word character for Python's `re`: it splits the token.
        assert_eq!(tokenize("cafe\u{301} naïve"), ["cafe", "naïve"]);
        // Numbers of any kind are (², Roman numerals), as are CJK ideographs.
        assert_eq!(tokenize("x² Ⅻb 中文"), ["x²", "ⅻb", "中文"]);
    }

    #[test]
    fn idf_and_norm_are_sklearns() {
        let t = fit_transform(&["a bb bb", "bb cc"], None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.vocabulary, ["bb", "cc"]);
        // bb in both documents: ln(3/3) + 1 = 1; cc in one: ln(3/2) + 1.
        assert_eq!(t.idf, vec![1.0, (1.5f64).ln() + 1.0]);
        assert_eq!(t.rows[0], vec![(0, 1.0)]);
        let norm = (1.0 + t.idf[1] * t.idf[1]).sqrt();
        assert_eq!(t.rows[1], vec![(0, 1.0 / norm), (1, t.idf[1] / norm)]);
        assert_eq!(fit_transform(&["a", "!"], None), Err(EmptyVocabulary));
    }

    #[test]
    fn max_features_keeps_the_most_frequent_terms() {
        let t = fit_transform(&["zz zz yy", "xx zz ww ww"], Some(2)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.vocabulary, ["ww", "zz"]);
        assert!(t.rows.iter().all(|r| r.iter().all(|&(j, _)| j < 2)));
    }
}
