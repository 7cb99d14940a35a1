//! The token store's read costs: opening a store (its index only) and reading one step's tokens, on a store
//! of many long steps with every channel, beside a store of as many steps of a few tokens each (opening
//! costs the same: the tokens stay on disk).
//!
//! Then the viewer's costs: the overview's token summaries made over the large store by their own thread (the
//! viewer opened on a run beside it: every step's record read once, from open to the last figures), and the
//! episode view's frame (layout and drawing, 120×40 and 80×24 zoomed) with a step of 2,048 tokens beside the
//! same frame on a step without tokens, and a key that recolours the strip to its frame.
//!
//! Goal (issue 24): one step read in under 10 ms; opening independent of the store's bytes; a frame with the
//! strip within 16 ms.
//!
//! Run with `cargo bench --bench tokens` (add `-- STEPS TOKENS` for the store's shape, default 4,000 steps of
//! 2,048 tokens: 8.2 M tokens, about 360 MB). The store is written to a temporary directory (or
//! `GIGSCOPE_BENCH_DIR`), read with a warm page cache (the file was just written).

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "../support/runs.rs"]
#[allow(dead_code)]
mod runs;
#[path = "../support/screen.rs"]
#[allow(dead_code)]
mod screen;

use gigscope::run::tokens::{Channel, StepRecord, StepTokens, TokenStore, TokenWriter};
use gigscope::tui::{open, update, Action, Config, Msg, State};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

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

/// The fixture run's files copied into `dir` (the store is written beside them).
fn copy_fixture_into(dir: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tui/basic");
    for entry in std::fs::read_dir(fixture).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
}

/// The viewer opened on the run in `dir` (its token store `steps` steps), until its token summaries cover
/// every step: the time from open to the last figures, as the overview waits for them.
fn summaries_pass(dir: &Path, steps: usize, tokens: usize) {
    let start = Instant::now();
    let mut s = open(dir, Config::defaults(true).unwrap(), (120, 40)).unwrap().0;
    let opened = start.elapsed();
    loop {
        update(&mut s, Msg::Tick(Instant::now()));
        if s.domain.tokens.summaries().is_some_and(|f| f.steps + f.unreadable == steps && f.pending == 0) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(600), "the summaries never covered the store");
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = start.elapsed();
    println!(
        "token summaries of {steps} steps x {tokens} tokens: {:.2} s from open (open {:.0} ms) = {:.1} M tokens/s, \
         {:.0} steps/s",
        took.as_secs_f64(),
        opened.as_secs_f64() * 1e3,
        (steps * tokens) as f64 / took.as_secs_f64() / 1e6,
        steps as f64 / took.as_secs_f64()
    );
}

/// Frame times (layout and drawing) of `s`'s screen, 200 of them, after `before` each: p50 and p99.
fn frames(s: &mut State, before: &[Action]) -> (Duration, Duration) {
    let mut terminal = Terminal::new(TestBackend::new(s.ui.size.0, s.ui.size.1)).unwrap();
    let mut took: Vec<Duration> = (0..200)
        .map(|_| {
            let start = Instant::now();
            screen::keys(s, before);
            terminal.draw(|f| f.render_widget(&*s, f.area())).unwrap();
            start.elapsed()
        })
        .collect();
    took.sort();
    (quantile(&took, 0.5), quantile(&took, 0.99))
}

/// The episode view's frame with a step of `tokens` tokens (every channel), beside the same view on a step
/// without tokens.
fn strip_frames(tokens: usize) {
    let (_tmp, dir) = runs::copy_fixture("basic");
    let step = step_tokens(tokens, 0);
    let record = StepRecord { episode: "it0-socks-t1", step: 0, iteration: Some(0), tokens: &step };
    TokenWriter::create(&dir).unwrap().append("it0.bin", &[record]).unwrap();
    let mut s = open(&dir, Config::defaults(true).unwrap(), (120, 40)).unwrap().0;
    screen::open_group(&mut s, "socks-it0");
    screen::keys(&mut s, &[Action::Open]);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let row = |s: &mut State, what: &str, before: &[Action]| {
        let (p50, p99) = frames(s, before);
        println!("{what}: p50 {:.3} ms, p99 {:.3} ms", ms(p50), ms(p99));
    };
    row(&mut s, &format!("episode view 120x40, a step of {tokens} tokens: frame"), &[]);
    row(&mut s, "  the channel key -> frame", &[Action::TokenChannel]);
    update(&mut s, Msg::Resize(80, 24));
    screen::keys(&mut s, &[Action::TokenZoom]);
    row(&mut s, "  80x24, the pane zoomed: frame", &[]);
    row(&mut s, "  80x24 zoomed: a scroll key -> frame", &[Action::TokenScrollDown]);
    screen::keys(&mut s, &[Action::TokenZoom, Action::Down, Action::Down]);
    update(&mut s, Msg::Resize(120, 40));
    row(&mut s, "episode view 120x40, a step without tokens: frame", &[]);
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
    copy_fixture_into(large.path());
    let (open_large, _) = measure(large.path(), steps, tokens);
    summaries_pass(large.path(), steps, tokens);
    drop(large);
    let small = tempfile::tempdir().unwrap();
    let (open_small, _) = measure(small.path(), steps, 16);
    println!(
        "opening the large store took {:.2}x the time of opening the small one (same steps, {}x the tokens)",
        open_large.as_secs_f64() / open_small.as_secs_f64(),
        tokens / 16
    );
    strip_frames(2048);
}
