//! What trains is what gigscope shows: the advantages a burst writes into each episode equal what
//! `gigscope advantages` (the real binary) recomputes for the same run.
#![cfg(feature = "train")]

use std::process::Command;
use std::sync::atomic::AtomicBool;

use gigscope::advantage::estimators::{EstimatorKind, EstimatorSettings};
use gigscope::advantage::AdvantageOverrides;
use gigscope::env::EnvOptions;
use gigscope::plugin_host::FamilyEstimator;
use gigscope::run::Run;
use gigscope::toy_shop::ToyShop;
use gigscope::trainer::{DeviceChoice, TrainConfig, TrainError, Trainer};

fn tiny(advantage: AdvantageOverrides, estimator: Option<FamilyEstimator>) -> TrainConfig {
    TrainConfig {
        iterations: 2,
        goals_per_iteration: 4,
        episodes_per_goal: 4,
        eval_every: 0,
        seed: 11,
        device: DeviceChoice::Cpu,
        advantage,
        estimator,
        ..TrainConfig::default()
    }
}

/// The `advantage` column `gigscope advantages --format jsonl` (the real binary) prints for `run` with `args`.
fn printed_advantages(run: &std::path::Path, args: &[&str]) -> Vec<f64> {
    let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(["advantages", "--format", "jsonl"])
        .args(args)
        .arg(run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["advantage"].as_f64().unwrap())
        .collect()
}

/// A short burst, then `gigscope advantages RUN` with `cli_args`: it prints what the burst stored.
fn burst_then_compare_with(advantage: AdvantageOverrides, estimator: Option<FamilyEstimator>, cli_args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let config = tiny(advantage, estimator);
    Trainer::new(ToyShop, config, dir.path()).unwrap().run(&AtomicBool::new(false), |_| {}).unwrap();

    let run = Run::open(dir.path()).unwrap();
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    let stored: Vec<f64> = run.episodes.iter().flat_map(|e| e.advantages.clone().unwrap()).collect();

    let printed = printed_advantages(dir.path(), cli_args);
    assert_eq!(printed.len(), stored.len());
    assert!(stored.iter().any(|a| *a != 0.0), "a burst with no signal proves nothing");
    // Exact equality: the same engine on the same numbers, printed in shortest round-trip form.
    assert_eq!(printed, stored);
}

fn burst_then_compare(advantage: AdvantageOverrides) {
    burst_then_compare_with(advantage, None, &[]);
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

/// A burst trained with a successor estimator stores that estimator's advantages, computed on each iteration's
/// batch under the run's settings: `gigscope advantages --estimator KIND` recomputes them from the recorded
/// episodes, and `run.json` records the estimator, which `gigscope advantages` then computes by default.
fn family_burst_then_compare(kind: EstimatorKind, settings: EstimatorSettings, cli_args: &[&str]) {
    let estimator = FamilyEstimator { kind, settings };
    let dir = tempfile::tempdir().unwrap();
    Trainer::new(ToyShop, tiny(AdvantageOverrides::default(), Some(estimator)), dir.path())
        .unwrap()
        .run(&AtomicBool::new(false), |_| {})
        .unwrap();
    let run = Run::open(dir.path()).unwrap();
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    let recorded = &run.meta.as_ref().unwrap().extra["estimator"];
    assert_eq!(serde_json::from_value::<FamilyEstimator>(recorded.clone()).unwrap(), estimator);
    let stored: Vec<f64> = run.episodes.iter().flat_map(|e| e.advantages.clone().unwrap()).collect();
    assert!(stored.iter().any(|a| *a != 0.0), "a burst with no signal proves nothing");

    let asked = [&["--estimator", kind.name()][..], cli_args].concat();
    assert_eq!(printed_advantages(dir.path(), &asked), stored);
    // Without `--estimator` (and without the family flags), the estimator and settings run.json records.
    assert_eq!(printed_advantages(dir.path(), &[]), stored);
    // And they are that estimator's, not GiGPO's.
    assert_ne!(printed_advantages(dir.path(), &["--estimator", "gigpo"]), stored);
}

#[test]
fn trained_with_q_minus_v_stores_its_advantages() {
    family_burst_then_compare(EstimatorKind::QMinusV, EstimatorSettings::default(), &[]);
}

#[test]
fn trained_with_graphgpo_stores_its_advantages() {
    family_burst_then_compare(EstimatorKind::Graphgpo, EstimatorSettings::default(), &[]);
}

#[test]
fn trained_with_graphgpo_under_its_own_settings() {
    let settings = EstimatorSettings { graph_gamma: 0.5, graph_episode_weight: 0.0, ..EstimatorSettings::default() };
    family_burst_then_compare(
        EstimatorKind::Graphgpo,
        settings,
        &["--graph-gamma", "0.5", "--graph-episode-weight", "0"],
    );
}

#[test]
fn an_estimator_the_environment_cannot_feed_is_refused_before_training() {
    let sokoban = gigscope::env_registry::open("sokoban", &EnvOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let estimator = FamilyEstimator { kind: EstimatorKind::SoftPage, settings: EstimatorSettings::default() };
    let error = Trainer::new(sokoban, tiny(AdvantageOverrides::default(), Some(estimator)), dir.path()).err().unwrap();
    assert!(matches!(error, TrainError::Estimator(_)), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("soft-page needs WebShop page types") && message.contains("sokoban"), "{message}");
    assert!(!dir.path().join("episodes.jsonl").exists(), "refused before the run directory is written");
}
