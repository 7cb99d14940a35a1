//! Trajectory index and live watcher figures on a generated run (default 100,000 episodes, ~1.5 M steps):
//! index build, query latency, an incremental update, and the delay from an appended line to its event.
//!
//! `cargo bench --no-default-features --bench index` (set `GIGSCOPE_BENCH_EPISODES` for another size).
//! A bench binary rather than criterion: building the index once takes minutes, so it is timed once.

use std::fs::OpenOptions;
use std::io::Write;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use gigscope::advantage::{compute, AdvantageSettings};
use gigscope::index::TrajectoryIndex;
use gigscope::live::{self, LiveEvent, WatchOptions, Watcher};
use gigscope::run::{Episode, Outcome, Step, Task, EPISODES_FILE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const WORDS: &[&str] = &[
    "red", "blue", "black", "white", "green", "running", "shoes", "boots", "sneakers", "women", "men", "size",
    "leather", "cotton", "shirt", "dress", "jacket", "waterproof", "lightweight", "price", "dollars", "pack",
    "organic", "coffee", "tea", "gluten", "free", "snack", "bar", "chocolate", "phone", "case", "charger",
    "wireless", "headphones", "bluetooth", "speaker", "portable", "lamp", "desk", "chair", "ergonomic", "small",
    "large", "medium", "soft", "hard", "set", "kit", "travel", "bag", "backpack", "water", "bottle", "steel",
];

fn words(rng: &mut ChaCha8Rng, n: usize) -> String {
    (0..n).map(|_| WORDS[rng.random_range(0..WORDS.len())]).collect::<Vec<_>>().join(" ")
}

/// WebShop-shaped episodes: groups of 8 trajectories of one task, 1–29 steps (mean 15), search / results /
/// item pages, success about a third of the time with reward 10 on the last step.
fn generate(episodes: usize, seed: u64) -> Vec<Episode> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(episodes);
    let mut instruction = String::new();
    for e in 0..episodes {
        let group = e / 8;
        if e % 8 == 0 {
            instruction = format!("i need {} under {} dollars", words(&mut rng, 5), rng.random_range(10..100));
        }
        let len = rng.random_range(1..=29);
        let success = rng.random_bool(0.33);
        let steps = (0..len)
            .map(|t| {
                let (page, observation, action) = match t {
                    0 => ("search", "Search".to_string(), format!("search[{}]", words(&mut rng, 3))),
                    t if t + 1 == len => (
                        "item",
                        format!("Item B0{:05} [SEP] {} [SEP] Buy Now", rng.random_range(0..5000), words(&mut rng, 40)),
                        "click[buy now]".to_string(),
                    ),
                    _ => (
                        "results",
                        format!("Back to Search [SEP] Page {} [SEP] B0{:05} [SEP] {}", t, rng.random_range(0..5000), words(&mut rng, 50)),
                        format!("click[b0{:05}]", rng.random_range(0..5000)),
                    ),
                };
                let reward = if success && t + 1 == len { 10.0 } else { 0.0 };
                let mut step = Step::new(observation, action, reward);
                step.page = Some(page.to_string());
                step.thought = Some(words(&mut rng, 8));
                step
            })
            .collect();
        let mut episode = Episode::new(format!("ep{e}"), format!("g{group}"), steps);
        episode.iteration = (group / 16) as i64;
        episode.task = Some(Task { id: format!("task{group}"), instruction: instruction.clone(), ..Task::default() });
        episode.outcome = Some(Outcome { success, score: if success { 1.0 } else { 0.0 }, ..Outcome::default() });
        out.push(episode);
    }
    out
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let n: usize = std::env::var("GIGSCOPE_BENCH_EPISODES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let run_dir = tempfile::tempdir().expect("temp run dir");
    let cache = tempfile::tempdir().expect("temp cache dir");
    let settings = AdvantageSettings::default();

    let episodes = generate(n, 7);
    let steps: usize = episodes.iter().map(|e| e.steps.len()).sum();
    {
        let mut file = std::fs::File::create(run_dir.path().join(EPISODES_FILE)).expect("episodes file");
        for e in &episodes {
            writeln!(file, "{}", serde_json::to_string(e).expect("encode")).expect("write");
        }
    }
    let bytes = std::fs::metadata(run_dir.path().join(EPISODES_FILE)).map(|m| m.len()).unwrap_or(0);
    println!("run: {n} episodes, {steps} steps, episodes.jsonl {:.0} MB", bytes as f64 / 1e6);

    let t = Instant::now();
    let table = compute(&episodes, &settings);
    println!("advantages: {:.2} s", t.elapsed().as_secs_f64());

    let t = Instant::now();
    let mut index = TrajectoryIndex::open(run_dir.path(), cache.path(), &settings).expect("open index");
    let stats = index.update(&episodes, &table).expect("build index");
    let build = t.elapsed();
    let size: u64 = std::fs::read_dir(index.dir())
        .map(|d| d.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0);
    println!(
        "index build: {:.1} s for {} steps ({:.0} steps/s), {:.0} MB on disk",
        build.as_secs_f64(),
        stats.steps_written,
        stats.steps_written as f64 / build.as_secs_f64(),
        size as f64 / 1e6
    );

    let t = Instant::now();
    let mut reopened = TrajectoryIndex::open(run_dir.path(), cache.path(), &settings).expect("reopen");
    let noop = reopened.update(&episodes, &table).expect("no-op update");
    println!("reopen + up-to-date check: {:.0} ms ({} written)", t.elapsed().as_secs_f64() * 1e3, noop.episodes_written);

    for query in [
        r#"action:"buy now" AND success:false AND adv:<-1"#,
        "observation:leather AND page:results",
        "running shoes",
        "adv:[2 TO 5] AND step_group_size:>1",
        "instruction:coffee AND NOT success:true",
    ] {
        let mut times = Vec::new();
        let mut total = 0;
        for _ in 0..30 {
            let t = Instant::now();
            total = index.search(query, 50).expect("search").total;
            times.push(t.elapsed());
        }
        times.sort();
        println!(
            "query {query:?}: {total} hits, median {:.1} ms, p99 {:.1} ms",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3
        );
    }

    // A live run appends one more group of 8.
    let mut grown = episodes.clone();
    for (i, mut e) in generate(8, 99).into_iter().enumerate() {
        e.id = format!("new{i}");
        e.group = "g-new".to_string();
        grown.push(e);
    }
    let table = compute(&grown, &settings);
    let t = Instant::now();
    let stats = index.update(&grown, &table).expect("incremental update");
    println!(
        "incremental update (+1 group): {:.0} ms, {} episodes written",
        t.elapsed().as_secs_f64() * 1e3,
        stats.episodes_written
    );

    watcher_delay(&episodes);
}

/// Delay from appending a line to its event arriving, with notify (default options).
fn watcher_delay(episodes: &[Episode]) {
    let dir = tempfile::tempdir().expect("temp run dir");
    let path = dir.path().join(EPISODES_FILE);
    std::fs::write(&path, "").expect("episodes file");
    let (_, tails) = live::open(dir.path()).expect("open live run");
    let (_watcher, rx) = Watcher::spawn(dir.path(), tails, WatchOptions::default()).expect("watcher");
    let mut delays = Vec::new();
    for episode in episodes.iter().take(20) {
        let line = serde_json::to_string(episode).expect("encode") + "\n";
        let t = Instant::now();
        OpenOptions::new().append(true).open(&path).and_then(|mut f| f.write_all(line.as_bytes())).expect("append");
        loop {
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(LiveEvent::Episodes(_)) => break,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    println!("watcher: no event within 10 s");
                    return;
                }
            }
        }
        delays.push(t.elapsed());
        std::thread::sleep(Duration::from_millis(50));
    }
    delays.sort();
    println!(
        "append → event: median {:.0} ms, max {:.0} ms (debounce {:?})",
        percentile(&delays, 0.5).as_secs_f64() * 1e3,
        percentile(&delays, 1.0).as_secs_f64() * 1e3,
        WatchOptions::default().debounce
    );
}
