//! DEPO's efficiency term α₁/(mean tokens per step) counts a step's trained tokens from the run's token store
//! where it has an episode's every step, the recorded `tokens` (an estimate) otherwise; `gigscope advantages`
//! says which on stderr.

use std::process::Command;

use crate::depo_run::depo_run;

/// `gigscope advantages` under GRPO (A_E alone), trajectory pooling, mean_norm, α₁ = 2: each episode's advantage
/// (equal over its steps), and what stderr says.
fn advantages(counted: bool) -> (Vec<(String, f64)>, String) {
    let dir = tempfile::tempdir().unwrap();
    depo_run(dir.path(), counted);
    let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .arg("advantages")
        .arg(dir.path())
        .args(["--estimator", "grpo", "--pooling", "trajectories", "--norm", "mean_norm"])
        .args(["--efficiency-alpha1", "2", "--format", "jsonl"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let row: serde_json::Value = serde_json::from_str(l).unwrap();
            (row["episode"].as_str().unwrap().to_string(), row["advantage"].as_f64().unwrap())
        })
        .collect();
    (rows, String::from_utf8(out.stderr).unwrap())
}

fn close(got: &[(String, f64)], want: &[(&str, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((e, a), (we, wa)) in got.iter().zip(want) {
        assert_eq!(e, we);
        assert!((a - wa).abs() < 1e-12, "{e}: {a}, by hand {wa}");
    }
}

#[test]
fn the_efficiency_term_counts_the_stores_trained_tokens_instead_of_the_recorded_estimate() {
    // Scores s = Σ r + α₁/(mean tokens per step) for the successful e1, Σ r for e2; A = s − mean(s1, s2).
    // Recorded: e1's mean is (4 + 4)/2 = 4, s1 = 1 + 2/4 = 1.5, mean 0.75.
    let (estimated, said) = advantages(false);
    close(&estimated, &[("e1", 0.75), ("e1", 0.75), ("e2", -0.75)]);
    assert!(said.contains("tokens per step (α₁'s efficiency term): estimated"), "{said}");
    // Counted: e1 trained 10 and 30 tokens, mean 20, s1 = 1 + 2/20 = 1.1, mean 0.55.
    let (counted, said) = advantages(true);
    close(&counted, &[("e1", 0.55), ("e1", 0.55), ("e2", -0.55)]);
    assert!(said.contains("tokens per step (α₁'s efficiency term): counted (tokens/"), "{said}");
}

#[test]
fn an_episode_missing_a_step_in_the_store_keeps_its_recorded_lengths() {
    let dir = tempfile::tempdir().unwrap();
    depo_run(dir.path(), true);
    // Drop e1's second step from the index: e1 is no longer counted whole, e2 still is.
    let index = dir.path().join("tokens/index.jsonl");
    let kept: String = std::fs::read_to_string(&index)
        .unwrap()
        .lines()
        .filter(|l| !(l.contains("\"episode\":\"e1\"") && l.contains("\"step\":1")))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&index, kept).unwrap();
    let mut run = gigscope::run::Run::open(dir.path()).unwrap();
    let store = gigscope::run::tokens::TokenStore::open(dir.path()).unwrap();
    let lengths = gigscope::run::tokens::count_lengths(&store, run.episodes.as_mut_slice(), 0);
    assert_eq!((lengths.counted, lengths.episodes), (1, 2));
    let tokens = |e: usize| run.episodes[e].steps.iter().map(|s| s.tokens).collect::<Vec<_>>();
    assert_eq!(tokens(0), [Some(4), Some(4)]);
    assert_eq!(tokens(1), [Some(7)]);
    assert_eq!(lengths.describe(), "counted for 1 of 2 episodes (tokens/), estimated for the rest");
}
