//! verifiers' saved rollouts (`traces.jsonl`, verifiers 0.4.0, the schema prime-rl trains from), made by
//! verifiers' own code (`tests/fixtures/verifiers/make_traces.py`: its turn commit, rewards and
//! `write_episode`, stub responses carrying token ids and log-probabilities, nothing downloaded), read by
//! `gigscope tokens`: every step shows exactly the values the file holds, null where it holds none; a broken
//! line and a record whose arrays disagree are named by file and line, and the rest still reads; and the run
//! opened as episodes: groups, one step per assistant turn, each rubric function's weighted reward.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use gigscope::run::{Layout, Run, SourceOptions};
use serde_json::Value;

/// verifiers==0.4.0's Python (`./scripts/dev test` installs it in `target/verifiers-venv`;
/// `$GIGSCOPE_TEST_VERIFIERS` names another). Missing: the test is skipped, except on CI.
fn verifiers_python() -> Option<PathBuf> {
    let path = std::env::var_os("GIGSCOPE_TEST_VERIFIERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/verifiers-venv/bin/python"));
    if path.is_file() {
        return Some(path);
    }
    assert!(std::env::var_os("CI").is_none(), "{} is missing: `./scripts/dev test` installs verifiers", path.display());
    eprintln!("{} not installed: skipping", path.display());
    None
}

/// A results directory written by verifiers' own code, with what the script read back from it.
fn made_by_verifiers(python: &Path) -> (tempfile::TempDir, Value) {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verifiers/make_traces.py");
    let out = Command::new(python).arg(script).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let expected = serde_json::from_str(&std::fs::read_to_string(dir.path().join("expected.json")).unwrap()).unwrap();
    (dir, expected)
}

fn tokens(dir: &Path, episode: &str) -> (Vec<Value>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(["tokens", dir.to_str().unwrap(), "--episode", episode, "--format", "jsonl"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let rows = String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (rows, stderr)
}

/// A value as `gigscope tokens` prints it against the file's: the same float32, or both null.
fn same(got: &Value, want: &Value) -> bool {
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) => g as f32 == w as f32,
        _ => got.is_null() && want.is_null(),
    }
}

fn check_episode(dir: &Path, id: &str, want: &Value) {
    let (rows, _) = tokens(dir, id);
    let steps = want["steps"].as_array().unwrap();
    let mut at = 0;
    for (s, step) in steps.iter().enumerate() {
        let ids = step["id"].as_array().unwrap();
        for (i, token_id) in ids.iter().enumerate() {
            let row = &rows[at];
            at += 1;
            assert_eq!((row["step"].as_u64(), row["index"].as_u64()), (Some(s as u64), Some(i as u64)), "{row}");
            assert_eq!(&row["id"], token_id, "{id} step {s} token {i}");
            let mask = step["mask"][i].as_bool().map(u64::from);
            assert_eq!(row["mask"].as_u64(), mask, "{id} step {s} token {i}");
            for key in ["rollout_logprob", "advantage", "ref_logprob", "old_logprob", "entropy"] {
                assert!(
                    same(&row[key], &step[key][i]),
                    "{id} step {s} token {i} {key}: {} vs {}",
                    row[key],
                    step[key][i]
                );
            }
            assert!(row["ratio"].is_null() && row["clipped"].is_null() && row["text"].is_null(), "{row}");
        }
    }
    assert_eq!(at, rows.len(), "{id}: one row per token of its sampled turns");
}

#[test]
fn gigscope_tokens_shows_what_verifiers_wrote_and_names_a_broken_record() {
    let Some(python) = verifiers_python() else { return };
    let (dir, expected) = made_by_verifiers(&python);
    let episodes = expected.as_object().unwrap();
    assert_eq!(episodes.len(), 4);
    for (id, want) in episodes {
        assert_eq!(want["steps"].as_array().unwrap().len(), 2, "{id}: two assistant turns, two steps");
        check_episode(dir.path(), id, want);
    }
    // The trainer's channels where it annotated, null where it did not (the first rollout of each group).
    let (plain, _) = tokens(dir.path(), "ep-0-0");
    assert!(plain.iter().all(|r| r["advantage"].is_null() && r["entropy"].is_null()));
    assert!(
        plain.iter().any(|r| r["rollout_logprob"].is_f64()) && plain.iter().any(|r| r["rollout_logprob"].is_null())
    );
    let (annotated, _) = tokens(dir.path(), "ep-0-1");
    assert!(annotated.iter().any(|r| r["kl_k3"].is_f64() && r["mismatch"].is_f64()));

    // Bad input after the good lines: a line that is no JSON, a record whose logprobs disagree with its mask,
    // then a good record again.
    let traces = dir.path().join("traces.jsonl");
    let text = std::fs::read_to_string(&traces).unwrap();
    let good = text.lines().nth(1).unwrap();
    let mut broken: Value = serde_json::from_str(good).unwrap();
    broken["id"] = "ep-broken".into();
    broken["traces"][0]["nodes"][2]["logprobs"] = serde_json::json!([-0.5]);
    let mut again: Value = serde_json::from_str(good).unwrap();
    again["id"] = "ep-again".into();
    let mut f = std::fs::OpenOptions::new().append(true).open(&traces).unwrap();
    writeln!(f, "{{\"id\": \"ep-cut\", \"traces\": [").unwrap();
    writeln!(f, "{broken}").unwrap();
    writeln!(f, "{again}").unwrap();
    drop(f);
    let (rows, stderr) = tokens(dir.path(), "ep-again");
    assert!(stderr.contains("traces.jsonl: line 5:"), "{stderr}");
    assert!(
        stderr.contains("traces.jsonl: line 6: episode \"ep-broken\" step 0: logprobs has 1 values for"),
        "{stderr}"
    );
    check_episode(dir.path(), "ep-again", &episodes["ep-0-1"]);
    assert!(!rows.is_empty());
    // The broken record's other step still reads.
    let (rows, _) = tokens(dir.path(), "ep-broken");
    assert!(rows.iter().all(|r| r["step"].as_u64() == Some(1)) && !rows.is_empty(), "{rows:?}");
}

#[test]
fn the_rollouts_open_as_episodes_grouped_per_example_with_a_step_per_assistant_turn() {
    let Some(python) = verifiers_python() else { return };
    let (dir, expected) = made_by_verifiers(&python);
    let run = Run::open_as(dir.path(), None, &SourceOptions::default()).unwrap();
    assert_eq!(run.layout, Layout::Verifiers);
    assert!(run.errors.is_empty() && run.skipped.is_empty(), "{:?} {:?}", run.errors, run.skipped);
    assert_eq!(run.episodes.len(), 4);
    for episode in &run.episodes {
        let want = &expected[&episode.id];
        assert_eq!(episode.group, want["group"].as_str().unwrap());
        assert_eq!(episode.iteration, want["iteration"].as_i64().unwrap());
        assert_eq!(episode.steps.len(), 2, "{}", episode.id);
        let trained: Vec<u64> = want["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["mask"].as_array().unwrap().iter().filter(|m| m.as_bool() == Some(true)).count() as u64)
            .collect();
        assert_eq!(episode.steps.iter().map(|s| s.tokens.unwrap()).collect::<Vec<_>>(), trained);
        assert!(episode.steps[0].action.starts_with("lookup("), "{}", episode.steps[0].action);
        assert!(episode.steps[1].observation.contains("[tool] lookup says"), "{}", episode.steps[1].observation);
        assert!(episode.instruction().ends_with('?') || episode.instruction().ends_with('.'));
        // Each rubric function's score × weight; their sum the episode's score, on its last step.
        let (names, values) = episode.reward_functions().unwrap();
        assert_eq!(names, ["correct", "format"]);
        let weighted: Vec<f64> = names
            .iter()
            .map(|n| want["rewards"][n]["score"].as_f64().unwrap() * want["rewards"][n]["weight"].as_f64().unwrap())
            .collect();
        assert_eq!(values, weighted);
        let score: f64 = weighted.iter().sum();
        assert_eq!((episode.outcome.as_ref().unwrap().score, episode.steps[1].reward), (score, score));
    }
    let groups: std::collections::BTreeSet<&str> = run.episodes.iter().map(|e| e.group.as_str()).collect();
    assert_eq!(groups.into_iter().collect::<Vec<_>>(), ["qa-0", "qa-1"]);
    // The trainer's advantage per step where every turn carries one.
    let annotated = run.episodes.iter().find(|e| e.id == "ep-1-1").unwrap();
    assert_eq!(annotated.advantages.as_deref(), Some(&[0.5, 0.5][..]));
    assert!(run.episodes.iter().find(|e| e.id == "ep-1-0").unwrap().advantages.is_none());
}
