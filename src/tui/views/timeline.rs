//! State timeline view (issue 26 item 3 in the TUI): the anchor state of the row selected when the view was
//! opened, followed through the iterations ([`crate::advantage::timeline`], as `gigscope state` prints it): per
//! iteration its visits, the episodes that visited it, the actions taken there with their share, mean A, mean A_S
//! and mean A*.
//!
//! Visits are found on the lean episodes (the anchor hashes, no I/O); the actions come from the records the view
//! reads back, at most [`READ_BACK`] episodes (the rest count as "(not read back)"); A* is taken from the truth
//! files the TUI holds (the selected row's iteration, and those looked at recently); `gigscope state` reads them
//! all.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::{block, clamp_add, hint, trunc, Component, Hint};
use crate::advantage::timeline::{timeline, StateVisit};
use crate::advantage::RowRef;
use crate::tui::action::Action;
use crate::tui::estimates::Truth;
use crate::tui::state::{State, View};

/// Episodes whose records the view reads back for their actions.
pub const READ_BACK: usize = 2000;

/// The action of a visit whose episode was not read back.
const NOT_READ: &str = "(not read back)";

pub struct Timeline;

/// The visits of the followed row's anchor state, in file order.
fn visits(state: &State, row: RowRef) -> Vec<(usize, usize)> {
    let episodes = &state.domain.episodes;
    let Some(anchor) =
        episodes.get(row.episode as usize).and_then(|e| e.steps.get(row.step as usize)).map(|s| s.anchor)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (e, episode) in episodes.iter().enumerate() {
        out.extend(episode.steps.iter().enumerate().filter(|(_, s)| s.anchor == anchor).map(|(t, _)| (e, t)));
    }
    out
}

fn a_star(state: &State, iteration: i64, episode: &str, step: usize) -> Option<f64> {
    match state.estimates.truth(&state.domain.run.dir, iteration)? {
        Truth::Present { file, .. } => file.row(episode, step).map(|r| r.a_star),
        _ => None,
    }
}

/// The followed state's visits as the timeline takes them.
fn state_visits(state: &State, row: RowRef) -> Vec<StateVisit> {
    let rule = state.domain.settings.action;
    let table = &state.domain.derived.table;
    visits(state, row)
        .into_iter()
        .filter_map(|(e, t)| {
            let lean = &state.domain.episodes.at(e);
            let adv = table.get_row(e, t)?;
            let action = match state.domain.episode(e) {
                Ok(full) => full.steps.get(t).map_or_else(String::new, |s| rule.extract(&s.action).to_owned()),
                Err(_) => NOT_READ.to_owned(),
            };
            Some(StateVisit {
                iteration: lean.iteration,
                episode: lean.id.to_string(),
                step: t as u32,
                action,
                advantage: adv.advantage,
                step_advantage: adv.step_advantage,
                a_star: a_star(state, lean.iteration, &lean.id.joined(), t),
            })
        })
        .collect()
}

impl Component for Timeline {
    fn title(&self) -> &'static str {
        "State timeline"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        let Some(row) = state.ui.timeline.row else { return Vec::new() };
        let id = state.domain.episodes.get(row.episode as usize).map(|e| e.id.to_string()).unwrap_or_default();
        vec![format!("state of ep {id} step {}", row.step)]
    }

    fn hints(&self, _state: &State) -> Vec<Hint> {
        use Action::*;
        vec![hint(&[Up, Down], "scroll", "scroll the iterations"), hint(&[Back], "back", "back to the episode")]
    }

    fn enter(&self, state: &mut State) {
        state.ui.timeline.row = state.row_ref();
        state.ui.timeline.scroll = 0;
    }

    fn selects_step(&self) -> bool {
        true
    }

    fn shown_episodes(&self, state: &State) -> Vec<usize> {
        let Some(row) = state.ui.timeline.row else { return Vec::new() };
        let mut shown: Vec<usize> = visits(state, row).into_iter().map(|(e, _)| e).collect();
        shown.dedup();
        shown.truncate(READ_BACK);
        shown
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        render(state, area, buf);
    }

    fn move_by(&self, state: &mut State, by: isize) {
        state.ui.timeline.scroll = clamp_add(state.ui.timeline.scroll, by, usize::from(u16::MAX));
    }

    fn back_to(&self) -> View {
        View::Episode
    }
}

fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let Some(row) = state.ui.timeline.row else {
        Paragraph::new("select a step (episode view) and open the timeline from there")
            .style(theme.dim())
            .render(area, buf);
        return;
    };
    let visits = state_visits(state, row);
    let iterations = timeline(&visits);
    let mut lines: Vec<Line> = Vec::new();
    let signed = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:+.3}"));
    for it in &iterations {
        lines.push(Line::from(Span::styled(
            format!(
                "iteration {}: {} visits in {} episodes · mean A {:+.3} · {} with A*",
                it.iteration, it.visits, it.episodes, it.mean_advantage, it.measured
            ),
            theme.title(),
        )));
        for a in &it.actions {
            lines.push(Line::from(format!(
                "  {:<40} {:>4} {:>4.0}%  A {:+.3}  A_S {:+.3}  A* {}",
                trunc(&a.action, 40),
                a.count,
                100.0 * a.share,
                a.mean_advantage,
                a.mean_step_advantage,
                signed(a.mean_a_star)
            )));
        }
    }
    let title = format!("State timeline · {} visits over {} iterations", visits.len(), iterations.len());
    let scroll = u16::try_from(state.ui.timeline.scroll).unwrap_or(u16::MAX);
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0))
        .block(block(state, title, area))
        .render(area, buf);
}
