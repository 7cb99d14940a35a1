//! Estimators view benchmark: how long the UI thread is held when the view shows a group of a large iteration.
//! A generated WebShop-like run (`ESTIMATORS_BENCH_GROUPS` groups of 8 trajectories per iteration, default 256,
//! two iterations) is opened; then key press → frame (update + render of a 160×45 screen) on the UI thread for:
//! the first group of an iteration (every estimator on the group; the iteration's batch columns, ProxMO's TF-IDF
//! over the whole iteration, are asked for as a job), the job itself and its arrival → frame, each next group
//! (the group only; the batch columns are memoised), and a redraw of a group shown before.
//!
//! `cargo bench --no-default-features --bench estimators_view` (a plain binary: prints a table).

use std::io::{BufWriter, Write};
use std::time::{Duration, Instant};

use gigscope::run::synth::{episodes, SynthSpec};
use gigscope::tui::{open, update, Action, Config, Effect, Msg, State};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn frame(terminal: &mut Terminal<TestBackend>, state: &State) {
    terminal.draw(|f| f.render_widget(state, f.area())).expect("draw");
}

/// Key `a`, then the frame that shows it.
fn key_to_frame(terminal: &mut Terminal<TestBackend>, state: &mut State, a: Action) -> Duration {
    let t = Instant::now();
    update(state, Msg::Action(a));
    frame(terminal, state);
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let groups: usize = std::env::var("ESTIMATORS_BENCH_GROUPS").ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    let spec = SynthSpec { groups: 2 * groups, trajectories: 8, steps: 3..=15, groups_per_iteration: groups, seed: 3 };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut out = BufWriter::new(std::fs::File::create(tmp.path().join("episodes.jsonl")).expect("episodes.jsonl"));
    for e in episodes(&spec) {
        serde_json::to_writer(&mut out, &e).expect("episode line");
        out.write_all(b"\n").expect("write");
    }
    out.flush().expect("flush");
    drop(out);

    let (mut state, _tails) = open(tmp.path(), Config::defaults(true).expect("config"), (160, 45)).expect("open");
    let rows = state.domain.derived.table.row_count();
    let mut terminal = Terminal::new(TestBackend::new(160, 45)).expect("terminal");
    update(&mut state, Msg::Action(Action::Open));
    frame(&mut terminal, &state);

    // The first group of each iteration: key → frame on the UI thread (the iteration's batch columns are asked
    // for as a job), the job itself (off the UI thread), and its arrival → frame.
    let first_group = |state: &mut State, terminal: &mut Terminal<TestBackend>, a: Action| {
        let t = Instant::now();
        let fx = update(state, Msg::Action(a));
        frame(terminal, state);
        let key = t.elapsed();
        let request = fx
            .find(|e| match e {
                Effect::EstimatorBatch(request) => Some(request),
                _ => None,
            })
            .expect("a large iteration's batch columns are a job");
        let t = Instant::now();
        let batch = request.compute();
        let job = t.elapsed();
        let t = Instant::now();
        update(state, Msg::EstimatorBatch(batch));
        frame(terminal, state);
        (key, job, t.elapsed())
    };
    let first = first_group(&mut state, &mut terminal, Action::Estimators);
    let next: Vec<Duration> = (0..20).map(|_| key_to_frame(&mut terminal, &mut state, Action::NextItem)).collect();
    let again: Vec<Duration> = (0..20).map(|_| key_to_frame(&mut terminal, &mut state, Action::PrevItem)).collect();
    // The second iteration: its batch is asked for on its first group.
    update(&mut state, Msg::Action(Action::Overview));
    update(&mut state, Msg::Action(Action::Down));
    update(&mut state, Msg::Action(Action::Open));
    let second = first_group(&mut state, &mut terminal, Action::Estimators);

    println!(
        "estimators view: {groups} groups × 8 trajectories per iteration, {rows} step rows in the run (2 iterations)"
    );
    println!("| what | time |");
    println!("|---|---|");
    for (i, (key, job, arrived)) in [first, second].into_iter().enumerate() {
        println!("| iteration {i}, first group: key → frame (UI thread; the batch asked for as a job) | {key:.1?} |");
        println!(
            "| iteration {i}: the job (every batch-scoped column over the iteration, off the UI thread) | {job:.1?} |"
        );
        println!("| iteration {i}: the job's columns arrive → frame | {arrived:.1?} |");
    }
    println!("| next group, key → frame, median of 20 (group only) | {:.1?} |", median(next));
    println!("| a group shown before, key → frame, median of 20 (memoised) | {:.1?} |", median(again));
}
