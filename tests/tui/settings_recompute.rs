//! Settings changes in the TUI recompute only the numbers when the anchor mode stays (`advantage::recompute`):
//! after every change of every field, both ways, the derived state equals one built from scratch. A change
//! to similarity anchors on a large run is grouped in the background (`Effect::GroupAnchors`, answered with
//! `Msg::Grouped`), and groupings made before are reused.

use std::path::Path;
use std::time::Instant;

use gigscope::advantage::AnchorMode;
use gigscope::live::LiveEvent;
use gigscope::run::Episode;

use gigscope::tui::settings_fields::FIELDS;
use gigscope::tui::state::{Derived, GroupingRequest};
use gigscope::tui::{open, update, Action, Config, Effect, Effects, Msg, State};

/// The anchor grouping an update asks to compute in the background.
fn grouping_asked(fx: Effects) -> Option<GroupingRequest> {
    fx.find(|e| match e {
        Effect::GroupAnchors(request) => Some(request),
        _ => None,
    })
}

fn state() -> State {
    let config = Config::defaults(true).unwrap();
    open(Path::new("tests/fixtures/tui/basic"), config, (120, 40)).unwrap().0
}

#[test]
fn every_settings_change_equals_a_rebuild() {
    let mut s = state();
    update(&mut s, Msg::Action(Action::Settings));
    for field in 0..FIELDS.len() {
        for key in [Action::Right, Action::Right, Action::Left, Action::ResetSettings, Action::Left] {
            update(&mut s, Msg::Action(key));
            assert_eq!(
                s.domain.derived,
                Derived::build(&s.domain.episodes, &s.domain.settings),
                "field {field}, {key:?}"
            );
        }
        update(&mut s, Msg::Action(Action::Down));
    }
}

/// The sample run, with similarity grouping sent to the background whatever the run's size.
fn sample_state() -> State {
    let config = Config::defaults(true).unwrap();
    let mut s = open(Path::new("sample_runs/webshop-gigpo"), config, (120, 40)).unwrap().0;
    s.config.background_grouping_steps = 0;
    s
}

/// Open the settings panel on the θ field.
fn to_theta(s: &mut State) {
    update(s, Msg::Action(Action::Settings));
    for _ in 0..7 {
        update(s, Msg::Action(Action::Down));
    }
}

fn built(s: &State) -> Derived {
    Derived::build(&s.domain.episodes, &s.domain.settings)
}

#[test]
fn similarity_on_a_large_run_is_grouped_in_the_background_then_applied() {
    let mut s = sample_state();
    to_theta(&mut s);
    let fx = update(&mut s, Msg::Action(Action::Left));
    assert_eq!(s.domain.settings.anchor, AnchorMode::Similarity(0.85));
    let request = grouping_asked(fx).expect("a background grouping is asked for");
    // Until it arrives: the exact groups, with every other setting applied; the wait is shown.
    assert_eq!(s.domain.derived.settings.anchor, AnchorMode::Exact);
    assert_eq!(s.domain.grouping_job, Some(AnchorMode::Similarity(0.85)));
    assert_eq!(s.domain.derived, Derived::build(&s.domain.episodes, &s.domain.table_settings()));
    let grouping = request.job.run();
    let fx = update(&mut s, Msg::Grouped { episodes_version: request.episodes_version, grouping });
    assert!(fx.redraws() && grouping_asked(fx).is_none());
    assert_eq!(s.domain.grouping_job, None);
    assert_eq!(s.domain.derived, built(&s));
    assert_ne!(
        built(&s).table.anchor_groups.len(),
        Derived::build(&s.domain.episodes, &s.domain.recorded).table.anchor_groups.len()
    );
}

#[test]
fn other_changes_while_a_grouping_is_on_its_way_are_applied_at_once() {
    let mut s = sample_state();
    to_theta(&mut s);
    let before = s.domain.derived.clone();
    let request = grouping_asked(update(&mut s, Msg::Action(Action::Left))).unwrap();
    // Only the anchor mode changed: the table is the one computed before.
    assert_eq!(s.domain.derived, before);
    // ω (five fields up) changes meanwhile: recomputed over the exact groups, then over the new ones.
    for _ in 0..5 {
        update(&mut s, Msg::Action(Action::Up));
    }
    update(&mut s, Msg::Action(Action::Left));
    assert_ne!(s.domain.settings.omega, before.settings.omega);
    assert_eq!(s.domain.derived.settings.anchor, AnchorMode::Exact);
    assert_eq!(s.domain.derived, Derived::build(&s.domain.episodes, &s.domain.table_settings()));
    assert_ne!(s.domain.derived.table, before.table);
    update(&mut s, Msg::Grouped { episodes_version: request.episodes_version, grouping: request.job.run() });
    assert_eq!(s.domain.derived.settings.anchor, AnchorMode::Similarity(0.85));
    assert_eq!(s.domain.derived, built(&s));
}

#[test]
fn switching_back_to_a_grouped_mode_needs_no_background_work() {
    let mut s = sample_state();
    to_theta(&mut s);
    let request = grouping_asked(update(&mut s, Msg::Action(Action::Left))).unwrap();
    let grouping = request.job.run();
    update(&mut s, Msg::Grouped { episodes_version: request.episodes_version, grouping });
    // Back to exact, then to similarity 0.85 again: both kept, applied at once.
    for key in [Action::ResetSettings, Action::Left] {
        let fx = update(&mut s, Msg::Action(key));
        assert!(grouping_asked(fx).is_none(), "{key:?}");
        assert_eq!(s.domain.grouping_job, None);
        assert_eq!(s.domain.derived.settings.anchor, s.domain.settings.anchor);
        assert_eq!(s.domain.derived, built(&s), "{key:?}");
    }
}

#[test]
fn a_grouping_that_is_no_longer_wanted_is_kept_but_not_applied() {
    let mut s = sample_state();
    to_theta(&mut s);
    let first = grouping_asked(update(&mut s, Msg::Action(Action::Left))).unwrap();
    let second = grouping_asked(update(&mut s, Msg::Action(Action::Left))).unwrap();
    assert_eq!((first.job.theta(), second.job.theta()), (0.85, 0.8));
    update(&mut s, Msg::Grouped { episodes_version: first.episodes_version, grouping: first.job.run() });
    assert_eq!(s.domain.derived.settings.anchor, AnchorMode::Exact);
    assert_eq!(s.domain.grouping_job, Some(AnchorMode::Similarity(0.8)));
    // Going back up to 0.85 uses the grouping that arrived.
    update(&mut s, Msg::Action(Action::Right));
    assert_eq!(s.domain.derived.settings.anchor, AnchorMode::Similarity(0.85));
    assert_eq!(s.domain.derived, built(&s));
}

#[test]
fn a_grouping_of_older_episodes_is_asked_for_again() {
    let mut s = sample_state();
    to_theta(&mut s);
    let request = grouping_asked(update(&mut s, Msg::Action(Action::Left))).unwrap();
    // A live run appends an episode meanwhile: the table takes it in under its present (exact) groups.
    let line = r#"{"id":"late","group":"late-g","steps":[{"observation":"o","action":"a","reward":1}]}"#;
    let n = s.domain.episodes.len() as u64;
    let events = vec![LiveEvent::Episodes(vec![(n + 1, serde_json::from_str::<Episode>(line).unwrap())])];
    update(&mut s, Msg::Live(events, Instant::now()));
    assert_eq!(s.domain.derived, Derived::build(&s.domain.episodes, &s.domain.table_settings()));
    let again = grouping_asked(update(
        &mut s,
        Msg::Grouped { episodes_version: request.episodes_version, grouping: request.job.run() },
    ))
    .expect("asked again for the new episodes");
    assert_eq!(s.domain.derived.settings.anchor, AnchorMode::Exact);
    update(&mut s, Msg::Grouped { episodes_version: again.episodes_version, grouping: again.job.run() });
    assert_eq!(s.domain.derived, built(&s));
}

#[test]
fn small_runs_group_by_similarity_at_once() {
    let mut s = state();
    assert!(s.domain.episodes.iter().map(|e| e.steps.len()).sum::<usize>() < s.config.background_grouping_steps);
    to_theta(&mut s);
    let fx = update(&mut s, Msg::Action(Action::Left));
    assert!(grouping_asked(fx).is_none());
    assert_eq!(s.domain.derived.settings.anchor, AnchorMode::Similarity(0.85));
    assert_eq!(s.domain.derived, built(&s));
}
