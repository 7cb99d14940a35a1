//! A TUI state driven with actions and drawn on a `TestBackend`, for the tests that read what the screen shows.

use gigscope::tui::{update, Action, Msg, State};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// Press `actions` in order.
pub fn keys(s: &mut State, actions: &[Action]) {
    for &a in actions {
        update(s, Msg::Action(a));
    }
}

/// The whole screen as text, at the state's terminal size.
pub fn render(s: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(s.ui.size.0, s.ui.size.1)).expect("test terminal");
    terminal.draw(|f| f.render_widget(s, f.area())).expect("draw");
    terminal.backend().to_string()
}

/// Select the episode group named `name` of the first iteration, in the group view.
pub fn open_group(s: &mut State, name: &str) {
    keys(s, &[Action::Open]);
    for _ in 0..s.current_groups().len() {
        if *s.domain.derived.table.episode_groups[s.ui.sel.group as usize].name == *name {
            return;
        }
        keys(s, &[Action::NextItem]);
    }
    panic!("no group {name} in the first iteration");
}

/// What a viewer derives from a run, the same in `a` as in `b` (opened another way).
pub fn assert_same_run(a: &State, b: &State) {
    let (a, b) = (&a.domain, &b.domain);
    assert_eq!(a.episodes.len(), b.episodes.len());
    assert_eq!(a.episodes, b.episodes, "lean episodes, spans included");
    assert_eq!(a.pages, b.pages);
    assert_eq!(a.run.errors, b.run.errors, "broken lines");
    assert_eq!(a.run.episode_ids, b.run.episode_ids);
    assert_eq!(a.run.meta, b.run.meta);
    assert_eq!(a.run.metrics, b.run.metrics);
    assert_eq!(a.settings, b.settings);
    assert_eq!(a.derived.table, b.derived.table, "advantages");
    assert_eq!(a.derived.iterations, b.derived.iterations);
    assert_eq!(a.live.broken_lines, b.live.broken_lines);
}
