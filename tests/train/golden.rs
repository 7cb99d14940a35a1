//! A golden training run: `gigscope train --seed 0 --iterations 2` on the embedded demo catalog, whose metrics must
//! equal the ones recorded in `tests/fixtures/train/golden-seed0.jsonl`. Any change of training behaviour (search,
//! environment, policy, trainer, advantages) changes these figures, and then the recorded experiments in
//! `assets/experiments/` no longer describe the code: re-run them (`scripts/experiment`, see docs/training.md) and
//! re-bless this file with `GIGSCOPE_BLESS=1` in the same change.
//!
//! Seeds reproduce a run on the same machine and build; across machines libtorch's floating-point sums may differ
//! in the last bits, so the floats are compared to a relative 1e-4 (a change of behaviour moves them by far more)
//! and the counts exactly. Wall-clock figures (time, steps per second, seconds per phase) are not compared.

#![cfg(feature = "train")]

use serde_json::{Map, Value};
use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");
/// Metrics that measure the machine, not the training.
const WALL_CLOCK: [&str; 4] = ["time", "env_steps_per_s", "rollout_s", "update_s"];
const RELATIVE_TOLERANCE: f64 = 1e-4;

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/train/golden-seed0.jsonl")
}

/// Each line of a metrics file with the wall-clock keys removed.
fn training_figures(text: &str) -> Vec<Map<String, Value>> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let mut row: Map<String, Value> = serde_json::from_str(line).expect("a metrics line is a JSON object");
            for key in WALL_CLOCK {
                row.remove(key);
            }
            row
        })
        .collect()
}

fn same_figure(got: &Value, want: &Value) -> bool {
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) if got.is_f64() || want.is_f64() => {
            (g - w).abs() <= RELATIVE_TOLERANCE * w.abs().max(g.abs()) + 1e-12
        }
        _ => got == want,
    }
}

#[test]
fn two_seeded_iterations_on_the_demo_catalog_train_as_recorded() {
    let temp = tempfile::tempdir().unwrap();
    let run = temp.path().join("golden");
    let out = Command::new(BIN)
        .args(["train", "--device", "cpu", "--seed", "0", "--iterations", "2", "--run"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "train failed: {}", String::from_utf8_lossy(&out.stderr));
    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let got = training_figures(&metrics);

    if std::env::var_os("GIGSCOPE_BLESS").is_some() {
        let lines: Vec<String> = got.iter().map(|row| serde_json::to_string(row).unwrap() + "\n").collect();
        std::fs::create_dir_all(golden_path().parent().unwrap()).unwrap();
        std::fs::write(golden_path(), lines.concat()).unwrap();
        return;
    }
    let want = training_figures(&std::fs::read_to_string(golden_path()).unwrap());
    let hint = "training behaviour changed: re-run the recorded experiments (scripts/experiment, docs/training.md) \
                and re-bless tests/fixtures/train/golden-seed0.jsonl with GIGSCOPE_BLESS=1";
    assert_eq!(got.len(), want.len(), "metrics lines; {hint}");
    for (g, w) in got.iter().zip(&want) {
        let keys_got: Vec<&String> = g.keys().collect();
        let keys_want: Vec<&String> = w.keys().collect();
        assert_eq!(keys_got, keys_want, "metrics keys of iteration {}; {hint}", w["iteration"]);
        for (key, want_value) in w {
            assert!(
                same_figure(&g[key], want_value),
                "iteration {} {key}: got {}, recorded {want_value}; {hint}",
                w["iteration"],
                g[key]
            );
        }
    }
}
