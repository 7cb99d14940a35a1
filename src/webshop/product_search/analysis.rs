//! The text analysis of WebShop's search engine (pyserini 0.17's default English analyzer on Lucene
//! 8.11): standard tokenizer ([`super::tokenizer`], Lucene's own grammar) → English possessive
//! filter → lower case → Lucene's 33 English stop words → classic Porter stemmer, and the same
//! chain as a tantivy tokenizer for indexing. `tests/webshop/search_lucene.rs` compares the terms
//! with Lucene's own for every real product and query.
//!
//! Lower-casing is Java's `Character.toLowerCase`, one code point at a time (simple case mapping,
//! no final sigma), from Rust's Unicode tables: they differ from Java 17's (Unicode 13) only for
//! characters given a case mapping since, none of which is in the real data. The stemmer works on
//! UTF-16 code units, as Lucene's does.

use super::porter::Stemmer;
use super::tokenizer;
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`.
pub const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// The analysis chain; keeps a stemmer buffer between calls.
#[derive(Default, Clone)]
pub struct Analyzer {
    stemmer: Stemmer,
}

impl Analyzer {
    /// Calls `f(term, byte_offset_from, byte_offset_to)` for every indexed term of `text`, in order.
    pub fn for_each_term(&mut self, text: &str, mut f: impl FnMut(String, usize, usize)) {
        let mut lower = String::new();
        tokenizer::for_each_token(text, |from, to| {
            let word = strip_possessive(&text[from..to]);
            lower.clear();
            lower.extend(word.chars().map(java_lower_case));
            if STOP_WORDS.contains(&lower.as_str()) {
                return;
            }
            f(self.stemmer.stem(&lower), from, from + word.len());
        });
    }

    /// The terms of `text`, in order, with repeats.
    pub fn terms(&mut self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_term(text, |term, _, _| out.push(term));
        out
    }
}

/// Java's `Character.toLowerCase(int)`: the simple lower-case mapping of one code point. Rust's
/// mapping is the full one, which differs only where the lower case is several characters
/// (U+0130 `İ` → `i̇`); its simple mapping is `i`.
#[inline]
fn java_lower_case(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        _ if c == '\u{130}' => 'i',
        _ => c,
    }
}

/// Lucene's `EnglishPossessiveFilter`: drops a trailing `'s` (with `'`, `’` or `＇`, either case of s).
fn strip_possessive(word: &str) -> &str {
    let mut chars = word.chars().rev();
    match (chars.next(), chars.next()) {
        (Some('s' | 'S'), Some(q @ ('\'' | '\u{2019}' | '\u{FF07}'))) => &word[..word.len() - 1 - q.len_utf8()],
        _ => word,
    }
}

/// The analysis chain as a tantivy tokenizer (registered under [`TOKENIZER_NAME`]).
#[derive(Default, Clone)]
pub struct WebshopTokenizer {
    analyzer: Analyzer,
}

pub const TOKENIZER_NAME: &str = "webshop_en";

impl Tokenizer for WebshopTokenizer {
    type TokenStream<'a> = AnalyzedStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> AnalyzedStream {
        let mut tokens = Vec::new();
        self.analyzer.for_each_term(text, |term, from, to| {
            tokens.push(Token {
                offset_from: from,
                offset_to: to,
                position: tokens.len(),
                text: term,
                position_length: 1,
            });
        });
        AnalyzedStream { tokens, next: 0 }
    }
}

/// The terms of one text, analysed up front (the stemmer needs whole words anyway).
pub struct AnalyzedStream {
    tokens: Vec<Token>,
    /// Index of the token after the current one.
    next: usize,
}

impl TokenStream for AnalyzedStream {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_analysis_chain() {
        let mut a = Analyzer::default();
        assert_eq!(
            a.terms("The Women's Running Shoes, size 7.5 and Wi-Fi; it's 1,299 dollars"),
            ["women", "run", "shoe", "size", "7.5", "wi", "fi", "1,299", "dollar"]
        );
        // Emoji are terms; `İ` lower-cases to `i` as in Java; a final sigma stays `σ`.
        assert_eq!(a.terms("Great 👍🏽 İSTANBUL ΟΔΟΣ"), ["great", "👍🏽", "istanbul", "οδοσ"]);
        assert_eq!(a.terms("a the of"), Vec::<String>::new());
    }

    #[test]
    fn tantivy_stream_yields_the_terms() {
        let mut t = WebshopTokenizer::default();
        let mut stream = t.token_stream("Men’s leather boots");
        let mut seen = Vec::new();
        while stream.advance() {
            seen.push(stream.token().text.clone());
        }
        assert_eq!(seen, ["men", "leather", "boot"]);
    }
}
