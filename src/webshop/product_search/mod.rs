//! Product search as WebShop does it: pyserini/Lucene BM25 (k1 = 0.9, b = 0.4) over one text per
//! product, with Lucene's English analysis, computed on a tantivy index.
//!
//! tantivy's own BM25 fixes k1 = 1.2, b = 0.75, so [`ProductIndex::search`] scores from the index
//! itself: document frequencies from the term dictionary, term frequencies from the postings and
//! field lengths from the fieldnorms, combined with Lucene's formula
//! `boost · idf · (1 − 1 / (1 + tf / (k1 · (1 − b + b · dl / avgdl))))`, `idf = ln(1 + (N − df + 0.5) / (df + 0.5))`,
//! each term's in `f32` as Lucene does, a document's terms added in `f64` and rounded once to
//! `f32` (Lucene's disjunction sum). `dl` is the fieldnorm, quantised to one byte per document; tantivy's
//! fieldnorm table is Lucene's `SmallFloat.intToByte4` table, so it is the same lossy length
//! Lucene scores with (exact up to 40 terms, then within 1/8). `avgdl` is exact in both. A repeated
//! query term counts as a boost (Anserini's bag-of-words query); ties go by asin, as Anserini
//! breaks them by document id. The analysis is Lucene's own (see [`analysis`], [`tokenizer`]).
//! `tests/webshop/search_lucene.rs` compares hits, scores and terms with pyserini 0.17 itself on
//! every real human query; the exact reference in [`reference`] (exact lengths, `f64`) measures
//! how much Lucene's length quantisation moves the ranking (`tests/webshop/search_agreement.rs`).
//!
//! Only the top [`TOP_K`] are kept, and most documents are never scored: [`score`] prunes with
//! per-term and per-block score bounds (block-max MaxScore) and reads whole posting lists, term
//! at a time, only where that is cheaper. The results are exactly those of scoring every document
//! (same hits, order and score bits; `tests/webshop/search_pruning.rs`).

pub mod analysis;
mod params;
pub(crate) mod porter;
pub mod reference;
mod score;
pub mod tokenizer;
mod unicode_tables;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tantivy::directory::MmapDirectory;
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST};
use tantivy::{Index, IndexReader, TantivyDocument, Term};

use self::analysis::{Analyzer, WebshopTokenizer, TOKENIZER_NAME};
use self::score::{Handover, TermBounds, TopK};
use super::catalog::{Catalog, Product};

pub use params::{B, K1, PAGE_SIZE, TOP_K};

/// Bumped whenever the analysis or the index layout changes, so old cached indexes are not reused.
const INDEX_FORMAT: &str = "gigscope-webshop-search-v2";
/// Written last into a finished index directory; its absence means a build died half-way.
const COMPLETE_MARKER: &str = "gigscope-complete";

#[derive(Debug, thiserror::Error)]
pub enum ProductSearchError {
    #[error("search index in {path}: {source}")]
    Index { path: PathBuf, source: tantivy::TantivyError },
    #[error("search index in memory: {0}")]
    Memory(#[from] tantivy::TantivyError),
    #[error("search index directory {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// The text WebShop indexes for a product: lower-cased
/// `Title + " " + Description + " " + BulletPoints[0] + " " + option_text`, with
/// `option_text = ", and ".join(f"{name}: {', '.join(values)}")`. A product with no bullet points
/// (which the original would fail on) contributes an empty string there.
pub fn product_text(p: &Product) -> String {
    let options: Vec<String> =
        p.options.iter().map(|(name, values)| format!("{name}: {}", values.join(", "))).collect();
    let first_bullet = p.bullet_points.first().map(String::as_str).unwrap_or("");
    [p.title.as_str(), p.description.as_str(), first_bullet, options.join(", and ").as_str()].join(" ").to_lowercase()
}

/// A BM25 index of a catalog's products. Cheap to share: wrap it in an `Arc`.
pub struct ProductIndex {
    reader: IndexReader,
    field: Field,
    /// Per segment: doc id → index into `catalog.products`.
    doc_to_product: Vec<Vec<u32>>,
    /// Per segment, per doc id: the fieldnorm id.
    norm_ids: Vec<Vec<u8>>,
    /// Per segment: upper bounds on each term's `tf · norm_inverse[fieldnorm]`, for pruning.
    term_bounds: Vec<TermBounds>,
    /// Product index → rank of its asin in ascending order (ties are broken by asin).
    asin_rank: Vec<u32>,
    num_docs: u64,
    avgdl: f32,
    /// Per fieldnorm id: `1 / (k1 · (1 − b + b · dl / avgdl))`, Lucene's per-norm cache.
    norm_inverse: [f32; 256],
}

fn schema() -> (Schema, Field, Field) {
    let mut builder = Schema::builder();
    let indexing =
        TextFieldIndexing::default().set_tokenizer(TOKENIZER_NAME).set_index_option(IndexRecordOption::WithFreqs);
    let text = builder.add_text_field("text", TextOptions::default().set_indexing_options(indexing));
    let idx = builder.add_u64_field("idx", FAST);
    (builder.build(), text, idx)
}

/// The default cache directory: `$GIGSCOPE_CACHE`, else `$XDG_CACHE_HOME/gigscope`, else
/// `~/.cache/gigscope`; `None` when none of these can be found.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("GIGSCOPE_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("gigscope")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("gigscope")))
}

/// Hash of everything the index depends on: the format, and each product's asin and the fields
/// its text is made of (hashed as they are, which is cheaper than building the text: reopening a
/// cached 1.18 M-product index is dominated by this hash).
pub fn catalog_key(catalog: &Catalog) -> String {
    let mut h = Sha256::new();
    h.update(INDEX_FORMAT.as_bytes());
    h.update((catalog.products.len() as u64).to_le_bytes());
    // Each string is length-prefixed so that moving text between fields changes the hash.
    let mut field = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    for p in &catalog.products {
        field(&p.asin);
        field(&p.title);
        field(&p.description);
        field(p.bullet_points.first().map(String::as_str).unwrap_or(""));
        field(&p.options.len().to_string());
        for (name, values) in &p.options {
            field(name);
            field(&values.len().to_string());
            for v in values {
                field(v);
            }
        }
    }
    h.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect()
}

impl ProductIndex {
    /// Opens the index of `catalog` from the cache (`cache_dir`, else [`default_cache_dir`]),
    /// building it there first when it is missing or unreadable. With no cache directory at all
    /// the index is built in memory.
    pub fn open_or_build(catalog: &Catalog, cache_dir: Option<&Path>) -> Result<ProductIndex, ProductSearchError> {
        let Some(cache) = cache_dir.map(Path::to_owned).or_else(default_cache_dir) else {
            return ProductIndex::build_in_memory(catalog);
        };
        let dir = cache.join("webshop-search").join(catalog_key(catalog));
        if dir.join(COMPLETE_MARKER).is_file() {
            // A cached index that fails to open or does not match is rebuilt, not reported.
            if let Ok(index) = ProductIndex::open_dir(&dir, catalog) {
                return Ok(index);
            }
        }
        build_dir(&dir, catalog)?;
        ProductIndex::open_dir(&dir, catalog)
    }

    /// Builds the index in RAM (tests, small catalogs).
    pub fn build_in_memory(catalog: &Catalog) -> Result<ProductIndex, ProductSearchError> {
        let (schema, _, _) = schema();
        let index = Index::create_in_ram(schema);
        fill(&index, catalog)?;
        ProductIndex::from_index(index, catalog).map_err(ProductSearchError::Memory)
    }

    fn open_dir(dir: &Path, catalog: &Catalog) -> Result<ProductIndex, ProductSearchError> {
        let err = |source| ProductSearchError::Index { path: dir.to_owned(), source };
        let index = Index::open_in_dir(dir).map_err(err)?;
        let opened = ProductIndex::from_index(index, catalog).map_err(err)?;
        if opened.num_docs != catalog.products.len() as u64 {
            return Err(err(tantivy::TantivyError::InvalidArgument(format!(
                "{} documents for {} products",
                opened.num_docs,
                catalog.products.len()
            ))));
        }
        Ok(opened)
    }

    fn from_index(index: Index, catalog: &Catalog) -> tantivy::Result<ProductIndex> {
        index.tokenizers().register(TOKENIZER_NAME, WebshopTokenizer::default());
        let field = index.schema().get_field("text")?;
        let reader = index.reader()?;
        let searcher = reader.searcher();
        let mut doc_to_product = Vec::new();
        let mut inverted_indexes = Vec::new();
        let mut total_tokens = 0u64;
        for segment in searcher.segment_readers() {
            let column = segment.fast_fields().u64("idx")?;
            let map: Vec<u32> = (0..segment.max_doc())
                .map(|doc| {
                    column.first(doc).filter(|&i| (i as usize) < catalog.products.len()).map(|i| i as u32).ok_or_else(
                        || tantivy::TantivyError::InvalidArgument(format!("document {doc} has no valid product index")),
                    )
                })
                .collect::<tantivy::Result<_>>()?;
            doc_to_product.push(map);
            let inverted = segment.inverted_index(field)?;
            total_tokens += inverted.total_num_tokens();
            inverted_indexes.push(inverted);
        }
        let num_docs = searcher.num_docs();
        let avgdl = if num_docs == 0 { 1.0 } else { (total_tokens as f64 / num_docs as f64) as f32 };
        let mut norm_inverse = [0f32; 256];
        for (id, slot) in norm_inverse.iter_mut().enumerate() {
            let dl = tantivy::fieldnorm::FieldNormReader::id_to_fieldnorm(id as u8) as f32;
            *slot = 1.0 / (K1 * ((1.0 - B) + B * dl / avgdl));
        }
        let mut norm_ids = Vec::with_capacity(inverted_indexes.len());
        let mut term_bounds = Vec::with_capacity(inverted_indexes.len());
        for (segment, inverted) in searcher.segment_readers().iter().zip(&inverted_indexes) {
            let norms = segment.get_fieldnorms_reader(field)?;
            let ids: Vec<u8> = (0..segment.max_doc()).map(|doc| norms.fieldnorm_id(doc)).collect();
            term_bounds.push(TermBounds::compute(inverted, &ids, &norm_inverse)?);
            norm_ids.push(ids);
        }
        let mut order: Vec<u32> = (0..catalog.products.len() as u32).collect();
        order.sort_by(|&a, &b| catalog.products[a as usize].asin.cmp(&catalog.products[b as usize].asin));
        let mut asin_rank = vec![0u32; order.len()];
        for (rank, &product) in order.iter().enumerate() {
            asin_rank[product as usize] = rank as u32;
        }
        Ok(ProductIndex {
            reader,
            field,
            doc_to_product,
            norm_ids,
            term_bounds,
            asin_rank,
            num_docs,
            avgdl,
            norm_inverse,
        })
    }

    /// The top hits for `query` (at most [`TOP_K`]) as indices into `catalog.products`, best first,
    /// ties by asin ascending. A query with no indexable term (e.g. only stop words) finds nothing.
    pub fn search(&self, query: &str) -> Vec<usize> {
        self.search_scored(query).into_iter().map(|(i, _)| i).collect()
    }

    /// [`ProductIndex::search`] with the BM25 scores.
    pub fn search_scored(&self, query: &str) -> Vec<(usize, f32)> {
        self.search_scored_with(query, Strategy::Auto)
    }

    /// [`ProductIndex::search_scored`] computed a given way; every strategy returns the same hits
    /// in the same order with the same score bits (the tests check it).
    #[doc(hidden)]
    pub fn search_scored_with(&self, query: &str, strategy: Strategy) -> Vec<(usize, f32)> {
        // A read error from the mmapped index means the cache was damaged under us; showing no
        // results is the only thing a running episode can do about it.
        self.try_search(query, strategy).unwrap_or_default()
    }

    /// The query's distinct analysed terms in ascending order (the order a document's
    /// contributions are summed in), each with its weight `count · idf`.
    fn query_terms(&self, searcher: &tantivy::Searcher, query: &str) -> tantivy::Result<Vec<(Term, f32)>> {
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for term in Analyzer::default().terms(query) {
            *counts.entry(term).or_default() += 1;
        }
        let mut terms = Vec::with_capacity(counts.len());
        for (text, count) in counts {
            let term = Term::from_field_text(self.field, &text);
            let mut df = 0u64;
            for segment in searcher.segment_readers() {
                df += u64::from(segment.inverted_index(self.field)?.doc_freq(&term)?);
            }
            terms.push((term, count as f32 * idf(df, self.num_docs)));
        }
        Ok(terms)
    }

    fn try_search(&self, query: &str, strategy: Strategy) -> tantivy::Result<Vec<(usize, f32)>> {
        let searcher = self.reader.searcher();
        let terms = self.query_terms(&searcher, query)?;
        let mut best = TopK::default();
        for (seg_ord, segment) in searcher.segment_readers().iter().enumerate() {
            let inverted = segment.inverted_index(self.field)?;
            let norms = segment.get_fieldnorms_reader(self.field)?;
            let seg = score::Segment {
                inverted: &inverted,
                norms: &norms,
                norm_ids: &self.norm_ids[seg_ord],
                doc_to_product: &self.doc_to_product[seg_ord],
                asin_rank: &self.asin_rank,
                norm_inverse: &self.norm_inverse,
                bounds: &self.term_bounds[seg_ord],
                max_doc: segment.max_doc(),
            };
            match strategy {
                Strategy::Auto => score::document_at_a_time(&seg, &terms, Handover::Auto, &mut best)?,
                Strategy::DocumentAtATime => score::document_at_a_time(&seg, &terms, Handover::Never, &mut best)?,
                Strategy::HandOverAt(doc) => score::document_at_a_time(&seg, &terms, Handover::At(doc), &mut best)?,
                Strategy::TermAtATime => score::term_at_a_time(&seg, &terms, 0, &mut best)?,
                Strategy::Exhaustive => score::exhaustive(&seg, &terms, &mut best)?,
            }
        }
        Ok(best.into_sorted())
    }

    /// Number of indexed products.
    pub fn num_docs(&self) -> u64 {
        self.num_docs
    }

    /// Average indexed text length in terms.
    pub fn avgdl(&self) -> f32 {
        self.avgdl
    }
}

/// Lucene's BM25 idf.
fn idf(df: u64, n: u64) -> f32 {
    ((1.0 + (n as f64 - df as f64 + 0.5) / (df as f64 + 0.5)).ln()) as f32
}

/// How [`ProductIndex::search_scored_with`] scores (all give the same result; see [`score`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// What [`ProductIndex::search_scored`] does: document at a time with block-max MaxScore
    /// pruning, handing over to term at a time when that looks cheaper (from the start in a
    /// segment of at most 16,384 documents).
    Auto,
    /// Document at a time with pruning throughout.
    DocumentAtATime,
    /// Document at a time up to this doc id of each segment, term at a time from there.
    HandOverAt(u32),
    /// Term at a time over every document, in cache-sized windows.
    TermAtATime,
    /// The original scorer: every posting into one accumulator per document, every match offered.
    Exhaustive,
}

/// Indexes every product of `catalog` into `index` and commits, leaving one segment.
fn fill(index: &Index, catalog: &Catalog) -> tantivy::Result<()> {
    index.tokenizers().register(TOKENIZER_NAME, WebshopTokenizer::default());
    let schema = index.schema();
    let text = schema.get_field("text")?;
    let idx = schema.get_field("idx")?;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 4);
    let mut writer = index.writer_with_num_threads::<TantivyDocument>(threads, threads * 200_000_000)?;
    for (i, p) in catalog.products.iter().enumerate() {
        let mut doc = TantivyDocument::new();
        doc.add_text(text, product_text(p));
        doc.add_u64(idx, i as u64);
        writer.add_document(doc)?;
    }
    writer.commit()?;
    // Fewer segments mean fewer term lookups per query; one is best for a write-once index.
    let segments = index.searchable_segment_ids()?;
    if segments.len() > 1 {
        writer.merge(&segments).wait()?;
    }
    writer.wait_merging_threads()
}

/// Builds the on-disk index for `catalog` at `dir`: in a scratch directory beside it, renamed into
/// place when complete, so a crash or a concurrent build never leaves a half index under `dir`.
fn build_dir(dir: &Path, catalog: &Catalog) -> Result<(), ProductSearchError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ProductSearchError::Io { path, source }
    };
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let scratch = parent.join(format!(
        ".build-{}-{}",
        dir.file_name().and_then(|n| n.to_str()).unwrap_or("index"),
        std::process::id()
    ));
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch).map_err(io(&scratch))?;
    }
    std::fs::create_dir_all(&scratch).map_err(io(&scratch))?;
    let tantivy_err = |source| ProductSearchError::Index { path: scratch.clone(), source };
    let directory = MmapDirectory::open(&scratch).map_err(|e| tantivy_err(e.into()))?;
    let (schema, _, _) = schema();
    let index = Index::create(directory, schema, Default::default()).map_err(tantivy_err)?;
    fill(&index, catalog).map_err(tantivy_err)?;
    drop(index);
    std::fs::write(scratch.join(COMPLETE_MARKER), format!("{} products\n", catalog.products.len()))
        .map_err(io(&scratch))?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io(dir))?;
    }
    if std::fs::rename(&scratch, dir).is_err() {
        // Another process finished the same build first; its index is as good as ours.
        let _ = std::fs::remove_dir_all(&scratch);
        if !dir.join(COMPLETE_MARKER).is_file() {
            return Err(ProductSearchError::Io {
                path: dir.to_owned(),
                source: std::io::Error::other("could not move the built index into place"),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn search_index_is_shareable() {
        assert_send_sync::<ProductIndex>();
    }
}
