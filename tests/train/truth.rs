//! Ground truth through the plugin's protocol, in process (`gigscope::train::service::serve` with
//! `Request::Truth`, as the C ABI passes it): the TUI's one-group request gives that group's rows exactly as the
//! whole iteration's measurement does, progress arrives as JSON events, a raised cancel flag stops it, an
//! unknown group is named, and a run trained on the toy shop (its `tasks` recorded in `run.json`) is branched
//! in the same environment. tests/plugin/truth.rs covers the binary, the file and the error messages.
#![cfg(feature = "train")]

use std::sync::atomic::AtomicBool;

use gigscope::env::EnvOptions;
use gigscope::run::truth::TruthFile;
use gigscope::training::protocol::TOY_ENV;
use gigscope::training::{
    DeviceChoice, Request, RunMode, TaskSource, TrainConfig, TrainRequest, TruthGroups, TruthProgress, TruthRequest,
};

fn train_toy(run: &std::path::Path) {
    let request = Request::Train(Box::new(TrainRequest {
        run: run.to_path_buf(),
        tasks: TaskSource::new(TOY_ENV, EnvOptions::default()),
        config: TrainConfig {
            iterations: 2,
            goals_per_iteration: 3,
            episodes_per_goal: 4,
            eval_every: 0,
            device: DeviceChoice::Cpu,
            seed: 11,
            ..TrainConfig::default()
        },
        mode: RunMode::AsConfigured,
    }));
    let json = serde_json::to_vec(&request).unwrap();
    gigscope::train::service::serve(&json, &AtomicBool::new(false), &mut |_| {}).unwrap();
}

fn truth(request: &TruthRequest, stop: bool) -> (Vec<TruthProgress>, Result<TruthFile, String>) {
    let mut events = Vec::new();
    let json = serde_json::to_vec(&Request::Truth(request.clone())).unwrap();
    let result = gigscope::train::service::serve(&json, &AtomicBool::new(stop), &mut |e| {
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
