//! Settings changes in the TUI recompute only the numbers when the anchor mode stays (`advantage::recompute`):
//! after every change of every field, both ways, the derived state equals one built from scratch.

use std::path::Path;

use gigscope::tui::fields::FIELDS;
use gigscope::tui::state::Derived;
use gigscope::tui::{open, update, Action, Config, Msg, State};

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
            assert_eq!(s.derived, Derived::build(&s.run.episodes, &s.settings), "field {field}, {key:?}");
        }
        update(&mut s, Msg::Action(Action::Down));
    }
}
