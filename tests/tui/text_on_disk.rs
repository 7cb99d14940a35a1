//! The TUI keeps the run's text on disk (issue 13): its episodes are lean, and a view reads the text of the
//! episodes it shows back from `episodes.jsonl`. The reader's guarantees hold with the text on disk: a broken
//! line is still reported and skipped, and a file truncated or replaced under the viewer is never read as other
//! text: the view says the episode cannot be read, and the watcher's reset reads the run again.

use crate::support;

use std::fs::OpenOptions;
use std::io::Write;
use std::time::Instant;

use gigscope::live::{self, LiveEvent, Watcher};
use gigscope::run::{TextAt, EPISODES_FILE};
use gigscope::tui::{open, update, Action, Config, Msg, State, View};
use support::live::wait_until;
use support::runs::copy_fixture;
use support::screen::{keys, render};

fn state(dir: &std::path::Path) -> State {
    open(dir, Config::defaults(false).unwrap(), (120, 40)).unwrap().0
}

/// The episode view of the first trajectory of the first group.
fn episode_view(s: &mut State) {
    keys(s, &[Action::Open, Action::Open]);
    assert_eq!(s.ui.view, View::Episode);
}

#[test]
fn the_episode_view_shows_text_read_back_from_the_file() {
    let (_tmp, dir) = copy_fixture("basic");
    let mut s = state(&dir);
    assert!(s.domain.run.episodes.is_empty(), "the run's episodes are taken in lean");
    assert!(s.domain.episodes.iter().all(|e| matches!(e.text, TextAt::OnDisk { .. })));
    episode_view(&mut s);
    let e = s.episode_index().unwrap();
    let full = s.domain.read_episode(e).unwrap();
    // The record read back is the file's line, field for field.
    let line = std::fs::read_to_string(dir.join(EPISODES_FILE)).unwrap().lines().nth(e).unwrap().to_string();
    assert_eq!(*full, serde_json::from_str::<gigscope::run::Episode>(&line).unwrap());
    let screen = render(&s);
    assert!(screen.contains(&format!("task: {}", &full.instruction()[..40])), "{screen}");
    assert!(screen.contains(&full.steps[0].action), "{screen}");
}

#[test]
fn a_replaced_file_is_never_read_as_other_text_and_the_reset_reads_it_again() {
    let (_tmp, dir) = copy_fixture("basic");
    let path = dir.join(EPISODES_FILE);
    let original = std::fs::read_to_string(&path).unwrap();
    let (run, tails) = live::open(&dir).unwrap();
    let mut s = State::new(run, Config::defaults(false).unwrap(), (120, 40));
    let (_watcher, rx) = Watcher::spawn(&dir, tails, Default::default()).unwrap();
    episode_view(&mut s);
    let e = s.episode_index().unwrap();
    let id = s.domain.episodes.at(e).id.to_string();

    // Another writer replaces the file: the same episodes, each line's text changed (same ids, other actions),
    // and the viewer has not heard of it yet.
    let replaced = original.replace("click[", "click[x");
    let staged = dir.join("episodes.jsonl.tmp");
    std::fs::write(&staged, &replaced).unwrap();
    std::fs::rename(&staged, &path).unwrap();
    // The episode on screen was read back before the change and stays as it was read; the next one cannot be
    // read back.
    assert!(render(&s).contains(&format!("episode {id}")));
    let next = s.group_episodes().get(1).unwrap() as usize;
    let err = s.domain.read_episode(next).unwrap_err().to_string();
    assert!(err.contains("no longer the line that was read"), "{err}");
    keys(&mut s, &[Action::NextItem]);
    assert_eq!(s.episode_index(), Some(next));
    let screen = render(&s);
    assert!(screen.contains("cannot show this episode"), "{screen}");

    // The watcher reports the replacement; the run is read again and the view shows the new text.
    let events = wait_until(&rx, |got| got.iter().any(|ev| matches!(ev, LiveEvent::Episodes(_))));
    assert!(events.iter().any(|ev| matches!(ev, LiveEvent::Reset(_))));
    update(&mut s, Msg::Live(events, Instant::now()));
    let e = s.domain.episodes.iter().position(|x| x.id == id).unwrap();
    let full = s.domain.read_episode(e).unwrap();
    assert!(full.steps.iter().any(|step| step.action.starts_with("click[x")), "{:?}", full.steps);

    // Truncated: the lines that are gone cannot be read back either.
    let first_line = replaced.lines().next().unwrap().len() + 1;
    OpenOptions::new().write(true).open(&path).unwrap().set_len(first_line as u64).unwrap();
    let last = s.domain.episodes.len() - 1;
    assert!(s.domain.read_episode(last).is_err());
    assert_eq!(s.domain.read_episode(0).unwrap().id, s.domain.episodes.at(0).id.to_string());
}

#[test]
fn a_broken_line_is_reported_and_the_lines_after_it_read_back() {
    let (_tmp, dir) = copy_fixture("basic");
    let path = dir.join(EPISODES_FILE);
    let lines: Vec<String> = std::fs::read_to_string(&path).unwrap().lines().map(String::from).collect();
    let mut text = format!("{}\n{{\"id\": \"broken\", \"group\"\n", lines[0]);
    for line in &lines[1..] {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    // A torn last line (a writer mid-append) is held back, not reported.
    OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"id\": \"torn\"").unwrap();
    let s = state(&dir);
    assert_eq!(s.domain.run.errors.len(), 1);
    assert_eq!(s.domain.run.errors[0].line, 2);
    assert_eq!(s.domain.episodes.len(), lines.len());
    for (e, line) in lines.iter().enumerate() {
        let expected: gigscope::run::Episode = serde_json::from_str(line).unwrap();
        assert_eq!(*s.domain.read_episode(e).unwrap(), expected, "episode {e}");
    }
}

/// Drawing does no I/O: each view names the episodes it draws, `update` reads them back, and the frame reads
/// them from memory. Walked through every group, trajectory, step, anchor-group member and search hit of the
/// fixture, no view draws an episode it did not name (it would show "not read back yet").
#[test]
fn every_view_draws_only_episodes_read_back_before_the_frame() {
    use gigscope::index::{Hit, SearchResults};
    let (_tmp, dir) = copy_fixture("basic");
    let mut s = state(&dir);
    let check = |s: &State, what: &str| {
        let screen = render(s);
        assert!(!screen.contains("not read back yet"), "{what}:\n{screen}");
    };
    keys(&mut s, &[Action::Open]);
    for group in 0..s.current_groups().len() {
        check(&s, &format!("groups view, group {group}"));
        keys(&mut s, &[Action::Open]);
        for traj in 0..s.group_episodes().len() {
            let steps = s.domain.episodes.at(s.episode_index().unwrap()).steps.len();
            for step in 0..steps {
                check(&s, &format!("episode view, group {group} traj {traj} step {step}"));
                keys(&mut s, &[Action::Anchor]);
                check(&s, &format!("anchor view, group {group} traj {traj} step {step}"));
                keys(&mut s, &[Action::Down]);
                check(&s, &format!("anchor view, second member, group {group} traj {traj} step {step}"));
                keys(&mut s, &[Action::Back, Action::Down]);
            }
            keys(&mut s, &[Action::Compare]);
            check(&s, &format!("compare view, group {group} traj {traj}"));
            keys(&mut s, &[Action::Back, Action::NextItem]);
        }
        keys(&mut s, &[Action::Back, Action::NextItem]);
    }
    // A search with more hits than the screen has rows, walked from the first to the last.
    let hits: Vec<Hit> = (0..s.domain.episodes.len())
        .flat_map(|episode| (0..s.domain.episodes.at(episode).steps.len()).map(move |step| (episode, step)))
        .map(|(episode, step)| Hit { episode, episode_id: String::new(), step, score: 1.0 })
        .collect();
    update(&mut s, Msg::Resize(120, 12));
    assert!(hits.len() > 2 * 12, "the fixture has {} steps", hits.len());
    let result = Ok(SearchResults { total: hits.len(), hits: hits.clone() });
    update(&mut s, Msg::SearchDone { query: "action:*".into(), result, partial: None });
    assert_eq!(s.ui.view, View::Search);
    for hit in 0..hits.len() {
        check(&s, &format!("search view, hit {hit}"));
        keys(&mut s, &[Action::Down]);
    }
}

/// Opened the app's way, a run of a layout whose rows have no line of their own (a verl dump, a TRL log) keeps
/// their text in a spill file, not in memory, and reads it back as it was read: every record, the tables, a
/// similarity grouping (which reads every step's anchor back) and the screens are those of the run read whole.
#[test]
fn the_text_of_verl_and_trl_rows_is_spilled_and_read_back_as_read() {
    for fixture in ["tests/fixtures/verl/v1", "tests/fixtures/trl/default"] {
        let dir = std::path::Path::new(fixture);
        let mut whole = state(dir);
        let (mut spilled, _loading) = support::opening::open_the_apps_way(dir, Config::defaults(false).unwrap());
        update(&mut spilled, Msg::Resize(120, 40));
        assert!(whole.domain.episodes.iter().all(|e| matches!(e.text, TextAt::InMemory(_))), "{fixture}");
        assert!(spilled.domain.episodes.iter().all(|e| matches!(e.text, TextAt::OnDisk { .. })), "{fixture}");
        assert_eq!(spilled.domain.episodes.len(), whole.domain.episodes.len(), "{fixture}");
        for e in 0..whole.domain.episodes.len() {
            assert_eq!(spilled.domain.read_episode(e).unwrap(), whole.domain.read_episode(e).unwrap(), "{fixture} {e}");
        }
        assert_eq!(spilled.domain.derived, whole.domain.derived, "{fixture}");
        let mut similarity = whole.domain.settings;
        similarity.anchor = gigscope::advantage::AnchorMode::Similarity(0.5);
        let grouped = |s: &State| gigscope::tui::state::Derived::build(&s.domain.episodes, &similarity);
        assert_eq!(grouped(&spilled), grouped(&whole), "{fixture}");
        // The app's way has had news of the run (its watcher's first scan), the whole read none.
        spilled.domain.live.last_update = whole.domain.live.last_update;
        assert_eq!(render(&spilled), render(&whole), "{fixture}");
        episode_view(&mut whole);
        episode_view(&mut spilled);
        assert_eq!(render(&spilled), render(&whole), "{fixture}");
    }
}
