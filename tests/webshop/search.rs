//! The search index on real products: what it finds, tie order, paging data, and the on-disk
//! cache (built once, reused, rebuilt when damaged).

use std::path::{Path, PathBuf};

use gigscope::webshop::catalog::{Catalog, Product};
use gigscope::webshop::product_search::{catalog_key, product_text, ProductIndex, Strategy, TOP_K};

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/webshop")
}

fn product(asin: &str, title: &str) -> Product {
    Product {
        asin: asin.to_owned(),
        title: title.to_owned(),
        description: String::new(),
        bullet_points: vec![String::new()],
        category: "beauty".to_owned(),
        product_category: String::new(),
        query: String::new(),
        price_text: "$1.0".to_owned(),
        prices: vec![1.0],
        price: 1.0,
        options: Vec::new(),
        attributes: Vec::new(),
        instruction: None,
        instruction_attributes: Vec::new(),
        title_nouns: None,
    }
}

#[test]
fn indexed_text_is_the_originals() {
    let mut p = product("A1", "Soft Shoe");
    p.description = "Great".to_owned();
    p.bullet_points = vec!["First".to_owned(), "Second".to_owned()];
    p.options = vec![
        ("color".to_owned(), vec!["red".to_owned(), "blue".to_owned()]),
        ("size".to_owned(), vec!["7".to_owned()]),
    ];
    assert_eq!(product_text(&p), "soft shoe great first color: red, blue, and size: 7");
}

#[test]
fn finds_real_products_by_their_words() {
    let catalog = Catalog::load(&shared(), 0).expect("catalog");
    let index = ProductIndex::build_in_memory(&catalog).expect("index");
    assert_eq!(index.num_docs(), 394);
    let hits = index.search("garden top soil");
    assert!(!hits.is_empty() && hits.len() <= TOP_K);
    assert_eq!(catalog.products[hits[0]].asin, "B000GQ4KX6");
    // Stemming and possessives: "soils" and "soil's" find the same product as "soil".
    assert_eq!(index.search("Garden Soils")[0], hits[0]);
    assert_eq!(index.search("garden soil's")[0], hits[0]);
    // Only stop words: nothing to search for.
    assert!(index.search("the and of").is_empty());
    assert!(index.search("").is_empty());
    assert!(index.search("zzzqqqxxx").is_empty());
    // Broad queries are cut at 50.
    assert_eq!(index.search("women men black white size").len(), TOP_K);
}

#[test]
fn equal_scores_are_ordered_by_asin() {
    let catalog = Catalog::from_products(vec![
        product("C3", "red lamp"),
        product("A1", "red lamp"),
        product("B2", "red lamp"),
        product("D4", "red red lamp shade extra words"),
    ]);
    let index = ProductIndex::build_in_memory(&catalog).expect("index");
    let asins: Vec<&str> = index.search("red lamp").iter().map(|&i| catalog.products[i].asin.as_str()).collect();
    assert_eq!(&asins[..3], ["A1", "B2", "C3"]);
    assert_eq!(asins.len(), 4);
}

#[test]
fn ties_at_the_cut_are_decided_by_asin_whatever_the_strategy() {
    // 400 products in a handful of texts: runs of equal scores straddle the 50th place, and the
    // asins are out of document order. Every strategy must cut them as the exhaustive scorer does.
    let texts = ["red lamp", "red lamp shade", "red red lamp", "lamp", "blue lamp red", "red"];
    let products: Vec<Product> =
        (0..400).map(|i| product(&format!("A{:05}", (i * 7919) % 400), texts[i % texts.len()])).collect();
    let catalog = Catalog::from_products(products);
    let index = ProductIndex::build_in_memory(&catalog).expect("index");
    let bits = |hits: Vec<(usize, f32)>| hits.into_iter().map(|(p, s)| (p, s.to_bits())).collect::<Vec<_>>();
    for q in ["red lamp", "lamp", "red", "red red lamp", "shade", "blue red", "lamp lamp red shade"] {
        let want = bits(index.search_scored_with(q, Strategy::Exhaustive));
        for strategy in [Strategy::Auto, Strategy::DocumentAtATime, Strategy::TermAtATime, Strategy::HandOverAt(150)] {
            assert_eq!(bits(index.search_scored_with(q, strategy)), want, "{q:?} {strategy:?}");
        }
    }
    // Best first, equal scores by asin ascending.
    let hits = index.search_scored("lamp");
    assert_eq!(hits.len(), TOP_K);
    for pair in hits.windows(2) {
        let (a, b) = (&catalog.products[pair[0].0], &catalog.products[pair[1].0]);
        assert!(pair[0].1 > pair[1].1 || (pair[0].1 == pair[1].1 && a.asin < b.asin), "{} then {}", a.asin, b.asin);
    }
}

fn index_dirs(cache: &Path) -> Vec<PathBuf> {
    let root = cache.join("webshop-search");
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(&root).map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect()).unwrap_or_default();
    dirs.sort();
    dirs
}

#[test]
fn cached_index_is_built_once_and_rebuilt_when_damaged() {
    let catalog = Catalog::load(&shared(), 0).expect("catalog");
    let cache = tempfile::tempdir().expect("temp dir");
    let memory = ProductIndex::build_in_memory(&catalog).expect("in memory");

    let first = ProductIndex::open_or_build(&catalog, Some(cache.path())).expect("build");
    let dirs = index_dirs(cache.path());
    assert_eq!(dirs, vec![cache.path().join("webshop-search").join(catalog_key(&catalog))]);
    let marker = dirs[0].join("gigscope-complete");
    let built_at = std::fs::metadata(&marker).and_then(|m| m.modified()).expect("marker");
    for q in ["garden soil", "women's sandals size 8", "long lasting lipstick"] {
        assert_eq!(first.search_scored(q), memory.search_scored(q), "{q}");
    }
    drop(first);

    // Reopening uses the cached files as they are.
    let second = ProductIndex::open_or_build(&catalog, Some(cache.path())).expect("reopen");
    assert_eq!(std::fs::metadata(&marker).and_then(|m| m.modified()).expect("marker"), built_at);
    assert_eq!(second.search("garden soil"), memory.search("garden soil"));
    drop(second);

    // Damage: tantivy's meta file replaced by garbage. The index is rebuilt and works.
    std::fs::write(dirs[0].join("meta.json"), b"not json").expect("damage");
    let third = ProductIndex::open_or_build(&catalog, Some(cache.path())).expect("rebuild");
    assert_eq!(third.search("garden soil"), memory.search("garden soil"));
    assert_eq!(index_dirs(cache.path()).len(), 1, "no scratch directories left behind");

    // A half-built index (no completion marker) is rebuilt too.
    drop(third);
    std::fs::remove_file(&marker).expect("remove marker");
    let fourth = ProductIndex::open_or_build(&catalog, Some(cache.path())).expect("rebuild");
    assert!(marker.is_file());
    assert_eq!(fourth.search("garden soil"), memory.search("garden soil"));

    // Another catalog gets its own key, and so does any change to an indexed field.
    let other = Catalog::from_products(catalog.products[..10].to_vec());
    assert_ne!(catalog_key(&other), catalog_key(&catalog));
    let mut edited = other.clone();
    edited.products[3].options.push(("color".to_owned(), vec!["teal".to_owned()]));
    assert_ne!(catalog_key(&edited), catalog_key(&other));
    let mut priced = other.clone();
    priced.products[3].price_text = "$0.5".to_owned();
    assert_eq!(catalog_key(&priced), catalog_key(&other), "the price is not indexed");
    ProductIndex::open_or_build(&other, Some(cache.path())).expect("other");
    assert_eq!(index_dirs(cache.path()).len(), 2);
}
