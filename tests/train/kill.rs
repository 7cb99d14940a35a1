//! Kill-anywhere: `gigscope train` killed (SIGKILL) at pseudo-random moments (every other kill soon after the
//! start, the others once it has begun to write), again and again on one run, each time continued from where it
//! stood (`--resume` from the checkpoint, `--append` before the first one). After every kill: no complete line
//! written before is lost or changed, and `validate` finds nothing wrong but what a kill may leave (an unfinished
//! last line, a group cut short), reported as such. At the end a last continuation finishes, and the run
//! validates clean with no temporary file left behind.

#![cfg(feature = "train")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::kill::{complete, finished_iterations, unexplained_problems, validate_problems, Schedule};
use crate::support::small_fs::temporaries;

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");
const KILLS: u64 = 24;

fn train(run: &Path, iterations: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["train", "--env", "toy", "--device", "cpu", "--goals", "2", "--group-size", "2", "--eval-goals", "2"])
        .args(["--seed", "3", "--iterations", iterations, "--run"])
        .arg(run);
    if run.join("checkpoint.ot").is_file() {
        cmd.arg("--resume");
    } else if complete_lines(run) > 0 {
        cmd.arg("--append");
    }
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    cmd
}

fn episodes(run: &Path) -> Vec<u8> {
    std::fs::read(run.join("episodes.jsonl")).unwrap_or_default()
}

fn file_len(run: &Path) -> u64 {
    std::fs::metadata(run.join("episodes.jsonl")).map_or(0, |m| m.len())
}

fn complete_lines(run: &Path) -> usize {
    episodes(run).iter().filter(|b| **b == b'\n').count()
}

/// `validate RUN`: its exit status and the problems it listed (standard error).
#[test]
fn train_killed_anywhere_again_and_again_loses_nothing_and_goes_on() {
    let temp = tempfile::tempdir().unwrap();
    let run = temp.path().join("run");
    let mut kept: Vec<u8> = Vec::new();
    let mut schedule = Schedule(0x9e37_79b9_7f4a_7c15);
    for kill in 0..KILLS {
        let written = file_len(&run);
        let mut child = train(&run, "1000").spawn().unwrap();
        if kill % 2 == 0 {
            // 0.1 to 2.6 s after the start: while libtorch loads, while the first group is played.
            std::thread::sleep(Duration::from_millis(100 + schedule.next(2_500)));
        } else {
            // Once it has started writing, 0 to 0.4 s on: while lines and the checkpoint are written.
            let deadline = Instant::now() + Duration::from_secs(300);
            while file_len(&run) == written && Instant::now() < deadline && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis(schedule.next(400)));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let bytes = episodes(&run);
        let complete = complete(&bytes);
        // What a continuation may drop is the last iteration's lines: `--resume` cuts those the checkpoint does not
        // cover (the iteration is played again), and a torn tail goes to a side file. Every earlier line stays.
        assert!(
            complete.starts_with(finished_iterations(&kept)),
            "kill {kill}: complete lines of finished iterations were lost or changed"
        );
        kept = complete.to_vec();
        if run.join("episodes.jsonl").is_file() {
            let unexplained = unexplained_problems(BIN, &run);
            assert!(unexplained.is_empty(), "kill {kill}: validate found more than a kill leaves: {unexplained:?}");
        }
    }
    assert!(!kept.is_empty(), "no kill came late enough for a line to be written: the schedule is too short");
    let out = train(&run, "1").output().unwrap();
    assert!(out.status.success(), "continuing after {KILLS} kills failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(episodes(&run).starts_with(finished_iterations(&kept)), "the last continuation lost lines");
    let problems = validate_problems(BIN, &run);
    assert!(problems.iter().all(|p| p.contains("partial")), "the continued run does not validate: {problems:?}");
    // In the run and its subdirectories (an iteration's weights are written atomically too).
    let left = temporaries(&run);
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}
