//! `update` is pure: these drive it with messages on the fixture run and check the state it leaves.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use gigscope::advantage::Estimator;
use gigscope::index::{Hit, IndexError, SearchResults};
use gigscope::live::{LiveEvent, LiveFile};
use gigscope::run::{Episode, LineError};
use gigscope::tui::settings_fields::Field;
use gigscope::tui::state::Popup;
use gigscope::tui::update::InputKey;
use gigscope::tui::{open, update, Action, Config, Effect, Effects, Msg, State, View};

fn state() -> State {
    let config = Config::defaults(true).unwrap();
    open(Path::new("tests/fixtures/tui/basic"), config, (120, 40)).unwrap().0
}

/// The query an update asks the app to search for.
fn search(fx: Effects) -> Option<String> {
    fx.find(|e| match e {
        Effect::Search(query) => Some(query),
        _ => None,
    })
}

fn act(s: &mut State, a: Action) -> bool {
    update(s, Msg::Action(a)).redraws()
}

/// Select the socks group (the golden example) and its first trajectory's first step in the episode view.
fn goto_socks(s: &mut State) {
    act(s, Action::Open);
    while &*s.domain.derived.table.episode_groups[s.ui.sel.group as usize].name != "socks-it0" {
        act(s, Action::NextItem);
    }
    act(s, Action::Open);
}

#[test]
fn opening_reads_the_whole_run() {
    let s = state();
    assert_eq!(s.domain.episodes.len(), 12);
    assert_eq!(s.domain.derived.iterations.len(), 2);
    assert_eq!(s.domain.run.metrics.len(), 2);
    assert_eq!(s.ui.view, View::Overview);
    assert!(!s.domain.settings_modified());
}

#[test]
fn navigation_drills_down_and_back() {
    let mut s = state();
    assert!(act(&mut s, Action::Open));
    assert_eq!(s.ui.view, View::Groups);
    act(&mut s, Action::Down);
    assert_eq!(s.ui.sel.traj, 1);
    act(&mut s, Action::Open);
    assert_eq!(s.ui.view, View::Episode);
    assert_eq!(s.domain.episodes.at(s.episode_index().unwrap()).id, "it0-g0-t1");
    act(&mut s, Action::Bottom);
    assert_eq!(s.ui.sel.step, 2);
    act(&mut s, Action::Down);
    assert_eq!(s.ui.sel.step, 2, "moving past the last step stays on it");
    act(&mut s, Action::Open);
    assert_eq!(s.ui.view, View::Anchor);
    act(&mut s, Action::Back);
    assert_eq!(s.ui.view, View::Episode);
    act(&mut s, Action::Back);
    act(&mut s, Action::Back);
    assert_eq!(s.ui.view, View::Overview);
}

#[test]
fn golden_example_advantages_are_selected() {
    let mut s = state();
    goto_socks(&mut s);
    let r = s.row_ref().unwrap();
    let row = s.domain.derived.table.row(r);
    assert!((row.episode_advantage - 4.0).abs() < 1e-12);
    assert!((row.step_advantage - 4.5125).abs() < 1e-12);
    assert!((row.advantage - 8.5125).abs() < 1e-12);
    assert_eq!(s.domain.derived.max_trainer_diff.map(|d| d < 1e-9), Some(true));
}

#[test]
fn anchor_view_opens_on_the_selected_step_and_jumps_to_members() {
    let mut s = state();
    goto_socks(&mut s);
    act(&mut s, Action::Anchor);
    assert_eq!(s.ui.view, View::Anchor);
    assert_eq!(s.ui.anchor.member, 0);
    act(&mut s, Action::Down);
    act(&mut s, Action::Open);
    assert_eq!(s.ui.view, View::Episode);
    assert_eq!(s.domain.episodes.at(s.episode_index().unwrap()).id, "it0-socks-t2");
    assert_eq!(s.ui.sel.step, 0);
}

#[test]
fn settings_change_recomputes_and_marks_modified_and_reset_restores() {
    let mut s = state();
    goto_socks(&mut s);
    act(&mut s, Action::Settings);
    assert_eq!(s.ui.popup, Some(Popup::Settings { field: Field::Estimator }));
    act(&mut s, Action::Right); // estimator gigpo → grpo
    assert_eq!(s.domain.settings.estimator, Estimator::Grpo);
    assert!(s.domain.settings_modified());
    let r = s.row_ref().unwrap();
    assert!((s.domain.derived.table.row(r).advantage - 4.0).abs() < 1e-12, "grpo is A_E only");
    act(&mut s, Action::ResetSettings);
    assert!(!s.domain.settings_modified());
    assert!((s.domain.derived.table.row(r).advantage - 8.5125).abs() < 1e-12);
    act(&mut s, Action::Down); // γ
    act(&mut s, Action::Left);
    assert!((s.domain.settings.gamma - 0.94).abs() < 1e-12);
    act(&mut s, Action::Back);
    assert_eq!(s.ui.popup, None);
    assert_eq!(s.ui.view, View::Episode, "closing the panel keeps the view");
}

#[test]
fn help_toggles_and_swallows_navigation() {
    let mut s = state();
    act(&mut s, Action::Help);
    assert_eq!(s.ui.popup, Some(Popup::Help { scroll: 0 }));
    act(&mut s, Action::Down);
    assert_eq!(s.ui.popup, Some(Popup::Help { scroll: 1 }));
    assert_eq!(s.ui.sel.iteration, 0, "keys go to the popup, not the view behind it");
    act(&mut s, Action::Help);
    assert_eq!(s.ui.popup, None);
}

#[test]
fn quit_is_an_effect() {
    let mut s = state();
    assert!(update(&mut s, Msg::Action(Action::Quit)).quits());
}

#[test]
fn compare_picks_another_trajectory_and_cycles_past_itself() {
    let mut s = state();
    act(&mut s, Action::Open);
    act(&mut s, Action::Compare);
    assert_eq!(s.ui.view, View::Compare);
    assert_eq!((s.ui.sel.traj, s.ui.compare.other), (0, 1));
    act(&mut s, Action::PrevItem);
    assert_eq!(s.ui.compare.other, 3, "wraps around and skips trajectory 0 itself");
}

fn episode(id: &str, group: &str, iteration: i64) -> Episode {
    let line = format!(
        r#"{{"id":"{id}","group":"{group}","iteration":{iteration},"steps":[{{"observation":"o","action":"a","reward":1}}]}}"#
    );
    serde_json::from_str(&line).unwrap()
}

#[test]
fn appended_episodes_keep_the_position() {
    let mut s = state();
    act(&mut s, Action::Open);
    act(&mut s, Action::Down);
    act(&mut s, Action::Open);
    let before = (s.ui.view, s.ui.sel.clone());
    let t0 = Instant::now();
    let events = vec![LiveEvent::Episodes(vec![(13, episode("new", "new-g", 2))])];
    assert!(update(&mut s, Msg::Live(events, t0)).redraws());
    assert_eq!(s.domain.episodes.len(), 13);
    assert_eq!(s.domain.derived.iterations.len(), 3);
    assert_eq!((s.ui.view, s.ui.sel.clone()), before);
}

#[test]
fn follow_mode_jumps_to_newest_on_append() {
    let mut s = state();
    act(&mut s, Action::Follow);
    assert!(s.ui.follow);
    assert_eq!(s.ui.sel.iteration, 1);
    let events = vec![LiveEvent::Episodes(vec![(13, episode("new", "new-g", 5))])];
    update(&mut s, Msg::Live(events, Instant::now()));
    assert_eq!(s.domain.derived.iterations[s.ui.sel.iteration].iteration, 5);
    assert_eq!(s.domain.episodes.at(s.episode_index().unwrap()).id, "new");
}

#[test]
fn broken_lines_are_counted_and_reset_clears_them_and_keeps_the_selected_episode() {
    let mut s = state();
    act(&mut s, Action::Open);
    act(&mut s, Action::Down);
    act(&mut s, Action::Open);
    act(&mut s, Action::Down);
    let t0 = Instant::now();
    let broken = |line| LineError::new(line, "bad json");
    let events = vec![LiveEvent::BrokenLines(LiveFile::Episodes, vec![broken(13), broken(14)])];
    update(&mut s, Msg::Live(events, t0));
    assert_eq!(s.domain.live.broken_lines, 2);
    assert_eq!(s.domain.run.errors.last().map(|b| b.line), Some(14));
    // The file is replaced by one holding the selected episode after another one.
    let kept = gigscope::run::Episode::clone(&s.domain.read_episode(s.episode_index().unwrap()).unwrap());
    let events = vec![
        LiveEvent::Reset(LiveFile::Episodes),
        LiveEvent::Episodes(vec![(1, episode("other", "g", 0)), (2, kept.clone())]),
    ];
    update(&mut s, Msg::Live(events, t0));
    assert_eq!(s.domain.episodes.len(), 2);
    assert_eq!(s.domain.live.broken_lines, 0);
    assert_eq!(
        s.domain.episodes.at(s.episode_index().unwrap()).id.to_string(),
        *kept.id,
        "the selection is found again by id"
    );
    assert_eq!(s.ui.sel.step, 1);
}

#[test]
fn recorded_settings_follow_a_changed_run_json() {
    let mut s = state();
    let mut meta = s.domain.run.meta.clone().unwrap();
    meta.advantage.as_mut().unwrap().omega = Some(0.5);
    update(&mut s, Msg::Live(vec![LiveEvent::Meta(Some(Box::new(meta)))], Instant::now()));
    assert_eq!(s.domain.recorded.omega, 0.5);
    assert!(s.domain.settings_modified(), "the settings in use stay; the marker shows they now differ");
}

#[test]
fn empty_batch_does_not_redraw_and_tick_redraws_once_per_second() {
    let mut s = state();
    let t0 = Instant::now();
    assert!(!update(&mut s, Msg::Live(vec![LiveEvent::Episodes(vec![])], t0)).redraws());
    assert!(!update(&mut s, Msg::Tick(t0)).redraws(), "nothing has arrived yet: no age to show");
    update(&mut s, Msg::Live(vec![LiveEvent::Episodes(vec![(13, episode("n", "g", 0))])], t0));
    assert!(!update(&mut s, Msg::Tick(t0 + Duration::from_millis(100))).redraws());
    assert!(update(&mut s, Msg::Tick(t0 + Duration::from_millis(1100))).redraws());
}

#[test]
fn click_selects_the_row_under_the_pointer_and_wheel_moves() {
    let mut s = state();
    act(&mut s, Action::Open);
    // At 120×40 the trajectories table starts below the breadcrumb (1) and the group header (2 lines: the
    // group's numbers, the task): its border is row 3, its header row 4, the first trajectory row 5.
    update(&mut s, Msg::Click { col: 60, row: 7 });
    assert_eq!(s.ui.sel.traj, 2);
    update(&mut s, Msg::Wheel { col: 60, row: 7, down: false });
    assert_eq!(s.ui.sel.traj, 1);
    update(&mut s, Msg::Click { col: 60, row: 39 });
    assert_eq!(s.ui.sel.traj, 1, "a click outside the list changes nothing");
}

#[test]
fn resize_changes_the_layout_size() {
    let mut s = state();
    assert!(update(&mut s, Msg::Resize(80, 24)).redraws());
    assert_eq!(s.ui.size, (80, 24));
}

#[test]
fn search_prompt_collects_text_and_asks_the_app_to_search() {
    let mut s = state();
    act(&mut s, Action::Search);
    assert_eq!(s.ui.input.as_deref(), Some(""));
    for c in "adv:<-1x".chars() {
        update(&mut s, Msg::Input(InputKey::Char(c)));
    }
    update(&mut s, Msg::Input(InputKey::Backspace));
    let fx = update(&mut s, Msg::Input(InputKey::Submit));
    assert_eq!(search(fx).as_deref(), Some("adv:<-1"));
    assert_eq!(s.ui.input, None);
    act(&mut s, Action::Search);
    update(&mut s, Msg::Input(InputKey::Char('x')));
    assert_eq!(search(update(&mut s, Msg::Input(InputKey::Cancel))), None);
    assert_eq!(s.ui.input, None);
}

#[test]
fn search_results_are_listed_and_n_walks_them() {
    let mut s = state();
    let hit = |episode: usize, step: usize| Hit { episode, episode_id: String::new(), step, score: 1.0 };
    let result = Ok(SearchResults { total: 2, hits: vec![hit(1, 2), hit(5, 1)] });
    update(&mut s, Msg::SearchDone { query: "q".into(), result, partial: None });
    assert_eq!(s.ui.view, View::Search);
    act(&mut s, Action::SearchNext);
    assert_eq!(s.ui.view, View::Episode);
    assert_eq!(s.domain.episodes.at(s.episode_index().unwrap()).id, "it0-socks-t2");
    assert_eq!(s.ui.sel.step, 1);
    act(&mut s, Action::SearchNext);
    assert_eq!(s.domain.episodes.at(s.episode_index().unwrap()).id, "it0-g0-t1", "wraps to the first hit");
    assert_eq!(s.ui.sel.step, 2);
    act(&mut s, Action::SearchPrev);
    assert_eq!(s.domain.episodes.at(s.episode_index().unwrap()).id, "it0-socks-t2");
}

#[test]
fn a_search_over_a_growing_index_says_so_and_its_rerun_keeps_the_place() {
    let mut s = state();
    let hit = |episode: usize, step: usize| Hit { episode, episode_id: String::new(), step, score: 1.0 };
    let partial = Ok(SearchResults { total: 1, hits: vec![hit(1, 2)] });
    update(&mut s, Msg::SearchDone { query: "q".into(), result: partial, partial: Some((10, 40)) });
    assert_eq!(s.ui.view, View::Search);
    let note = s.ui.message.clone().unwrap();
    assert!(note.contains("first 10 of 40 episodes") && note.contains("still indexing"), "{note}");
    act(&mut s, Action::SearchNext);
    assert_eq!(s.ui.view, View::Episode);
    // The index is complete: the same query's results arrive again and the user stays where they are.
    let complete = Ok(SearchResults { total: 3, hits: vec![hit(1, 2), hit(5, 1), hit(6, 0)] });
    update(&mut s, Msg::SearchDone { query: "q".into(), result: complete, partial: None });
    assert_eq!(s.ui.view, View::Episode);
    let search = s.ui.search.as_ref().unwrap();
    assert_eq!((search.total, search.current), (3, 0));
    assert_eq!(s.ui.message, None);
}

#[test]
fn search_error_is_shown_not_fatal() {
    let mut s = state();
    let error = IndexError::Query { query: "(".into(), message: "unbalanced parenthesis".into() };
    let shown = error.to_string();
    update(&mut s, Msg::SearchDone { query: "(".into(), result: Err(error.into()), partial: None });
    assert_eq!(s.ui.message.as_deref(), Some(shown.as_str()));
    assert_eq!(s.ui.view, View::Overview);
}

#[test]
fn appending_whole_new_groups_computes_only_them_and_matches_a_full_recompute() {
    use gigscope::advantage::AdvantageSettings;
    use gigscope::run::text_on_disk::{LeanEpisode, PageIds};
    use gigscope::tui::state::Derived;
    let s = state();
    let settings = AdvantageSettings::default();
    let lean = |episode| LeanEpisode::new(episode, &s.domain.text, &mut PageIds::default(), None);
    let mut episodes = s.domain.episodes.clone();
    let old = Derived::build(&episodes, &settings);
    let old_len = episodes.len();
    assert!(old_len > 0);
    // A new group whose members share a first state, and one more for an existing group.
    let mut a = episode("n1", "new-g", 3);
    let mut b = episode("n2", "new-g", 3);
    a.steps[0].reward = 10.0;
    b.steps[0].reward = 0.0;
    episodes.extend([lean(a), lean(b)].iter().map(LeanEpisode::view), &[]);
    assert_eq!(old.clone().extend(&episodes, old_len, &settings), Derived::build(&episodes, &settings));
    episodes.push(lean(episode("n3", "hat-it0", 0)).view(), &[]);
    let old = Derived::build(&episodes.part(0..old_len + 2), &settings);
    assert_eq!(old.extend(&episodes, old_len + 2, &settings), Derived::build(&episodes, &settings));
}

/// The search prompt's examples find steps in the bundled sample run at its recorded settings (issue 16, item 6:
/// `adv:<-1` found nothing there).
#[test]
fn the_search_prompt_examples_find_something() {
    let s = open(Path::new("sample_runs/webshop-gigpo"), Config::defaults(true).unwrap(), (120, 40)).unwrap().0;
    let cache = tempfile::tempdir().unwrap();
    let mut index =
        gigscope::index::TrajectoryIndex::open(&s.domain.run.dir, cache.path(), &s.domain.settings).unwrap();
    index.update(&s.domain.episodes, &s.domain.derived.table).unwrap();
    for query in gigscope::tui::ui::SEARCH_EXAMPLES {
        let found = index.search(query, 10).unwrap();
        assert!(found.total > 0, "{query} finds nothing in the sample run");
    }
}

#[test]
fn page_anchors_are_offered_only_on_webshop_runs() {
    use gigscope::advantage::AnchorMode;
    let anchors_seen = |dir: &str| {
        let config = Config::defaults(true).unwrap();
        let mut s = open(Path::new(dir), config, (120, 40)).unwrap().0;
        act(&mut s, Action::Settings);
        while s.ui.popup != Some(Popup::Settings { field: Field::Anchor }) {
            act(&mut s, Action::Down);
        }
        (0..5)
            .map(|_| {
                act(&mut s, Action::Right);
                s.domain.settings.anchor
            })
            .collect::<Vec<_>>()
    };
    let webshop = anchors_seen("tests/fixtures/tui/basic");
    assert!(webshop.contains(&AnchorMode::Page), "{webshop:?}");
    let verl = anchors_seen("tests/fixtures/verl/v1");
    assert!(!verl.contains(&AnchorMode::Page), "{verl:?}");
    assert!(
        verl.contains(&AnchorMode::Exact) && verl.iter().any(|m| matches!(m, AnchorMode::Similarity(_))),
        "{verl:?}"
    );
}

/// The settings panel's anchor field cycles through every mode in the command line's order (exact, similarity,
/// page, step, state) and back; the status bar names the mode the table was computed with, and the table's
/// step groups change as the mode does (observation + step splits the fixture's exact groups).
#[test]
fn settings_anchor_field_cycles_every_mode_and_the_status_bar_names_it() {
    use gigscope::advantage::{AnchorMode, DEFAULT_SIMILARITY};
    let mut s = open(Path::new("tests/fixtures/tui/basic"), Config::defaults(true).unwrap(), (120, 40)).unwrap().0;
    assert_eq!(s.domain.settings.anchor, AnchorMode::Exact);
    act(&mut s, Action::Settings);
    while s.ui.popup != Some(Popup::Settings { field: Field::Anchor }) {
        act(&mut s, Action::Down);
    }
    let exact_groups = s.domain.derived.table.anchor_groups.len();
    let mut seen = Vec::new();
    for _ in 0..5 {
        act(&mut s, Action::Right);
        let anchor = s.domain.settings.anchor;
        if matches!(anchor, AnchorMode::ObservationStep | AnchorMode::State) {
            assert_eq!(s.domain.derived.settings.anchor, anchor, "computed at once (a keyed grouping)");
            assert!(s.domain.derived.table.anchor_groups.len() >= exact_groups);
            let shown = if anchor == AnchorMode::State { "state" } else { "obs+step" };
            assert!(status_line(&s).contains(shown), "{}", status_line(&s));
        }
        seen.push(anchor);
    }
    assert_eq!(
        seen,
        [
            AnchorMode::Similarity(DEFAULT_SIMILARITY),
            AnchorMode::Page,
            AnchorMode::ObservationStep,
            AnchorMode::State,
            AnchorMode::Exact
        ]
    );
    act(&mut s, Action::Left);
    assert_eq!(s.domain.settings.anchor, AnchorMode::State, "and back the other way");
}

/// Under state anchors the status bar counts the steps that record no state (they fall back to their anchor and
/// step, as the command line's note says); it says nothing where every step records one, nor under other modes.
#[test]
fn the_status_bar_counts_the_steps_that_fall_back_from_state_anchors() {
    use gigscope::advantage::AnchorMode;
    let fixture = Path::new("tests/fixtures/tui/basic");
    // The fixture's episodes with a state on every step but those of the first `bare` episodes.
    let with_states = |bare: usize| {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::copy(fixture.join("run.json"), tmp.path().join("run.json")).unwrap();
        let text = std::fs::read_to_string(fixture.join("episodes.jsonl")).unwrap();
        let mut out = String::new();
        for (k, line) in text.lines().enumerate() {
            let mut episode: serde_json::Value = serde_json::from_str(line).unwrap();
            for (t, step) in episode["steps"].as_array_mut().unwrap().iter_mut().enumerate() {
                if k >= bare {
                    step["state"] = format!("state {t}").into();
                }
            }
            out += &(episode.to_string() + "\n");
        }
        std::fs::write(tmp.path().join("episodes.jsonl"), out).unwrap();
        tmp
    };
    let to_state = |s: &mut State| {
        act(s, Action::Settings);
        while s.ui.popup != Some(Popup::Settings { field: Field::Anchor }) {
            act(s, Action::Down);
        }
        while s.domain.settings.anchor != AnchorMode::State {
            act(s, Action::Right);
        }
        act(s, Action::Back);
    };
    let run = with_states(2);
    let mut s = open(run.path(), Config::defaults(true).unwrap(), (160, 40)).unwrap().0;
    assert!(!status_line(&s).contains("record no state"), "exact anchors: {}", status_line(&s));
    to_state(&mut s);
    let bare: usize = s.domain.episodes.iter().take(2).map(|e| e.steps.len()).sum();
    let steps = s.domain.derived.table.row_count();
    assert_eq!(s.domain.derived.settings.anchor, AnchorMode::State);
    let said = format!("⚠ {bare} of {steps} steps record no state (grouped by anchor and step)");
    assert!(status_line(&s).contains(&said), "{said:?} in {}", status_line(&s));
    let run = with_states(0);
    let mut s = open(run.path(), Config::defaults(true).unwrap(), (160, 40)).unwrap().0;
    to_state(&mut s);
    assert_eq!(s.domain.derived.settings.anchor, AnchorMode::State);
    assert!(!status_line(&s).contains("record no state"), "every step records one: {}", status_line(&s));
}

/// The app's way of opening: an empty state at once, then the run as the watcher's first scan delivers it.
#[test]
fn a_run_read_in_the_background_fills_in_with_progress_and_takes_its_recorded_settings() {
    use gigscope::live::{WatchOptions, Watcher};
    use gigscope::run::SourceOptions;
    let (_tmp, dir) = support::runs::copy_fixture("basic");
    let meta = std::fs::read_to_string(dir.join("run.json")).unwrap().replace("\"omega\": 1.0", "\"omega\": 0.5");
    std::fs::write(dir.join("run.json"), meta).unwrap();
    let (run, tails) = gigscope::live::start_as(&dir, None, &SourceOptions::default()).unwrap();
    let mut s = State::new(run, Config::defaults(true).unwrap(), (120, 40));
    assert!(s.domain.episodes.is_empty());
    let t0 = Instant::now();
    // Half-way through reading: the status bar says so, and keys work meanwhile.
    update(&mut s, Msg::Live(vec![LiveEvent::Progress { read: 50, total: 100 }], t0));
    let line = status_line(&s);
    assert!(line.contains("⟳ loading 50% of"), "{line}");
    assert!(act(&mut s, Action::Help));
    act(&mut s, Action::Help);

    let whole = open(&dir, Config::defaults(true).unwrap(), (120, 40)).unwrap().0;
    let n = whole.domain.episodes.len();
    let options = WatchOptions { notify: false, ..WatchOptions::default() };
    let (_watcher, rx) = Watcher::spawn(&dir, tails, options).unwrap();
    let events = support::live::wait_until(&rx, |seen| {
        let episodes: usize = seen.iter().map(|e| if let LiveEvent::Episodes(r) = e { r.len() } else { 0 }).sum();
        episodes >= n
    });
    update(&mut s, Msg::Live(events, t0 + Duration::from_millis(10)));
    update(&mut s, Msg::Live(vec![LiveEvent::Progress { read: 100, total: 100 }], t0 + Duration::from_millis(20)));
    assert!(!status_line(&s).contains("loading"), "the indicator goes once reading has caught up");
    assert_eq!(s.domain.episodes, whole.domain.episodes);
    assert_eq!(s.domain.settings.omega, 0.5);
    assert_eq!(s.domain.settings, whole.domain.settings, "run.json's settings are taken, not marked as changed");
    assert!(!s.domain.settings_modified());
    assert_eq!(s.domain.derived.table, whole.domain.derived.table);
}

fn status_line(s: &State) -> String {
    use ratatui::{backend::TestBackend, Terminal};
    let mut terminal = Terminal::new(TestBackend::new(s.ui.size.0, s.ui.size.1)).unwrap();
    terminal.draw(|f| f.render_widget(s, f.area())).unwrap();
    let screen = terminal.backend().to_string();
    screen.lines().rev().find(|l| l.contains(" ep ·")).unwrap_or_default().to_string()
}

#[test]
fn jobs_running_off_the_ui_thread_show_in_the_status_bar_and_x_cancels_them() {
    use gigscope::tui::state::JobKind;
    let mut s = state();
    assert!(update(&mut s, Msg::Jobs(vec![JobKind::OpenEnv, JobKind::Write])).redraws());
    let line = status_line(&s);
    assert!(line.contains("⟳ opening the environment (X cancels)"), "{line}");
    assert!(line.contains("⟳ writing the played group ·"), "a write cannot be cancelled: {line}");
    let fx = update(&mut s, Msg::Action(Action::CancelBurst));
    assert!(fx.contains(&Effect::CancelJobs));
    assert!(!update(&mut s, Msg::Jobs(vec![JobKind::OpenEnv, JobKind::Write])).redraws(), "nothing changed");
    update(&mut s, Msg::Jobs(vec![JobKind::Write]));
    assert!(
        !update(&mut s, Msg::Action(Action::CancelBurst)).contains(&Effect::CancelJobs),
        "only a write left: nothing to cancel"
    );
}

/// A grouping and a burst have lines of their own in the status bar (what is shown meanwhile; the burst's gauge):
/// the job list does not name them a second time.
#[test]
fn a_grouping_job_is_named_once_in_the_status_bar() {
    use gigscope::advantage::AnchorMode;
    use gigscope::tui::state::JobKind;
    let mut s = state();
    s.domain.grouping_job = Some(AnchorMode::Similarity(0.85));
    update(&mut s, Msg::Jobs(vec![JobKind::Grouping, JobKind::Search]));
    let line = status_line(&s);
    assert_eq!(line.matches('⟳').count(), 2, "searching, and the grouping once: {line}");
    assert!(line.contains("⟳ searching (X cancels)") && line.contains("⟳ grouping by"), "{line}");
    assert!(!line.contains("grouping anchors"), "{line}");
}

/// Parts read in a burst are merged one per turn; a frame is asked for at most every 16 ms while more wait, and
/// always once the last is merged, so the screen never stays behind what was merged.
#[test]
fn merged_parts_ask_for_a_frame_once_the_last_is_merged() {
    use gigscope::tui::app::{Loading, Reading};
    let mut s = state();
    // No group held back for its rest (`a_group_read_half_written_waits_for_its_rest_and_is_merged_whole`).
    let mut loading = Loading::holding_back_for(std::time::Duration::ZERO);
    let parts = 20;
    for i in 0..parts {
        let records = vec![(13 + i, episode(&format!("burst-{i}"), &format!("burst-g{i}"), 2))];
        loading.receive(&mut s, Reading::Live(LiveEvent::Episodes(records))).unwrap();
    }
    let mut frames = Vec::new();
    while loading.pending(&s) {
        frames.push(loading.merge_next(&mut s).0);
    }
    assert_eq!(frames.len(), parts as usize, "one part per turn");
    assert_eq!(s.domain.episodes.len(), 12 + parts as usize);
    assert!(frames.last() == Some(&true), "the last merge asks for a frame: {frames:?}");
    assert!(frames[0], "the first merge draws at once (no frame was asked for before)");
}
