//! Rendering: reads the state, never changes it. `impl Widget for &State` draws the frame (the bars of
//! [`bars`] and the popups) around the current view's component (`super::views`), which draws the body.

pub(crate) mod bars;
pub(crate) mod layout;
mod popups;
pub(crate) mod text;
pub(crate) mod widgets;

pub use bars::{fitted_hints, hints, view_hints, SEARCH_EXAMPLES};
pub use popups::help_scroll_max;
pub use widgets::Hint;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use self::bars::{breadcrumb, hint_bar, status_bar};
use self::widgets::block;
use super::action::Action;
use super::state::{Popup, State};
use super::views::{component, frame};

impl Widget for &State {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let [crumb, body, status, hints] = frame(self, area);
        breadcrumb(self, crumb, buf);
        let view = component(self.ui.view);
        if view.needs_episodes() && self.domain.episodes.is_empty() {
            empty(self, body, buf);
        } else {
            view.render(self, body, buf);
        }
        status_bar(self, status, buf);
        hint_bar(self, hints, buf);
        match self.ui.popup {
            Some(Popup::Help { scroll }) => popups::help(self, scroll, area, buf),
            Some(Popup::Settings { field }) => popups::settings(self, field, area, buf),
            Some(Popup::Burst { field }) => popups::burst(self, field, area, buf),
            None => {}
        }
    }
}

fn empty(state: &State, area: Rect, buf: &mut Buffer) {
    let text = vec![
        Line::from(""),
        Line::from(format!("  No episodes in {} yet.", state.domain.run.dir.display())),
        Line::from("  Waiting for episodes.jsonl to grow (the view updates as lines arrive)."),
        Line::from(format!(
            "  {} plays episodes by hand into this run; {} starts a training burst into it.",
            state.config.keymap.first_label(Action::Play).unwrap_or_default(),
            state.config.keymap.first_label(Action::Train).unwrap_or_default()
        )),
    ];
    Paragraph::new(text).block(block(state, "Run", area)).render(area, buf);
}
