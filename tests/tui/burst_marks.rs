//! A burst's groups are marked as its own (issue 27): `run.json`'s `bursts` entries record which bytes of
//! `episodes.jsonl` each burst wrote, and the groups table, the group's header and the overview show the burst
//! that wrote each group. The run is the TUI fixture with two bursts recorded by construction: iteration 0 by a
//! first burst, iteration 1 by a Ray job whose own trainer recorded its entry after the job's.

use std::path::Path;

use gigscope::live::LiveEvent;
use gigscope::run::{read_meta, RunMeta};
use gigscope::tui::{open, update, Action, Config, Msg, State};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

use crate::support::runs::copy_fixture;

/// Where the first line of iteration 1 starts in `episodes.jsonl`, and the file's size.
fn iteration_one_at(dir: &Path) -> (u64, u64) {
    let bytes = std::fs::read(dir.join("episodes.jsonl")).unwrap();
    let mut at = 0u64;
    let mut first = None;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        if first.is_none() && v["iteration"] == 1 {
            first = Some(at);
        }
        at += line.len() as u64;
    }
    (first.expect("the fixture has an iteration 1"), at)
}

/// Record `bursts` in the run's `run.json`.
fn record_bursts(dir: &Path, bursts: serde_json::Value) -> RunMeta {
    let mut meta = read_meta(dir).unwrap().unwrap();
    meta.extra.insert("bursts".into(), bursts);
    std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(&meta).unwrap()).unwrap();
    meta
}

fn two_bursts() -> (tempfile::TempDir, State) {
    let (tmp, dir) = copy_fixture("basic");
    let (split, end) = iteration_one_at(&dir);
    record_bursts(
        &dir,
        json!([
            {"iterations": 1, "episodes_from": 0, "episodes_to": split},
            {"backend": "ray", "job_id": "gigscope-burst-2", "episodes_from": split, "episodes_to": end},
            {"iterations": 1, "episodes_from": split, "episodes_to": end},
        ]),
    );
    let state = open(&dir, Config::defaults(true).unwrap(), (120, 40)).unwrap().0;
    (tmp, state)
}

fn render(s: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(s.ui.size.0, s.ui.size.1)).unwrap();
    terminal.draw(|f| f.render_widget(s, f.area())).unwrap();
    terminal.backend().to_string()
}

/// Each group's burst, by the iteration it is in.
fn marks(s: &State) -> Vec<(i64, String, Option<u32>)> {
    let bursts = s.domain.marked_bursts();
    let t = &s.domain.derived.table;
    (0..t.episode_groups.len() as u32)
        .map(|g| {
            let eg = &t.episode_groups[g as usize];
            let iteration = s.domain.episodes.at(t.group_episodes(g as usize).first().unwrap() as usize).iteration;
            (iteration, eg.name.to_string(), s.domain.group_burst(&bursts, g))
        })
        .collect()
}

#[test]
fn each_group_carries_the_mark_of_the_burst_that_wrote_it() {
    let (_tmp, s) = two_bursts();
    let found = marks(&s);
    assert_eq!(found.len(), 4);
    for (iteration, name, burst) in found {
        assert_eq!(burst, Some(iteration as u32 + 1), "group {name} of iteration {iteration}");
    }
    let overview = render(&s);
    let row = |i: &str| overview.lines().find(|l| l.contains(&format!("│{i}     6"))).unwrap().to_string();
    assert!(overview.contains("burst"), "{overview}");
    assert!(row("0").contains("b1") && !row("0").contains("b2"), "{overview}");
    assert!(row("1").contains("b2") && !row("1").contains("b1"), "{overview}");
}

#[test]
fn groups_of_the_second_burst_120x40() {
    let (_tmp, mut s) = two_bursts();
    update(&mut s, Msg::Action(Action::Down));
    update(&mut s, Msg::Action(Action::Open));
    let screen = render(&s);
    assert!(screen.contains("std 4.209 · burst b2"), "the group's header names its burst:\n{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn a_run_trained_once_from_its_start_marks_nothing() {
    let (_tmp, dir) = copy_fixture("basic");
    let (_, end) = iteration_one_at(&dir);
    record_bursts(&dir, json!([{"iterations": 2, "episodes_from": 0, "episodes_to": end}]));
    let s = open(&dir, Config::defaults(true).unwrap(), (120, 40)).unwrap().0;
    assert!(s.domain.marked_bursts().is_empty());
    assert!(!render(&s).contains("burst"));
}

#[test]
fn a_burst_recorded_while_the_run_is_followed_marks_its_groups() {
    // The run as a viewer has it, then `run.json` records a burst that starts at iteration 1's first line (as a
    // Ray burst records itself at submission, before the job writes): the groups written after are its own.
    let (_tmp, dir) = copy_fixture("basic");
    let (split, _) = iteration_one_at(&dir);
    let mut s = open(&dir, Config::defaults(true).unwrap(), (120, 40)).unwrap().0;
    assert!(s.domain.marked_bursts().is_empty());
    let meta = record_bursts(&dir, json!([{"backend": "ray", "episodes_from": split}]));
    update(&mut s, Msg::Live(vec![LiveEvent::Meta(Some(Box::new(meta)))], std::time::Instant::now()));
    let found = marks(&s);
    assert!(found.iter().all(|(i, _, b)| *b == (*i == 1).then_some(1)), "{found:?}");
}
