//! Disk-full for training: a burst writing onto a small file system of its own (a tmpfs,
//! `support::small_fs`) left with `k` free pages, for the fill levels where the outcome can change.
//!
//! A burst's writes come in a fixed order: `run.json` (created, then rewritten with the task list), the metrics
//! line of the evaluation before training, then per iteration the policy's weights (`weights/iteration-I.ot`),
//! the episode lines, the metrics line and the checkpoint (beside the old one until the rename), and `run.json`
//! once more at the end. tmpfs counts space in pages, so with `k` pages free exactly one write fails first: the
//! first whose pages do not fit. Which one that is grows with `k`, a step at each write that allocates, so the
//! fill levels fall into stretches of one outcome (the file the error names, and what the run holds after it:
//! complete episode and metrics lines, weights files, the checkpoint's iteration). "Every fill level" is taken
//! to be every such stretch: levels are bisected between two tried levels whose outcomes differ until the
//! levels where the outcome changes are next to each other (so each write that can fail is made to fail), and
//! inside a stretch where a JSON Lines file failed every level is tried (a failed iteration takes back its
//! lines, so the outcomes of its lines' writes look alike from outside, and each line is its own write).
//! The stretches of one tensor file's write (one write of the whole file) are tried at their ends. A write that
//! needs no page beyond what an earlier one held at its peak cannot fail first at any level (the evaluation line
//! lands where `run.json`'s temporary copy was, the last `run.json` where the replaced checkpoint was): those
//! are met by no level.
//!
//! After each level: the error names a file of the run and says "No space left on device"; no temporary file is
//! left; `episodes.jsonl` holds whole lines, the first lines of what a run with room writes; the checkpoint, if
//! there is one, loads and covers exactly what the run holds (old or new, never half, and no line it does not
//! cover); `validate` finds nothing wrong. Then the space is freed and the run continued as the error says
//! (`--resume`, `--append`, or the same command again): it finishes, validates clean, and its episodes are those
//! of a run written with room.
//!
//! The sweep runs the burst in process, as the plugin runs it (`trainer::service::serve`), with a network small
//! enough that its tensor files are a few dozen pages (an ignored test tries every single page too, and checks
//! that each level has its stretch's outcome). `gigscope train` itself, through the plugin, is checked with no
//! page free and inside each of its tensor files' writes, continued as its error says (an ignored test sweeps it
//! as the in-process burst is swept, with its default network); a burst from the TUI's dialog, at its
//! checkpoint.

#![cfg(feature = "train")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use gigscope::plugin_host::{
    DeviceChoice, PolicyShape, Request, RunMode, TaskSource, TrainConfig, TrainEvent, TrainRequest,
};
use gigscope::trainer::checkpoint;

use crate::support::kill::validate;
use crate::support::small_fs::{crashed, temporaries, SmallFs, PAGE};
use crate::support::tmux::{tmux_available, Session};

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");

/// Iterations of the burst swept: two, so that the second checkpoint replaces the first.
const ITERATIONS: u64 = 2;

/// How a burst treats what the run holds, as `gigscope train`'s flags say.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Start {
    New,
    Resume,
    Append,
}

/// The smallest burst that writes every kind of file: the toy shop, two goals of groups of two, an evaluation
/// on two goals before training (a metrics line), a network of a few thousand parameters (weights of about 33
/// pages, a checkpoint of about 100).
fn config(iterations: u64, start: Start) -> TrainConfig {
    TrainConfig {
        iterations,
        goals_per_iteration: 2,
        episodes_per_goal: 2,
        eval_goals: 2,
        seed: 3,
        device: DeviceChoice::Cpu,
        shape: PolicyShape { embed: 2, hidden: 4 },
        resume: start == Start::Resume,
        append: start == Start::Append,
        ..TrainConfig::default()
    }
}

/// Where a burst runs: in this process as the plugin runs it, or as `gigscope train` (the real binary,
/// through the plugin, with the default network: weights of about 550 pages, a checkpoint of about 1,660).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Runner {
    InProcess,
    Command,
}

impl Runner {
    /// One burst: `Err` with its error (the `Failed` event's, or the command's standard error).
    fn burst(self, run: &Path, iterations: u64, start: Start) -> Result<(), String> {
        match self {
            Runner::InProcess => in_process(run, iterations, start),
            Runner::Command => command(run, iterations, start),
        }
    }
}

fn in_process(run: &Path, iterations: u64, start: Start) -> Result<(), String> {
    let request = Request::Train(Box::new(TrainRequest {
        run: run.to_path_buf(),
        tasks: TaskSource::new("toy", Default::default()),
        config: config(iterations, start),
        mode: RunMode::AsConfigured,
    }));
    let mut last = None;
    let json = serde_json::to_vec(&request).unwrap();
    gigscope::trainer::service::serve(&json, &AtomicBool::new(false), &mut |e| {
        last = Some(serde_json::from_slice::<TrainEvent>(e).expect("events are JSON"))
    })
    .unwrap();
    match last {
        Some(TrainEvent::Finished { .. }) => Ok(()),
        Some(TrainEvent::Failed { error }) => Err(error),
        other => panic!("the burst ended with {other:?}"),
    }
}

fn command(run: &Path, iterations: u64, start: Start) -> Result<(), String> {
    let mut cmd = Command::new(BIN);
    cmd.args(["train", "--env", "toy", "--device", "cpu", "--goals", "2", "--group-size", "2", "--eval-goals", "2"])
        .args(["--seed", "3", "--iterations", &iterations.to_string(), "--run"])
        .arg(run);
    match start {
        Start::New => {}
        Start::Resume => {
            cmd.arg("--resume");
        }
        Start::Append => {
            cmd.arg("--append");
        }
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!crashed(out.status, &stderr), "gigscope train crashed ({}): {stderr}", out.status);
    if out.status.success() {
        Ok(())
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        Err(stderr)
    }
}

/// How the error says to go on after a burst started as `start`: the flag it names, or the same command again
/// (a burst that could not start changed nothing a continuation depends on: the same command goes on).
fn continuation(error: &str, start: Start) -> Start {
    if error.contains("cannot start training") {
        start
    } else if error.contains("go on with --resume") {
        Start::Resume
    } else if error.contains("go on with --append") {
        Start::Append
    } else {
        assert!(error.contains("run the same command again"), "the error does not say how to go on: {error}");
        Start::New
    }
}

/// The file of `run` that `error` names (relative to the run), asserting that it says why.
fn named_file(run: &Path, error: &str, what: &str) -> String {
    assert!(error.contains("No space left on device"), "{what}: the error does not say why: {error}");
    let prefix = format!("{}/", run.display());
    let at = error.find(&prefix).unwrap_or_else(|| panic!("{what}: the error names no file of the run: {error}"));
    let rest = &error[at + prefix.len()..];
    let name = &rest[..rest.find(':').unwrap_or(rest.len())];
    assert!(!name.is_empty(), "{what}: the error names the run's directory, not a file: {error}");
    name.to_string()
}

/// What a burst left in its run: the file its error named (none when it finished), complete episode and
/// metrics lines, weights files and the checkpoint's iteration. Equal outcomes at two fill levels mean the
/// same write failed at both.
#[derive(Clone, Debug, PartialEq)]
struct Outcome {
    failed: Option<String>,
    episodes: usize,
    metrics: usize,
    weights: usize,
    checkpoint: Option<u64>,
    /// How the error said to go on.
    then: Option<String>,
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

fn lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| **b == b'\n').count()
}

/// The contract after a burst that ran on a full disk and ended with `result`: see the module's doc.
fn check_after(run: &Path, fs: &SmallFs, result: &Result<(), String>, reference: &[u8], what: &str) -> Outcome {
    let left = temporaries(fs.path());
    assert!(left.is_empty(), "{what}: temporary files left: {left:?}");
    let episodes = read(&run.join("episodes.jsonl"));
    let metrics = read(&run.join("metrics.jsonl"));
    assert!(episodes.is_empty() || episodes.ends_with(b"\n"), "{what}: episodes.jsonl ends in a torn line");
    assert!(metrics.is_empty() || metrics.ends_with(b"\n"), "{what}: metrics.jsonl ends in a torn line");
    assert!(reference.starts_with(&episodes), "{what}: episodes.jsonl is not what a run with room starts with");
    let torn: Vec<PathBuf> = ["episodes.jsonl.torn", "metrics.jsonl.torn"]
        .iter()
        .map(|name| run.join(name))
        .filter(|path| path.exists())
        .collect();
    assert!(torn.is_empty(), "{what}: a line was torn: {torn:?}");
    let path = checkpoint::path_in(run);
    let checkpoint = path.exists().then(|| {
        let state = checkpoint::read_state(&path).unwrap_or_else(|e| panic!("{what}: the checkpoint is torn: {e}"));
        // It covers exactly what the run holds: no line of an iteration it does not cover.
        assert_eq!(
            (state.episodes_bytes, state.metrics_bytes),
            (episodes.len() as u64, metrics.len() as u64),
            "{what}: the checkpoint of iteration {} does not cover the run's lines",
            state.iteration
        );
        state.iteration
    });
    if checkpoint.is_none() {
        assert!(episodes.is_empty(), "{what}: episodes without a checkpoint: an unfinished iteration's lines");
    }
    if run.join("episodes.jsonl").exists() {
        if let Err(problems) = validate(BIN, run) {
            panic!("{what}: validate finds the run wrong: {problems}");
        }
    }
    let weights = std::fs::read_dir(run.join("weights")).map_or(0, |d| d.count());
    let (failed, then) = match result {
        Ok(()) => (None, None),
        Err(error) => (Some(named_file(run, error, what)), Some(format!("{:?}", continuation(error, Start::New)))),
    };
    Outcome { failed, episodes: lines(&episodes), metrics: lines(&metrics), weights, checkpoint, then }
}

/// Free the space and go on as the error said; the run finishes, validates clean and holds what a run with
/// room holds.
fn continue_after(
    runner: Runner,
    run: &Path,
    fs: &SmallFs,
    outcome: &Outcome,
    error: &str,
    reference: &[u8],
    what: &str,
) {
    fs.free_all();
    let done = outcome.checkpoint.unwrap_or(0);
    let start = continuation(error, Start::New);
    let iterations = if start == Start::Resume { ITERATIONS - done } else { ITERATIONS };
    if let Err(again) = runner.burst(run, iterations, start) {
        panic!("{what}, then freed: continuing ({start:?}) failed: {again}");
    }
    if let Err(problems) = validate(BIN, run) {
        panic!("{what}, then freed and continued: validate finds the run wrong: {problems}");
    }
    assert!(read(&run.join("episodes.jsonl")) == reference, "{what}, then continued: the episodes differ");
    assert!(temporaries(fs.path()).is_empty(), "{what}, then continued: {:?}", temporaries(fs.path()));
}

/// The run a burst starts in: the evaluation records of earlier bursts that failed before their first
/// iteration was done (what "run the same command again" leaves), 69 lines, 3.6 KB. The first iteration's
/// metrics line then starts a page of the file's own (the evaluation line of this burst, about 130 bytes, still
/// fits, the iteration's, about 600, does not): without them every metrics line would land in a page the file
/// already holds, and no fill level could make one fail.
fn earlier_evaluations(run: &Path) {
    std::fs::create_dir_all(run).unwrap();
    let record = "{\"iteration\":0,\"eval_success\":0.0,\"eval_score\":0.0}\n";
    std::fs::write(run.join("metrics.jsonl"), record.repeat(EARLIER_EVALUATIONS)).unwrap();
}

const EARLIER_EVALUATIONS: usize = 69;

/// The metrics lines of iteration 0 (the initial policy's evaluations).
fn evaluations(run: &Path) -> usize {
    let iteration = |line: &str| serde_json::from_str::<serde_json::Value>(line).ok()?["iteration"].as_i64();
    String::from_utf8_lossy(&read(&run.join("metrics.jsonl"))).lines().filter(|l| iteration(l) == Some(0)).count()
}

/// The burst at `free` pages free: its outcome, the contract checked, continued once freed.
fn level(runner: Runner, fs: &SmallFs, run: &Path, free: u64, reference: &[u8]) -> Outcome {
    fs.clear();
    earlier_evaluations(run);
    fs.leave_free(free);
    let what = format!("{runner:?}, {free} pages free");
    let result = runner.burst(run, ITERATIONS, Start::New);
    let outcome = check_after(run, fs, &result, reference, &what);
    if outcome.checkpoint.is_none() {
        // A first burst that finished no iteration takes its evaluation back: trying again adds none.
        assert_eq!(evaluations(run), EARLIER_EVALUATIONS, "{what}: the failed burst left its evaluation");
    }
    match &result {
        Ok(()) => assert_eq!(read(&run.join("episodes.jsonl")), reference, "{what}: the episodes differ"),
        Err(error) => continue_after(runner, run, fs, &outcome, error, reference, &what),
    }
    assert_eq!(evaluations(run), EARLIER_EVALUATIONS + 1, "{what}: the run's own evaluations of the initial policy");
    outcome
}

/// Bisect between tried levels whose outcomes differ until every change is between neighbouring levels; then
/// try every level of the stretches where a JSON Lines file failed.
fn sweep(tried: &mut BTreeMap<u64, Outcome>, mut try_level: impl FnMut(u64) -> Outcome) {
    loop {
        let levels: Vec<(u64, Outcome)> = tried.iter().map(|(k, o)| (*k, o.clone())).collect();
        let split = levels.windows(2).find_map(|pair| {
            let ((lo, a), (hi, b)) = (&pair[0], &pair[1]);
            let lines = a.failed.as_deref().is_some_and(|f| f.ends_with(".jsonl"));
            (hi - lo > 1 && (a != b || lines)).then(|| lo + (hi - lo) / 2)
        });
        let Some(mid) = split else { return };
        let outcome = try_level(mid);
        tried.insert(mid, outcome);
    }
}

/// A run of the burst written with room by `runner`: its episodes.
fn reference(runner: Runner) -> Vec<u8> {
    let room = tempfile::tempdir().unwrap();
    let run = room.path().join("run");
    earlier_evaluations(&run);
    runner.burst(&run, ITERATIONS, Start::New).unwrap();
    read(&run.join("episodes.jsonl"))
}

/// A small file system of `bytes` and the burst's run written on it with room, for what it needs.
fn written_with_room(runner: Runner, bytes: u64) -> (SmallFs, PathBuf) {
    let fs = SmallFs::mount(bytes);
    let run = fs.path().join("run");
    earlier_evaluations(&run);
    runner.burst(&run, ITERATIONS, Start::New).unwrap();
    (fs, run)
}

/// Pages of the file at `path`.
fn pages(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len().div_ceil(PAGE)
}

/// The levels where the outcome changes, one line each, for the report.
fn changes(tried: &BTreeMap<u64, Outcome>) -> String {
    let levels: Vec<(&u64, &Outcome)> = tried.iter().collect();
    let mut report = format!("  {} -> {:?}\n", levels[0].0, levels[0].1);
    for pair in levels.windows(2).filter(|pair| pair[0].1 != pair[1].1) {
        report += &format!("  {} -> {:?}\n", pair[1].0, pair[1].1);
    }
    report
}

/// The burst `runner` makes at the fill levels [`sweep`] picks (and, with `every_page`, at every other level up to
/// room enough, each asserted to have the outcome of the stretch the sweep put it in), on a file system of
/// `bytes`: the levels tried.
fn sweep_levels(runner: Runner, bytes: u64, every_page: bool) -> BTreeMap<u64, Outcome> {
    let clock = Instant::now();
    let reference = reference(runner);
    let (fs, run) = written_with_room(runner, bytes);
    // The peak is the last checkpoint beside the one it replaces: twice what the run keeps is room enough.
    let room_enough = 2 * fs.used_pages();
    let mut tried = BTreeMap::new();
    for free in [0, room_enough] {
        tried.insert(free, level(runner, &fs, &run, free, &reference));
    }
    assert_eq!(tried[&room_enough].failed, None, "{room_enough} pages free: the burst failed");
    sweep(&mut tried, |free| level(runner, &fs, &run, free, &reference));
    let swept = tried.len();
    if every_page {
        for free in 0..room_enough {
            if tried.contains_key(&free) {
                continue;
            }
            let outcome = level(runner, &fs, &run, free, &reference);
            let (below, expected) = tried.range(..free).next_back().unwrap();
            assert_eq!(&outcome, expected, "{free} pages free: not the outcome of the stretch from {below}");
        }
    }
    let failed = tried.values().filter(|o| o.failed.is_some()).count();
    let report = changes(&tried);
    eprintln!(
        "{runner:?}: {swept} fill levels of 0..={room_enough} pages swept{}, {failed} failed, {} outcomes, \
         {:.1} s\n{report}",
        if every_page {
            format!(", then every other level ({room_enough} in all) as its stretch's")
        } else {
            String::new()
        },
        report.lines().count(),
        clock.elapsed().as_secs_f64()
    );
    tried
}

#[test]
fn a_burst_on_a_full_disk_fails_naming_the_file_and_goes_on_once_freed_at_every_fill_level() {
    let tried = sweep_levels(Runner::InProcess, SMALL_NETWORK_FS, false);
    let report = changes(&tried);
    let failed = |file: &str| tried.values().any(|o| o.failed.as_deref() == Some(file));
    for file in ["run.json", "metrics.jsonl", "episodes.jsonl", "weights/iteration-1.ot", "checkpoint.ot"] {
        assert!(failed(file), "no fill level made {file} fail\n{report}");
    }
    // The second iteration's checkpoint failed beside the first one, which was kept.
    assert!(
        tried.values().any(|o| o.failed.as_deref() == Some("checkpoint.ot") && o.checkpoint == Some(1)),
        "no fill level made the second checkpoint fail\n{report}"
    );
}

/// Every page from none to room enough, each level's outcome that of the stretch the bisection put it in: the
/// check that the sweep's stretches hold (a few minutes; its figures are in docs/reliability.md).
#[test]
#[ignore = "every fill level, one at a time: a few minutes"]
fn a_burst_on_a_full_disk_at_every_single_page() {
    sweep_levels(Runner::InProcess, SMALL_NETWORK_FS, true);
}

/// Room for the in-process burst's run (its small network's files) twice over.
const SMALL_NETWORK_FS: u64 = 4 << 20;

/// `gigscope train` itself with its default network, through the plugin, swept as the in-process burst is (its
/// writes are the same code's; about 4,500 fill levels of a second or two each, of which the bisection tries some
/// sixty): every stretch has its outcome, the contract holds after each level (exit status 1 and an error naming
/// the file, no abort from libtorch's C++ exception on a failed save, continued as the error says once the space
/// is freed), and each kind of file is made to fail, the second checkpoint beside the first too (its figures
/// are in docs/reliability.md).
#[test]
fn gigscope_train_on_a_full_disk_at_every_fill_level() {
    if crate::support::plugin::plugin(BIN).is_none() {
        return;
    }
    let tried = sweep_levels(Runner::Command, 32 << 20, false);
    let report = changes(&tried);
    let failed = |file: &str| tried.values().any(|o| o.failed.as_deref() == Some(file));
    for file in ["run.json", "metrics.jsonl", "episodes.jsonl", "weights/iteration-1.ot", "checkpoint.ot"] {
        assert!(failed(file), "no fill level made {file} fail\n{report}");
    }
    assert!(
        tried.values().any(|o| o.failed.as_deref() == Some("checkpoint.ot") && o.checkpoint == Some(1)),
        "no fill level made the second checkpoint fail\n{report}"
    );
}

/// The text inside the burst dialog's frame on `screen`, its rows joined by spaces and runs of spaces made one.
fn dialog_text(screen: &str) -> String {
    let rows: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let top = rows.iter().position(|r| r.iter().collect::<String>().contains("┌Training burst")).expect("the dialog");
    let left = rows[top].iter().position(|c| *c == '┌').unwrap();
    let right = left + rows[top][left..].iter().position(|c| *c == '┐').unwrap();
    let inside: Vec<String> = rows[top + 1..]
        .iter()
        .take_while(|r| r.get(left) != Some(&'└'))
        .map(|r| r.get(left + 1..right).map_or(String::new(), |c| c.iter().collect()))
        .collect();
    inside.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A burst from the TUI's dialog on a disk that fills while it writes its checkpoint (libtorch's save, which once
/// aborted the process): the TUI stays up and says the burst failed, naming the file and why; the run keeps what
/// it held; once the space is freed, the next burst from the dialog finishes.
#[test]
fn a_tui_burst_on_a_full_disk_leaves_the_tui_up_saying_so_and_the_next_one_finishes() {
    if !tmux_available() || crate::support::plugin::plugin(BIN).is_none() {
        return;
    }
    // The default network's files, as the dialog's burst writes them.
    let room = tempfile::tempdir().unwrap();
    Runner::Command.burst(&room.path().join("run"), 1, Start::New).unwrap();
    let weights = pages(&room.path().join("run/weights/iteration-1.ot"));
    let checkpoint = pages(&checkpoint::path_in(&room.path().join("run")));
    let fs = SmallFs::mount(32 << 20);
    let run = fs.path().join("basic");
    std::fs::create_dir(&run).unwrap();
    for file in ["episodes.jsonl", "metrics.jsonl", "run.json"] {
        std::fs::copy(Path::new("tests/fixtures/tui/basic").join(file), run.join(file)).unwrap();
    }
    let before = read(&run.join("episodes.jsonl"));
    // Room for the weights and the lines, half the checkpoint's.
    fs.leave_free(weights + checkpoint / 2);
    let s = Session::start("disk-full-burst", &run, "");
    s.set_up_small_burst();
    s.keys(&["Enter"]);
    let screen = s.wait_for(&["burst failed", "checkpoint.ot", "No space left on device"]);
    // The dialog says it too, whole: the status bar has one line, which a longer path would cut.
    let dialog = dialog_text(&screen);
    assert!(dialog.contains("checkpoint.ot: No space left on device"), "the dialog says: {dialog}\n{screen}");
    assert!(temporaries(fs.path()).is_empty(), "temporary files left: {:?}", temporaries(fs.path()));
    assert_eq!(read(&run.join("episodes.jsonl")), before, "the failed iteration's lines are taken back");
    validate(BIN, &run).unwrap();
    fs.free_all();
    // The dialog is still open, with the burst's settings.
    s.wait_for(&["Training burst", "iterations         1"]);
    s.keys(&["Enter"]);
    s.wait_for(&["burst finished 1 iteration(s)", "fresh policy"]);
    assert_eq!(lines(&read(&run.join("episodes.jsonl"))), lines(&before) + 2 * 2);
    assert!(checkpoint::path_in(&run).exists());
    validate(BIN, &run).unwrap();
}
