//! The plugin's side of the training protocol, in process: JSON requests in, events and results out, as the
//! plugin's C ABI passes them (`gigscope::trainer::service::serve`). The binary's side, through the real plugin,
//! is tests/plugin/training.rs.
#![cfg(feature = "train")]

use std::sync::atomic::AtomicBool;

use gigscope::plugin_host::{
    AutoplayRequest, AutoplayResult, DeviceChoice, Request, RunMode, TaskSource, TrainConfig, TrainEvent, TrainRequest,
};

fn serve(request: &Request) -> (Vec<TrainEvent>, Result<Vec<u8>, String>) {
    let mut events = Vec::new();
    let json = serde_json::to_vec(request).unwrap();
    let result = gigscope::trainer::service::serve(&json, &AtomicBool::new(false), &mut |e| {
        events.push(serde_json::from_slice(e).expect("events are JSON"))
    });
    (events, result)
}

fn burst(run: &std::path::Path, mode: RunMode) -> Request {
    Request::Train(Box::new(TrainRequest {
        run: run.to_path_buf(),
        tasks: TaskSource::new("webshop", Default::default()),
        config: TrainConfig {
            iterations: 1,
            goals_per_iteration: 2,
            episodes_per_goal: 2,
            eval_every: 0,
            device: DeviceChoice::Cpu,
            ..TrainConfig::default()
        },
        mode,
    }))
}

fn how(events: &[TrainEvent]) -> String {
    match events.first() {
        Some(TrainEvent::Started { how, .. }) => how.clone(),
        other => panic!("no Started event first: {other:?} (all: {events:?})"),
    }
}

/// A TUI burst continues whatever the run holds (the decision is the training side's): a fresh policy after
/// episodes recorded elsewhere, then the checkpoint it wrote; `gigscope train` instead refuses a run with
/// episodes unless told.
#[test]
fn a_burst_decides_how_to_continue_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    for f in ["episodes.jsonl", "run.json"] {
        std::fs::copy(std::path::Path::new("tests/fixtures/tui/basic").join(f), run.join(f)).unwrap();
    }

    let (events, result) = serve(&burst(&run, RunMode::AsConfigured));
    assert_eq!(result.unwrap(), b"null");
    assert!(
        matches!(&events[..], [TrainEvent::Failed { error }] if error.contains("already holds episodes")),
        "{events:?}"
    );

    let (events, _) = serve(&burst(&run, RunMode::Continue));
    assert_eq!(how(&events), "fresh policy (no checkpoint)");
    assert!(matches!(events.last(), Some(TrainEvent::Finished { completed: 1, cancelled: false, last_iteration: 2 })));
    assert!(matches!(&events[1], TrainEvent::Iteration(r) if r.iteration == 2 && r.env_steps > 0), "{events:?}");

    let (events, _) = serve(&burst(&run, RunMode::Continue));
    assert_eq!(how(&events), "resumes the checkpoint");
    assert!(matches!(events.last(), Some(TrainEvent::Finished { last_iteration: 3, .. })), "{events:?}");

    let empty = dir.path().join("empty");
    let (events, _) = serve(&burst(&empty, RunMode::Continue));
    assert_eq!(how(&events), "new run");
}

#[test]
fn the_policy_plays_a_group_and_says_which_policy_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let request = |first| {
        Request::Autoplay(AutoplayRequest {
            run: dir.path().to_path_buf(),
            tasks: TaskSource::new("webshop", Default::default()),
            task: 3,
            group: "auto-3".into(),
            first,
            n: 2,
            step_limit: 15,
            seed: 7,
        })
    };
    let (events, result) = serve(&request(1));
    assert!(events.is_empty());
    let played: AutoplayResult = serde_json::from_slice(&result.unwrap()).unwrap();
    assert_eq!(played.policy, "an untrained policy (the run has no checkpoint yet)");
    let ids: Vec<&str> = played.episodes.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["auto-3-1", "auto-3-2"]);
    assert!(played.episodes.iter().all(|e| e.group == "auto-3" && !e.steps.is_empty()));
    // The same request plays the same episodes (seeded), through JSON and back.
    let (_, again) = serve(&request(1));
    assert_eq!(serde_json::from_slice::<AutoplayResult>(&again.unwrap()).unwrap(), played);

    let (_, missing) = serve(&Request::Autoplay(AutoplayRequest {
        task: 1_000_000,
        ..match request(0) {
            Request::Autoplay(r) => r,
            _ => unreachable!(),
        }
    }));
    assert_eq!(missing.unwrap_err(), "webshop: no task goal-1000000");
}

#[test]
fn a_request_it_cannot_read_is_an_error_not_a_panic() {
    let result = gigscope::trainer::service::serve(b"{\"call\":\"dance\"}", &AtomicBool::new(false), &mut |_| {});
    assert!(result.unwrap_err().contains("cannot read the request"));
}
