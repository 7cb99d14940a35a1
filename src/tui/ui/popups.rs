//! Popups drawn over the current view: help (generated from the keymap) and the settings panel.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::block;
use crate::tui::action::Action;
use crate::tui::fields;
use crate::tui::state::State;

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(h.min(area.height))]).flex(Flex::Center).areas(area);
    let [r] = Layout::horizontal([Constraint::Length(w.min(area.width))]).flex(Flex::Center).areas(v);
    r
}

pub fn help(state: &State, scroll: u16, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let km = &state.config.keymap;
    let lines: Vec<Line> = Action::ALL
        .iter()
        .map(|&a| {
            let keys = km.labels(a);
            Line::from(vec![
                Span::styled(format!("{:<14}", if keys.is_empty() { "(unbound)".into() } else { keys }), theme.accent()),
                Span::raw(a.describe()),
            ])
        })
        .collect();
    let r = centered(area, 84, Action::ALL.len() as u16 + 2);
    Clear.render(r, buf);
    Paragraph::new(lines)
        .scroll((scroll, 0))
        .block(block(state, "Keys (from the keymap; edit in ~/.config/gigscope/config.toml)"))
        .render(r, buf);
}

pub fn settings(state: &State, field: usize, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let mut lines: Vec<Line> = fields::FIELDS
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let changed = fields::differs(&state.settings, &state.recorded, i);
            let text = format!(
                "{} {:<16} {:<20} {}",
                if i == field { "▶" } else { " " },
                name,
                fields::value(&state.settings, i),
                if changed { format!("* run: {}", fields::value(&state.recorded, i)) } else { String::new() }
            );
            let style = if i == field { theme.selected() } else if changed { theme.warn() } else { Default::default() };
            Line::styled(text, style)
        })
        .collect();
    lines.push(Line::from(""));
    let marker = if state.settings_modified() {
        Span::styled("* differs from the run's recorded settings (R resets)", theme.warn())
    } else {
        Span::styled("same as the run's recorded settings", theme.dim())
    };
    lines.push(Line::from(marker));
    let r = centered(area, 66, lines.len() as u16 + 2);
    Clear.render(r, buf);
    Paragraph::new(lines).block(block(state, "Advantage settings (every change recomputes)")).render(r, buf);
}
