//! An observation of 100 MB (a tool's whole log in one step, issue 28 item 9): the episode view folds it into
//! its start and its end around a line saying how much is folded, and unfolded pages it from its start; the
//! layout's own test (`observation_window` in `src/tui/views/episode.rs`) counts the bytes a key lays out.

use std::path::Path;

use gigscope::run::{Episode, Step, Task};
use gigscope::tui::{open, Action, Config, State};

use crate::support::screen::{keys, render};

/// A run of one group of two episodes, the first of whose first step saw `lines` numbered lines of log.
fn write_run(dir: &Path, lines: usize) -> usize {
    let log: String = (0..lines).map(|i| format!("log line {i:08} of the tool's output\n")).collect();
    let mut text = String::new();
    for k in 0..2 {
        let observation = if k == 0 { log.clone() } else { "a short page".to_string() };
        let steps = vec![Step::new(observation, "run the tool", 0.0), Step::new("done", "stop", 1.0)];
        let mut e = Episode::new(format!("e{k}"), "g0", steps);
        e.task = Some(Task { id: "t".into(), instruction: "read the log".into(), extra: Default::default() });
        text += &(serde_json::to_string(&e).unwrap() + "\n");
    }
    std::fs::write(dir.join("episodes.jsonl"), text).unwrap();
    // An environment gigscope does not have: the observation is plain text, shown line by line.
    let meta = serde_json::json!({"format": "gigscope-run/1", "name": "tool-log", "env": "tool-logs"});
    std::fs::write(dir.join("run.json"), meta.to_string()).unwrap();
    log.len()
}

fn episode_view(dir: &Path) -> State {
    let mut s = open(dir, Config::defaults(true).unwrap(), (80, 24)).unwrap().0;
    keys(&mut s, &[Action::Open, Action::Open]);
    s
}

/// Scroll the observation down until the screen shows `text`; the screen then.
fn scroll_to(s: &mut State, text: &str) -> String {
    for _ in 0..5_000 {
        let screen = render(s);
        if screen.contains(text) {
            return screen;
        }
        keys(s, &[Action::ScrollDown]);
    }
    panic!("{text:?} never shows:\n{}", render(s));
}

#[test]
fn a_100_mb_observation_is_folded_and_pages_unfolded() {
    let run = tempfile::tempdir().unwrap();
    let lines = 2_700_000;
    let bytes = write_run(run.path(), lines);
    assert!(bytes > 100_000_000, "{bytes}");
    let mut s = episode_view(run.path());
    assert_eq!(s.domain.episode(0).unwrap().steps[0].observation.len(), bytes);
    // Folded: its start, a line saying how much is folded, and its end.
    let screen = render(&s);
    assert!(screen.contains("log line 00000000 of the tool's output"), "{screen}");
    let screen = scroll_to(&mut s, "MB folded (z unfolds) ⋯");
    assert!(screen.contains("⋯ 10") && screen.contains(" MB of 10"), "{screen}");
    insta::assert_snapshot!("a_folded_100_mb_observation_at_80x24", screen);
    keys(&mut s, &vec![Action::ScrollDown; 100_000]);
    let screen = render(&s);
    assert!(screen.contains(&format!("log line {:08} of the tool's output", lines - 1)), "{screen}");
    // Unfolded: the text from its start, laid out as far as it is scrolled, its size in the title.
    keys(&mut s, &[Action::Fold]);
    let screen = render(&s);
    assert!(screen.contains("log line 00000000 of the tool's output"), "{screen}");
    assert!(screen.contains(" MB text"), "the title names the size:\n{screen}");
    // A scroll key moves three lines.
    keys(&mut s, &vec![Action::ScrollDown; 1_000]);
    let screen = render(&s);
    assert!(screen.contains("log line 00003000 of the tool's output"), "{screen}");
    assert!(!screen.contains("log line 00002999 of"), "{screen}");
}
