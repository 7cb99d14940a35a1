//! Ground truth through the plugin's protocol, in process (`gigscope::trainer::service::serve` with
//! `Request::Truth`, as the C ABI passes it): the TUI's one-group request gives that group's rows exactly as the
//! whole iteration's measurement does, progress arrives as JSON events, a raised cancel flag stops it, an
//! unknown group is named, and a run trained on the toy shop (its `tasks` recorded in `run.json`) is branched
//! in the same environment. On a WebShop run and a Sokoban run, every row is measured from its own state: a step
//! that ends its episode has Q̂ equal to its own return with standard error 0, and rows of one fingerprint share
//! V̂. tests/plugin/truth.rs covers the binary, the file and the error messages.
#![cfg(feature = "train")]

use std::sync::atomic::AtomicBool;

use std::collections::HashMap;

use gigscope::advantage::{self, AdvantageSettings};
use gigscope::env::EnvOptions;
use gigscope::plugin_host::{
    DeviceChoice, Request, RunMode, TaskSource, TrainConfig, TrainRequest, TruthGroups, TruthProgress, TruthRequest,
};
use gigscope::run::truth::TruthFile;
use gigscope::run::{state_hash, Episode, Run};
use gigscope::toy_shop::NAME as TOY_ENV;

fn train_toy(run: &std::path::Path) {
    train(
        run,
        TOY_ENV,
        TrainConfig { goals_per_iteration: 3, episodes_per_goal: 4, seed: 11, ..TrainConfig::default() },
    );
}

/// Two iterations of `config` on `env` (default options), on the CPU, no evaluation.
fn train(run: &std::path::Path, env: &str, config: TrainConfig) {
    let request = Request::Train(Box::new(TrainRequest {
        run: run.to_path_buf(),
        tasks: TaskSource::new(env, EnvOptions::default()),
        config: TrainConfig { iterations: 2, eval_every: 0, device: DeviceChoice::Cpu, ..config },
        mode: RunMode::AsConfigured,
    }));
    let json = serde_json::to_vec(&request).unwrap();
    gigscope::trainer::service::serve(&json, &AtomicBool::new(false), &mut |_| {}).unwrap();
}

fn truth(request: &TruthRequest, stop: bool) -> (Vec<TruthProgress>, Result<TruthFile, String>) {
    let mut events = Vec::new();
    let json = serde_json::to_vec(&Request::Truth(request.clone())).unwrap();
    let result = gigscope::trainer::service::serve(&json, &AtomicBool::new(stop), &mut |e| {
        events.push(serde_json::from_slice(e).expect("progress events are JSON"))
    });
    (events, result.map(|bytes| serde_json::from_slice(&bytes).expect("the result is a truth file")))
}

#[test]
fn one_group_is_measured_as_in_the_whole_iteration_and_cancel_stops() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    train_toy(&run);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["tasks"]["env"], TOY_ENV, "the run records the task list it trained on: {meta}");

    let all =
        TruthRequest { run: run.clone(), iteration: 2, rollouts: 3, groups: TruthGroups::All, seed: 4, threads: 2 };
    let (events, whole) = truth(&all, false);
    let whole = whole.unwrap();
    assert_eq!(whole.header.env, TOY_ENV);
    assert_eq!(whole.header.groups.len(), 3);
    assert!(whole.divergences.is_empty(), "{:?}", whole.divergences);
    let last = events.last().expect("progress events");
    assert_eq!((last.groups_done, last.groups), (3, 3));
    assert!(last.states_done > 0 && last.continuations >= 3 * last.states_done, "{last:?}");

    let group = whole.header.groups[1].clone();
    let one = TruthRequest { groups: TruthGroups::Named { ids: vec![group.clone()] }, ..all.clone() };
    let (_, single) = truth(&one, false);
    let single = single.unwrap();
    let expected: Vec<_> = whole.rows.iter().filter(|r| r.group == group).cloned().collect();
    assert!(!expected.is_empty());
    assert_eq!(single.rows, expected, "a group's rows do not depend on which other groups are measured");

    let (_, cancelled) = truth(&all, true);
    assert_eq!(cancelled.unwrap_err(), "cancelled");

    let unknown = TruthRequest { groups: TruthGroups::Named { ids: vec!["nope".into()] }, ..all };
    let message = truth(&unknown, false).1.unwrap_err();
    assert!(message.contains("iteration 2 has no episode group \"nope\""), "{message}");
}

/// Every row of iteration 2 of `run` is measured from its own replayed state: a step that ends its episode (a
/// purchase, a solved board or the step limit: every recorded episode's last step) has Q̂ equal to its own
/// return as the advantage engine computes it under the run's settings, with standard error 0 (both
/// environments are deterministic); rows of one fingerprint share V̂, fingerprints count the steps taken, and each
/// step records (hashed) the state its truth row was measured from.
/// Returns the file and the iteration's episodes.
fn own_states(run: &std::path::Path, env: &str) -> (TruthFile, Vec<Episode>) {
    let request = TruthRequest {
        run: run.to_path_buf(),
        iteration: 2,
        rollouts: 3,
        groups: TruthGroups::All,
        seed: 1,
        threads: 2,
    };
    let file = truth(&request, false).1.unwrap();
    assert_eq!(file.header.env, env);
    assert!(file.divergences.is_empty(), "{:?}", file.divergences);
    let opened = Run::open(run).unwrap();
    let settings =
        opened.meta.clone().unwrap_or_default().advantage.unwrap_or_default().apply(AdvantageSettings::default());
    let episodes: Vec<Episode> = opened.episodes.into_iter().filter(|e| e.iteration == 2).collect();
    let table = advantage::compute(&episodes, &settings);
    assert_eq!(file.rows.len(), table.row_count(), "one row per step row");
    let mut endings = 0;
    let mut v_of: HashMap<&str, f64> = HashMap::new();
    for row in &file.rows {
        let e = episodes.iter().position(|e| e.id == row.episode).unwrap();
        let fingerprint = row.state.as_deref().expect("the environment declares fingerprints");
        let after_step = fingerprint.strip_prefix(&format!("step {}", row.step));
        assert!(after_step.is_some_and(|rest| rest.starts_with([' ', '\n'])), "{fingerprint}");
        assert_eq!(*v_of.entry(fingerprint).or_insert(row.v), row.v, "one state, one V̂: {fingerprint}");
        // Training recorded the same state with the step (compact: its hash), so `--anchor state` groups by it.
        let recorded = episodes[e].steps[row.step].state.as_deref();
        assert_eq!(recorded, Some(state_hash(fingerprint).as_str()), "{}: step {}", row.episode, row.step);
        if row.step + 1 == episodes[e].steps.len() {
            endings += 1;
            let own = table.episode_rows(e)[row.step].ret;
            assert!((row.q - own).abs() < 1e-9 && row.q_se < 1e-12, "{row:?}: own return {own}");
        }
    }
    assert_eq!(endings, episodes.len(), "every episode's last step is measured");
    assert!(v_of.len() < file.rows.len(), "rows that reach one state share it");
    (file, episodes)
}

#[test]
fn every_row_is_measured_from_its_own_state_webshop() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let config =
        TrainConfig { goals_per_iteration: 3, episodes_per_goal: 6, step_limit: 8, seed: 3, ..TrainConfig::default() };
    train(&run, "webshop", config);
    let (file, episodes) = own_states(&run, "webshop");
    // Purchases are among the ending steps: their Q̂ is the purchase's recorded reward.
    let bought = episodes.iter().filter(|e| e.steps.last().is_some_and(|s| s.action == "click[buy now]")).count();
    assert!(bought > 0, "no purchase to check in {} episodes", episodes.len());
    assert!(file.rows.iter().all(|r| r.state.as_deref().is_some_and(|s| s.contains(" goal "))));
}

#[test]
fn every_row_is_measured_from_its_own_state_sokoban() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let config =
        TrainConfig { goals_per_iteration: 3, episodes_per_goal: 6, step_limit: 10, seed: 3, ..TrainConfig::default() };
    train(&run, "sokoban", config);
    own_states(&run, "sokoban");
}
