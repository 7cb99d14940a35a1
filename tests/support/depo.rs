//! A run for DEPO's efficiency term whose recorded step lengths (`tokens` in `episodes.jsonl`, an estimate)
//! differ from the token store's counts of trained tokens: `advantage` and `tui` both open it.

use std::path::Path;

use gigscope::run::tokens::{StepRecord, StepTokens, TokenWriter};

/// One group: `e1` succeeds in two steps (rewards 0, 1; recorded lengths 4 and 4), `e2` fails in one (reward
/// 0, recorded length 2). With `counted`, the token store holds every step: e1's steps train 10 of 12 and 30
/// of 31 tokens, e2's 7 of 9.
pub fn depo_run(dir: &Path, counted: bool) {
    let step = |action: &str, reward: u8, tokens: u8| serde_json::json!({"observation": "o", "action": action, "reward": reward, "tokens": tokens});
    let lines = [
        serde_json::json!({"id": "e1", "group": "g", "steps": [step("a", 0, 4), step("b", 1, 4)],
            "outcome": {"success": true}}),
        serde_json::json!({"id": "e2", "group": "g", "steps": [step("c", 0, 2)], "outcome": {"success": false}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("episodes.jsonl"), text).expect("write episodes.jsonl");
    if !counted {
        return;
    }
    let response = |n: usize, trained: usize| {
        let texts: Vec<String> = (0..n).map(|i| format!(" t{i}")).collect();
        let texts: Vec<Option<&str>> = texts.iter().map(|t| Some(t.as_str())).collect();
        StepTokens::new((0..n as i32).collect(), (0..n).map(|i| i < trained).collect(), &texts)
    };
    let (a, b, c) = (response(12, 10), response(31, 30), response(9, 7));
    let records = [
        StepRecord { episode: "e1", step: 0, iteration: Some(0), tokens: &a },
        StepRecord { episode: "e1", step: 1, iteration: Some(0), tokens: &b },
        StepRecord { episode: "e2", step: 0, iteration: Some(0), tokens: &c },
    ];
    TokenWriter::create(dir).expect("token store").append("it0.bin", &records).expect("append tokens");
}
