//! Search benchmark: index build time and query latency (p50/p99) on generated catalogs.
//!
//! `cargo bench --no-default-features --bench search` runs 1k and 100k products;
//! `GIGSCOPE_BENCH_SIZES=1000,100000,1181436` picks the sizes (1.18 M is WebShop's full catalog).
//! Queries: the real ones people typed (`../shared/webshop/goal_query_map.json`, when present)
//! and the generated products' own `query` fields.
//!
//! `GIGSCOPE_BENCH_ROUNDS=R` measures each query set R times over (default 1) and prints every
//! round's p50 and their median, for side-by-side comparisons on a shared machine.
//!
//! Each size works in a fresh temporary directory, so every run generates and indexes from
//! scratch. With `GIGSCOPE_BENCH_DIR=DIR` the generated catalogs (`DIR/catalog-N`) and their index
//! cache (`DIR/cache`) are kept and reused by later runs; the build time printed is then that of
//! opening the cached index.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gigscope::webshop::catalog::Catalog;
use gigscope::webshop::product_search::ProductIndex;
use gigscope::webshop::synthetic_catalog as gen;

fn real_queries() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/webshop/goal_query_map.json");
    let Ok(text) = std::fs::read_to_string(&path) else { return Vec::new() };
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str(&text) else { return Vec::new() };
    map.values().filter_map(|v| v.as_array()).flatten().filter_map(|q| q.as_str().map(str::to_owned)).collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn measure(index: &ProductIndex, queries: &[String]) -> (Duration, Duration, Duration) {
    // One warm-up pass so page-cache misses on a fresh mmap do not count as query time.
    for q in queries.iter().take(200) {
        std::hint::black_box(index.search(q));
    }
    let mut times: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            std::hint::black_box(index.search(q));
            t.elapsed()
        })
        .collect();
    times.sort();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    (percentile(&times, 0.5), percentile(&times, 0.99), mean)
}

fn main() {
    let sizes: Vec<usize> = std::env::var("GIGSCOPE_BENCH_SIZES")
        .unwrap_or_else(|_| "1000,100000".to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let real = real_queries();
    let keep = std::env::var_os("GIGSCOPE_BENCH_DIR").filter(|d| !d.is_empty()).map(PathBuf::from);
    for n in sizes {
        let temp = tempfile::tempdir().expect("temp dir");
        let work = keep.clone().unwrap_or_else(|| temp.path().to_owned());
        let data = work.join(format!("catalog-{n}"));
        let done = data.join("generated");
        let t = Instant::now();
        if !done.is_file() {
            gen::generate(&data, n, 1).expect("generate");
            std::fs::write(&done, b"").expect("marker");
        }
        let gen_time = t.elapsed();
        let t = Instant::now();
        let catalog = Catalog::load(&data, 0).expect("load");
        let load_time = t.elapsed();
        let cache = work.join("cache");
        let t = Instant::now();
        let index = ProductIndex::open_or_build(&catalog, Some(&cache)).expect("build");
        let build_time = t.elapsed();
        drop(index);
        let t = Instant::now();
        let index = ProductIndex::open_or_build(&catalog, Some(&cache)).expect("reopen");
        let reopen_time = t.elapsed();
        println!(
            "{n} products: generate {:.1?}, load {:.1?}, index build {:.1?}, reopen from cache {:.1?}",
            gen_time, load_time, build_time, reopen_time
        );
        let own: Vec<String> = catalog.products.iter().step_by((n / 2000).max(1)).map(|p| p.query.clone()).collect();
        let rounds: usize =
            std::env::var("GIGSCOPE_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1).max(1);
        for (name, queries) in [("real WebShop queries", &real), ("catalog queries", &own)] {
            if queries.is_empty() {
                continue;
            }
            let (p50, p99, mean) = measure(&index, queries);
            println!("  {name} ({}): p50 {:.3?}, p99 {:.3?}, mean {:.3?}", queries.len(), p50, p99, mean);
            if rounds > 1 {
                let mut p50s = vec![p50];
                p50s.extend((1..rounds).map(|_| measure(&index, queries).0));
                let text: Vec<String> = p50s.iter().map(|d| format!("{d:.1?}")).collect();
                p50s.sort();
                println!("    p50 of {rounds} rounds: {}; median {:.1?}", text.join(" "), p50s[rounds / 2]);
            }
        }
    }
}
