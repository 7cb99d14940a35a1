//! `gigscope audit` on a run whose credit is known by construction: GRPO with mean normalisation over
//! trajectories, so every row of an episode gets its total reward minus the group's mean total; actions are
//! read from `<action>` tags or a run's regex.

use std::path::Path;
use std::process::Command;

use gigscope::run::tokens::{StepRecord, StepTokens, TokenWriter};
use gigscope::run::{Episode, RunWriter, Step};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");

fn episode(id: &str, iteration: i64, steps: &[(&str, f64)]) -> Episode {
    let steps = steps.iter().map(|&(action, reward)| Step::new(format!("obs of {action}"), action, reward)).collect();
    let mut e = Episode::new(id, format!("g{iteration}"), steps);
    e.iteration = iteration;
    e
}

/// Iteration 0: `c` buys (total 1), `d` searches (0): buy now +0.5, search[*] −0.5.
/// Iteration 1: `a` (thoughts and tags) buys with an option (total 1, A = +0.5 on 4 rows), `b` pages (0, A = −0.5
/// on 4 rows); `a`'s purchase has 2 masked tokens of 3.
fn write_run(dir: &Path) {
    let mut w = RunWriter::create(dir).unwrap();
    let run = [
        episode("c", 0, &[("click[buy now]", 1.0)]),
        episode("d", 0, &[("search[shirt]", 0.0)]),
        episode(
            "a",
            1,
            &[
                ("<think>red</think><action>search[red shirt]</action>", 0.0),
                ("<think>this one</think>\n<action>click[b0aaaaaaaa]</action>", 0.0),
                ("<action>click[medium]</action>", 0.0),
                ("<think>done</think><action>click[buy now]</action>", 1.0),
            ],
        ),
        episode(
            "b",
            1,
            &[("search[blue shirt]", 0.0), ("click[b0bbbbbbbb]", 0.0), ("click[< prev]", 0.0), ("click[next >]", 0.0)],
        ),
    ];
    for e in &run {
        w.append_episode(e).unwrap();
    }
    let tokens = StepTokens::new(vec![1, 2, 3], vec![true, true, false], &[Some("buy"), Some(" now"), Some("!")]);
    let mut t = TokenWriter::create(dir).unwrap();
    t.append("iteration-1.bin", &[StepRecord { episode: "a", step: 3, iteration: Some(1), tokens: &tokens }]).unwrap();
}

fn audit(dir: &Path, extra: &[&str]) -> Value {
    let out = Command::new(BIN)
        .args(["audit", dir.to_str().unwrap(), "--iteration", "1", "--format", "json"])
        .args(["--estimator", "grpo", "--norm", "mean_norm", "--pooling", "trajectories", "--invalid-penalty", "0"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn audit_lists_the_credit_known_by_construction() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let got = audit(dir.path(), &[]);
    assert_eq!((got["iteration"].clone(), got["previous_iteration"].clone()), (json!(1), json!(0)));
    assert_eq!((got["total"].clone(), got["rows"].clone()), (json!(0.0), json!(8)));
    let rows: Vec<Value> = got["behaviours"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| json!([b["behaviour"], b["count"], b["mass"], b["token_mass"], b["previous_mass"], b["change"]]))
        .collect();
    assert_eq!(
        rows,
        [
            json!(["click[buy now]", 1, 0.5, 1.0, 0.5, 0.0]),
            json!(["click[option]", 1, 0.5, null, 0.0, 0.5]),
            json!(["click[product]", 2, 0.0, null, 0.0, 0.0]),
            json!(["search[*]", 2, 0.0, null, -0.5, 0.5]),
            json!(["click[< prev]", 1, -0.5, null, 0.0, -0.5]),
            json!(["click[next >]", 1, -0.5, null, 0.0, -0.5]),
        ]
    );
    // The rows of a behaviour, by episode id and step: the tagged response is the same action as the bare one.
    assert_eq!(got["behaviours"][3]["rows"], json!([["a", 0], ["b", 0]]));
    // The table: pushed up first, pushed down after, the most negative first.
    let out = Command::new(BIN)
        .args(["audit", dir.path().to_str().unwrap(), "--iteration", "1", "--estimator", "grpo"])
        .args(["--norm", "mean_norm", "--pooling", "trajectories", "--invalid-penalty", "0"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let up = text.find("pushed up").unwrap();
    let down = text.find("pushed down").unwrap();
    let buy = text.find("click[buy now]").unwrap();
    let prev = text.find("click[< prev]").unwrap();
    assert!(up < buy && buy < down && down < prev, "{text}");
    assert!(!text.contains("search[*]"), "a zero mass is neither up nor down: {text}");
}

#[test]
fn a_grouping_regex_and_an_action_regex_change_the_behaviours() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    // By click target: the option's own value, and the rest unmatched.
    let got = audit(dir.path(), &["--by", r"^click\[(medium|buy now)\]$"]);
    let names: Vec<&str> =
        got["behaviours"].as_array().unwrap().iter().map(|b| b["behaviour"].as_str().unwrap()).collect();
    assert_eq!(names, ["buy now", "medium", "(unmatched)"]);
    // An action regex that reads only the thought: `a`'s rows become their thoughts, `b`'s stay whole.
    let got = audit(dir.path(), &["--action-regex", r"<think>(\w+)</think>"]);
    assert_eq!(got["action_regex"], r"<think>(\w+)</think>");
    let names: Vec<&str> =
        got["behaviours"].as_array().unwrap().iter().map(|b| b["behaviour"].as_str().unwrap()).collect();
    assert!(names.contains(&"red") && names.contains(&"done"), "{names:?}");
    // A bad regex is named.
    let out = Command::new(BIN)
        .args(["audit", dir.path().to_str().unwrap(), "--iteration", "1", "--by", "("])
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--by"));
    let out = Command::new(BIN).args(["audit", dir.path().to_str().unwrap(), "--iteration", "7"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no episodes of iteration 7"));
}

fn behaviours(got: &Value) -> Vec<Value> {
    got["behaviours"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| json!([b["behaviour"], b["count"], b["mass"], b["token_mass"], b["previous_mass"], b["change"]]))
        .collect()
}

/// Grouped by trajectory queries (the search view's language, answered by the run's tantivy index): each
/// query's steps are its behaviour, the first query matching a step wins, the rest are "(unmatched)".
#[test]
fn trajectory_queries_group_the_steps_they_match() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let cache = tempfile::tempdir().unwrap();
    let cache = cache.path().to_str().unwrap();
    let buy = r#"action:"buy now""#;
    let got = audit(dir.path(), &["--cache", cache, "--query", buy, "--query", "id:b AND step:>=2"]);
    assert_eq!(got["queries"], json!([buy, "id:b AND step:>=2"]));
    // a's purchase (+0.5, its 2 masked tokens) and c's in iteration 0 (+0.5); b's last two rows (−0.5 each);
    // the rest: a's three other rows (+1.5) and b's first two (−1.0), d's search in iteration 0 (−0.5).
    assert_eq!(
        behaviours(&got),
        [
            json!(["(unmatched)", 5, 0.5, null, -0.5, 1.0]),
            json!([buy, 1, 0.5, 1.0, 0.5, 0.0]),
            json!(["id:b AND step:>=2", 2, -1.0, null, 0.0, -1.0]),
        ]
    );
    assert_eq!(got["behaviours"][2]["rows"], json!([["b", 2], ["b", 3]]));
    // The first query that matches a step names it; `response` searches the whole response, thought and tags.
    let got = audit(dir.path(), &["--cache", cache, "--query", "response:think", "--query", buy]);
    assert_eq!(
        behaviours(&got),
        [
            json!(["response:think", 3, 1.5, 1.0, 0.0, 1.5]),
            // Only c's purchase in iteration 0 is left to it.
            json!([buy, 0, 0.0, null, 0.5, -0.5]),
            json!(["(unmatched)", 5, -1.5, null, -0.5, -1.0]),
        ]
    );
    assert_eq!(got["behaviours"][0]["rows"], json!([["a", 0], ["a", 1], ["a", 3]]));
    // A bad query is named; a query with a regex is refused.
    let out = Command::new(BIN)
        .args(["audit", dir.path().to_str().unwrap(), "--iteration", "1", "--cache", cache, "--query", "adv:<<"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--query \"adv:<<\""), "{err}");
    let out = Command::new(BIN)
        .args(["audit", dir.path().to_str().unwrap(), "--iteration", "1", "--query", "id:a", "--by", "x"])
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--by"));
}
