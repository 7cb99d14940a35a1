//! `gigscope search` on a run under tests/: the example query, JSON output, a helpful error for a bad
//! query, and the run directory left as it was.

use std::path::Path;
use std::process::{Command, Output};

const RUN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/index/run");

fn search(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .arg("search")
        .arg(RUN)
        .args(args)
        .env("GIGSCOPE_CACHE", cache)
        .output()
        .unwrap()
}

fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_name().unwrap().to_string_lossy().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files
}

#[test]
fn the_example_query_prints_the_failed_buy_now() {
    let cache = tempfile::tempdir().unwrap();
    let before = snapshot(Path::new(RUN));
    let out = search(cache.path(), &[r#"action:"buy now" AND success:false AND adv:<-1"#]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(lines[1].starts_with("t2") && lines[1].contains("-6.0000") && lines[1].ends_with("click[buy now]"));
    assert_eq!(lines[2], "1 of 1 matching step(s)");
    // The broken line is mentioned, not fatal.
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken line"));
    assert_eq!(snapshot(Path::new(RUN)), before);
}

#[test]
fn json_output_and_the_second_run_reuses_the_index() {
    let cache = tempfile::tempdir().unwrap();
    let first = search(cache.path(), &["page:search", "--json", "--limit", "1"]);
    assert!(String::from_utf8_lossy(&first.stderr).contains("indexing 2 episode(s)"));
    let second = search(cache.path(), &["page:search", "--json", "--limit", "1"]);
    assert!(!String::from_utf8_lossy(&second.stderr).contains("indexing"));
    let value: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(value["total"], 2);
    assert_eq!(value["hits"].as_array().unwrap().len(), 1);
    assert_eq!(value["hits"][0]["id"], "t1");
    assert_eq!(value["hits"][0]["step"], 0);
    // A_E = +4, A_S = +4.5125 for t1's first step.
    assert_eq!(value["hits"][0]["advantage"], 8.5125);
}

#[test]
fn a_bad_query_fails_with_a_reason() {
    let cache = tempfile::tempdir().unwrap();
    let out = search(cache.path(), &["colour:red"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown field `colour`") && stderr.contains("instruction"), "{stderr}");
}

/// The ids `gigscope search DIR QUERY --json` finds, sorted.
fn found(cache: &Path, dir: &Path, query: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(["search", dir.to_str().unwrap(), query, "--json", "--limit", "1000"])
        .env("GIGSCOPE_CACHE", cache)
        .output()
        .unwrap();
    assert!(out.status.success(), "{query}: {}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut ids: Vec<String> =
        json["hits"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    ids
}

/// `gigscope advantages DIR --format jsonl`'s rows.
fn advantage_rows(dir: &Path) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(["advantages", dir.to_str().unwrap(), "--format", "jsonl"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn ids_where(rows: &[serde_json::Value], keep: impl Fn(&serde_json::Value) -> bool) -> Vec<String> {
    let mut ids: Vec<String> =
        rows.iter().filter(|r| keep(r)).map(|r| r["episode"].as_str().unwrap().to_string()).collect();
    ids.sort();
    ids
}

#[test]
fn a_trl_runs_reward_functions_and_stored_advantages_are_search_fields() {
    let cache = tempfile::tempdir().unwrap();
    let trl = |name: &str| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trl").join(name);
    // Each reward function's value, as TRL logged it (pandas.json: one list of rows per file, in file order).
    let dir = trl("default");
    let pandas: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("pandas.json")).unwrap()).unwrap();
    let mut logged: Vec<(String, Option<f64>)> = Vec::new();
    for (file, rows) in pandas.as_object().unwrap() {
        let step: u64 = file.trim_start_matches("completions_").trim_end_matches(".parquet").parse().unwrap();
        for (r, row) in rows.as_array().unwrap().iter().enumerate() {
            logged.push((format!("s{step}-r{}", r + 1), row["rewards"]["length_reward"].as_f64()));
        }
    }
    let mut over_one: Vec<String> =
        logged.iter().filter(|(_, v)| v.is_some_and(|v| v > 1.0)).map(|(id, _)| id.clone()).collect();
    over_one.sort();
    assert!(!over_one.is_empty());
    assert_eq!(found(cache.path(), &dir, "rewards.length_reward:>1"), over_one);
    let mut exactly: Vec<String> = logged.iter().filter(|(_, v)| *v == Some(1.5)).map(|(id, _)| id.clone()).collect();
    exactly.sort();
    assert_eq!(found(cache.path(), &dir, "rewards.length_reward:1.5"), exactly);
    // An unscored completion has no reward: `reward:<0.1` does not find s1-r1 (both functions returned None).
    let low = found(cache.path(), &dir, "reward:<0.1");
    assert!(!low.contains(&"s1-r1".to_string()), "{low:?}");
    // The trainer's stored advantage and its difference from the recomputed one (run read with TRL's defaults,
    // trained with others).
    let dir = trl("batch_weights");
    let rows = advantage_rows(&dir);
    let delta = ids_where(&rows, |r| r["delta"].as_f64().is_some_and(|d| d > 0.1));
    assert!(!delta.is_empty());
    assert_eq!(found(cache.path(), &dir, "delta:>0.1"), delta);
    let stored = ids_where(&rows, |r| r["stored_advantage"].as_f64().is_some_and(|a| a < -1.0));
    assert!(!stored.is_empty());
    assert_eq!(found(cache.path(), &dir, "stored_adv:<-1"), stored);
}
