//! The Monte-Carlo truth in the TUI (issue 12): the estimators view's A* column and agreement lines and the
//! anchor-group view's Q̂, V̂ and A* columns, read from a truth file the test writes; and what the views say when
//! there is no truth to show (no file yet, a run recorded by another trainer, a file of another run) or an
//! estimator cannot be computed on the run.

use crate::support;

use std::path::Path;

use gigscope::run::truth::{truth_path, TruthAgreement, TruthFile, TruthHeader, TruthRow, TRUTH_FORMAT};
use gigscope::tui::state::JobKind;
use gigscope::tui::truth_job::{TruthJobError, TruthJobRequest};
use gigscope::tui::{open, update, Action, Config, Effect, Effects, Msg, State};
use support::runs::copy_fixture;
use support::screen::{keys, open_group, render};

/// The truth measurement an update asks the app to start.
fn truth_request(fx: Effects) -> Option<Box<TruthJobRequest>> {
    fx.find(|e| match e {
        Effect::Truth(request) => Some(request),
        _ => None,
    })
}

fn state(dir: &Path, size: (u16, u16)) -> State {
    open(dir, Config::defaults(false).expect("default config"), size).expect("open the run").0
}

fn row(episode: &str, step: usize, q: f64, v: f64, q_se: f64, v_se: f64) -> TruthRow {
    TruthRow {
        run: "tui-fixture".into(),
        episode: episode.into(),
        step,
        group: "socks-it0".into(),
        q,
        v,
        a_star: q - v,
        q_se,
        v_se,
        k: 32,
        state: None,
    }
}

/// A truth file of iteration 0 of the basic fixture (its run.json names it `tui-fixture`), measuring the
/// socks group's first state, written where `gigscope truth` writes it.
fn write_truth(dir: &Path, run: &str) {
    let header = TruthHeader {
        format: TRUTH_FORMAT.into(),
        run: run.into(),
        run_created: None,
        iteration: 0,
        rollouts: 32,
        seed: 7,
        groups: vec!["socks-it0".into()],
        groups_in_iteration: 4,
        gamma: 0.95,
        success_reward: false,
        invalid_penalty: 0.1,
        efficiency_alpha1: 0.0,
        efficiency_alpha2: 0.0,
        env: "webshop".into(),
        env_options: Default::default(),
    };
    let agreement = |estimator: &str, spearman: f64| TruthAgreement {
        estimator: estimator.into(),
        rows: 2,
        spearman: Some(spearman),
        sign_agreement: Some(0.75),
        scale: Some(0.5),
        rmse: Some(0.25),
        error: None,
    };
    let file = TruthFile {
        header,
        rows: vec![row("it0-socks-t1", 0, 9.5, 4.25, 0.3, 0.4), row("it0-socks-t2", 0, 0.5, 4.25, 0.1, 0.4)],
        divergences: vec![],
        agreements: vec![
            agreement("gigpo", 0.8),
            agreement("hgpo", -0.2),
            TruthAgreement { error: Some("not computed".into()), ..agreement("soft-page", 0.0) },
        ],
    };
    file.write(&truth_path(dir, 0)).expect("write the truth file");
}

/// Make the fixture copy in `dir` look trained by gigscope (a `train` record, iteration 0's policy weights),
/// so that its truth can be measured.
fn mark_trained(dir: &Path) {
    let path = dir.join("run.json");
    let mut meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    meta["train"] = serde_json::json!({});
    std::fs::write(&path, meta.to_string()).unwrap();
    std::fs::create_dir_all(dir.join("weights")).unwrap();
    std::fs::write(dir.join("weights/iteration-0.ot"), b"").unwrap();
}

#[test]
fn the_truth_column_shows_the_values_of_a_truth_file_written_by_the_test() {
    let (_tmp, dir) = copy_fixture("basic");
    mark_trained(&dir);
    let mut s = state(&dir, (160, 45));
    open_group(&mut s, "socks-it0");
    keys(&mut s, &[Action::Estimators]);
    let screen = render(&s);
    assert!(screen.contains("[Estimators]"), "{screen}");
    assert!(screen.contains("A* absent: no truth file — press T (this group) / `gigscope truth"), "{screen}");
    assert!(screen.contains("--iteration 0` (the iteration)"), "{screen}");

    write_truth(&dir, "tui-fixture");
    // The views look at the truth file again on the next message (the app's clock ticks once a second).
    update(&mut s, Msg::Tick(std::time::Instant::now()));
    let screen = render(&s);
    // A* = Q̂ − V̂ = 9.5 − 4.25, its standard error √(0.3² + 0.4²) = 0.5.
    let step0 = screen.lines().find(|l| l.contains("search[socks]")).unwrap_or_else(|| panic!("{screen}"));
    assert!(step0.contains("+5.250±0.500"), "{step0}\n{screen}");
    let other = screen.lines().find(|l| l.contains("search[sock]") && !l.contains("socks")).unwrap_or_default();
    assert!(other.contains("-3.750±0.412"), "{other}\n{screen}");
    assert!(screen.contains("Agreement with A* over iteration 0 (K = 32)"), "{screen}");
    assert!(
        screen.contains("gigpo      Spearman +0.800 · sign 75% · scale-fit RMSE 0.250 (c = 0.500) · 2 rows"),
        "{screen}"
    );
    assert!(screen.contains("hgpo       Spearman -0.200"), "{screen}");
    assert!(screen.contains("soft-page  absent: not computed"), "{screen}");
    assert!(screen.contains("graphgpo   not in the truth file"), "{screen}");

    // The anchor-group view: Q̂, V̂ and A* ± se beside each member's estimates.
    keys(&mut s, &[Action::Anchor]);
    let screen = render(&s);
    let header = screen.lines().find(|l| l.contains("A_S") && l.contains("Q̂")).unwrap_or_else(|| panic!("{screen}"));
    assert!(header.contains("V̂") && header.contains("A* ± se"), "{header}");
    let member = screen.lines().find(|l| l.contains("it0-socks-t1") && l.contains("◀")).unwrap_or_default();
    for v in ["9.500", "4.250", "+5.250±0.500"] {
        assert!(member.contains(v), "{v} in {member}\n{screen}");
    }
    // At 80×24 the numbers still fit beside the estimates.
    s.ui.size = (80, 24);
    let screen = render(&s);
    let member = screen.lines().find(|l| l.contains("cks-t1") && l.contains("◀")).unwrap_or_default();
    assert!(member.contains("+5.250±0.500"), "{member}\n{screen}");
}

#[test]
fn a_truth_file_of_another_run_is_named_as_such() {
    let (_tmp, dir) = copy_fixture("basic");
    write_truth(&dir, "another-run");
    let mut s = state(&dir, (160, 45));
    open_group(&mut s, "socks-it0");
    keys(&mut s, &[Action::Estimators]);
    let screen = render(&s);
    assert!(screen.contains("A* absent:") && screen.contains("another-run"), "{screen}");
    assert!(!screen.contains("+5.250"), "no truth values from another run's file:\n{screen}");
    // The anchor view shows no truth columns for it either.
    keys(&mut s, &[Action::Anchor]);
    assert!(!render(&s).contains("Q̂"));
}

#[test]
fn runs_recorded_by_other_trainers_have_no_policy_to_branch_with() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    // The reason names the layout (`gigscope::run::truth::branchable`'s words).
    for (fixture, what) in [("verl/v1", "verl rollout dump"), ("trl/default", "TRL completions log")] {
        let mut s = state(&root.join(fixture), (160, 45));
        keys(&mut s, &[Action::Estimators]);
        let screen = render(&s);
        let reason = screen.lines().find(|l| l.contains("A* absent: no policy to branch with (")).unwrap_or_default();
        assert!(reason.contains(what), "{fixture}:\n{screen}");
        // Not WebShop runs: soft-page has no page types; the other estimators still have their columns.
        assert!(screen.contains("soft-page absent: soft-page needs WebShop page types"), "{fixture}:\n{screen}");
        let values = screen
            .lines()
            .find(|l| l.trim_start_matches('"').starts_with("│1 "))
            .unwrap_or_else(|| panic!("{fixture}:\n{screen}"));
        assert_eq!(values.matches("absent").count(), 1, "only soft-page is absent: {values}");
    }
}

/// A group measured from the TUI is merged into the iteration's file: its rows join (or replace) the others in
/// file order, the header lists every group in the iteration's order, and the agreements are recomputed over
/// all rows.
#[test]
fn a_measured_group_is_merged_into_the_iterations_truth_file() {
    use gigscope::advantage::estimators::EnvInputs;
    use gigscope::run::truth::read_truth;
    use gigscope::tui::truth_job::merge;

    let (_tmp, dir) = copy_fixture("basic");
    write_truth(&dir, "tui-fixture");
    let s = state(&dir, (80, 24));
    let existing = read_truth(&truth_path(&dir, 0), "tui-fixture", 0).expect("the file just written");
    let episodes: Vec<gigscope::run::Episode> = (0..s.domain.episodes.len())
        .filter(|&e| s.domain.episodes.at(e).iteration == 0)
        .map(|e| gigscope::run::Episode::clone(&s.domain.read_episode(e).expect("the episode reads back")))
        .collect();
    let hat = |step: usize, q: f64| TruthRow { group: "hat-it0".into(), ..row("it0-g0-t1", step, q, 1.0, 0.1, 0.1) };
    let measured = TruthFile {
        header: TruthHeader { groups: vec!["hat-it0".into()], ..existing.header.clone() },
        rows: vec![hat(1, 3.0), hat(0, 2.0)],
        divergences: vec![],
        agreements: vec![],
    };
    let merged = merge(Some(existing.clone()), measured, &episodes, &s.domain.recorded, &EnvInputs::default());
    assert_eq!(merged.header.groups, ["hat-it0", "socks-it0"]);
    let order: Vec<(&str, usize)> = merged.rows.iter().map(|r| (r.episode.as_str(), r.step)).collect();
    assert_eq!(order, [("it0-g0-t1", 0), ("it0-g0-t1", 1), ("it0-socks-t1", 0), ("it0-socks-t2", 0)]);
    assert_eq!(merged.agreements.len(), 9, "every estimator of the family");
    assert!(merged.agreements.iter().all(|a| a.rows == 4 || a.error.is_some()), "{:?}", merged.agreements);

    // Measured again, a group's rows replace its old ones.
    let again = TruthFile {
        header: TruthHeader { groups: vec!["socks-it0".into()], ..existing.header.clone() },
        rows: vec![row("it0-socks-t1", 0, 1.0, 0.5, 0.1, 0.1)],
        divergences: vec![],
        agreements: vec![],
    };
    let merged = merge(Some(merged), again, &episodes, &s.domain.recorded, &EnvInputs::default());
    let socks: Vec<f64> = merged.rows.iter().filter(|r| r.group == "socks-it0").map(|r| r.a_star).collect();
    assert_eq!(socks, [0.5]);
    assert_eq!(merged.header.groups, ["hat-it0", "socks-it0"]);
}

/// Runs gigscope did not train have no policy: the truth key says so and starts nothing; the basic fixture has
/// no `train` record.
#[test]
fn the_truth_key_explains_why_a_run_cannot_be_measured() {
    let (_tmp, dir) = copy_fixture("basic");
    let mut s = state(&dir, (160, 45));
    open_group(&mut s, "socks-it0");
    keys(&mut s, &[Action::Estimators]);
    assert!(render(&s).contains("A* absent: no policy to branch with (run.json has no `train` record"));
    let fx = update(&mut s, Msg::Action(Action::Truth));
    assert!(truth_request(fx).is_none() && s.jobs.truth.is_none());
    let message = s.ui.message.clone().unwrap_or_default();
    assert!(
        message.contains("was not trained by gigscope") && message.contains("no policy to branch with"),
        "{message}"
    );
    // Elsewhere the key says where it works.
    keys(&mut s, &[Action::Overview]);
    update(&mut s, Msg::Action(Action::Truth));
    assert!(s.ui.message.clone().unwrap_or_default().contains("estimators view (6)"), "{:?}", s.ui.message);
}

/// On a run gigscope trained, `T` asks the app to measure the open group (with the file's K, else 32), the
/// views show its progress, `T` again cancels it, and its end is reported.
#[test]
fn the_truth_key_starts_shows_and_cancels_a_measurement() {
    let (_tmp, dir) = copy_fixture("basic");
    mark_trained(&dir);
    let mut s = state(&dir, (160, 45));
    open_group(&mut s, "socks-it0");
    keys(&mut s, &[Action::Estimators]);
    let fx = update(&mut s, Msg::Action(Action::Truth));
    let request = truth_request(fx).expect("a truth request");
    assert_eq!((request.group.as_str(), request.iteration, request.rollouts), ("socks-it0", 0, 32));
    assert_eq!(request.episodes.len(), 6, "iteration 0's episodes, for the agreements");
    update(&mut s, Msg::Jobs(vec![JobKind::Truth { states: 3, continuations: 96 }]));
    let screen = render(&s);
    assert!(screen.contains("measuring the truth of group socks-it0 (K = 32): 3 states, 96 continuations"), "{screen}");
    keys(&mut s, &[Action::Anchor]);
    assert!(render(&s).contains("measuring the truth of group socks-it0"));
    let fx = update(&mut s, Msg::Action(Action::Truth));
    assert!(fx.contains(&Effect::CancelTruth) && truth_request(fx).is_none());
    assert!(render(&s).contains("cancelling the truth of group socks-it0"));
    update(&mut s, Msg::Truth(Err(TruthJobError::Cancelled { group: "socks-it0".into() })));
    assert!(s.jobs.truth.is_none());
    assert_eq!(s.ui.message.as_deref(), Some("truth of group socks-it0: cancelled"));
}
