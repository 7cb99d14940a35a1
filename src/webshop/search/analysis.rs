//! The text analysis of WebShop's search engine (pyserini's default English analyzer on Lucene):
//! standard tokenizer → English possessive filter → lower case → Lucene's 33 English stop words →
//! classic Porter stemmer, and the same chain as a tantivy tokenizer for indexing.
//!
//! Known differences from Lucene's `StandardTokenizer`: words are split by Unicode's UAX #29 rules
//! as `unicode-segmentation` implements them (Lucene implements the same annex, possibly of another
//! Unicode version); segments without a letter or digit are dropped, so emoji, which Lucene keeps
//! as tokens, are dropped here; Lucene splits tokens longer than 255 chars, we keep them whole.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use unicode_segmentation::UnicodeSegmentation;

use super::porter::Stemmer;

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
        for (offset, word) in text.unicode_word_indices() {
            let word = strip_possessive(word);
            let lower = word.to_lowercase();
            if STOP_WORDS.contains(&lower.as_str()) {
                continue;
            }
            f(self.stemmer.stem(&lower), offset, offset + word.len());
        }
    }

    /// The terms of `text`, in order, with repeats.
    pub fn terms(&mut self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_term(text, |term, _, _| out.push(term));
        out
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
            tokens.push(Token { offset_from: from, offset_to: to, position: tokens.len(), text: term, position_length: 1 });
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
