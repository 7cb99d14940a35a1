//! The `gigscope webshop` commands this module provides, run as a user runs them.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn gigscope(args: &[&str], stdin: &str, cache: &std::path::Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(args)
        .env("GIGSCOPE_CACHE", cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gigscope starts");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "gigscope {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn path(p: &str) -> String {
    root().join(p).to_str().unwrap().to_owned()
}

#[test]
fn reward_prints_one_json_object_with_the_breakdown() {
    let cache = tempfile::tempdir().unwrap();
    let args = [
        "webshop",
        "reward",
        "--product",
        &path("tests/fixtures/webshop/reward_product.json"),
        "--goal",
        &path("tests/fixtures/webshop/reward_goal.json"),
        "--options",
        r#"{"color": "navy | blue", "size": "8"}"#,
        "--price",
        "39.99",
        "--catalog",
        &path("../shared/webshop"),
    ];
    let out = gigscope(&args, "", cache.path());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["reward", "r_type", "r_att", "r_option", "r_price", "title_score", "query_match", "category_match"]
    );
    // The record is cleaned as the catalog does: the query is lower-cased and stripped, options
    // lower-cased with "/" -> " | ". "non slip" matches, "waterproof" does not; both options match.
    assert_eq!(v["query_match"], true);
    assert_eq!(v["r_att"], 0.5);
    assert_eq!(v["r_option"], 1.0);
    assert_eq!(v["r_price"], true);
    assert_eq!(v["reward"], 4.0 / 5.0);

    // Over the cap, and a goal without options: r_option is null.
    let goal_dir = tempfile::tempdir().unwrap();
    let goal_path = goal_dir.path().join("goal.json");
    let mut goal: Value =
        serde_json::from_str(&std::fs::read_to_string(path("tests/fixtures/webshop/reward_goal.json")).unwrap())
            .unwrap();
    goal["goal_options"] = Value::Array(vec![]);
    std::fs::write(&goal_path, goal.to_string()).unwrap();
    let mut args = args;
    args[5] = goal_path.to_str().unwrap();
    args[9] = "50.5";
    let v: Value = serde_json::from_slice(&gigscope(&args, "", cache.path()).stdout).unwrap();
    assert_eq!(v["r_option"], Value::Null);
    assert_eq!(v["r_price"], false);
    assert_eq!(v["reward"], 1.0 / 3.0);
}

#[test]
fn goals_freeze_and_play_reads_actions_from_stdin() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let goals = dir.path().join("goals.json");
    let catalog = path("../shared/webshop");
    let out =
        gigscope(&["webshop", "goals", "--catalog", &catalog, "--out", goals.to_str().unwrap()], "", cache.path());
    assert!(String::from_utf8_lossy(&out.stdout).contains("(test 500, dev 1000, train "));
    let list: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&goals).unwrap()).unwrap();
    let goal = &list[1];

    // Search for the goal's product by its title, open it, buy it.
    let products: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(root().join("../shared/webshop/products_394.json")).unwrap())
            .unwrap();
    let asin = goal["asin"].as_str().unwrap();
    let title = products.iter().find(|p| p["asin"] == asin).unwrap()["name"].as_str().unwrap();
    let actions = format!("search[{title}]\nclick[{}]\nclick[buy now]\n", asin.to_lowercase());
    let out = gigscope(
        &["webshop", "play", "--catalog", &catalog, "--goals", goals.to_str().unwrap(), "--goal", "1"],
        &actions,
        cache.path(),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(goal["instruction_text"].as_str().unwrap()));
    assert!(text.contains("actions:\n  search[<your query>]\n  click[search]\n> "));
    assert!(text.contains("[item · step 2]"), "{text}");
    let last = text.lines().last().unwrap();
    let breakdown: Value = serde_json::from_str(last.strip_prefix("reward ").expect("final reward line")).unwrap();
    // The right product: type and attributes are right; the options were not chosen.
    assert_eq!(breakdown["r_type"], 1.0);
    assert_eq!(breakdown["query_match"], true);

    // Input that ends early leaves the episode unfinished without an error.
    let out = gigscope(
        &["webshop", "play", "--catalog", &catalog, "--goals", goals.to_str().unwrap()],
        "search[soil]\n",
        cache.path(),
    );
    assert!(String::from_utf8(out.stdout).unwrap().ends_with("(end of input: episode not finished)\n"));
}
