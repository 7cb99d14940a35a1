//! gigscope's WebShop search against the original engine itself: pyserini 0.17.0 (Anserini 0.14.3,
//! Lucene 8.11) run by `scripts/pyserini-oracle` over the real products (`products_394.json`) and
//! every distinct real human query (`goal_query_map.json`), its answers cached as JSON in
//! `target/oracles/pyserini/` (`./scripts/dev test` makes them before `cargo test`).
//!
//! - the products' indexed text, Lucene's raw tokens and analysed terms, for every product, query
//!   and probe text (`tests/oracles/pyserini/probes.txt`);
//! - the tokenizer's cuts around every Unicode code point in a set of short texts;
//! - per query, the top 50 asins in order, each score's bits against Lucene's own score, and the
//!   score WebShop gets (Anserini rounds it to 1e-4).

use std::path::PathBuf;

use gigscope::webshop::catalog::Catalog;
use gigscope::webshop::product_search::analysis::Analyzer;
use gigscope::webshop::product_search::{product_text, tokenizer, ProductIndex};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn shared() -> PathBuf {
    root().join("../shared/webshop")
}

/// One of the oracle's JSON files; a missing oracle fails the test, it is never skipped.
fn oracle(name: &str) -> Value {
    let dir = root().join("target/oracles/pyserini");
    let missing = |what: String| -> ! {
        panic!(
            "{what}: the pyserini oracle is missing or incomplete; make it with `scripts/pyserini-oracle` \
             (`./scripts/dev test` runs it before cargo test)"
        )
    };
    if !dir.join("KEY").is_file() {
        missing(format!("{} not found", dir.join("KEY").display()));
    }
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| missing(format!("{}: {e}", path.display())));
    serde_json::from_str(&text).unwrap_or_else(|e| missing(format!("{}: {e}", path.display())))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().expect("array").iter().map(|s| s.as_str().expect("string").to_owned()).collect()
}

/// Compares gigscope's raw tokens and analysed terms of `text` with Lucene's; returns a description of
/// the first difference.
fn compare_analysis(analyzer: &mut Analyzer, text: &str, entry: &Value) -> Option<String> {
    let tokens: Vec<String> = tokenizer::tokens(text).into_iter().map(str::to_owned).collect();
    let want_tokens = strings(&entry["tokens"]);
    if tokens != want_tokens {
        let i = tokens.iter().zip(&want_tokens).take_while(|(a, b)| a == b).count();
        return Some(format!(
            "tokens differ at #{i}: gigscope {:?}, Lucene {:?}",
            &tokens[i..(i + 3).min(tokens.len())],
            &want_tokens[i..(i + 3).min(want_tokens.len())]
        ));
    }
    let terms = analyzer.terms(text);
    let want_terms = strings(&entry["terms"]);
    if terms != want_terms {
        let i = terms.iter().zip(&want_terms).take_while(|(a, b)| a == b).count();
        return Some(format!(
            "terms differ at #{i}: gigscope {:?}, Lucene {:?}",
            &terms[i..(i + 3).min(terms.len())],
            &want_terms[i..(i + 3).min(want_terms.len())]
        ));
    }
    None
}

#[test]
fn analysis_matches_lucene_on_products_queries_and_probes() {
    let catalog = Catalog::load(&shared(), 0).expect("catalog");
    let analysis = oracle("analysis.json");
    let mut analyzer = Analyzer::default();
    let mut failures = Vec::new();
    let products = analysis["products"].as_array().expect("products");
    assert_eq!(products.len(), catalog.products.len());
    let (mut tokens, mut emoji) = (0usize, std::collections::BTreeSet::new());
    for entry in products {
        let asin = entry["asin"].as_str().expect("asin");
        let product = catalog.products.iter().find(|p| p.asin == asin).unwrap_or_else(|| panic!("no product {asin}"));
        let text = entry["text"].as_str().expect("text");
        if product_text(product) != text {
            failures.push(format!("product {asin}: indexed text differs from WebShop's"));
            continue;
        }
        if let Some(diff) = compare_analysis(&mut analyzer, text, entry) {
            failures.push(format!("product {asin}: {diff}"));
        }
        for t in strings(&entry["tokens"]) {
            tokens += 1;
            if !t.chars().any(char::is_alphanumeric) {
                emoji.insert(t);
            }
        }
    }
    for (kind, key) in [("queries", "query"), ("probes", "text")] {
        for entry in analysis[kind].as_array().expect(kind) {
            let text = entry[key].as_str().expect("text");
            if let Some(diff) = compare_analysis(&mut analyzer, text, entry) {
                failures.push(format!("{kind} {text:?}: {diff}"));
            }
        }
    }
    eprintln!(
        "{} products ({tokens} Lucene tokens, {} distinct without a letter or digit), {} queries, {} probes",
        products.len(),
        emoji.len(),
        analysis["queries"].as_array().map_or(0, Vec::len),
        analysis["probes"].as_array().map_or(0, Vec::len)
    );
    assert!(failures.is_empty(), "{} differences from Lucene:\n{}", failures.len(), failures.join("\n"));
}

/// The token spans (code point offsets) of `text`, as the oracle writes them.
fn spans(text: &str) -> String {
    let mut out = Vec::new();
    tokenizer::for_each_token(text, |a, b| {
        let start = text[..a].chars().count();
        out.push(format!("{start}-{}", start + text[a..b].chars().count()));
    });
    out.join(",")
}

#[test]
fn tokenizer_cuts_like_lucene_around_every_code_point() {
    let sweep = oracle("sweep.json");
    let templates = strings(&sweep["templates"]);
    let signatures = strings(&sweep["signatures"]);
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for range in sweep["ranges"].as_array().expect("ranges") {
        let r: Vec<u64> = range.as_array().expect("range").iter().map(|v| v.as_u64().expect("number")).collect();
        let want = &signatures[r[2] as usize];
        for cp in r[0]..=r[1] {
            let Some(c) = char::from_u32(cp as u32) else { continue };
            let mut buf = [0u8; 4];
            let c = &*c.encode_utf8(&mut buf);
            let got: Vec<String> = templates.iter().map(|t| spans(&t.replace("{c}", c))).collect();
            let got = got.join("|");
            checked += 1;
            if &got != want && failures.len() < 40 {
                failures.push(format!("U+{cp:04X}: gigscope {got}\n           Lucene   {want}"));
            }
        }
    }
    eprintln!("{checked} code points × {} texts", templates.len());
    assert!(checked > 1_100_000);
    assert!(failures.is_empty(), "differences from Lucene (first 40):\n{}", failures.join("\n"));
}

/// Anserini's `ScoreTiesAdjusterReranker` (0.14.3), which pyserini applies before returning hits:
/// each score rounded to 1e-4 in `double` (`(float) (Math.round(s * 10000.0) / 10000.0)`), and a
/// score within 1e-4 of the one above it lowered by 1e-6 (`float`) per tie. The order stays.
fn anserini_scores(scores: &[f32]) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::with_capacity(scores.len());
    let mut dup = 0;
    for (i, &s) in scores.iter().enumerate() {
        // Java's Math.round(double) is floor(x + 1/2), exactly: for x ≥ 0, Rust's round.
        let mut x = ((f64::from(s) * 10000.0).round() / 10000.0) as f32;
        if i == 0 || out[i - 1] - x > 1e-4f32 {
            dup = 0;
        } else {
            dup += 1;
            x -= 1e-6f32 * dup as f32;
        }
        out.push(x);
    }
    out
}

#[test]
fn search_matches_pyserini_on_every_human_query() {
    let catalog = Catalog::load(&shared(), 0).expect("catalog");
    let index = ProductIndex::build_in_memory(&catalog).expect("index");
    let search = oracle("search.json");
    let queries = search["queries"].as_array().expect("queries");
    assert_eq!(queries.len(), 2134, "distinct real human queries");
    let (mut same_order, mut same_bits, mut same_reported, mut hits_total) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for entry in queries {
        let q = entry["query"].as_str().expect("query");
        let want: Vec<(String, f32)> = entry["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .map(|h| (h[0].as_str().expect("asin").to_owned(), h[1].as_f64().expect("score") as f32))
            .collect();
        let want_bits: Vec<u32> =
            entry["lucene_bits"].as_array().expect("bits").iter().map(|b| b.as_u64().expect("bits") as u32).collect();
        let got = index.search_scored(q);
        hits_total += got.len();
        let got_asins: Vec<&str> = got.iter().map(|&(i, _)| catalog.products[i].asin.as_str()).collect();
        let want_asins: Vec<&str> = want.iter().map(|(a, _)| a.as_str()).collect();
        if got_asins != want_asins {
            let i = got_asins.iter().zip(&want_asins).take_while(|(a, b)| a == b).count();
            failures.push(format!(
                "{q:?}: ranks differ from #{i}: gigscope {:?} ({} hits), pyserini {:?} ({} hits)",
                &got_asins[i..(i + 3).min(got_asins.len())],
                got_asins.len(),
                &want_asins[i..(i + 3).min(want_asins.len())],
                want_asins.len()
            ));
            continue;
        }
        same_order += 1;
        let bits: Vec<u32> = got.iter().map(|&(_, s)| s.to_bits()).collect();
        if bits == want_bits {
            same_bits += 1;
        } else {
            let i = bits.iter().zip(&want_bits).take_while(|(a, b)| a == b).count();
            failures.push(format!(
                "{q:?}: score of #{i} ({}) is {} here, {} in Lucene",
                want_asins[i],
                f32::from_bits(bits[i]),
                f32::from_bits(want_bits[i])
            ));
        }
        let scores: Vec<f32> = got.iter().map(|&(_, s)| s).collect();
        let reported: Vec<f32> = want.iter().map(|&(_, s)| s).collect();
        if anserini_scores(&scores) == reported {
            same_reported += 1;
        } else {
            failures.push(format!("{q:?}: Anserini's rounding of our scores differs from pyserini's scores"));
        }
    }
    eprintln!(
        "{} queries ({hits_total} hits): same top 50 in the same order {same_order}, Lucene's score bits {same_bits}, \
         pyserini's reported scores {same_reported}",
        queries.len()
    );
    assert!(failures.is_empty(), "{} differences from pyserini:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn anserini_rounding_of_ties() {
    assert_eq!(
        anserini_scores(&[23.439316, 22.087432, 22.087432, 21.602508]),
        [23.4393, 22.0874, 22.0874 - 1e-6, 21.6025]
    );
}
