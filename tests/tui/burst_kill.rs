//! Kill-anywhere for a burst inside the TUI (issue 28): the real binary in tmux trains into the open run (the
//! training plugin loaded into its own process), and is killed with SIGKILL while the burst runs, again and again
//! on one run, at pseudo-random points (a fixed seed): a few soon after the burst was asked for (while the plugin
//! and libtorch load, while the trainer opens the run), the others at points of its work on disk (once the
//! episodes file has changed, or when the n-th temporary file of an atomic write appears: `run.json`, an
//! iteration's weights, the checkpoint). After every kill: no complete line of a finished iteration is lost or
//! changed (a continuing burst may drop the lines of the iteration its checkpoint does not cover, and plays it
//! again), `validate` reports nothing but what a kill may leave (an unfinished last line, a group cut short), and
//! no temporary file is left but the killed process's own, which the next burst removes. Each next round
//! reopens the run in a new TUI and bursts on; at the end a burst completes and leaves no temporary file at all.
//!
//! And the ending signals while a burst runs: SIGTERM and SIGHUP stop the burst at the end of its iteration (the
//! run and its checkpoint valid, the burst's end recorded) before the terminal is given back.
//!
//! Needs tmux and the training plugin (skipped without, except in CI).

#![cfg(feature = "train")]

use std::path::Path;
use std::time::{Duration, Instant};

use crate::e2e::{assert_terminal_given_back, signal, tui_then_stty};
use crate::support::kill::{complete, finished_iterations, unexplained_problems, validate_problems, Schedule};
use crate::support::plugin::plugin;
use crate::support::runs::{copy_fixture, episode_lines};
use crate::support::small_fs::temporaries;
use crate::support::tmux::{tmux_available, Session};

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");
const KILLS: u64 = 12;

/// The environment a TUI session needs to find the plugin as this test process does.
fn plugin_env() -> String {
    std::env::var("GIGSCOPE_TRAIN_LIB").map(|p| format!("GIGSCOPE_TRAIN_LIB={p}")).unwrap_or_default()
}

/// `gigscope tui RUN` in tmux, with the plugin (then the shell's report for [`assert_terminal_given_back`]),
/// once it has opened the run.
fn tui(test: &str, run: &Path) -> Session {
    let s = Session::launch_with_env(test, &plugin_env(), &tui_then_stty(run, "--rescan-ms 200"), (120, 40));
    // The iterations' title is "Iterations (N)" while they all fit, "Iterations · 1–15 of N" once they do not
    // (the run grows by every burst).
    s.wait_for(&["[Overview]", "┌Iterations"]);
    s
}

/// In the burst dialog: `iterations` (one of the dialog's choices from 1 to 50), 2 goals, groups of 2; then start.
fn start_burst(s: &Session, iterations: u64) {
    const CHOICES: [u64; 7] = [1, 2, 3, 5, 10, 20, 50];
    s.keys(&["t"]);
    s.wait_for(&["Training burst", "iterations         5"]);
    let at = |n: u64| CHOICES.iter().position(|c| *c == n).expect("a choice of the dialog");
    let (from, to) = (at(5), at(iterations));
    let key = if to > from { "l" } else { "h" };
    for _ in 0..from.abs_diff(to) {
        s.keys(&[key]);
    }
    s.keys(&["j", "h", "h", "h", "j", "h", "h"]);
    s.wait_for(&[&format!("iterations         {iterations}"), "goals / iteration  2", "group size N       2"]);
    s.keys(&["Enter"]);
}

fn episodes(run: &Path) -> Vec<u8> {
    std::fs::read(run.join("episodes.jsonl")).unwrap_or_default()
}

/// The episodes file's length and modification time: a change is a write.
fn stamp(run: &Path) -> Option<(u64, std::time::SystemTime)> {
    let meta = std::fs::metadata(run.join("episodes.jsonl")).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// Where a kill falls, counted from the moment the burst was asked for.
#[derive(Clone, Copy, Debug)]
enum KillPoint {
    /// This many milliseconds on: while the plugin and libtorch load, while the trainer opens the run.
    Soon(u64),
    /// Once the episodes file has changed (the burst writes, or cuts an iteration its checkpoint does not cover),
    /// this many milliseconds on.
    Written(u64),
    /// When the n-th temporary file of an atomic write appears in the run or its subdirectories.
    Temporary(u64),
}

impl KillPoint {
    /// Whether the burst has begun to write when the kill falls here.
    fn after_writing(self) -> bool {
        !matches!(self, KillPoint::Soon(_))
    }
}

/// Wait for `point` in `run`, the burst having been asked for with the episodes file at `before`.
fn wait_for_point(run: &Path, before: Option<(u64, std::time::SystemTime)>, point: KillPoint) {
    // A bound for failure only, never a timing assertion.
    let deadline = Instant::now() + Duration::from_secs(60);
    match point {
        KillPoint::Soon(ms) => std::thread::sleep(Duration::from_millis(ms)),
        KillPoint::Written(ms) => {
            while stamp(run) == before {
                assert!(Instant::now() < deadline, "the burst never wrote to the episodes file");
                std::thread::sleep(Duration::from_millis(2));
            }
            std::thread::sleep(Duration::from_millis(ms));
        }
        KillPoint::Temporary(n) => {
            let (mut seen, mut appeared) = (Vec::new(), 0);
            while appeared < n {
                assert!(Instant::now() < deadline, "{appeared} of {n} temporary files appeared");
                let now = temporaries(run);
                appeared += now.iter().filter(|t| !seen.contains(*t)).count() as u64;
                seen = now;
                std::thread::yield_now();
            }
        }
    }
}

/// SIGKILL gigscope `pid` (looked up beforehand, so that the kill follows the point at once) and wait until it
/// is gone.
fn kill(pid: &str) {
    // SAFETY: kill(2) on a process of this test's own session.
    let sent = unsafe { libc::kill(pid.parse().expect("a pid"), libc::SIGKILL) };
    assert_eq!(sent, 0, "kill -KILL {pid}");
    // A bound for failure only, never a timing assertion.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Path::new("/proc").join(pid).exists() {
        assert!(Instant::now() < deadline, "gigscope {pid} outlived SIGKILL");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_burst_killed_anywhere_again_and_again_loses_nothing_and_the_next_burst_goes_on() {
    if !tmux_available() || plugin(BIN).is_none() {
        return;
    }
    let (_tmp, run) = copy_fixture("basic");
    let mut kept = episodes(&run);
    let mut schedule = Schedule(0x5851_f42d_4c95_7f2d);
    for round in 0..KILLS {
        let point = match round % 4 {
            0 => KillPoint::Soon(schedule.next(1_500)),
            1 => KillPoint::Written(schedule.next(400)),
            _ => KillPoint::Temporary(1 + schedule.next(6)),
        };
        let s = tui(&format!("burst-kill-{round}"), &run);
        let pid = s.gigscope_pid();
        let before = stamp(&run);
        start_burst(&s, 50);
        wait_for_point(&run, before, point);
        kill(&pid);
        drop(s);

        let now = episodes(&run);
        assert!(
            now.starts_with(finished_iterations(complete(&kept))),
            "kill {round} ({point:?}): complete lines of finished iterations were lost or changed"
        );
        let problems = unexplained_problems(BIN, &run);
        assert!(problems.is_empty(), "kill {round} ({point:?}): validate found more than a kill leaves: {problems:?}");
        // A burst that has begun to write has removed what earlier kills left; the killed one's own temporaries
        // stay until the next burst.
        if point.after_writing() {
            let own = format!(".tmp{pid}");
            let left: Vec<_> = temporaries(&run).into_iter().filter(|t| !t.to_string_lossy().ends_with(&own)).collect();
            assert!(left.is_empty(), "kill {round} ({point:?}): temporary files of earlier writers left: {left:?}");
        }
        kept = now;
    }
    assert!(run.join("checkpoint.ot").is_file(), "no kill came after a checkpoint: the schedule is too short");

    // The run reopens, and a last burst resumes the checkpoint and completes.
    let s = tui("burst-kill-last", &run);
    start_burst(&s, 1);
    s.wait_for(&["resumes the checkpoint", "burst finished 1 iteration(s)"]);
    s.keys(&["q"]);
    assert_terminal_given_back(&s);
    let now = episodes(&run);
    assert!(now.starts_with(finished_iterations(complete(&kept))), "the last burst lost lines");
    assert!(now.ends_with(b"\n"), "the last burst left an unfinished line");
    let lines = episode_lines(&run);
    let last = lines.iter().filter_map(|e| e["iteration"].as_i64()).max().unwrap();
    assert_eq!(lines.iter().filter(|e| e["iteration"] == last).count(), 2 * 2, "the last iteration is whole");
    // The torn tails were cut before the burst wrote: what is left to report are groups that kills cut short.
    let problems: Vec<String> = validate_problems(BIN, &run).into_iter().filter(|p| !p.contains("partial")).collect();
    assert!(problems.is_empty(), "after the last burst: {problems:?}");
    let left = temporaries(&run);
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

/// `signal` while a burst of 50 iterations runs: the burst stops at the end of its iteration (so every iteration
/// in the run is whole, the checkpoint covers them, and `run.json` records where the burst ended), and then the
/// terminal is given back, as after `q`.
fn a_signal_during_a_burst_stops_it_and_gives_the_terminal_back(test: &str, name: &str) {
    if !tmux_available() || plugin(BIN).is_none() {
        return;
    }
    let (_tmp, run) = copy_fixture("basic");
    let s = tui(test, &run);
    let before = stamp(&run);
    start_burst(&s, 50);
    wait_for_point(&run, before, KillPoint::Written(0));
    signal(&s, name);
    assert_terminal_given_back(&s);

    let out = std::process::Command::new(BIN).arg("validate").arg(&run).output().unwrap();
    assert!(out.status.success(), "{name}: the run does not validate: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    let burst = meta["bursts"].as_array().and_then(|b| b.last()).cloned().unwrap_or_default();
    assert_eq!(burst["episodes_to"].as_u64(), Some(episodes(&run).len() as u64), "{name}: the burst's end: {burst}");
    let lines = episode_lines(&run);
    let trained = lines.iter().filter(|e| e["iteration"].as_i64() > Some(1)).count();
    assert!(trained > 0 && trained % 4 == 0, "{name}: whole iterations of 2 groups of 2: {trained} episodes");
    assert!(trained < 50 * 4, "{name}: the burst was stopped, not run to its end");
    assert!(run.join("checkpoint.ot").is_file(), "{name}: no checkpoint");
    let left = temporaries(&run);
    assert!(left.is_empty(), "{name}: temporary files left behind: {left:?}");
}

#[test]
fn sigterm_during_a_burst_stops_it_at_its_iteration_and_gives_the_terminal_back() {
    a_signal_during_a_burst_stops_it_and_gives_the_terminal_back("burst-term", "TERM");
}

/// A closed SSH session hangs the terminal up.
#[test]
fn sighup_during_a_burst_stops_it_at_its_iteration_and_gives_the_terminal_back() {
    a_signal_during_a_burst_stops_it_and_gives_the_terminal_back("burst-hup", "HUP");
}
