//! `gigscope truth` through the real binary and the training plugin: a tiny WebShop run (the embedded demo
//! catalog) is trained, then its iteration's anchor states are branched: one row per step row of the measured
//! groups with A* = Q̂ − V̂, the same file for the same seed whatever the number of workers, a divergence
//! reported (and the other groups untouched) when a recorded observation is tampered with, and a clear error
//! for an iteration without weights, an iteration the run lacks, a run gigscope did not train, and a truth file
//! read against another run or iteration.
//!
//! Like tests/plugin/training.rs this tests the binary as users build it (without the `train` feature; the
//! plugin built beside it by `./scripts/dev test`), so it compiles to nothing with `--all-features` and is
//! skipped when the plugin was not built (except in CI).
#![cfg(not(feature = "train"))]

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gigscope::run::truth::{read_truth, truth_path, weights_path, TruthFile};
use gigscope::run::Episode;
use support::plugin::plugin;

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");

fn gigscope(args: &[&str], home: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .env("GIGSCOPE_CACHE", home)
        .env("XDG_CONFIG_HOME", home)
        .env("XDG_CACHE_HOME", home)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn episodes(run: &Path) -> Vec<Episode> {
    std::fs::read_to_string(run.join("episodes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A two-iteration WebShop run on the demo catalog: 2 goals × 4 episodes per iteration.
fn train(home: &Path) -> PathBuf {
    let run = home.join("run");
    let args = [
        "train",
        "--run",
        run.to_str().unwrap(),
        "--iterations",
        "2",
        "--goals",
        "2",
        "--group-size",
        "4",
        "--step-limit",
        "8",
        "--eval-every",
        "0",
        "--seed",
        "3",
        "--name",
        "tiny",
    ];
    let out = gigscope(&args, home);
    assert!(out.status.success(), "{}", text(&out.stderr));
    run
}

fn truth(run: &Path, extra: &[&str], home: &Path) -> Output {
    let args: Vec<&str> = ["truth", run.to_str().unwrap(), "--rollouts", "4", "--seed", "5"]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    gigscope(&args, home)
}

fn succeeded(out: &Output) {
    assert!(out.status.success(), "stdout: {}\nstderr: {}", text(&out.stdout), text(&out.stderr));
}

#[test]
fn truth_branches_every_anchor_state_of_an_iteration_reproducibly() {
    if plugin(BIN).is_none() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let run = train(home.path());
    assert!(weights_path(&run, 1).is_file() && weights_path(&run, 2).is_file(), "every iteration keeps its policy");

    let out = truth(&run, &["--iteration", "2"], home.path());
    succeeded(&out);
    assert!(text(&out.stdout).contains("gigpo"), "{}", text(&out.stdout));
    let path = truth_path(&run, 2);
    let file = read_truth(&path, "tiny", 2).unwrap();
    let iteration: Vec<Episode> = episodes(&run).into_iter().filter(|e| e.iteration == 2).collect();
    let step_rows: BTreeSet<(String, usize)> =
        iteration.iter().flat_map(|e| (0..e.steps.len()).map(move |t| (e.id.clone(), t))).collect();
    let rows: BTreeSet<(String, usize)> = file.rows.iter().map(|r| (r.episode.clone(), r.step)).collect();
    assert!(file.divergences.is_empty(), "{:?}", file.divergences);
    assert_eq!(rows, step_rows, "one row per step row of the iteration");
    assert_eq!(file.rows.len(), step_rows.len());
    assert_eq!(file.header.groups.len(), 2);
    for row in &file.rows {
        assert_eq!(row.a_star, row.q - row.v, "{row:?}");
        assert_eq!(row.k, 4);
        assert!(row.q_se >= 0.0 && row.v_se >= 0.0 && row.q.is_finite() && row.v.is_finite(), "{row:?}");
    }
    let names: BTreeSet<&str> = file.agreements.iter().map(|a| a.estimator.as_str()).collect();
    for estimator in ["gigpo", "grpo", "rloo", "step", "hgpo", "graphgpo", "proxmo", "soft-page", "q-minus-v"] {
        assert!(names.contains(estimator), "no agreement line for {estimator}: {names:?}");
    }
    assert!(file.agreements.iter().all(|a| a.error.is_some() || a.rows == file.rows.len()), "{:?}", file.agreements);

    // The same seed gives the same file, whatever the number of workers.
    let again = home.path().join("again.jsonl");
    succeeded(&truth(&run, &["--iteration", "2", "--threads", "1", "--out", again.to_str().unwrap()], home.path()));
    assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&again).unwrap());

    // A sample of one group: that group's rows only, the same values as in the whole iteration's file.
    let one = home.path().join("one.jsonl");
    succeeded(&truth(&run, &["--iteration", "2", "--groups", "1", "--out", one.to_str().unwrap()], home.path()));
    let sampled = read_truth(&one, "tiny", 2).unwrap();
    assert_eq!(sampled.header.groups.len(), 1);
    assert!(sampled.rows.iter().all(|r| r.group == sampled.header.groups[0]));
    assert_eq!(sampled.rows, rows_of(&file, &sampled.header.groups[0]));

    // A truth file read as another run's or another iteration's is refused, naming both.
    let other = read_truth(&path, "another-run", 2).unwrap_err().to_string();
    assert!(other.contains("\"tiny\"") && other.contains("\"another-run\""), "{other}");
    let other = read_truth(&path, "tiny", 1).unwrap_err().to_string();
    assert!(other.contains("iteration 2") && other.contains("iteration 1"), "{other}");

    tampered_observation_is_reported(&run, &file, home.path());
    errors_are_clear(&run, home.path());
}

fn rows_of(file: &TruthFile, group: &str) -> Vec<gigscope::run::truth::TruthRow> {
    file.rows.iter().filter(|r| r.group == group).cloned().collect()
}

/// An observation changed in the record: the replay of that episode diverges there, which is reported with
/// the episode and step; the states are rebuilt from other members or skipped, and other groups are untouched.
fn tampered_observation_is_reported(run: &Path, clean: &TruthFile, home: &Path) {
    let lines: Vec<String> =
        std::fs::read_to_string(run.join("episodes.jsonl")).unwrap().lines().map(String::from).collect();
    let target = lines
        .iter()
        .position(|l| {
            let e: Episode = serde_json::from_str(l).unwrap();
            e.iteration == 2 && e.steps.len() >= 2
        })
        .expect("an iteration-2 episode with two steps");
    let mut episode: Episode = serde_json::from_str(&lines[target]).unwrap();
    let mut step = episode.steps[1].clone();
    step.observation = format!("{} [tampered]", step.observation).into();
    episode.steps[1] = step;
    let tampered_run = home.join("tampered");
    std::fs::create_dir_all(tampered_run.join("weights")).unwrap();
    for name in ["run.json", "metrics.jsonl", "weights/iteration-2.ot"] {
        std::fs::copy(run.join(name), tampered_run.join(name)).unwrap();
    }
    let mut lines = lines;
    lines[target] = serde_json::to_string(&episode).unwrap();
    std::fs::write(tampered_run.join("episodes.jsonl"), lines.join("\n") + "\n").unwrap();

    let out = truth(&tampered_run, &["--iteration", "2"], home);
    succeeded(&out);
    let expected = format!("divergence: episode {} step 1", episode.id);
    assert!(text(&out.stderr).contains(&expected), "{}", text(&out.stderr));
    let file = read_truth(&truth_path(&tampered_run, 2), "tiny", 2).unwrap();
    assert!(file
        .divergences
        .iter()
        .any(|d| d.episode == episode.id && d.step == 1 && d.recorded.ends_with("[tampered]")));
    for group in &clean.header.groups {
        if *group != episode.group {
            assert_eq!(rows_of(&file, group), rows_of(clean, group), "group {group} does not depend on another");
        }
    }
}

fn errors_are_clear(run: &Path, home: &Path) {
    let fails_with = |out: Output, expected: &[&str]| {
        assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
        let stderr = text(&out.stderr);
        for e in expected {
            assert!(stderr.contains(e), "{e:?} not in {stderr}");
        }
    };
    std::fs::remove_file(weights_path(run, 1)).unwrap();
    fails_with(
        truth(run, &["--iteration", "1"], home),
        &["iteration 1 has no stored policy weights", "iteration-1.ot"],
    );
    fails_with(truth(run, &["--iteration", "9"], home), &["no episodes of iteration 9", "1..=2"]);
    let one_rollout = gigscope(&["truth", run.to_str().unwrap(), "--iteration", "2", "--rollouts", "1"], home);
    fails_with(one_rollout, &["--rollouts must be at least 2"]);
    // Runs gigscope did not train: another trainer's layout, and a run with no training record.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (dir, why) in
        [("verl/v1", "recorded by another trainer: verl rollout dump"), ("tui/basic", "no `train` record")]
    {
        let out = truth(&fixtures.join(dir), &["--iteration", "1"], home);
        fails_with(out, &["was not trained by gigscope", why, "no policy to branch with"]);
    }
}

/// `T` in the TUI's estimators view measures the open group through the plugin (the real binary in tmux): the
/// truth column and the agreement lines fill in, and the group's rows land in the iteration's truth file.
#[test]
fn the_tuis_truth_key_measures_the_open_group() {
    use support::tmux::{tmux_available, Session};
    if !tmux_available() || plugin(BIN).is_none() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let run = train(home.path());
    let env = std::env::var("GIGSCOPE_TRAIN_LIB").map(|p| format!("GIGSCOPE_TRAIN_LIB={p}")).unwrap_or_default();
    let s = Session::launch_with_env("truth-key", &env, &format!("tui {} --rescan-ms 200", run.display()), (160, 45));
    // The first frame comes before the run is read (in the background): wait for its iterations.
    s.wait_for(&["[Overview]", "› iter"]);
    // Iteration 2's first group, in the estimators view.
    s.keys(&["j", "Enter"]);
    s.wait_for(&["[Groups]", "iter 2"]);
    s.keys(&["E"]);
    s.wait_for(&["[Estimators]", "A* absent: no truth file — press T"]);
    s.keys(&["T"]);
    let screen = s.wait_for(&["Agreement with A* over iteration 2 (K = 32)", "gigpo      Spearman"]);
    assert!(screen.contains('±'), "the truth column shows A* ± se:\n{screen}");
    let file = read_truth(&truth_path(&run, 2), "tiny", 2).unwrap();
    assert_eq!(file.header.groups.len(), 1, "{:?}", file.header.groups);
    assert!(!file.rows.is_empty() && file.rows.iter().all(|r| r.group == file.header.groups[0] && r.k == 32));
    assert_eq!(file.agreements.len(), 9);
}
