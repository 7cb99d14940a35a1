//! Search results: every matching step, best first; Enter (or `n`/`N` from any view) opens the hit. The
//! advantage columns the query asks about (`adv_e:`, `adv_s:`, `return:`) are shown beside A.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, Table, Widget};

use super::{adv_span, block, clamp_add, hint, layout, trunc, Component, Hint, ListRegion};
use crate::advantage::RowAdvantage;
use crate::tui::action::Action;
use crate::tui::state::{State, View};

pub struct Search;

impl Component for Search {
    fn title(&self) -> &'static str {
        "Search"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        state.ui.search.as_ref().map(|s| format!("/{}", s.query)).into_iter().collect()
    }

    fn hints(&self, _state: &State) -> Vec<Hint> {
        use Action::*;
        vec![
            hint(&[Up, Down], "move", "select a hit"),
            hint(&[Open], "go to step", "the selected hit in the episode view"),
        ]
    }

    /// The hits a window of the terminal's height around the selected one can show.
    fn shown_episodes(&self, state: &State) -> Vec<usize> {
        let Some(search) = &state.ui.search else { return Vec::new() };
        let rows = usize::from(state.ui.size.1);
        let start = search.current.saturating_sub(rows);
        let mut shown: Vec<usize> = search.hits.iter().skip(start).take(2 * rows + 1).map(|h| h.episode).collect();
        shown.sort_unstable();
        shown.dedup();
        shown
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        render(state, area, buf);
    }

    fn list(&self, state: &State, body: Rect) -> Option<ListRegion> {
        let s = state.ui.search.as_ref();
        Some(ListRegion {
            rect: layout::table_body(body),
            len: s.map_or(0, |s| s.hits.len()),
            selected: s.map_or(0, |s| s.current),
        })
    }

    fn move_by(&self, state: &mut State, by: isize) {
        if let Some(search) = state.ui.search.as_mut() {
            search.current = clamp_add(search.current, by, search.hits.len());
        }
    }

    fn open(&self, state: &mut State) {
        jump_hit(state, 0);
    }
}

/// `n` / `N` (and Enter in the results): the hit `by` from the current one, shown in the episode view.
pub fn jump_hit(state: &mut State, by: isize) {
    let Some(search) = state.ui.search.as_mut() else {
        state.ui.message = Some("no search yet: press / to search".into());
        return;
    };
    let n = search.hits.len() as isize;
    search.current = (search.current as isize + by).rem_euclid(n.max(1)) as usize;
    let Some(hit) = search.hits.get(search.current) else { return };
    let (e, step, current) = (hit.episode, hit.step, search.current);
    if e < state.domain.episodes.len() {
        state.select_row(e, step);
        state.ui.view = View::Episode;
        state.ui.message = Some(format!("hit {}/{}", current + 1, n));
    }
}

/// A number column a query can ask about: its field name, header and value.
struct Column {
    field: &'static str,
    header: &'static str,
    value: fn(&RowAdvantage) -> f64,
    signed: bool,
}

const COLUMNS: &[Column] = &[
    Column { field: "return", header: "R_t", value: |r| r.ret, signed: false },
    Column { field: "adv_e", header: "A_E", value: |r| r.episode_advantage, signed: true },
    Column { field: "adv_s", header: "A_S", value: |r| r.step_advantage, signed: true },
];

/// The columns `query` names (`adv_s:…`), in a fixed order.
fn asked(query: &str) -> Vec<&'static Column> {
    COLUMNS.iter().filter(|c| query.contains(&format!("{}:", c.field))).collect()
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let Some(search) = &state.ui.search else { return };
    let theme = &state.config.theme;
    let t = &state.domain.derived.table;
    let body = layout::table_body(area);
    let extra = asked(&search.query);
    let start = layout::window_start(search.current, search.hits.len(), body.height as usize);
    let pages = search.hits.iter().any(|h| {
        let step = state.domain.episodes.get(h.episode).and_then(|e| e.steps.get(h.step));
        step.and_then(|s| state.domain.pages.name(s.page)).is_some_and(|page| !page.is_empty())
    });
    let mut header = vec!["#", "episode", "iter", "step"];
    let mut widths = vec![Constraint::Length(4), Constraint::Length(14), Constraint::Length(4), Constraint::Length(4)];
    if pages {
        header.push("page");
        widths.push(Constraint::Length(8));
    }
    header.extend(["action", "reward"]);
    widths.extend([Constraint::Min(12), Constraint::Length(6)]);
    for c in &extra {
        header.push(c.header);
        widths.push(Constraint::Length(7));
    }
    header.extend(["A", "ok"]);
    widths.extend([Constraint::Length(7), Constraint::Length(2)]);
    // The action cut to its column with `…` (`click[buy n…`), so that a cut shows.
    let action_w = layout::column_widths(&widths, super::spacing(state), body.width)[if pages { 5 } else { 4 }];
    let rows = search.hits.iter().enumerate().skip(start).take(body.height as usize).filter_map(|(i, h)| {
        let ep = state.domain.episodes.get(h.episode)?;
        let lean_step = ep.steps.get(h.step)?;
        let row = t.get_row(h.episode, h.step)?;
        // The action is text kept on disk; a hit whose episode cannot be read back still shows, saying so.
        let action = match state.domain.episode(h.episode) {
            Ok(full) => full.steps.get(h.step).map_or_else(String::new, |step| trunc(&step.action, action_w)),
            Err(err) => trunc(&format!("(cannot read it back: {err})"), action_w),
        };
        let mut cells = vec![
            Cell::from((i + 1).to_string()),
            Cell::from(trunc(&ep.id.joined(), 14)),
            Cell::from(ep.iteration.to_string()),
            Cell::from(h.step.to_string()),
        ];
        if pages {
            let page = state.domain.pages.name(lean_step.page).filter(|page| !page.is_empty());
            cells.push(Cell::from(trunc(page.unwrap_or("—"), 8)));
        }
        let reward = if crate::advantage::trl::unscored(&state.domain.episodes, h.episode) {
            "—".to_string()
        } else {
            format!("{:.2}", row.reward)
        };
        cells.extend([Cell::from(action), Cell::from(reward)]);
        for c in &extra {
            let v = (c.value)(&row);
            cells.push(if c.signed {
                Cell::from(adv_span(state, v))
            } else {
                Cell::from(Span::raw(format!("{v:.3}")))
            });
        }
        cells.extend([Cell::from(adv_span(state, row.advantage)), Cell::from(if ep.success { "✓" } else { "✗" })]);
        let r = Row::new(cells);
        Some(if i == search.current { r.style(theme.selected()) } else { r })
    });
    let shown = if search.total > search.hits.len() {
        format!("{} shown of {}", search.hits.len(), search.total)
    } else {
        format!("{}", search.total)
    };
    let rows_shown = layout::rows_title("", start, body.height as usize, search.hits.len());
    Table::new(rows, widths)
        .column_spacing(super::spacing(state))
        .header(Row::new(header).style(theme.title()))
        .block(block(state, format!("Search {} · {shown} matching steps{rows_shown}", search.query), area))
        .render(area, buf);
}
