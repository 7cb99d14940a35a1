//! A Ray burst from the TUI against a real Ray (issue 27): the real binary in tmux, a local head on loopback
//! (`tests/support/ray.rs`, stopped whatever happens), the burst dialog's `ray: default` backend (gigscope's own
//! `train` as the job's entrypoint, so no GPU is needed). The dialog shows the exact command before it starts;
//! the job's log and the run's new groups arrive while it runs; `X` stops the job. One test with one head:
//! `ray stop` stops every head of the machine, so two tests of one binary, run at once, must not each have one.
//!
//! Without tmux, Ray or the training plugin the test is skipped, except in CI.

use std::path::Path;

use gigscope::ray_job::JobState;

use crate::support::plugin::plugin;
use crate::support::ray::{ray_executable, Head};
use crate::support::runs::{copy_fixture, episode_lines};
use crate::support::tmux::{tmux_available, Session};

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");

/// What the burst dialog holds, row by row: the text between its borders, found by its title.
fn dialog_rows(screen: &str) -> Vec<String> {
    let rows: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let Some((top, left)) = rows.iter().enumerate().find_map(|(y, r)| {
        let text: String = r.iter().collect();
        let at = text.find("┌Training burst")?;
        Some((y, text[..at].chars().count()))
    }) else {
        panic!("no burst dialog on the screen:\n{screen}")
    };
    let right = (left + 1..rows[top].len()).find(|&x| rows[top][x] == '┐').expect("the dialog's corner");
    rows[top + 1..]
        .iter()
        .take_while(|r| r.get(left) == Some(&'│'))
        .map(|r| r[left + 1..right.min(r.len())].iter().collect())
        .collect()
}

/// The command the dialog shows, put back together: it is cut into rows of the dialog's width at any character
/// (a space included, so a row is not trimmed before the next is joined) and ends the dialog's form.
fn dialog_command(screen: &str) -> String {
    let rows = dialog_rows(screen);
    let start = rows.iter().position(|r| r.contains("the job runs:")).expect("the command is shown") + 1;
    let command: String = rows[start..].iter().take_while(|r| !r.trim().is_empty()).map(String::as_str).collect();
    command.trim_end().to_string()
}

/// The TUI on a copy of the basic fixture with `[burst] address` naming `head`, its burst dialog open on the
/// `ray: default` backend and `keys` pressed from its iterations field on.
fn dialog_on_ray(head: &Head, dir: &Path, tmp: &Path, name: &str, keys: &[&str]) -> Session {
    let config = tmp.join("config.toml");
    std::fs::write(&config, format!("[burst]\naddress = \"{}\"\n", head.address)).unwrap();
    let s = Session::start(name, dir, &format!("--config {}", config.display()));
    s.wait_for(&["Iterations (2)"]);
    s.keys(&["t"]);
    s.wait_for(&["Training burst", "iterations         5"]);
    s.keys(&["k", "l"]);
    s.wait_for(&["backend            ray: default", &format!("Ray profile default at {}", head.address)]);
    s.keys(&["j"]);
    s.keys(keys);
    s
}

/// The number of iterations the overview's table lists.
fn iterations_shown(screen: &str) -> Option<usize> {
    let (_, after) = screen.split_once("Iterations (")?;
    after.split(')').next()?.parse().ok()
}

#[test]
fn ray_bursts_from_the_dialog_run_on_a_local_head() {
    if !tmux_available() || plugin(BIN).is_none() {
        return;
    }
    let Some(ray) = ray_executable() else { return };
    let head = Head::start(ray);
    a_burst_runs_and_its_groups_arrive_live(&head);
    x_stops_a_running_burst(&head);
}

fn a_burst_runs_and_its_groups_arrive_live(head: &Head) {
    let (tmp, dir) = copy_fixture("basic");
    let before = episode_lines(&dir).len();
    let bytes_before = std::fs::metadata(dir.join("episodes.jsonl")).unwrap().len();
    // 1 iteration of 2 goals, groups of 2.
    let keys = ["h", "h", "h", "j", "h", "h", "h", "j", "h", "h"];
    let s = dialog_on_ray(head, &dir, tmp.path(), "ray-burst", &keys);
    let screen = s.wait_for(&["iterations         1", "goals / iteration  2", "group size N       2"]);
    // The exact command, before anything starts: gigscope's own train continuing this run.
    let command = dialog_command(&screen);
    let expected = format!("train --run {} --env webshop --append --estimator gigpo --iterations 1", dir.display());
    assert!(command.contains(&expected), "{command}\n{screen}");
    assert!(command.contains("--goals 2 --group-size 2"), "{command}");
    assert!(!dir.join("checkpoint.ot").exists() && episode_lines(&dir).len() == before, "nothing started yet");

    s.keys(&["Enter"]);
    s.wait_for(&["Ray job gigscope-burst-"]);
    // The job's log streamed into the dialog (its trainer's line for the iteration), then its end.
    s.wait_for(&["(1 this run)"]);
    s.wait_for(&["succeeded: Ray job gigscope-burst-"]);
    // The run's new groups arrive in the overview (the run is followed as any run).
    s.keys(&["Escape"]);
    s.wait_for(&["Iterations (3)", "16 ep"]);
    let episodes = episode_lines(&dir);
    assert_eq!(episodes.len(), before + 4);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let ray_burst = meta["bursts"].as_array().unwrap().iter().find(|b| b["backend"] == "ray").expect("recorded");
    assert_eq!(ray_burst["outcome"]["status"], "SUCCEEDED", "{meta:#}");
    // The job's part of the episodes file is recorded, and its groups carry its mark: the overview's burst
    // column on the new iteration, the groups list and the group's header.
    let bytes_after = std::fs::metadata(dir.join("episodes.jsonl")).unwrap().len();
    assert_eq!(
        (ray_burst["episodes_from"].as_u64(), ray_burst["episodes_to"].as_u64()),
        (Some(bytes_before), Some(bytes_after))
    );
    let screen = s.wait_for(&["burst"]);
    let new_row = screen.lines().find(|l| l.starts_with("│2 ")).unwrap_or_else(|| panic!("iteration 2:\n{screen}"));
    assert!(new_row.contains("b1"), "{new_row}");
    assert!(!screen.lines().any(|l| l.starts_with("│0 ") && l.contains("b1")), "older groups carry no mark:\n{screen}");
    s.keys(&["j", "j", "Enter"]);
    s.wait_for(&["· burst b1", "bst"]);
    assert_eq!(ray_burst["command"].as_str(), Some(command.as_str()), "the command shown is the one that ran");
}

fn x_stops_a_running_burst(head: &Head) {
    let (tmp, dir) = copy_fixture("basic");
    // 200 iterations of 16 goals, groups of 8: still running when stopped.
    let s = dialog_on_ray(head, &dir, tmp.path(), "ray-stop", &["l", "l", "l", "l", "l"]);
    s.wait_for(&["iterations         200", "goals / iteration  16", "group size N       8"]);
    s.keys(&["Enter"]);
    // Its log's lines reach the status bar and its first groups the overview while it runs; then X.
    s.wait_for(&["Ray job gigscope-burst-"]);
    s.keys(&["Escape"]);
    s.wait_until("the burst's first iteration in the overview, its log in the status bar", |screen| {
        iterations_shown(screen).is_some_and(|n| n > 2) && screen.contains("(200 this run)")
    });
    s.keys(&["X"]);
    s.wait_for(&["cancelling: the Ray job is asked to stop"]);
    // Once the job has stopped the status bar says so, no longer "cancelling".
    s.wait_for(&["burst stopped: Ray job gigscope-burst-"]);
    // The dialog says how it ended.
    s.keys(&["t"]);
    s.wait_for(&["stopped: Ray job gigscope-burst-"]);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let ray_burst = meta["bursts"].as_array().unwrap().iter().find(|b| b["backend"] == "ray").expect("recorded");
    assert_eq!(ray_burst["outcome"]["status"], "STOPPED", "{meta:#}");
    let job_id = ray_burst["job_id"].as_str().unwrap();
    assert_eq!(head.client().status(job_id).unwrap().status, JobState::Stopped);
}
