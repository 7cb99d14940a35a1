//! What the views show of runs from other trainers: a TRL log's reward functions, unscored completions and the
//! settings that apply to its estimator; the task of a verl dump and of a verl-agent export; the page of a
//! step whose run records none.

use std::path::Path;

use gigscope::index::{Hit, SearchResults};
use gigscope::tui::{open, update, Action, Config, Msg, State};

use crate::support::screen::{keys, render};

fn opened(dir: &Path) -> State {
    opened_at(dir, (120, 40))
}

fn opened_at(dir: &Path, size: (u16, u16)) -> State {
    open(dir, Config::defaults(true).expect("config"), size).expect("the run opens").0
}

/// The screen's line that starts with `start` (inside the frame's quotes).
fn line<'a>(screen: &'a str, start: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.trim_start_matches('"').starts_with(start))
        .unwrap_or_else(|| panic!("no {start}:\n{screen}"))
}

#[test]
fn a_trl_completion_shows_each_reward_function_and_an_unscored_one_says_so() {
    let mut s = opened_at(Path::new("tests/fixtures/trl/default"), (200, 50));
    // Group s1-g1, trajectory 1: s1-r1, for which both reward functions returned None.
    keys(&mut s, &[Action::Open, Action::Open]);
    let screen = render(&s);
    assert!(screen.contains("episode s1-r1"), "{screen}");
    assert!(screen.contains("rewards: length_reward None · keyword_reward None"), "{screen}");
    assert!(screen.contains("return — · unscored (every reward function returned None)"), "{screen}");
    assert!(!screen.contains("-0.000"), "{screen}");
    keys(&mut s, &[Action::NextItem]);
    let screen = render(&s);
    assert!(screen.contains("episode s1-r2"), "{screen}");
    assert!(screen.contains("rewards: length_reward 0.500 · keyword_reward None"), "{screen}");
    assert!(screen.contains("return 0.500 · score 0.500"), "no ✗ failure on a TRL completion:\n{screen}");
}

#[test]
fn a_trl_run_shows_the_settings_of_its_estimator_and_no_success_rate() {
    let s = opened(Path::new("tests/fixtures/trl/default"));
    let screen = render(&s);
    let status = screen.lines().rev().nth(1).unwrap_or_default();
    assert!(status.contains("groups · grpo scale=group"), "{status}");
    for absent in ["γ", "ω", "mean_norm", "exact"] {
        assert!(!status.contains(absent), "{absent} in {status}");
    }
    assert!(!screen.contains("success rate"), "{screen}");
    let first = line(&screen, "│1 ");
    let success = first.trim_matches(|c| c == '"' || c == '│').split_whitespace().nth(3);
    assert_eq!(success, Some("—"), "the success column: {first}");
}

/// A verl rollout dump of one step: two sessions of one prompt, decoded without the chat template's tokens.
fn verl_dump() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = "system\nYou are a helpful assistant.\nuser\nwhat is two plus two\nassistant\n";
    let lines: Vec<String> = [("four", 1.0), ("five", 0.0)]
        .iter()
        .enumerate()
        .map(|(k, (output, score))| {
            serde_json::json!({"input": input, "output": output, "score": score, "step": 1, "uid": format!("p1_{k}_0")})
                .to_string()
        })
        .collect();
    std::fs::write(dir.path().join("1.jsonl"), lines.join("\n") + "\n").expect("write");
    dir
}

#[test]
fn a_verl_dump_shows_the_prompts_user_turn_as_its_task() {
    let dir = verl_dump();
    let mut s = opened(dir.path());
    keys(&mut s, &[Action::Open]);
    let screen = render(&s);
    assert!(screen.contains("task: what is two plus two"), "{screen}");
    keys(&mut s, &[Action::Open]);
    let screen = render(&s);
    assert!(screen.contains("task: what is two plus two"), "{screen}");
}

#[test]
fn a_verl_agent_export_shows_the_task_of_its_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let meta = serde_json::json!({"format": "gigscope-run/1", "name": "export", "env": "webshop"});
    std::fs::write(dir.path().join("run.json"), meta.to_string()).expect("run.json");
    let prompt = "<|im_start|>user\nYou are an expert autonomous agent operating in the WebShop e-commerce \
                  platform. Your task is to: find me a red cotton hat. Your current observation is: 'Search'.<|im_end|>\n\
                  <|im_start|>assistant\n";
    let lines: Vec<String> = (0..2)
        .map(|k| {
            serde_json::json!({"id": format!("t{k}"), "group": "g", "iteration": 1,
                "steps": [{"observation": prompt, "action": "search[red hat]", "reward": k as f64}]})
            .to_string()
        })
        .collect();
    std::fs::write(dir.path().join("episodes.jsonl"), lines.join("\n") + "\n").expect("episodes");
    let mut s = opened(dir.path());
    keys(&mut s, &[Action::Open]);
    let screen = render(&s);
    assert!(
        screen.contains("task: find me a red cotton hat\n") || screen.contains("task: find me a red cotton hat "),
        "{screen}"
    );
}

#[test]
fn the_search_view_shows_the_page_a_run_without_pages_is_indexed_under() {
    // The TUI fixture without its recorded pages, as a verl-agent export writes it.
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = Path::new("tests/fixtures/tui/basic");
    std::fs::copy(fixture.join("run.json"), dir.path().join("run.json")).expect("run.json");
    let text = std::fs::read_to_string(fixture.join("episodes.jsonl")).expect("episodes");
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut episode: serde_json::Value = serde_json::from_str(line).expect("JSON");
            for step in episode["steps"].as_array_mut().expect("steps") {
                step.as_object_mut().expect("step").remove("page");
            }
            episode.to_string()
        })
        .collect();
    std::fs::write(dir.path().join("episodes.jsonl"), lines.join("\n") + "\n").expect("write");
    let mut s = opened(dir.path());
    // Episode 0's step 1 is a results page (what `page:results` finds).
    let hits = vec![Hit { episode: 0, episode_id: String::new(), step: 1, score: 1.0 }];
    update(
        &mut s,
        Msg::SearchDone { query: "page:results".into(), result: Ok(SearchResults { total: 1, hits }), partial: None },
    );
    let screen = render(&s);
    let row = line(&screen, "│1 ");
    assert!(row.contains(" results "), "{row}");
}

#[test]
fn a_trl_run_opened_with_the_trainers_settings_agrees_with_its_stored_advantages() {
    // Trained with scale_rewards=batch and reward_weights [2, 0.5], which TRL's log does not record.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trl/batch_weights");
    let mut state = opened(&dir);
    let differs = state.domain.derived.max_trainer_diff.expect("the run stores advantages");
    assert!(differs > 1e-3, "with TRL's defaults the stored advantages differ ({differs})");
    let recorded = state.domain.recorded;
    let overrides = gigscope::advantage::AdvantageOverrides {
        scale_rewards: Some(gigscope::advantage::ScaleRewards::Batch),
        reward_weights: Some(gigscope::advantage::RewardWeights::new(&[2.0, 0.5]).unwrap()),
        ..Default::default()
    };
    state.domain.open_with(overrides).expect("valid settings");
    let diff = state.domain.derived.max_trainer_diff.expect("the run stores advantages");
    assert!(diff <= 1e-4, "the trainer's settings reproduce its advantages ({diff})");
    assert_eq!(state.domain.recorded, recorded, "the run's own settings stay what R puts back");
    assert!(state.domain.settings_modified(), "the panel marks what the flags changed");
    let bad = gigscope::advantage::AdvantageOverrides { gamma: Some(2.0), ..Default::default() };
    assert!(state.domain.open_with(bad).is_err(), "settings outside their domain are refused");
}
