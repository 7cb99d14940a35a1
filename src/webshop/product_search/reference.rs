//! A plain, exact in-memory BM25 with the same analysis and parameters as [`super::ProductIndex`]:
//! exact document lengths (no one-byte fieldnorm) and `f64` arithmetic. It exists to measure how far
//! the tantivy-backed scorer's ranking is from the textbook formula (see
//! `tests/webshop/search_agreement.rs`); it is too slow and memory-hungry for the full catalog.

use std::collections::{BTreeMap, HashMap};

use super::analysis::Analyzer;
use super::{product_text, B, K1, TOP_K};
use crate::webshop::catalog::Catalog;

pub struct ReferenceBm25 {
    /// term → (product index, term frequency), product indices ascending.
    postings: HashMap<String, Vec<(u32, u32)>>,
    doc_len: Vec<u32>,
    avgdl: f64,
    asins: Vec<String>,
}

impl ReferenceBm25 {
    pub fn new(catalog: &Catalog) -> ReferenceBm25 {
        let mut analyzer = Analyzer::default();
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut doc_len = Vec::with_capacity(catalog.products.len());
        for (i, p) in catalog.products.iter().enumerate() {
            let terms = analyzer.terms(&product_text(p));
            doc_len.push(terms.len() as u32);
            let mut tf: BTreeMap<String, u32> = BTreeMap::new();
            for t in terms {
                *tf.entry(t).or_default() += 1;
            }
            for (t, n) in tf {
                postings.entry(t).or_default().push((i as u32, n));
            }
        }
        let total: u64 = doc_len.iter().map(|&l| u64::from(l)).sum();
        let avgdl = if doc_len.is_empty() { 1.0 } else { total as f64 / doc_len.len() as f64 };
        let asins = catalog.products.iter().map(|p| p.asin.clone()).collect();
        ReferenceBm25 { postings, doc_len, avgdl, asins }
    }

    /// Top [`TOP_K`] product indices with scores, score descending then asin ascending.
    pub fn search_scored(&self, query: &str) -> Vec<(usize, f64)> {
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for t in Analyzer::default().terms(query) {
            *counts.entry(t).or_default() += 1;
        }
        let n = self.doc_len.len() as f64;
        let (k1, b) = (f64::from(K1), f64::from(B));
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for (term, boost) in counts {
            let Some(list) = self.postings.get(&term) else { continue };
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in list {
                let dl = f64::from(self.doc_len[doc as usize]);
                let tf = f64::from(tf);
                *scores.entry(doc).or_default() +=
                    f64::from(boost) * idf * tf / (tf + k1 * (1.0 - b + b * dl / self.avgdl));
            }
        }
        let mut hits: Vec<(usize, f64)> = scores.into_iter().map(|(d, s)| (d as usize, s)).collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| self.asins[a.0].cmp(&self.asins[b.0])));
        hits.truncate(TOP_K);
        hits
    }
}
