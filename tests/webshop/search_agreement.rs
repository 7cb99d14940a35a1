//! How closely the tantivy-backed Lucene BM25 ranks like the exact reference, on the real queries
//! people typed (`goal_query_map.json`) over the real products (`products_394.json`).
//!
//! The two differ only in the document length: the index scores with the one-byte fieldnorm
//! (Lucene's own quantisation), the reference with the exact count, and in f32 vs f64.

use std::path::PathBuf;

use gigscope::webshop::catalog::Catalog;
use gigscope::webshop::product_search::reference::ReferenceBm25;
use gigscope::webshop::product_search::ProductIndex;

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/webshop")
}

fn real_queries() -> Vec<String> {
    let text = std::fs::read_to_string(shared().join("goal_query_map.json")).expect("goal_query_map.json");
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).expect("json object");
    let mut queries: Vec<String> =
        map.values().filter_map(|v| v.as_array()).flatten().filter_map(|q| q.as_str().map(str::to_owned)).collect();
    queries.sort();
    queries.dedup();
    queries
}

#[test]
fn index_ranks_like_the_exact_reference() {
    let catalog = Catalog::load(&shared(), 0).expect("catalog");
    let index = ProductIndex::build_in_memory(&catalog).expect("index");
    let reference = ReferenceBm25::new(&catalog);
    let queries = real_queries();
    assert!(queries.len() > 2000, "{} queries", queries.len());

    let (mut overlap_sum, mut same_top10, mut same_first, mut same_set50, mut with_hits) = (0.0, 0, 0, 0, 0);
    let mut max_rel_score_diff = 0f64;
    for q in &queries {
        let got = index.search_scored(q);
        let want = reference.search_scored(q);
        assert_eq!(got.is_empty(), want.is_empty(), "query {q:?}");
        if want.is_empty() {
            continue;
        }
        with_hits += 1;
        // Same matching documents: the candidate sets only differ by the cut at 50.
        assert_eq!(got.len(), want.len(), "query {q:?}");
        let g10: Vec<usize> = got.iter().take(10).map(|h| h.0).collect();
        let w10: Vec<usize> = want.iter().take(10).map(|h| h.0).collect();
        overlap_sum += g10.iter().filter(|d| w10.contains(d)).count() as f64 / w10.len() as f64;
        same_top10 += usize::from(g10 == w10);
        same_first += usize::from(g10[0] == w10[0]);
        let mut g50: Vec<usize> = got.iter().map(|h| h.0).collect();
        let mut w50: Vec<usize> = want.iter().map(|h| h.0).collect();
        g50.sort_unstable();
        w50.sort_unstable();
        same_set50 += usize::from(g50 == w50);
        for (doc, score) in &got {
            if let Some((_, exact)) = want.iter().find(|(d, _)| d == doc) {
                max_rel_score_diff = max_rel_score_diff.max((f64::from(*score) - exact).abs() / exact);
            }
        }
    }
    let n = with_hits as f64;
    let mean_overlap = overlap_sum / n;
    eprintln!(
        "{with_hits} queries with hits: mean top-10 overlap {:.4}, identical top-10 {:.4}, same first hit {:.4}, same top-50 set {:.4}, max relative score difference {:.4}",
        mean_overlap,
        same_top10 as f64 / n,
        same_first as f64 / n,
        same_set50 as f64 / n,
        max_rel_score_diff
    );
    assert!(mean_overlap >= 0.97, "mean top-10 overlap {mean_overlap}");
    assert!(same_first as f64 / n >= 0.9, "same first hit {}", same_first as f64 / n);
    // The length quantisation moves a document's length by at most 1/8 past 40 terms, which bounds
    // the per-term score change well below this.
    assert!(max_rel_score_diff < 0.15, "max relative score difference {max_rel_score_diff}");
}
