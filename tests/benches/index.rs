//! Trajectory index and live watcher figures on a generated run (default 100,000 episodes, ~1.5 M steps):
//! index build, query latency, an incremental update, and the delay from an appended line to its event.
//!
//! `cargo bench --no-default-features --bench index` (set `GIGSCOPE_BENCH_EPISODES` for another size,
//! `GIGSCOPE_BENCH_BATCH` for the batch of the build in batches, 0 to skip it).
//! A bench binary rather than criterion: building the index takes seconds to minutes, so it is timed once.

use std::fs::OpenOptions;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use gigscope::advantage::{compute, AdvantageSettings};
use gigscope::index::TrajectoryIndex;
use gigscope::live::{self, LiveEvent, WatchOptions, Watcher};
use gigscope::run::synth::{self, SynthSpec};
use gigscope::run::{Episode, EPISODES_FILE};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let n: usize = std::env::var("GIGSCOPE_BENCH_EPISODES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    // Groups of 8 trajectories of 1–29 steps (mean 15): 100,000 episodes ≈ 1.5 M steps.
    let spec =
        |groups: usize, seed: u64| SynthSpec { groups, trajectories: 8, steps: 1..=29, groups_per_iteration: 16, seed };
    let run_dir = tempfile::tempdir().expect("temp run dir");
    let cache = tempfile::tempdir().expect("temp cache dir");
    let settings = AdvantageSettings::default();

    let episodes: Vec<Episode> = synth::episodes(&spec(n.div_ceil(8), 7)).collect();
    let steps: usize = episodes.iter().map(|e| e.steps.len()).sum();
    {
        let mut file = std::fs::File::create(run_dir.path().join(EPISODES_FILE)).expect("episodes file");
        for e in &episodes {
            writeln!(file, "{}", serde_json::to_string(e).expect("encode")).expect("write");
        }
    }
    let bytes = std::fs::metadata(run_dir.path().join(EPISODES_FILE)).map(|m| m.len()).unwrap_or(0);
    println!("run: {} episodes, {steps} steps, episodes.jsonl {:.0} MB", episodes.len(), bytes as f64 / 1e6);

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
        "index build: {:.1} s for {} steps ({:.0} steps/s), {:.0} MB on disk, {} segments",
        build.as_secs_f64(),
        stats.steps_written,
        stats.steps_written as f64 / build.as_secs_f64(),
        size as f64 / 1e6,
        segments(index.dir())
    );

    let t = Instant::now();
    let mut reopened = TrajectoryIndex::open(run_dir.path(), cache.path(), &settings).expect("reopen");
    let noop = reopened.update(&episodes, &table).expect("no-op update");
    println!(
        "reopen + up-to-date check: {:.0} ms ({} written)",
        t.elapsed().as_secs_f64() * 1e3,
        noop.episodes_written
    );

    for query in [
        r#"action:"buy now" AND success:false AND adv:<-1"#,
        "observation:mesh AND page:results",
        "running shoes",
        "adv:[0.5 TO 5] AND step_group_size:>1",
        "instruction:wallet AND NOT success:true",
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

    let batch: usize = std::env::var("GIGSCOPE_BENCH_BATCH").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    if batch > 0 {
        // The same build in batches, searched from another thread as it grows (as the TUI would).
        let cache = tempfile::tempdir().expect("temp cache dir");
        let mut grown = TrajectoryIndex::open(run_dir.path(), cache.path(), &settings).expect("open index");
        let searcher = grown.searcher();
        let done = std::sync::atomic::AtomicBool::new(false);
        let t = Instant::now();
        let (stats, first, searches) = std::thread::scope(|scope| {
            let probe = scope.spawn(|| {
                let mut searches = Vec::new();
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let snapshot = searcher.snapshot();
                    let s = Instant::now();
                    let total = snapshot.search("running shoes", 50).expect("search").total;
                    searches.push((s.elapsed(), snapshot.episodes_indexed(), total));
                    std::thread::sleep(Duration::from_millis(200));
                }
                searches
            });
            let mut first = None;
            let stats = grown
                .update_in_batches(&episodes, &table, batch, |p| {
                    first.get_or_insert(t.elapsed());
                    let _ = p;
                    ControlFlow::Continue(())
                })
                .expect("build in batches");
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            (stats, first, probe.join().expect("probe"))
        });
        let build = t.elapsed();
        let mut times: Vec<Duration> = searches.iter().map(|s| s.0).collect();
        times.sort();
        let grown_states = searches.windows(2).filter(|w| w[1].1 > w[0].1).count();
        println!(
            "index build in batches of {batch} episodes: {:.1} s, first batch searchable after {:.2} s, {} segments; \
             searches meanwhile: {} (median {:.1} ms, max {:.1} ms), {} growing states seen",
            build.as_secs_f64(),
            first.unwrap_or_default().as_secs_f64(),
            segments(grown.dir()),
            times.len(),
            if times.is_empty() { 0.0 } else { percentile(&times, 0.5).as_secs_f64() * 1e3 },
            times.last().map_or(0.0, |t| t.as_secs_f64() * 1e3),
            grown_states
        );
        assert_eq!(stats.episodes_indexed, episodes.len());
    }

    // A live run appends one more group of 8.
    let mut grown = episodes.clone();
    for (i, mut e) in synth::episodes(&spec(1, 99)).enumerate() {
        e.id = format!("new{i}");
        e.group = "g-new".to_string();
        grown.push(e);
    }
    let table = compute(&grown, &settings);
    let t = Instant::now();
    let stats = index.update(&grown, &table).expect("incremental update");
    let elapsed = t.elapsed();
    let found = index.search("id:new0", 1).expect("search").total;
    println!(
        "incremental update (+1 group): {:.0} ms, {} episodes written, appended episode found: {}",
        elapsed.as_secs_f64() * 1e3,
        stats.episodes_written,
        found > 0
    );

    watcher_delay(&episodes);
}

/// Segments of the index in `dir` (one `.idx` file each).
fn segments(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.path().extension().is_some_and(|x| x == "idx")).count())
        .unwrap_or(0)
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
