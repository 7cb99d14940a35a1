//! TUI benchmark on a generated run of 100,000 episodes (~1.5 M steps; `TUI_BENCH_EPISODES` to change):
//! time to open it, key press to frame (update + render of a 120×40 screen) p50/p99, recompute after a
//! settings change, memory relative to the file size, the delay from an appended group to the frame that shows
//! it (through the live watcher, as in the app), and key press to frame while the app follows a writer of 20,000
//! lines a second (`TUI_BENCH_FOLLOW_ONLY=1` for that row alone), and key press to frame in the episode view of a
//! 100 MB observation (`TUI_BENCH_OBSERVATION_ONLY=1` for that row alone).
//!
//! `cargo bench --no-default-features --bench tui` (a plain binary: prints a table).

#[path = "../support/opening.rs"]
mod opening;

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use gigscope::live::{LiveEvent, WatchOptions, Watcher};
use gigscope::plugin_host::{AutoplayRequest, TrainConfig, TrainEvent, Training};
use gigscope::run::{Episode, Outcome, Step, Task};
use gigscope::tui::app::{self, Reading};
use gigscope::tui::burst_dialog::BurstUpdate;
use gigscope::tui::play::DEFAULT_GROUP_SIZE;
use gigscope::tui::state::GroupingRequest;
use gigscope::tui::{open, update, Action, Config, Effect, Effects, Msg, State, View};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

const GROUP: usize = 8;

/// One WebShop-like trajectory: a search page, results, items; a few branch choices so anchor states repeat
/// across the group's trajectories.
fn episode(rng: &mut ChaCha8Rng, id: usize, group: usize, iteration: i64) -> Episode {
    let len = rng.random_range(10..=20);
    let success = rng.random_bool(0.3);
    let instruction = format!("i need a pack of {group} cotton socks in size m, price lower than 30.00 dollars");
    let mut steps = Vec::with_capacity(len);
    let mut branch = 0u32;
    for t in 0..len {
        // States repeat across the group until a trajectory branches off.
        if rng.random_bool(0.3) {
            branch = branch * 2 + rng.random_range(0..2);
        }
        let (page, obs) = match t {
            0 => ("search", format!("WebShop [SEP] Instruction: [SEP] {instruction} [SEP] Search")),
            _ => (
                if t % 3 == 1 { "results" } else { "item" },
                format!(
                    "Back to Search [SEP] Page {} (Total results: 50) [SEP] Next > [SEP] B0{group:05}{branch} [SEP] \
                     Cotton socks, {t} pack [SEP] $1{}.99 [SEP] B1{group:05} [SEP] Wool socks [SEP] $24.00",
                    t % 5 + 1,
                    branch % 10
                ),
            ),
        };
        let actions = vec![
            "click[back to search]".to_string(),
            "click[next >]".to_string(),
            format!("click[b0{group:05}{branch}]"),
            "click[buy now]".to_string(),
        ];
        let mut step = Step::new(obs, actions[(t + branch as usize) % 4].clone(), 0.0);
        step.page = Some(page.to_string());
        step.available_actions = Some(actions);
        step.tokens = Some(rng.random_range(3..12));
        step.thought = Some("look for the cheapest matching item".to_string());
        steps.push(step);
    }
    if let Some(last) = steps.last_mut() {
        last.reward = if success { 10.0 } else { 0.0 };
    }
    let mut e = Episode::new(format!("e{id}"), format!("g{group}"), steps);
    e.iteration = iteration;
    e.task = Some(Task { id: format!("t{group}"), instruction, extra: Default::default() });
    e.outcome = Some(Outcome { success, score: if success { 1.0 } else { 0.0 }, extra: Default::default() });
    e
}

fn write_run(dir: &Path, episodes: usize, rng: &mut ChaCha8Rng) -> u64 {
    let path = dir.join("episodes.jsonl");
    let mut w = BufWriter::new(File::create(&path).unwrap());
    let groups_per_iter = 128;
    for i in 0..episodes {
        let group = i / GROUP;
        let ep = episode(rng, i, group, (group / groups_per_iter) as i64);
        serde_json::to_writer(&mut w, &ep).unwrap();
        w.write_all(b"\n").unwrap();
    }
    w.flush().unwrap();
    std::fs::metadata(&path).unwrap().len()
}

/// The anchor grouping an update asks to compute in the background.
fn grouping_asked(fx: Effects) -> Option<GroupingRequest> {
    fx.find(|e| match e {
        Effect::GroupAnchors(request) => Some(request),
        _ => None,
    })
}

/// A memory figure of this process from `/proc/self/status` (`VmRSS:` resident now, `VmHWM:` its peak), KiB.
fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// What opening the run costs a fresh process, so that nothing this bench did before counts: this bench run
/// again with `TUI_BENCH_OPEN=DIR` ([`open_only`]). Resident memory after open and its peak (KiB), and the time
/// the open took.
struct FreshOpen {
    rss: u64,
    peak: u64,
    time: Duration,
}

fn open_in_fresh_process(dir: &Path) -> FreshOpen {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe).env("TUI_BENCH_OPEN", dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> u64 {
        text.split_whitespace().skip_while(|w| *w != name).nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    assert!(out.status.success(), "the fresh open failed: {}", String::from_utf8_lossy(&out.stderr));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    FreshOpen { rss: field("rss"), peak: field("peak"), time: Duration::from_micros(field("micros")) }
}

/// `TUI_BENCH_OPEN=DIR`: open the run in `dir` as the TUI does, print the memory it holds and the time it took.
fn open_only(dir: &Path) {
    let t = Instant::now();
    let (state, _loading) = opening::open_the_apps_way(dir, Config::defaults(true).unwrap());
    let time = t.elapsed();
    // What the viewer holds once the heap it freed while reading is given back (it asks for that when its
    // reader has caught up, on its release thread).
    gigscope::tui::domain::settle_freed_memory();
    println!("rss {} peak {} micros {}", rss_kib(), status_kib("VmHWM:"), time.as_micros());
    let table = &state.domain.derived.table;
    eprintln!(
        "opened {} episodes: {} steps, {} anchor groups",
        state.domain.episodes.len(),
        table.row_count(),
        table.anchor_groups.len()
    );
}

/// The bytes of every file under `dir`.
fn walk_sizes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                walk_sizes(&entry.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

/// KiB as MB (10⁶ bytes, as the file's size is given).
fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

/// CPU time of this process so far, all threads (user + system), to tell work from waiting on a shared
/// machine (the engine computes episode groups on rayon's threads).
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().map(|f| f.parse().unwrap_or(0)).collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 of the file, in clock ticks (100 per second on Linux).
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn frame(terminal: &mut Terminal<TestBackend>, state: &State) {
    terminal.draw(|f| f.render_widget(state, f.area())).unwrap();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// What opening the app's way measured.
struct Loading {
    first_frame: Duration,
    loaded: Duration,
    /// Key press → the frame that shows it, for keys pressed every few ms while the run was loading, sorted.
    keys: Vec<Duration>,
    /// The same while a writer appended to the run afterwards ([`Load`]), sorted; empty without one.
    following: Vec<Duration>,
}

/// A writer that appends short episodes (two steps, groups of four) to the run once it is on screen, while the
/// app follows it: `lines_per_second` in a batch every 10 ms, one `write` each, for `seconds`.
#[derive(Clone, Copy)]
struct Load {
    lines_per_second: usize,
    seconds: u32,
}

impl Load {
    /// Start appending to `dir`'s episodes file on a thread; it returns how many lines it wrote.
    fn spawn(self, dir: &Path) -> std::thread::JoinHandle<usize> {
        let path = dir.join("episodes.jsonl");
        std::thread::spawn(move || {
            let mut f = OpenOptions::new().append(true).open(path).unwrap();
            let every = Duration::from_millis(10);
            let (per_batch, total) = (self.lines_per_second / 100, self.lines_per_second * self.seconds as usize);
            let start = Instant::now();
            let mut written = 0;
            for batch in 0u32.. {
                if written == total {
                    break;
                }
                if let Some(wait) = (start + every * batch).checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                let end = (written + per_batch).min(total);
                let text: String = (written..end)
                    .map(|i| {
                        let mut steps = vec![Step::new("Search", format!("search[load {}]", i / 4), 0.0)];
                        steps.push(Step::new("Item [SEP] Buy Now", "click[buy now]", (i % 3) as f64));
                        let mut e = Episode::new(format!("load-{i}"), format!("load-g{}", i / 4), steps);
                        e.iteration = 20_000 + (i / self.lines_per_second) as i64;
                        serde_json::to_string(&e).unwrap() + "\n"
                    })
                    .collect();
                f.write_all(text.as_bytes()).unwrap();
                written = end;
            }
            written
        })
    }
}

/// Everything the app's main loop waits for, on one channel (as in `tui::app`).
enum Incoming {
    Key(Instant),
    Reading(Reading),
}

/// Open `dir` the way the app does (an empty state and a frame at once; the reading thread delivering the load
/// cache kept under `cache`, when it holds the run, then the watcher's first scan in parts) while a thread
/// presses a key every 5 ms; the loop handles everything queued, draws what keys changed, merges one part, then
/// draws when the merges are due a frame, like the app's. With a `load`, the app then follows the run while the load's writer appends to it, until every line
/// written is on screen.
fn progressive_open(dir: &Path, cache: &Path, load: Option<Load>) -> Loading {
    use std::sync::mpsc;
    let start = Instant::now();
    let config = Config::defaults(true).unwrap();
    let (mut state, opening) = app::start(dir, None, &Default::default(), config, Some(cache.to_path_buf())).unwrap();
    update(&mut state, Msg::Resize(120, 40));
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    frame(&mut terminal, &state);
    let first_frame = start.elapsed();
    let (tx, rx) = mpsc::channel();
    let reading_tx = tx.clone();
    opening.spawn(WatchOptions::default(), move |reading| reading_tx.send(Incoming::Reading(reading)).is_ok());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let presser = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
                if tx.send(Incoming::Key(Instant::now())).is_err() {
                    break;
                }
            }
        })
    };
    let keys_script = [Action::Down, Action::Down, Action::Up, Action::PageDown, Action::Top];
    let mut keys = Vec::new();
    let mut pressed = 0usize;
    let (mut caught_up, mut loaded) = (false, None);
    let mut loading = app::Loading::default();
    let (mut writer, mut following, mut expected) = (None, Vec::new(), 0);
    loop {
        let first = if loading.pending(&state) { rx.try_recv().ok() } else { Some(rx.recv().unwrap()) };
        let mut waiting = Vec::new();
        for incoming in first.into_iter().chain(rx.try_iter()) {
            match incoming {
                Incoming::Key(at) => {
                    update(&mut state, Msg::Action(keys_script[pressed % keys_script.len()]));
                    pressed += 1;
                    waiting.push(at);
                }
                Incoming::Reading(reading) => {
                    loading.receive(&mut state, reading).unwrap();
                }
            }
        }
        // Keys first, as the app answers them: a frame for them before the next part is merged; then one part
        // per turn, and a frame when the merges are due one.
        if !waiting.is_empty() {
            frame(&mut terminal, &state);
        }
        let latencies = waiting.iter().map(|at| at.elapsed());
        if writer.is_some() {
            following.extend(latencies);
        } else {
            keys.extend(latencies);
        }
        let (due, caught) = loading.merge_next(&mut state);
        caught_up |= caught;
        if due {
            frame(&mut terminal, &state);
        }
        if loaded.is_none() && caught_up && !loading.merging(&state) {
            loaded = Some(start.elapsed());
            let Some(load) = load else { break };
            expected = state.domain.episodes.len() + load.lines_per_second * load.seconds as usize;
            writer = Some(load.spawn(dir));
        }
        if writer.as_ref().is_some_and(|w| w.is_finished())
            && state.domain.episodes.len() == expected
            && !loading.merging(&state)
        {
            break;
        }
    }
    if let Some(writer) = writer {
        writer.join().unwrap();
    }
    following.sort();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    presser.join().unwrap();
    // The load cache the read saved (off the UI thread), for the next open.
    state.domain.finish_load_cache();
    keys.sort();
    Loading { first_frame, loaded: loaded.unwrap(), keys, following }
}

/// Key press → frame latencies on the UI thread while a job ran on another thread ([`keys_while`]), sorted, and
/// how long the job took.
struct JobKeys {
    keys: Vec<Duration>,
    took: Duration,
}

/// Key press → frame on the UI thread while `job` runs on another thread (as the app runs its jobs): a key at
/// once, then one every 5 ms until the job is done, so that even a job shorter than a frame has one. What was
/// measured, and what the job returned.
fn keys_while<T: Send + 'static>(
    state: &mut State,
    terminal: &mut Terminal<TestBackend>,
    job: impl FnOnce() -> T + Send + 'static,
) -> (JobKeys, T) {
    let start = Instant::now();
    let worker = std::thread::spawn(move || {
        let out = job();
        (start.elapsed(), out)
    });
    let script = [Action::Down, Action::Down, Action::Up, Action::PageDown, Action::Top, Action::Open, Action::Back];
    let mut keys = Vec::new();
    loop {
        let t = Instant::now();
        update(state, Msg::Action(script[keys.len() % script.len()]));
        frame(terminal, state);
        keys.push(t.elapsed());
        if worker.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (took, out) = worker.join().unwrap();
    keys.sort();
    (JobKeys { keys, took }, out)
}

/// Open the run in `dir` (`bytes` long) the app's way, with the load cache as the app keeps it: the first open
/// reads the run and saves the cache, a second open of the unchanged run takes it from there. The table rows.
fn app_way_rows(dir: &Path, bytes: u64) -> String {
    let load_cache = tempfile::tempdir().unwrap();
    let loading = progressive_open(dir, load_cache.path(), None);
    let reopening = progressive_open(dir, load_cache.path(), None);
    let cache_bytes = walk_sizes(load_cache.path());
    [
        format!("| first frame (app's way: the run is read by the watcher in the background) | {:.2?} |", loading.first_frame),
        format!("| whole run on screen (read in parts, merged and drawn as they come; {:.0} MB/s) | {:.2?} |", bytes as f64 / 1e6 / loading.loaded.as_secs_f64(), loading.loaded),
        format!("| key press → frame while loading, p50 / p99 / max | {} |", latencies(&loading.keys)),
        format!(
            "| second open of the unchanged run (load cache of {:.0} MB): first frame / whole run on screen | {:.2?} / {:.2?} |",
            cache_bytes as f64 / 1e6,
            reopening.first_frame,
            reopening.loaded
        ),
        format!("| key press → frame during the second open, p50 / p99 / max | {} |", latencies(&reopening.keys)),
    ]
    .join("\n")
}

/// Sorted key press → frame latencies as `p50 / p99 / max (N keys)`.
fn latencies(sorted: &[Duration]) -> String {
    match sorted.last() {
        None => "no key was pressed before it was over".to_string(),
        Some(max) => format!(
            "{:.2?} / {:.2?} / {max:.2?} ({} keys)",
            percentile(sorted, 0.5),
            percentile(sorted, 0.99),
            sorted.len()
        ),
    }
}

/// Key press → frame while the app follows a run of `episodes` generated episodes that a writer appends to at
/// 20,000 lines a second for five seconds ([`Load`]): the table row.
fn following_row(episodes: usize, rng: &mut ChaCha8Rng) -> String {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path(), episodes, rng);
    let load = Load { lines_per_second: 20_000, seconds: 5 };
    let cache = tempfile::tempdir().unwrap();
    let following = progressive_open(tmp.path(), cache.path(), Some(load)).following;
    format!(
        "| key press → frame while following a writer of {} lines/s for {} s (a run of {episodes} episodes), p50 / p99 / max | {} |",
        load.lines_per_second,
        load.seconds,
        latencies(&following)
    )
}

/// Key press → frame (update + render of a 120×40 screen) in the episode view on a step whose observation is
/// 100 MB of log lines, folded (the default) and unfolded (`TUI_BENCH_OBSERVATION_ONLY=1` for that row alone).
fn large_observation_row() -> String {
    let tmp = tempfile::tempdir().unwrap();
    let log: String = (0..2_700_000).map(|i| format!("log line {i:08} of the tool's output\n")).collect();
    let bytes = log.len();
    let mut text = String::new();
    for k in 0..2 {
        let observation = if k == 0 { log.clone() } else { "a short page".to_string() };
        let steps = vec![Step::new(observation, "run the tool", 0.0), Step::new("done", "stop", 1.0)];
        text += &(serde_json::to_string(&Episode::new(format!("e{k}"), "g0", steps)).unwrap() + "\n");
    }
    drop(log);
    std::fs::write(tmp.path().join("episodes.jsonl"), text).unwrap();
    let (mut state, _) = open(tmp.path(), Config::defaults(true).unwrap(), (120, 40)).unwrap();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    update(&mut state, Msg::Action(Action::Open));
    update(&mut state, Msg::Action(Action::Open));
    frame(&mut terminal, &state);
    let script = [Action::ScrollDown, Action::ScrollDown, Action::ScrollUp, Action::PageDown, Action::Down, Action::Up];
    let mut measure = |state: &mut State| {
        let mut times = Vec::new();
        for i in 0..300 {
            let t = Instant::now();
            update(state, Msg::Action(script[i % script.len()]));
            frame(&mut terminal, state);
            times.push(t.elapsed());
        }
        times.sort();
        latencies(&times)
    };
    let folded = measure(&mut state);
    update(&mut state, Msg::Action(Action::Fold));
    let unfolded = measure(&mut state);
    format!(
        "| key press → frame in the episode view on a step of a {:.0} MB observation (folded / unfolded), p50 / p99 / max | {folded} · {unfolded} |",
        bytes as f64 / 1e6
    )
}

fn main() {
    if let Some(dir) = std::env::var_os("TUI_BENCH_OPEN") {
        return open_only(Path::new(&dir));
    }
    if std::env::var_os("TUI_BENCH_OBSERVATION_ONLY").is_some() {
        println!("| measure | figure |\n|---|---|\n{}", large_observation_row());
        return;
    }
    // `TUI_BENCH_FOLLOW_ONLY=1`: the row of following a fast writer alone.
    if std::env::var_os("TUI_BENCH_FOLLOW_ONLY").is_some() {
        println!("| measure | figure |\n|---|---|\n{}", following_row(10_000, &mut ChaCha8Rng::seed_from_u64(7)));
        return;
    }
    let episodes: usize = std::env::var("TUI_BENCH_EPISODES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let t = Instant::now();
    let bytes = write_run(tmp.path(), episodes, &mut rng);
    eprintln!("generated {episodes} episodes, {:.0} MB, in {:.1?}", bytes as f64 / 1e6, t.elapsed());
    let header = format!("| measure ({episodes} episodes, {:.0} MB file) | figure |\n|---|---|", bytes as f64 / 1e6);
    // `TUI_BENCH_OPEN_ONLY=1` (a very large run): the memory row alone; `TUI_BENCH_LOAD_ONLY=1`: the rows of
    // opening the app's way alone.
    let open_only = std::env::var_os("TUI_BENCH_OPEN_ONLY").is_some();
    let load_rows = (!open_only).then(|| app_way_rows(tmp.path(), bytes) + "\n" + &following_row(10_000, &mut rng));
    if let (Some(rows), Some(_)) = (&load_rows, std::env::var_os("TUI_BENCH_LOAD_ONLY")) {
        println!("{header}\n{rows}");
        return;
    }
    let fresh = open_in_fresh_process(tmp.path());
    let memory_row = format!(
        "| memory after open (a fresh process that only opens the run: resident / peak) | {:.0} MB = {:.2}× the \
         file / {:.0} MB (open {:.2?}) |",
        mb(fresh.rss),
        fresh.rss as f64 * 1024.0 / bytes as f64,
        mb(fresh.peak),
        fresh.time
    );
    let Some(load_rows) = load_rows else {
        println!("{header}\n{memory_row}");
        return;
    };

    let (t, c) = (Instant::now(), cpu());
    let (mut state, tails) = open(tmp.path(), Config::defaults(true).unwrap(), (120, 40)).unwrap();
    let (open_time, open_cpu) = (t.elapsed(), cpu() - c);
    let steps = state.domain.derived.table.row_count();

    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    frame(&mut terminal, &state);
    // A session's worth of keys across every view.
    let script = [
        Action::Down,
        Action::Down,
        Action::Open,
        Action::Down,
        Action::NextItem,
        Action::Open,
        Action::Down,
        Action::ScrollDown,
        Action::Down,
        Action::Open,
        Action::Down,
        Action::Back,
        Action::NextItem,
        Action::Back,
        Action::Compare,
        Action::NextItem,
        Action::Back,
        Action::Back,
        Action::PageDown,
        Action::Bottom,
        Action::Top,
    ];
    let mut times = Vec::new();
    for i in 0..2000 {
        let t = Instant::now();
        update(&mut state, Msg::Action(script[i % script.len()]));
        frame(&mut terminal, &state);
        times.push(t.elapsed());
    }
    times.sort();

    // Settings change: ω one step down, in the settings panel.
    update(&mut state, Msg::Action(Action::Settings));
    update(&mut state, Msg::Action(Action::Down));
    update(&mut state, Msg::Action(Action::Down));
    let (t, c) = (Instant::now(), cpu());
    update(&mut state, Msg::Action(Action::Left));
    frame(&mut terminal, &state);
    let (recompute, recompute_cpu) = (t.elapsed(), cpu() - c);

    // Anchor mode switches (field 6, then θ on field 7): page (grouped at once), back to exact (grouping
    // kept), similarity 0.85 (key → frame, then the background grouping → frame), exact and similarity again
    // (both kept).
    let mut switches = Vec::new();
    let mut switch = |state: &mut State, label: &str, key: Action| {
        let (t, c) = (Instant::now(), cpu());
        let fx = update(state, Msg::Action(key));
        frame(&mut terminal, state);
        switches.push((format!("{label}: key → frame"), t.elapsed(), cpu() - c));
        if let Some(request) = grouping_asked(fx) {
            let (t, c) = (Instant::now(), cpu());
            let grouping = std::thread::spawn(move || request.job.run()).join().unwrap();
            update(state, Msg::Grouped { episodes_version: request.episodes_version, grouping });
            frame(&mut terminal, state);
            switches.push((format!("{label}: background grouping → frame"), t.elapsed(), cpu() - c));
        }
    };
    for _ in 0..4 {
        update(&mut state, Msg::Action(Action::Down));
    }
    switch(&mut state, "exact → page", Action::Left);
    switch(&mut state, "page → exact (kept)", Action::Right);
    update(&mut state, Msg::Action(Action::Down));
    switch(&mut state, "exact → similarity 0.85", Action::Left);
    update(&mut state, Msg::Action(Action::Up));
    switch(&mut state, "similarity → page (kept)", Action::Right);
    switch(&mut state, "page → exact (kept)", Action::Right);
    switch(&mut state, "exact → similarity 0.90 (default θ, not kept)", Action::Right);
    update(&mut state, Msg::Action(Action::Down));
    switch(&mut state, "similarity 0.90 → 0.85 (kept)", Action::Left);
    update(&mut state, Msg::Action(Action::Back));

    // A new group of trajectories appended while the TUI runs, seen through the live watcher as the app
    // sees it (notify, debounce, read), then merged, recomputed and drawn.
    let (_watcher, events) = Watcher::spawn(tmp.path(), tails, WatchOptions::default()).unwrap();
    let mut f = OpenOptions::new().append(true).open(tmp.path().join("episodes.jsonl")).unwrap();
    let group = episodes / GROUP + 1;
    let mut text = String::new();
    for k in 0..GROUP {
        text += &serde_json::to_string(&episode(&mut rng, episodes + k, group, 10_000)).unwrap();
        text.push('\n');
    }
    let t = Instant::now();
    f.write_all(text.as_bytes()).unwrap();
    drop(f);
    let mut got = Vec::new();
    while !got.iter().any(|e| matches!(e, LiveEvent::Episodes(v) if !v.is_empty())) {
        got.push(events.recv_timeout(Duration::from_secs(30)).expect("the watcher delivers the appended lines"));
    }
    let seen = t.elapsed();
    let c = cpu();
    update(&mut state, Msg::Live(got, Instant::now()));
    frame(&mut terminal, &state);
    let (append, append_cpu) = (t.elapsed(), cpu() - c);
    assert_eq!(state.domain.episodes.len(), episodes + GROUP);

    // Jobs the app runs off the UI thread, each started the app's way (from the effects `update` returns for the keys
    // that start it) and measured with keys pressed meanwhile, browsing the run (the popup or the play view that
    // started the job left first; only while the environment opens are the keys in the play view, where the user waits
    // for it, until they leave it): building the trajectory index of the whole run (its text read back from the file,
    // as the TUI's search does), opening the run's environment (the demo catalog: catalog, search index, goals), a
    // similarity grouping of the whole run, the policy playing a group, writing that group to the run, and a training
    // burst's start. The policy's play and the burst run in the training plugin (libtorch), which the app loads on
    // first use, as this bench does: found next to the bench binary (cargo's deps directory, where `cargo build
    // --release -p gigscope-train` puts it too) or at `GIGSCOPE_TRAIN_LIB`; without it their rows say why they were not
    // measured.
    let mut jobs: Vec<(&str, Result<JobKeys, String>)> = Vec::new();
    let cache = tempfile::tempdir().unwrap();
    let (lean, table) = (state.domain.episodes.clone(), state.domain.derived.table.clone());
    let (dir, cache_dir, settings) = (tmp.path().to_path_buf(), cache.path().to_path_buf(), state.domain.settings);
    let (index_job, ()) = keys_while(&mut state, &mut terminal, move || {
        let mut index = gigscope::index::TrajectoryIndex::open(&dir, &cache_dir, &settings).unwrap();
        index.update_in_batches(&lean, &table, 10_000, |_| std::ops::ControlFlow::Continue(())).unwrap();
    });
    jobs.push(("building the trajectory index (batches of 10,000)", Ok(index_job)));

    // `p` opens the play view, which asks for the run's environment.
    let source = app::task_source(&state.domain.run, None).expect("the generated run is a WebShop run");
    assert!(
        update(&mut state, Msg::Action(Action::Play)).contains(&Effect::OpenEnv),
        "the play view asks for the environment"
    );
    let env = source.clone();
    let (env_job, tasks) =
        keys_while(&mut state, &mut terminal, move || gigscope::env_registry::open(&env.env, &env.options).unwrap());
    jobs.push(("opening the demo catalog's environment", Ok(env_job)));
    update(&mut state, Msg::EnvReady(Ok(tasks)));
    update(&mut state, Msg::Action(Action::Back));

    // θ (field 7 of the settings) from 0.85 to 0.80, not grouped yet: the app groups the whole run's anchors
    // in the background (on rayon's threads) while the views show the previous grouping.
    update(&mut state, Msg::Action(Action::Settings));
    for _ in 0..7 {
        update(&mut state, Msg::Action(Action::Down));
    }
    let request = grouping_asked(update(&mut state, Msg::Action(Action::Left))).expect("a new θ asks for a grouping");
    update(&mut state, Msg::Action(Action::Back));
    let episodes_version = request.episodes_version;
    let (grouping_job, grouping) = keys_while(&mut state, &mut terminal, move || request.job.run());
    jobs.push(("grouping the whole run's anchors by similarity (θ 0.80)", Ok(grouping_job)));
    update(&mut state, Msg::Grouped { episodes_version, grouping });

    // A group of the first goal (4 episodes) in the play view, played by the run's policy (the run has no
    // checkpoint: an untrained one), in the plugin, loaded by this first job that needs it (libtorch with it).
    update(&mut state, Msg::Action(Action::Play));
    update(&mut state, Msg::Action(Action::Open));
    let asked = update(&mut state, Msg::Action(Action::Autoplay))
        .find(|e| match e {
            Effect::Autoplay(request) => Some(request),
            _ => None,
        })
        .expect("a started group can be autoplayed");
    update(&mut state, Msg::Action(Action::Back));
    assert_ne!(state.ui.view, View::Play);
    let request = AutoplayRequest {
        run: state.domain.run.dir.clone(),
        tasks: source.clone(),
        task: asked.goal,
        group: asked.group,
        first: asked.first,
        n: asked.n,
        step_limit: TrainConfig::default().step_limit,
        seed: asked.seed,
    };
    let (autoplay_job, played) = keys_while(&mut state, &mut terminal, move || {
        Training::load().map_err(|e| e.to_string()).and_then(|training| training.autoplay(&request))
    });
    let autoplay_row = "the policy plays a group of 4 (loading the training plugin and libtorch first)";
    jobs.push((autoplay_row, played.as_ref().map(|_| autoplay_job).map_err(String::clone)));
    let played_group = match played {
        // The group is complete: the app writes it to the run.
        Ok(played) => update(&mut state, Msg::Autoplayed(Ok((played.episodes, played.policy))))
            .find(|e| match e {
                Effect::Write(episodes) => Some(episodes),
                _ => None,
            })
            .unwrap_or_default(),
        // Without the plugin, a group of the bench's own episodes, marked as played in the TUI.
        Err(_) => (0..DEFAULT_GROUP_SIZE)
            .map(|k| {
                let mut e = episode(&mut rng, episodes + GROUP + k, group + 1, 0);
                gigscope::tui::play::mark_played(&mut e);
                e
            })
            .collect(),
    };
    assert_eq!(played_group.len(), DEFAULT_GROUP_SIZE);
    let dir = state.domain.run.dir.clone();
    let (write_job, written) = keys_while(&mut state, &mut terminal, move || app::write_episodes(&dir, &played_group));
    jobs.push(("writing the played group (4 episodes) to the run", Ok(write_job)));
    update(&mut state, Msg::Written(written));

    // `t`, Enter: the burst dialog's default burst into the open run. The job loads the plugin (loaded above),
    // sets the trainer up (the run holds episodes and no checkpoint: a fresh policy numbered after the run's
    // last iteration, which the trainer reads the run for) and says `Started` before its first iteration; asked
    // for no iterations, it ends there (`Finished`).
    update(&mut state, Msg::Action(Action::Train));
    let form = update(&mut state, Msg::Action(Action::Open))
        .find(|e| match e {
            Effect::StartBurst(form) => Some(form),
            _ => None,
        })
        .expect("the dialog starts a burst");
    update(&mut state, Msg::Action(Action::Back));
    let mut request = form.train_request(&state.domain.run.dir, source);
    request.config.iterations = 0;
    let (burst_job, events) = keys_while(&mut state, &mut terminal, move || {
        let handle = Training::load().map_err(|e| e.to_string())?.start(&request);
        Ok::<_, String>(std::iter::from_fn(|| handle.next_event()).collect::<Vec<_>>())
    });
    let burst = match &events {
        Err(why) => Err(why.clone()),
        Ok(events) => match events.last() {
            Some(TrainEvent::Finished { .. }) => Ok(burst_job),
            Some(TrainEvent::Failed { error }) => Err(format!("the burst failed: {error}")),
            _ => Err("the trainer ended without saying how".to_string()),
        },
    };
    jobs.push(("a training burst starts (the trainer set up, up to its first iteration)", burst));
    for event in events.into_iter().flatten() {
        update(&mut state, Msg::Burst(BurstUpdate::from(event)));
    }
    if let Some(burst) = &state.jobs.burst {
        let ended = burst.ended.as_deref().unwrap_or("running");
        eprintln!("the burst: {} from iteration {}, {ended}", burst.how, burst.first_iteration);
    }

    println!("| measure ({episodes} episodes, {steps} steps, {:.0} MB file) | wall (CPU) |", bytes as f64 / 1e6);
    println!("|---|---|");
    println!("| open (read + recompute + overview stats) | {open_time:.2?} ({open_cpu:.2?}) |");
    println!("| key press → frame, p50 | {:.2?} |", percentile(&times, 0.5));
    println!("| key press → frame, p99 | {:.2?} |", percentile(&times, 0.99));
    println!("| key press → frame, max | {:.2?} |", times[times.len() - 1]);
    println!("{load_rows}");
    for (job, measured) in &jobs {
        match measured {
            Ok(JobKeys { keys, took }) => println!(
                "| key press → frame while {job} ({took:.1?}), p50 / p99 / max ({} keys) | {:.2?} / {:.2?} / {:.2?} |",
                keys.len(),
                percentile(keys, 0.5),
                percentile(keys, 0.99),
                keys[keys.len() - 1]
            ),
            Err(why) => println!("| key press → frame while {job} | not measured: {why} |"),
        }
    }
    println!("| settings change → recomputed frame | {recompute:.2?} ({recompute_cpu:.2?}) |");
    for (label, wall, cpu) in &switches {
        println!("| anchor mode {label} | {wall:.2?} ({cpu:.2?}) |");
    }
    println!("| appended group → watcher event (notify + 150 ms debounce) | {seen:.2?} |");
    println!("| appended group → frame showing it | {append:.2?} ({append_cpu:.2?} to merge, compute, draw) |");
    println!("{memory_row}");
    println!("{}", large_observation_row());
}
