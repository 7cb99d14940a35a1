//! libtorch is loaded only when training starts: the `gigscope` binary never links it, the training plugin
//! (`libgigscope_train.so`) does, and the binary loads the plugin the first time training is asked for.
//!
//! - Inspecting (`--help`, `advantages`, `stats`, `search`, `webshop ...`, the TUI) loads neither.
//! - Without the plugin (`GIGSCOPE_TRAIN_LIB=/nonexistent`) `gigscope train` and a TUI burst say what was looked
//!   for and how to get it, and the TUI keeps working.
//! - With the plugin (built next to the binary: `./scripts/dev test` builds it before the tests), `gigscope
//!   train` writes a run through it, a TUI burst loads libtorch into the TUI's process only when it starts, and
//!   a plugin whose libtorch is gone says so. Without a plugin these are skipped, except in CI.
//!
//! These are tests of the binary as users build it, without the `train` feature: with it (`cargo test
//! --all-features`) the binary would link the trainer and libtorch like the test binaries do, so this file
//! compiles to nothing then. `./scripts/dev test` runs it in its own invocation (`cargo test --release --test
//! plugin`). The TUI cases drive the real binary in tmux (skipped without tmux, except in CI).
#![cfg(not(feature = "train"))]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::plugin::plugin;
use support::runs::{copy_fixture, episode_lines};
use support::tmux::{tmux_available, Session};

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `gigscope ARGS` with an empty cache and config home, and `env` added.
fn gigscope(args: &[&str], env: &[(&str, &str)], home: &Path) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env("GIGSCOPE_CACHE", home).env("XDG_CONFIG_HOME", home).env("XDG_CACHE_HOME", home);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Shared objects whose loading the dynamic loader reports (`LD_DEBUG=files`) for `gigscope ARGS`.
fn libraries_loaded(args: &[&str], home: &Path) -> (Output, Vec<String>) {
    let out = gigscope(args, &[("LD_DEBUG", "files")], home);
    let loaded = text(&out.stderr)
        .lines()
        .filter_map(|l| l.split("file=").nth(1))
        .map(|rest| rest.split(|c: char| c.is_whitespace() || c == ';').next().unwrap_or("").to_string())
        .collect();
    (out, loaded)
}

#[test]
fn inspecting_never_loads_libtorch_or_the_plugin() {
    let home = tempfile::tempdir().unwrap();
    let run = manifest().join("tests/fixtures/tui/basic");
    let run = run.to_str().unwrap();
    let commands: [&[&str]; 7] = [
        &["--help"],
        &["advantages", run],
        &["advantages", run, "--similarity", "0.9"],
        &["stats", run],
        &["search", run, "action:\"buy now\""],
        &["webshop", "search", "red shoes"],
        &["train", "--help"],
    ];
    for args in commands {
        let (out, loaded) = libraries_loaded(args, home.path());
        assert!(out.status.success(), "gigscope {args:?}: {}", text(&out.stderr));
        // The loader did report: the C library is always among the objects it loads.
        assert!(loaded.iter().any(|l| l.starts_with("libc.so")), "LD_DEBUG=files reported nothing for {args:?}");
        let torch: Vec<_> = loaded
            .iter()
            .filter(|l| l.contains("torch") || l.contains("libc10") || l.contains("gigscope_train"))
            .collect();
        assert!(torch.is_empty(), "gigscope {args:?} loaded {torch:?}");
    }
}

#[test]
fn the_binary_does_not_link_libtorch() {
    // What the dynamic section asks for at start-up (the behavioural test above covers dlopen too).
    let Ok(out) = Command::new("readelf").args(["-d", BIN]).output() else {
        eprintln!("readelf not found: skipping");
        return;
    };
    let dynamic = text(&out.stdout);
    assert!(dynamic.contains("NEEDED"), "{dynamic}");
    for lib in ["libtorch", "libc10", "libgigscope_train"] {
        assert!(
            !dynamic.contains(lib),
            "the gigscope binary needs {lib} (in a shared target directory, did a concurrent `cargo test \
             --all-features` relink {BIN} with the `train` feature while these tests ran?):\n{dynamic}"
        );
    }
}

#[test]
fn gigscope_train_without_the_plugin_says_what_was_looked_for_and_how_to_get_it() {
    let home = tempfile::tempdir().unwrap();
    let run = home.path().join("run");
    let args = ["train", "--env", "toy", "--run", run.to_str().unwrap(), "--iterations", "1"];
    let out = gigscope(&args, &[("GIGSCOPE_TRAIN_LIB", "/nonexistent/libgigscope_train.so")], home.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    for part in [
        "training is unavailable",
        "GIGSCOPE_TRAIN_LIB=/nonexistent/libgigscope_train.so does not exist",
        "./scripts/dev run",
        "cargo build --release -p gigscope-train",
    ] {
        assert!(err.contains(part), "{part:?} missing from:\n{err}");
    }
    assert!(episode_lines(&run).is_empty());

    // A file that is not a shared library at all.
    let bogus = home.path().join("libgigscope_train.so");
    std::fs::write(&bogus, "not a library").unwrap();
    let out = gigscope(&args, &[("GIGSCOPE_TRAIN_LIB", bogus.to_str().unwrap())], home.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("could not be loaded") && err.contains(bogus.to_str().unwrap()), "{err}");
}

// ---------------------------------------------------------------------------------------------------------
// tmux

impl Session {
    /// `gigscope tui DIR` with `env` (`VAR=value …`) in a detached 120×40 session.
    fn tui(test: &str, dir: &Path, env: &str) -> Session {
        Session::launch_with_env(test, env, &format!("tui {} --rescan-ms 200", dir.display()), (120, 40))
    }

    /// Whether the gigscope process has libtorch mapped.
    fn has_libtorch(&self) -> bool {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.gigscope_pid())).unwrap();
        maps.contains("libtorch_cpu") || maps.contains("libgigscope_train")
    }

    fn quit(&self) {
        self.keys(&["q"]);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.screen().contains("EXITED:0") {
            assert!(Instant::now() < deadline, "q did not end gigscope cleanly:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// From the burst dialog's defaults: 1 iteration, 2 goals, groups of 2; then start.
fn start_a_small_burst(s: &Session) {
    s.keys(&["t"]);
    s.wait_for(&["Training burst", "iterations         5"]);
    s.keys(&["h", "h", "h", "j", "h", "h", "h", "j", "h", "h"]);
    s.wait_for(&["iterations         1", "goals / iteration  2", "group size N       2"]);
    s.keys(&["Enter"]);
}

#[test]
fn a_burst_without_the_plugin_explains_itself_and_the_tui_keeps_working() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    let before = episode_lines(&dir).len();
    let s = Session::tui("missing", &dir, "GIGSCOPE_TRAIN_LIB=/nonexistent");
    s.wait_for(&["Iterations"]);
    assert!(!s.has_libtorch());
    start_a_small_burst(&s);
    // The dialog shows the whole reason, wrapped.
    s.wait_for(&[
        "failed: training is unavailable",
        "GIGSCOPE_TRAIN_LIB=/nonexistent",
        "./scripts/dev",
        "gigscope-train",
    ]);
    // The TUI goes on: the dialog closes, the views work, the run is as it was.
    s.keys(&["Escape"]);
    s.wait_for(&["[Overview]", "Iterations (2)"]);
    s.keys(&["Enter"]);
    s.wait_for(&["[Groups]", "group hat-it0"]);
    assert!(!s.has_libtorch());
    assert_eq!(episode_lines(&dir).len(), before);
    s.quit();
}

/// From the play dialog: a group of 1 on the first goal, started, then handed to the policy (`A`).
fn let_the_policy_play_a_group_of_one(s: &Session) {
    s.keys(&["p"]);
    s.wait_for(&["Pick a goal", "group size N = 4"]);
    s.keys(&["h", "h", "h"]);
    s.wait_for(&["group size N = 1"]);
    s.keys(&["Enter"]);
    s.wait_for(&["search[<your query>]", "episode 1/1"]);
    s.keys(&["A"]);
}

#[test]
fn policy_play_without_the_plugin_explains_itself_and_play_goes_on() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    let before = episode_lines(&dir).len();
    let s = Session::tui("play-missing", &dir, "GIGSCOPE_TRAIN_LIB=/nonexistent");
    s.wait_for(&["Iterations"]);
    let_the_policy_play_a_group_of_one(&s);
    s.wait_for(&["training is unavailable"]);
    // The episode is still the user's to play.
    s.keys(&["Enter"]);
    s.type_text("table");
    s.keys(&["Enter"]);
    s.wait_for(&["Total results", "click[next >]"]);
    assert!(!s.has_libtorch());
    assert_eq!(episode_lines(&dir).len(), before);
}

// ---------------------------------------------------------------------------------------------------------
// With the plugin (`./scripts/dev test` builds it first).

/// The environment a TUI session needs to find the plugin as this test process does.
fn plugin_env() -> String {
    std::env::var("GIGSCOPE_TRAIN_LIB").map(|p| format!("GIGSCOPE_TRAIN_LIB={p}")).unwrap_or_default()
}

#[test]
fn gigscope_train_writes_a_run_through_the_plugin_and_resumes_it() {
    if plugin(BIN).is_none() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let run = home.path().join("run");
    let run_arg = run.to_str().unwrap();
    let small = ["--env", "toy", "--goals", "2", "--group-size", "2", "--eval-goals", "2", "--seed", "3"];
    let first: Vec<&str> = ["train", "--run", run_arg, "--iterations", "1"].into_iter().chain(small).collect();
    let out = gigscope(&first, &[], home.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("training goals"), "{}", text(&out.stderr));
    // Not on a terminal, progress is written as log lines: one per iteration.
    let iteration_lines =
        text(&out.stderr).lines().filter(|l| l.starts_with("iteration 1 (1 this run): success")).count();
    assert_eq!(iteration_lines, 1, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("1 iterations in"), "{}", text(&out.stdout));
    let written = episode_lines(&run);
    assert_eq!(written.len(), 2 * 2);
    assert!(written.iter().all(|e| e["iteration"] == 1 && e["advantages"].is_array()), "{written:?}");
    assert!(run.join("checkpoint.ot").is_file() && run.join("metrics.jsonl").is_file());

    let again: Vec<&str> =
        ["train", "--run", run_arg, "--iterations", "1", "--resume"].into_iter().chain(small).collect();
    let out = gigscope(&again, &[], home.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("2 iterations in"), "{}", text(&out.stdout));
    assert_eq!(episode_lines(&run).iter().filter(|e| e["iteration"] == 2).count(), 4);

    // Training errors come back from the plugin as errors of the command.
    let out = gigscope(&first, &[], home.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("already holds episodes"), "{}", text(&out.stderr));
}

/// Sokoban through the port and the plugin: one tiny iteration of `gigscope train --env sokoban` writes a
/// Sokoban run (its options reach the environment); options it does not take are refused before the plugin loads.
#[test]
fn gigscope_train_env_sokoban_trains_one_tiny_iteration_through_the_plugin() {
    let home = tempfile::tempdir().unwrap();
    let run = home.path().join("run");
    let run_arg = run.to_str().unwrap();
    let bad = ["train", "--env", "sokoban", "--run", run_arg, "--env-option", "colour=red"];
    let out = gigscope(&bad, &[("GIGSCOPE_TRAIN_LIB", "/nonexistent/libgigscope_train.so")], home.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("colour") && err.contains("size, boxes, max_steps"), "{err}");
    if plugin(BIN).is_none() {
        return;
    }
    let tiny = "--env-option size=7 --iterations 1 --goals 2 --group-size 3 --eval-goals 2 --seed 1";
    let args: Vec<&str> = ["train", "--env", "sokoban", "--run", run_arg].into_iter().chain(tiny.split(' ')).collect();
    let out = gigscope(&args, &[], home.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("10000 training goals, 100 test goals"), "{}", text(&out.stderr));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["env"], "sokoban");
    let written = episode_lines(&run);
    assert_eq!(written.len(), 2 * 3);
    for e in &written {
        assert!(e["task"]["id"].as_str().is_some_and(|id| id.starts_with("seed-")), "{e}");
        let steps = e["steps"].as_array().unwrap();
        assert_eq!(e["advantages"].as_array().map(Vec::len), Some(steps.len()));
        let grid = steps[0]["observation"].as_str().unwrap();
        assert_eq!(grid.lines().count(), 7, "size=7 reached the environment:\n{grid}");
        assert!(steps.iter().all(|s| s.get("page").is_none() && s["action"].as_str().is_some()), "{e}");
    }
}

/// On a Sokoban run the TUI's policy play and bursts take Sokoban from the run's `env`: the policy plays a group
/// of level 0 into the run, and a burst trains Sokoban levels after the run's last iteration.
#[test]
fn on_the_sokoban_sample_the_policy_plays_and_a_burst_trains_sokoban() {
    if plugin(BIN).is_none() || !tmux_available() {
        return;
    }
    let (_tmp, dir) = support::runs::copy_sample("sokoban-gigpo");
    let s = Session::tui("sokoban", &dir, &plugin_env());
    s.wait_for(&["[Overview]", "Iterations (8)"]);
    s.keys(&["p"]);
    s.wait_for(&["Pick a goal", "task       seed-0", "group size N = 4"]);
    s.keys(&["h", "h"]);
    s.wait_for(&["group size N = 2"]);
    s.keys(&["Enter"]);
    s.wait_for(&["episode 1/2", "Actions (4) · Enter acts"]);
    s.keys(&["A"]);
    s.wait_for(&["[Groups]", "play-goal-0-1", "2 trajectories"]);
    let played: Vec<_> = episode_lines(&dir).into_iter().filter(|e| e["group"] == "play-goal-0-1").collect();
    assert_eq!(played.len(), 2);
    assert!(played.iter().all(|e| e["task"]["id"] == "seed-0" && e["source"] == "play"), "{played:?}");
    assert!(played[0]["steps"][0]["observation"].as_str().is_some_and(|o| o.starts_with("######")));
    s.keys(&["Escape"]);
    s.wait_for(&["[Overview]"]);
    start_a_small_burst(&s);
    s.wait_for(&["burst finished 1 iteration(s)", "fresh policy"]);
    let trained: Vec<_> = episode_lines(&dir).into_iter().filter(|e| e["iteration"] == 9).collect();
    assert_eq!(trained.len(), 2 * 2);
    assert!(trained.iter().all(|e| e["task"]["id"].as_str().is_some_and(|id| id.starts_with("seed-"))));
}

#[test]
fn a_burst_loads_libtorch_into_the_tui_only_when_it_starts() {
    if plugin(BIN).is_none() || !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    let s = Session::tui("lazy", &dir, &plugin_env());
    s.wait_for(&["Iterations"]);
    s.keys(&["Enter"]);
    s.wait_for(&["[Groups]"]);
    s.keys(&["Escape"]);
    // Wait for the frame: Escape and the next key sent at once read as an Alt chord.
    s.wait_for(&["[Overview]", "Iterations (2)"]);
    assert!(!s.has_libtorch(), "libtorch is loaded before any burst");
    start_a_small_burst(&s);
    s.wait_for(&["burst finished 1 iteration(s)", "fresh policy"]);
    assert!(s.has_libtorch(), "the burst ran in the TUI's own process");
    // A second burst continues the checkpoint the first one wrote (the training side decides).
    s.keys(&["Enter"]);
    s.wait_for(&["resumes the checkpoint", "burst finished 1 iteration(s)"]);
    assert_eq!(episode_lines(&dir).iter().filter(|e| e["iteration"] == 3).count(), 4);
    s.quit();
}

#[test]
fn the_policy_plays_a_group_in_the_tui_through_the_plugin() {
    if plugin(BIN).is_none() || !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    let before = episode_lines(&dir).len();
    let s = Session::tui("play", &dir, &plugin_env());
    s.wait_for(&["Iterations"]);
    let_the_policy_play_a_group_of_one(&s);
    // The played group is written and opens (the "… played 1 episode(s)" message gives way to the write's).
    s.wait_for(&["[Groups]", "play-goal-0-1"]);
    assert!(s.has_libtorch());
    let deadline = Instant::now() + Duration::from_secs(60);
    while episode_lines(&dir).len() == before {
        assert!(Instant::now() < deadline, "the played group never reached the run:\n{}", s.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    let written = episode_lines(&dir);
    assert_eq!(written.len(), before + 1);
    let played = written.last().unwrap();
    assert_eq!(played["iteration"], 0);
    assert!(played["group"].as_str().unwrap().starts_with("play-goal-0"), "{played}");
    assert!(!played["steps"].as_array().unwrap().is_empty());
    s.quit();
}

/// A copy of the plugin whose libtorch directory (its RUNPATH) no longer exists: loading it fails the way it
/// does when torch was uninstalled, and the message says so.
#[test]
fn a_plugin_whose_libtorch_is_gone_says_so() {
    let Some(plugin) = plugin(BIN) else { return };
    let original = std::fs::read(&plugin).unwrap();
    let out = Command::new("readelf").args(["-d", plugin.to_str().unwrap()]).output();
    let Ok(out) = out else {
        eprintln!("readelf not found: skipping");
        return;
    };
    let dynamic = text(&out.stdout);
    let Some(runpath) = dynamic.lines().find(|l| l.contains("(RUNPATH)") || l.contains("(RPATH)")) else {
        panic!("the plugin has no rpath to libtorch:\n{dynamic}");
    };
    let dir = runpath.split('[').nth(1).and_then(|r| r.split(']').next()).unwrap().to_string();
    // Same length, so the dynamic string table keeps its layout; no such directory.
    let gone: String = dir.chars().map(|c| if c == '/' { '/' } else { 'q' }).collect();
    assert!(!Path::new(&gone).exists());
    let mut patched = original.clone();
    let mut at = 0;
    let mut replaced = 0;
    while let Some(i) = patched[at..].windows(dir.len()).position(|w| w == dir.as_bytes()) {
        patched[at + i..at + i + dir.len()].copy_from_slice(gone.as_bytes());
        at += i + dir.len();
        replaced += 1;
    }
    assert!(replaced > 0);
    let home = tempfile::tempdir().unwrap();
    let copy = home.path().join("libgigscope_train.so");
    std::fs::write(&copy, patched).unwrap();
    let run = home.path().join("run");
    let out = gigscope(
        &["train", "--env", "toy", "--run", run.to_str().unwrap(), "--iterations", "1"],
        &[("GIGSCOPE_TRAIN_LIB", copy.to_str().unwrap()), ("LD_LIBRARY_PATH", "")],
        home.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    for part in ["libtorch", "could not be loaded", "cannot open shared object file", "./scripts/dev run"] {
        assert!(err.contains(part), "{part:?} missing from:\n{err}");
    }
}

/// A build of the plugin played by a test: the TUI on a copy of the basic fixture, looking for the plugin in a
/// directory of its own where a status file, as `scripts/dev` writes it (see `plugin_host::building`), names this
/// test's own process as the builder of 320 crates.
struct PlayedBuild {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    _lib: tempfile::TempDir,
    plugin_path: PathBuf,
    status: PathBuf,
    /// The status file's first line, with its newline.
    header: String,
    s: Session,
}

impl PlayedBuild {
    /// The status file holds the header and then `lines`; the TUI is started and its overview is on screen.
    fn start(test: &str, lines: &str) -> PlayedBuild {
        let (_tmp, dir) = copy_fixture("basic");
        let lib = tempfile::tempdir().unwrap();
        let plugin_path = lib.path().join("libgigscope_train.so");
        let status = lib.path().join("libgigscope_train.so.building");
        let header = format!("gigscope-train build: pid {}, 320 crates\n", std::process::id());
        std::fs::write(&status, format!("{header}{lines}")).unwrap();
        let s = Session::tui(test, &dir, &format!("GIGSCOPE_TRAIN_LIB={}", plugin_path.display()));
        s.wait_for(&["Iterations"]);
        PlayedBuild { _tmp, dir, _lib: lib, plugin_path, status, header, s }
    }
}

/// `./scripts/dev run` opens the TUI while the plugin is still being built beside the binary: the burst dialog
/// says how far the build is, a burst asked for meanwhile waits for it, and starts once the plugin is in place.
/// The build is played by the test: a status file as `scripts/dev` writes it (see `plugin_host::building`),
/// naming this test's own process as the builder, then the real plugin copied in and the status file removed.
#[test]
fn a_burst_asked_for_while_the_plugin_is_built_waits_for_it_and_starts() {
    let Some(built) = plugin(BIN) else { return };
    if !tmux_available() {
        return;
    }
    let build = PlayedBuild::start("building", "compiled libc\ncompiled serde\n");
    let (s, dir, header) = (&build.s, &build.dir, &build.header);
    s.keys(&["t"]);
    s.wait_for(&["the trainer is being built: 2 of 320 crates compiled (serde)", "starts when it is ready"]);
    // The dialog follows the build.
    std::fs::write(&build.status, format!("{header}compiled libc\ncompiled serde\ncompiled torch-sys\n")).unwrap();
    s.wait_for(&["3 of 320 crates compiled (torch-sys)"]);
    s.keys(&["Escape"]);
    s.wait_for(&["[Overview]", "Iterations (2)"]);
    start_a_small_burst(s);
    s.wait_for(&["waiting for the trainer's build: 3 of 320 crates compiled (torch-sys)"]);
    assert!(!s.has_libtorch());
    assert!(!episode_lines(dir).iter().any(|e| e["iteration"] == 2), "nothing trained before the build ended");
    // The build ends: the plugin is in place and the status file gone; the burst starts by itself.
    std::fs::copy(&built, &build.plugin_path).unwrap();
    std::fs::remove_file(&build.status).unwrap();
    s.wait_for(&["burst finished 1 iteration(s)", "fresh policy"]);
    assert_eq!(episode_lines(dir).iter().filter(|e| e["iteration"] == 2).count(), 4);
    s.quit();
}

/// A build that failed, or whose builder is gone, is what a burst reports, with the log to read.
#[test]
fn a_failed_or_stopped_plugin_build_is_what_a_burst_reports() {
    if !tmux_available() {
        return;
    }
    let build =
        PlayedBuild::start("build-failed", "compiled libc\nfailed: cargo build -p gigscope-train exited with 101\n");
    let s = &build.s;
    start_a_small_burst(s);
    // The reason is wrapped in the dialog: its words, not its lines.
    s.wait_for(&["building", "failed:", "101", "libgigscope_train.so.build.log"]);
    s.keys(&["Escape"]);
    s.wait_for(&["[Overview]"]);
    // A builder that is gone (a pid no process has) without a last word: the build stopped.
    std::fs::write(&build.status, "gigscope-train build: pid 4194303, 320 crates\ncompiled libc\n").unwrap();
    s.keys(&["Enter"]);
    s.wait_for(&["[Groups]"]);
    s.keys(&["Escape"]);
    s.wait_for(&["[Overview]"]);
    // The dialog keeps the small burst's form.
    s.keys(&["t"]);
    s.wait_for(&["Training burst", "iterations         1"]);
    s.keys(&["Enter"]);
    s.wait_for(&["stopped", "before it ended"]);
    assert!(!s.has_libtorch());
    s.quit();
}
