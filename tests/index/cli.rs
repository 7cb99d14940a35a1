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
