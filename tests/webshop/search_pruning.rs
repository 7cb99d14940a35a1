//! The pruned search returns exactly what scoring every posting of every term returns (the
//! original scorer, kept as `Strategy::Exhaustive`): the same products, in the same order, with
//! bit-identical scores, ties cut by asin the same way. So do its parts on their own: document at
//! a time throughout, term at a time throughout, and document at a time handing over to term at a
//! time at a given document. Checked on the real products, the demo catalog and a larger generated
//! catalog, with the real queries people typed, the catalogs' own queries, titles and
//! instructions, and random bags of catalog words (repeats, stop words and unknown words included).

use std::collections::BTreeSet;
use std::path::PathBuf;

use gigscope::webshop::catalog::Catalog;
use gigscope::webshop::product_search::{product_text, ProductIndex, Strategy, TOP_K};
use gigscope::webshop::synthetic_catalog as gen;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/webshop")
}

fn real_queries() -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(shared().join("goal_query_map.json")) else { return Vec::new() };
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).expect("json object");
    let set: BTreeSet<String> =
        map.values().filter_map(|v| v.as_array()).flatten().filter_map(|q| q.as_str().map(str::to_owned)).collect();
    set.into_iter().collect()
}

/// The catalog's own queries and instructions, every `step`-th product.
fn catalog_queries(catalog: &Catalog, step: usize) -> Vec<String> {
    let mut out = Vec::new();
    for p in catalog.products.iter().step_by(step.max(1)) {
        out.push(p.query.clone());
        out.push(p.title.clone());
        out.extend(p.instruction.clone());
    }
    out
}

/// Random bags of 1 to 14 words drawn from the products' texts, with stop words, unknown words
/// and repeats (a repeated word is a boost).
fn random_queries(catalog: &Catalog, n: usize, seed: u64) -> Vec<String> {
    let mut words: BTreeSet<String> = BTreeSet::new();
    for p in catalog.products.iter().take(3000) {
        words.extend(product_text(p).split_whitespace().map(str::to_owned));
    }
    let words: Vec<String> = words.into_iter().collect();
    let extra = ["the", "and", "of", "a", "zzqx", "size", "size", "black", "women's", "men", "pack"];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let len = rng.random_range(1..=14);
            let mut q: Vec<&str> = Vec::with_capacity(len);
            for _ in 0..len {
                let w = if rng.random_bool(0.15) {
                    extra.choose(&mut rng).copied()
                } else {
                    words.choose(&mut rng).map(String::as_str)
                };
                q.extend(w);
                if rng.random_bool(0.1) {
                    q.push(q[q.len() - 1]);
                }
            }
            q.join(" ")
        })
        .collect()
}

fn bits(hits: &[(usize, f32)]) -> Vec<(usize, u32)> {
    hits.iter().map(|&(p, s)| (p, s.to_bits())).collect()
}

/// Every query, every strategy == exhaustive, bit for bit. Returns how many queries filled all
/// TOP_K slots.
fn assert_same(index: &ProductIndex, queries: &[String]) -> usize {
    let n = index.num_docs() as u32;
    let strategies = [
        Strategy::Auto,
        Strategy::DocumentAtATime,
        Strategy::TermAtATime,
        Strategy::HandOverAt(n / 7),
        Strategy::HandOverAt(n / 2 + 1),
    ];
    let mut full = 0;
    for q in queries {
        let exhaustive = bits(&index.search_scored_with(q, Strategy::Exhaustive));
        for strategy in strategies {
            assert_eq!(bits(&index.search_scored_with(q, strategy)), exhaustive, "query {q:?}, {strategy:?}");
        }
        assert_eq!(bits(&index.search_scored(q)), exhaustive, "query {q:?}");
        assert_eq!(index.search(q), exhaustive.iter().map(|h| h.0).collect::<Vec<_>>(), "query {q:?}");
        full += usize::from(exhaustive.len() == TOP_K);
    }
    full
}

/// The real queries, the catalog's own (every `step`-th product) and `random` random ones.
fn check(index: &ProductIndex, catalog: &Catalog, step: usize, random: usize, seed: u64) {
    let mut queries = real_queries();
    queries.extend(catalog_queries(catalog, step));
    queries.extend(random_queries(catalog, random, seed));
    let full = assert_same(index, &queries);
    assert!(full > 1000, "only {full} queries reached {TOP_K} hits: the pruning was hardly exercised");
}

#[test]
fn every_strategy_equals_exhaustive_on_the_real_products() {
    let catalog = Catalog::load(&shared(), 0).expect("catalog");
    assert!(real_queries().len() > 2000, "the real queries are missing");
    check(&ProductIndex::build_in_memory(&catalog).expect("index"), &catalog, 1, 3000, 1);
}

#[test]
fn every_strategy_equals_exhaustive_on_the_demo_catalog() {
    let catalog = Catalog::embedded_demo().expect("demo catalog");
    check(&ProductIndex::build_in_memory(&catalog).expect("index"), &catalog, 1, 3000, 2);
}

#[test]
fn every_strategy_equals_exhaustive_on_a_generated_catalog() {
    // Large enough for many exact ties, long posting lists (hundreds of 128-posting blocks), and
    // for the automatic hand-over to term at a time (checked every 32,768 documents).
    let dir = tempfile::tempdir().expect("temp dir");
    gen::generate(dir.path(), 80_000, 7).expect("generate");
    let catalog = Catalog::load(dir.path(), 0).expect("load");
    check(
        &ProductIndex::open_or_build(&catalog, Some(&dir.path().join("cache"))).expect("index"),
        &catalog,
        200,
        1500,
        3,
    );
}
