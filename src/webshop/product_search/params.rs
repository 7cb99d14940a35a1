//! The parameters of WebShop's search: Lucene BM25's k1 and b, how many hits the engine keeps and how many a
//! results page shows.

/// Lucene BM25 parameters of pyserini's `LuceneSearcher` (WebShop leaves the defaults).
pub const K1: f32 = 0.9;
pub const B: f32 = 0.4;
/// WebShop asks the engine for the top 50 hits.
pub const TOP_K: usize = 50;
/// Results shown per page.
pub const PAGE_SIZE: usize = 10;
