//! The token store's read costs: opening a store (its index only) and reading one step's tokens, on a store
//! of many long steps with every channel, beside a store of as many steps of a few tokens each (opening
//! costs the same: the tokens stay on disk).
//!
//! Goal (issue 24): one step read in under 10 ms; opening independent of the store's bytes.
//!
//! Run with `cargo bench --bench tokens` (add `-- STEPS TOKENS` for the store's shape, default 4,000 steps of
//! 2,048 tokens: 8.2 M tokens, about 360 MB). The store is written to a temporary directory (or
//! `GIGSCOPE_BENCH_DIR`), read with a warm page cache (the file was just written).

use std::path::Path;
use std::time::{Duration, Instant};

use gigscope::run::tokens::{Channel, StepRecord, StepTokens, TokenStore, TokenWriter};

/// Steps per chunk file (one chunk per training iteration of 256 responses).
const STEPS_PER_CHUNK: usize = 256;

fn step_tokens(n: usize, seed: usize) -> StepTokens {
    let words: Vec<String> = (0..n).map(|i| format!(" t{}", (i * 7 + seed) % 5000)).collect();
    let texts: Vec<Option<&str>> = words.iter().map(|w| Some(w.as_str())).collect();
    let value = |k: usize| -> Vec<Option<f32>> { (0..n).map(|i| Some(((i + seed + k) % 97) as f32 * -0.01)).collect() };
    let mut t = StepTokens::new((0..n).map(|i| ((i * 31 + seed) % 150_000) as i32).collect(), vec![true; n], &texts);
    for (k, channel) in Channel::ALL.into_iter().enumerate() {
        t = t.with(channel, value(k));
    }
    t
}

fn write_store(dir: &Path, steps: usize, tokens: usize) -> u64 {
    let mut writer = TokenWriter::create(dir).unwrap();
    let ids: Vec<String> = (0..steps).map(|s| format!("it{}-g{}-e{}", s / STEPS_PER_CHUNK, s % 32, s)).collect();
    for (c, chunk) in (0..steps).collect::<Vec<_>>().chunks(STEPS_PER_CHUNK).enumerate() {
        let made: Vec<StepTokens> = chunk.iter().map(|&s| step_tokens(tokens, s)).collect();
        let records: Vec<StepRecord> = chunk
            .iter()
            .zip(&made)
            .map(|(&s, t)| StepRecord { episode: &ids[s], step: 0, iteration: Some(c as i64), tokens: t })
            .collect();
        writer.append(&format!("iteration-{c:06}.bin"), &records).unwrap();
    }
    std::fs::read_dir(dir.join("tokens")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn measure(dir: &Path, steps: usize, tokens: usize) -> (Duration, [Duration; 3]) {
    let bytes = write_store(dir, steps, tokens);
    let mut opens: Vec<Duration> = (0..5)
        .map(|_| {
            let start = Instant::now();
            let store = TokenStore::open(dir).unwrap();
            let took = start.elapsed();
            assert_eq!(store.episode_count(), steps);
            took
        })
        .collect();
    opens.sort();
    let store = TokenStore::open(dir).unwrap();
    let mut reads = Vec::new();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..1000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let s = (state % steps as u64) as usize;
        let id = format!("it{}-g{}-e{}", s / STEPS_PER_CHUNK, s % 32, s);
        let start = Instant::now();
        let t = store.read(&id, 0).unwrap().unwrap();
        reads.push(start.elapsed());
        assert_eq!(t.len(), tokens);
    }
    reads.sort();
    println!(
        "{steps} steps x {tokens} tokens ({:.1} M tokens, {:.0} MB): open {:.1} ms (median of 5); one step read p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        (steps * tokens) as f64 / 1e6,
        bytes as f64 / 1e6,
        quantile(&opens, 0.5).as_secs_f64() * 1e3,
        quantile(&reads, 0.5).as_secs_f64() * 1e3,
        quantile(&reads, 0.99).as_secs_f64() * 1e3,
        reads[reads.len() - 1].as_secs_f64() * 1e3,
    );
    (quantile(&opens, 0.5), [quantile(&reads, 0.5), quantile(&reads, 0.99), reads[reads.len() - 1]])
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let steps = args.first().copied().unwrap_or(4000);
    let tokens = args.get(1).copied().unwrap_or(2048);
    let base = std::env::var_os("GIGSCOPE_BENCH_DIR").map(std::path::PathBuf::from);
    let large = match &base {
        Some(b) => tempfile::tempdir_in(b),
        None => tempfile::tempdir(),
    }
    .unwrap();
    let (open_large, _) = measure(large.path(), steps, tokens);
    drop(large);
    let small = tempfile::tempdir().unwrap();
    let (open_small, _) = measure(small.path(), steps, 16);
    println!(
        "opening the large store took {:.2}x the time of opening the small one (same steps, {}x the tokens)",
        open_large.as_secs_f64() / open_small.as_secs_f64(),
        tokens / 16
    );
}
