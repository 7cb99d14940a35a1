//! What trains is what gigscope shows: the advantages a burst writes into each episode equal what
//! `gigscope advantages` (the real binary) recomputes for the same run.
#![cfg(feature = "train")]

use std::process::Command;
use std::sync::atomic::AtomicBool;

use gigscope::advantage::AdvantageOverrides;
use gigscope::run::Run;
use gigscope::train::toy::ToyShop;
use gigscope::train::{DeviceChoice, TrainConfig, Trainer};

fn burst_then_compare(advantage: AdvantageOverrides) {
    let dir = tempfile::tempdir().unwrap();
    let config = TrainConfig {
        iterations: 2,
        goals_per_iteration: 4,
        episodes_per_goal: 4,
        eval_every: 0,
        seed: 11,
        device: DeviceChoice::Cpu,
        advantage,
        ..TrainConfig::default()
    };
    Trainer::new(ToyShop, config, dir.path()).unwrap().run(&AtomicBool::new(false), |_| {}).unwrap();

    let run = Run::open(dir.path()).unwrap();
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    let stored: Vec<f64> = run.episodes.iter().flat_map(|e| e.advantages.clone().unwrap()).collect();

    let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(["advantages", "--format", "jsonl"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Vec<f64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["advantage"].as_f64().unwrap())
        .collect();
    assert_eq!(printed.len(), stored.len());
    assert!(stored.iter().any(|a| *a != 0.0), "a burst with no signal proves nothing");
    // Exact equality: the same engine on the same numbers, printed in shortest round-trip form.
    assert_eq!(printed, stored);
}

#[test]
fn stored_advantages_equal_gigscope_advantages_with_defaults() {
    burst_then_compare(AdvantageOverrides::default());
}

#[test]
fn stored_advantages_equal_gigscope_advantages_with_other_settings() {
    // run.json records the settings, so the CLI recomputes with them without being told.
    let settings = AdvantageOverrides {
        omega: Some(0.5),
        norm: Some(gigscope::advantage::Norm::MeanStdNorm),
        similarity: Some(0.8),
        success_reward: Some(true),
        ..AdvantageOverrides::default()
    };
    burst_then_compare(settings);
}
