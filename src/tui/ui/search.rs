//! Search results: every matching step, best first; Enter (or `n`/`N` from any view) opens the hit.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Row, Table, Widget};

use super::{adv_span, block, layout, trunc};
use crate::tui::state::State;

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let Some(search) = &state.search else { return };
    let theme = &state.config.theme;
    let t = &state.derived.table;
    let body = layout::table_body(area);
    let start = layout::window_start(search.current, search.hits.len(), body.height as usize);
    let rows = search.hits.iter().enumerate().skip(start).take(body.height as usize).filter_map(|(i, h)| {
        let ep = state.run.episodes.get(h.episode)?;
        let step = ep.steps.get(h.step)?;
        let row = t.episode_rows(h.episode).get(h.step)?;
        let r = Row::new(vec![
            Cell::from((i + 1).to_string()),
            Cell::from(trunc(&ep.id, 14)),
            Cell::from(ep.iteration.to_string()),
            Cell::from(h.step.to_string()),
            Cell::from(trunc(step.page.as_deref().unwrap_or("—"), 8)),
            Cell::from(step.action.clone()),
            Cell::from(format!("{:.2}", row.reward)),
            Cell::from(adv_span(state, row.advantage)),
            Cell::from(if ep.success() { "✓" } else { "✗" }),
        ]);
        Some(if i == search.current { r.style(theme.selected()) } else { r })
    });
    let shown = if search.total > search.hits.len() {
        format!("{} shown of {}", search.hits.len(), search.total)
    } else {
        format!("{}", search.total)
    };
    Table::new(
        rows,
        [
            Constraint::Length(4),
            Constraint::Length(14),
            Constraint::Length(4),
            Constraint::Length(4),
            Constraint::Length(8),
            Constraint::Min(16),
            Constraint::Length(6),
            Constraint::Length(7),
            Constraint::Length(2),
        ],
    )
    .header(Row::new(["#", "episode", "iter", "step", "page", "action", "reward", "A", "ok"]).style(theme.title()))
    .block(block(state, format!("Search {} · {shown} matching steps", search.query)))
    .render(area, buf);
}
