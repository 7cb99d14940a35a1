//! The anchor modes that alias less than the observation (issue 26): observation + step, and the environment's
//! full state recorded with each step. A constructed run whose groups and advantages are known by construction,
//! properties that each mode refines the coarser one, the lean form, and the command line's `--anchor`.

use std::process::Command;

use gigscope::advantage::{
    compute, group_anchors, group_keyed, group_lean, unrecorded_states, AdvantageSettings, AnchorGrouping, AnchorMode,
    Estimator, KeyedAnchor, Norm,
};
use gigscope::run::text_on_disk::{LeanEpisode, PageIds, TextStore};
use gigscope::run::{Episode, Outcome, Run, Step, EPISODES_FILE};
use proptest::prelude::*;

/// One step: observation, state, reward.
fn step(observation: &str, state: &str, reward: f64) -> Step {
    let mut s = Step::new(observation, format!("act on {observation}"), reward);
    s.state = Some(state.to_owned());
    s
}

/// Two trajectories of one task. A selects an option on the item page (the page's text does not change) and buys:
/// reward 1. B goes through the results and reaches the item page at the same step as A's second visit, with
/// no option selected, and buys: reward 0. The item page shows three times: A at steps 1 and 2, B at step 2.
fn met_at_other_steps_and_hidden() -> Vec<Episode> {
    let a = vec![step("search", "search@0", 0.0), step("item", "item none@1", 0.0), step("item", "item medium@2", 1.0)];
    let b = vec![step("search", "search@0", 0.0), step("results", "results@1", 0.0), step("item", "item none@2", 0.0)];
    [("a", a), ("b", b)]
        .into_iter()
        .map(|(id, steps)| {
            let mut e = Episode::new(id, "task", steps);
            e.outcome = Some(Outcome { success: id == "a", score: 0.0, extra: Default::default() });
            e
        })
        .collect()
}

fn settings(anchor: AnchorMode) -> AdvantageSettings {
    AdvantageSettings { anchor, gamma: 1.0, omega: 1.0, norm: Norm::MeanNorm, ..AdvantageSettings::default() }
}

/// Each row's (episode, step) → (step advantage, advantage), rows in file order.
fn advantages(run: &[Episode], anchor: AnchorMode) -> Vec<(f64, f64)> {
    let table = compute(run, &settings(anchor));
    (0..run.len()).flat_map(|e| table.episode_rows(e).into_iter().map(|r| (r.step_advantage, r.advantage))).collect()
}

fn close(got: &[(f64, f64)], want: &[(f64, f64)]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| (g.0 - w.0).abs() < 1e-12 && (g.1 - w.1).abs() < 1e-12)
}

#[test]
fn exact_merges_both_step_separates_the_other_step_state_separates_both() {
    let run = met_at_other_steps_and_hidden();
    // Rows: a0 search, a1 item, a2 item, b0 search, b1 results, b2 item.
    let groups = |mode| group_anchors(&run, mode).row_group;
    assert_eq!(groups(AnchorMode::Exact), [0, 1, 1, 0, 2, 1], "the item page is one anchor");
    assert_eq!(groups(AnchorMode::ObservationStep), [0, 1, 2, 0, 3, 2], "step 1's visit apart, step 2's merged");
    assert_eq!(groups(AnchorMode::State), [0, 1, 2, 0, 3, 4], "the selected option apart too");

    // γ = 1, mean_norm: returns a 1,1,1 and b 0,0,0; A_E = ±0.5 (scores 1 and 0 over six rows).
    // Exact: search {1, 0} → ±0.5; item {1, 1, 0}, mean 2/3 → 1/3, 1/3, −2/3; results alone → 0.
    let third = 1.0 / 3.0;
    let exact = [
        (0.5, 1.0),
        (third, 0.5 + third),
        (third, 0.5 + third),
        (-0.5, -1.0),
        (0.0, -0.5),
        (-2.0 * third, -0.5 - 2.0 * third),
    ];
    assert!(close(&advantages(&run, AnchorMode::Exact), &exact), "{:?}", advantages(&run, AnchorMode::Exact));
    // Observation + step: a1 alone → 0; a2 and b2 {1, 0} → ±0.5.
    let by_step = [(0.5, 1.0), (0.0, 0.5), (0.5, 1.0), (-0.5, -1.0), (0.0, -0.5), (-0.5, -1.0)];
    assert!(close(&advantages(&run, AnchorMode::ObservationStep), &by_step));
    // State: every item visit alone → 0: no credit moves between states that only look alike.
    let by_state = [(0.5, 1.0), (0.0, 0.5), (0.0, 0.5), (-0.5, -1.0), (0.0, -0.5), (0.0, -0.5)];
    assert!(close(&advantages(&run, AnchorMode::State), &by_state));
    assert_eq!(unrecorded_states(run.as_slice()), 0);
}

#[test]
fn a_step_without_a_state_is_grouped_by_anchor_and_step() {
    let mut run = met_at_other_steps_and_hidden();
    run[1].steps[2].state = None;
    run[0].steps[2].state = None;
    assert_eq!(unrecorded_states(run.as_slice()), 2);
    // a2 and b2 have lost what told them apart: they fall back to (item, step 2) together.
    assert_eq!(group_anchors(&run, AnchorMode::State).row_group, [0, 1, 2, 0, 3, 2]);
    let both = group_anchors(&run, AnchorMode::ObservationStep);
    assert_eq!(group_anchors(&run, AnchorMode::State).row_group, both.row_group);
}

#[test]
fn the_lean_form_and_the_file_group_alike() {
    let run = met_at_other_steps_and_hidden();
    let tmp = tempfile::tempdir().unwrap();
    let lines: String = run.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    std::fs::write(tmp.path().join(EPISODES_FILE), &lines).unwrap();
    assert!(lines.contains(r#""state":"item medium@2""#), "the state is written with the step: {lines}");
    let read = Run::open(tmp.path()).unwrap().episodes;
    let store = TextStore::new(&tmp.path().join(EPISODES_FILE));
    let mut pages = PageIds::default();
    let lean: Vec<LeanEpisode> = read.iter().map(|e| LeanEpisode::new(e.clone(), &store, &mut pages, None)).collect();
    for mode in [AnchorMode::ObservationStep, AnchorMode::State] {
        assert_eq!(group_lean(lean.as_slice(), mode).unwrap(), group_anchors(&run, mode), "{mode:?}");
    }
    assert_eq!(group_keyed(lean.as_slice(), KeyedAnchor::State).mode, AnchorMode::State);
}

/// Whether every group of `fine` lies inside one group of `coarse`.
fn refines(fine: &AnchorGrouping, coarse: &AnchorGrouping) -> bool {
    let mut to_coarse = vec![None; fine.episode_group.len()];
    fine.row_group.iter().zip(&coarse.row_group).all(|(&f, &c)| *to_coarse[f as usize].get_or_insert(c) == c)
}

const OBSERVATIONS: [&str; 3] = ["search", "results", "item"];

/// Episodes of a few groups whose steps show one of three observations; a step's full state is its observation,
/// its step index and a hidden value (an option selected), recorded on some steps only.
fn arb_run() -> impl Strategy<Value = Vec<Episode>> {
    let step = (0..OBSERVATIONS.len(), 0..3u8, any::<bool>(), prop::sample::select(vec![0.0, 0.5, 1.0]));
    prop::collection::vec((0..3usize, prop::collection::vec(step, 1..6)), 1..10).prop_map(|episodes| {
        episodes
            .into_iter()
            .enumerate()
            .map(|(i, (g, steps))| {
                let steps = steps
                    .into_iter()
                    .enumerate()
                    .map(|(t, (o, hidden, recorded, reward))| {
                        let mut s = Step::new(OBSERVATIONS[o], "a", reward);
                        s.state = recorded.then(|| format!("{} step {t} option {hidden}", OBSERVATIONS[o]));
                        s
                    })
                    .collect();
                Episode::new(format!("e{i}"), format!("g{g}"), steps)
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn observation_and_step_refines_exact_and_state_refines_both(run in arb_run()) {
        let exact = group_anchors(&run, AnchorMode::Exact);
        let by_step = group_anchors(&run, AnchorMode::ObservationStep);
        let by_state = group_anchors(&run, AnchorMode::State);
        prop_assert!(refines(&by_step, &exact));
        prop_assert!(refines(&by_state, &by_step));
        // Grouping is all that changes: the numbers over it are the engine's, as for any other mode.
        let table = compute(&run, &AdvantageSettings { estimator: Estimator::Step, ..settings(AnchorMode::State) });
        prop_assert_eq!(table.grouping(AnchorMode::State), by_state);
    }
}

#[test]
fn the_command_line_selects_the_modes_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let lines: String =
        met_at_other_steps_and_hidden().iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    std::fs::write(tmp.path().join(EPISODES_FILE), lines).unwrap();
    let dir = tmp.path().to_str().unwrap();
    let step_advantages = |anchor: &str| -> (Vec<f64>, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
            .args(["advantages", dir, "--format", "jsonl", "--gamma", "1", "--norm", "mean_norm", "--anchor", anchor])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let rows = String::from_utf8(out.stdout).unwrap();
        let values = rows
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["step_advantage"].as_f64().unwrap())
            .collect();
        (values, String::from_utf8(out.stderr).unwrap())
    };
    let (by_step, _) = step_advantages("step");
    assert_eq!(by_step, [0.5, 0.0, 0.5, -0.5, 0.0, -0.5]);
    let (by_state, note) = step_advantages("state");
    assert_eq!(by_state, [0.5, 0.0, 0.0, -0.5, 0.0, 0.0]);
    assert!(!note.contains("record no state"), "every step records one: {note}");

    // Without recorded states, state anchors are observation + step anchors, and the user is told so.
    let bare: String = met_at_other_steps_and_hidden()
        .into_iter()
        .map(|mut e| {
            e.steps.iter_mut().for_each(|s| s.state = None);
            serde_json::to_string(&e).unwrap() + "\n"
        })
        .collect();
    std::fs::write(tmp.path().join(EPISODES_FILE), bare).unwrap();
    let (fell_back, note) = step_advantages("state");
    assert_eq!(fell_back, by_step);
    assert!(note.contains("6 of 6 steps"), "{note}");

    let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(["advantages", dir, "--anchor", "state", "--similarity", "0.5"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "--similarity with another anchor mode is refused");
}
