//! `gigscope state` on a run whose answer is known by construction: one start state visited in two iterations
//! (GRPO, mean normalisation over trajectories: A = total − group mean), A* from a truth file for iteration 1.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use gigscope::run::truth::{truth_path, TruthFile, TruthHeader, TruthRow, TRUTH_FORMAT};
use gigscope::run::{Episode, RunMeta, RunWriter, Step};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");

fn episode(id: &str, iteration: i64, action: &str, reward: f64) -> Episode {
    let mut e = Episode::new(
        id,
        format!("g{iteration}"),
        vec![Step::new("start", action, reward), Step::new("next", "wait", 0.0)],
    );
    e.iteration = iteration;
    e
}

fn truth_row(episode: &str, a_star: f64) -> TruthRow {
    TruthRow {
        run: "r".into(),
        episode: episode.into(),
        step: 0,
        group: "g1".into(),
        q: a_star,
        v: 0.0,
        a_star,
        q_se: 0.0,
        v_se: 0.0,
        k: 4,
        state: None,
    }
}

fn write_run(dir: &Path) {
    let mut w = RunWriter::create(dir).unwrap();
    w.write_meta(&RunMeta { name: Some("r".into()), ..RunMeta::default() }).unwrap();
    for e in [
        episode("a0", 0, "up", 1.0),
        episode("b0", 0, "down", 0.0),
        episode("a1", 1, "<action>up</action>", 1.0),
        episode("b1", 1, "<think>surely</think><action>up</action>", 1.0),
        episode("c1", 1, "down", 0.0),
    ] {
        w.append_episode(&e).unwrap();
    }
    let header = TruthHeader {
        format: TRUTH_FORMAT.into(),
        run: "r".into(),
        run_created: None,
        iteration: 1,
        rollouts: 4,
        seed: 0,
        groups: vec!["g1".into()],
        groups_in_iteration: 1,
        gamma: 1.0,
        success_reward: false,
        invalid_penalty: 0.0,
        efficiency_alpha1: 0.0,
        efficiency_alpha2: 0.0,
        env: "toy".into(),
        env_options: BTreeMap::new(),
    };
    let truth = TruthFile {
        header,
        rows: vec![truth_row("a1", 0.25), truth_row("c1", -0.5)],
        divergences: Vec::new(),
        agreements: Vec::new(),
    };
    truth.write(&truth_path(dir, 1)).unwrap();
}

fn state(dir: &Path, anchor: &str) -> std::process::Output {
    Command::new(BIN)
        .args(["state", dir.to_str().unwrap(), "--anchor", anchor, "--format", "json"])
        .args(["--estimator", "grpo", "--norm", "mean_norm", "--pooling", "trajectories", "--invalid-penalty", "0"])
        .output()
        .unwrap()
}

#[test]
fn state_follows_one_anchor_across_iterations() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let out = state(dir.path(), "b1:0");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((got["anchor"].clone(), got["from_row"].clone()), (json!("start"), json!("b1:0")));
    let its = got["iterations"].as_array().unwrap();
    let summary: Vec<Value> =
        its.iter().map(|i| json!([i["iteration"], i["visits"], i["episodes"], i["measured"]])).collect();
    assert_eq!(summary, [json!([0, 2, 2, 0]), json!([1, 3, 3, 2])]);
    // Iteration 1: `up` twice (tags and thoughts differ, the action is one), A = 1 − 2/3; `down` once.
    let actions: Vec<Value> = its[1]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| json!([a["action"], a["count"], a["mean_a_star"], a["measured"]]))
        .collect();
    assert_eq!(actions, [json!(["up", 2, 0.25, 1]), json!(["down", 1, -0.5, 1])]);
    let up_a = its[1]["actions"][0]["mean_advantage"].as_f64().unwrap();
    assert!((up_a - 1.0 / 3.0).abs() < 1e-12, "{up_a}");
    assert_eq!(its[0]["actions"][1]["action"], json!("up"));
    assert_eq!(its[0]["actions"][1]["mean_advantage"], json!(0.5));
    // The same state named by its key; a name that is neither a row nor a key is an error naming it.
    let by_key: Value = serde_json::from_slice(&state(dir.path(), "start").stdout).unwrap();
    assert_eq!(by_key["iterations"], got["iterations"]);
    let missing = state(dir.path(), "nowhere:3");
    assert!(!missing.status.success() && String::from_utf8_lossy(&missing.stderr).contains("nowhere:3"));
}
