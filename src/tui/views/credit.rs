//! Credit view (issue 26 item 4 in the TUI): what the selected iteration's update reinforces. Its behaviours
//! (`crate::advantage::audit`'s default grouping, actions read from the responses by the settings' action rule)
//! from the most pushed up to the most pushed down, with their rows, advantage mass, mass per row, token mass and
//! change from the previous iteration; Enter lists the selected behaviour's rows (the raw response beside each),
//! Enter on a row opens it in the episode view.
//!
//! The view's key again groups the steps by the last search's query instead (the search view's language: the
//! steps it matches against the rest, `(unmatched)`), and once more back by verb and target. The matches are every
//! step of the run the query matches, asked of the run's index as a job ([`Effect::Matches`], answered by
//! [`matched`]); until they come, the steps stay grouped by verb and target.
//!
//! The view reads back the records of the iteration's episodes and the previous iteration's, as every view reads
//! what it shows, and computes the audit from memory when drawn. The token mass (Σ A × trained tokens) counts the
//! steps whose trained tokens the run's token store indexes (its `trained` counts, held in memory: drawing reads
//! no token record); a run without them has no token-mass column (`gigscope audit` also reads the records).

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, Table, Widget};

use super::{adv_span, block, clamp_add, hint, layout, trunc, Component, Hint, ListRegion};
use crate::advantage::audit::{audit, Audit, AuditRow, Behaviours, Matched};
use crate::advantage::RowRef;
use crate::tui::action::Action;
use crate::tui::domain::{bucket_of, Bucket};
use crate::tui::msg::{Effect, Effects, JobError};
use crate::tui::state::{CreditQuery, CreditUi, State, View};

pub struct Credit;

/// The iteration the view audits (the selected one; the play bucket is not an iteration) and the one before.
fn iterations(state: &State) -> Option<(i64, Option<i64>)> {
    let its = &state.domain.derived.iterations;
    let now = its.get(state.ui.sel.iteration).filter(|it| !it.is_play())?.iteration;
    let before = its.iter().filter(|it| !it.is_play() && it.iteration < now).map(|it| it.iteration).max();
    Some((now, before))
}

/// Episodes of training iteration `iteration`.
fn episodes_of(state: &State, iteration: i64) -> impl Iterator<Item = usize> + '_ {
    let bucket = Bucket::Iteration(iteration);
    state.domain.episodes.iter().enumerate().filter(move |(_, e)| bucket_of(*e) == bucket).map(|(e, _)| e)
}

/// The matches the steps are grouped by, once found.
fn grouped_by(state: &State) -> Option<&Matched> {
    state.ui.credit.by.as_ref()?.matched.as_ref()
}

/// The audit rows of `iteration` from the records read back (an episode not read back is left out), with each
/// step's trained tokens where the token store indexes them.
fn rows_of(state: &State, iteration: i64) -> Vec<AuditRow> {
    let rule = state.domain.settings.action;
    let by = match grouped_by(state) {
        Some(matched) => Behaviours::Queries(std::slice::from_ref(matched)),
        None => Behaviours::Verbs,
    };
    let table = &state.domain.derived.table;
    let store = state.domain.tokens.store();
    let mut rows = Vec::new();
    for e in episodes_of(state, iteration) {
        let Ok(full) = state.domain.episode(e) else { continue };
        let lean = &state.domain.episodes.at(e);
        let tokens = store.map(|s| s.steps(&lean.id.joined())).unwrap_or_default();
        for (t, (step, row)) in full.steps.iter().zip(table.episode_rows(e)).enumerate() {
            let at = RowRef { episode: e as u32, step: t as u32 };
            let page = lean.steps.get(t).and_then(|s| state.domain.pages.name(s.page)).filter(|p| !p.is_empty());
            rows.push(AuditRow {
                at,
                behaviour: by.of(at, rule.extract(&step.action), page),
                advantage: row.advantage,
                masked_tokens: tokens.iter().find(|s| s.step == at.step).and_then(|s| s.trained),
            });
        }
    }
    rows
}

/// The view's key in the view: group by the last search's query (asking the index for its matches), or back by
/// verb and target.
fn toggle_query(state: &mut State) -> Effects {
    let ui = &mut state.ui.credit;
    (ui.selected, ui.row) = (0, None);
    if ui.by.take().is_some() {
        state.ui.message = Some("credit grouped by verb and target".into());
        return Effects::redraw();
    }
    let Some(search) = &state.ui.search else {
        state.ui.message = Some("search first (/): the credit view then groups the steps by the search's query".into());
        return Effects::redraw();
    };
    let query = search.query.clone();
    state.ui.message = Some(format!("finding the steps of {query} …"));
    ui.by = Some(CreditQuery { query: query.clone(), matched: None, searched: (0, 0) });
    Effects::redraw_and(Effect::Matches(query))
}

/// The index's answer to [`Effect::Matches`]: the steps are grouped by the query, unless the view has left it
/// meanwhile.
pub fn matched(
    state: &mut State,
    query: String,
    result: Result<Vec<(usize, usize)>, JobError>,
    searched: (usize, usize),
) -> Effects {
    let Some(by) = state.ui.credit.by.as_mut().filter(|by| by.query == query) else { return Effects::none() };
    match result {
        Ok(found) => {
            let rows = found.into_iter().map(|(e, t)| RowRef { episode: e as u32, step: t as u32 }).collect();
            by.matched = Some(Matched { query, rows });
            by.searched = searched;
            state.ui.message = None;
        }
        Err(err) => {
            state.ui.credit.by = None;
            state.ui.message = Some(format!("cannot group the credit by {query}: {err}"));
        }
    }
    Effects::redraw()
}

/// The audit the view shows, with its iteration and the previous one.
pub fn credit(state: &State) -> Option<(i64, Option<i64>, Audit)> {
    let (now, before) = iterations(state)?;
    let previous = before.map(|b| rows_of(state, b));
    Some((now, before, audit(&rows_of(state, now), previous.as_deref())))
}

impl Component for Credit {
    fn title(&self) -> &'static str {
        "Credit"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        iterations(state).map(|(i, _)| format!("iteration {i}")).into_iter().collect()
    }

    fn hints(&self, state: &State) -> Vec<Hint> {
        use Action::*;
        if state.ui.credit.row.is_some() {
            vec![
                hint(&[Up, Down], "move", "select a row of the behaviour"),
                hint(&[Open], "go to step", "the selected row in the episode view"),
                hint(&[Back], "behaviours", "back to the list of behaviours"),
            ]
        } else if state.ui.credit.by.is_some() {
            vec![
                hint(&[Up, Down], "move", "select a behaviour"),
                hint(&[Open], "rows", "list the selected behaviour's rows"),
                hint(&[Credit], "by verb", "group the steps by the action's verb and target again"),
            ]
        } else {
            vec![
                hint(&[Up, Down], "move", "select a behaviour"),
                hint(&[Open], "rows", "list the selected behaviour's rows"),
                hint(&[Credit], "by search", "group the steps by the last search's query (/ searches)"),
            ]
        }
    }

    fn highlight(&self, state: &State) -> Option<String> {
        let (_, _, a) = credit(state)?;
        let b = a.behaviours.get(state.ui.credit.selected)?;
        let tokens = b
            .token_mass
            .map(|m| format!(", Σ A × tokens = {m:+.3} over {} trained tokens", b.tokens))
            .unwrap_or_default();
        Some(format!("{}: {} rows receive Σ A = {:+.3}{tokens} this iteration", b.behaviour, b.count, b.mass))
    }

    fn enter(&self, state: &mut State) {
        // The grouping stays: the user chose it.
        state.ui.credit = CreditUi { by: state.ui.credit.by.take(), ..CreditUi::default() };
    }

    fn shown_episodes(&self, state: &State) -> Vec<usize> {
        let Some((now, before)) = iterations(state) else { return Vec::new() };
        let mut shown: Vec<usize> = episodes_of(state, now).collect();
        if let Some(before) = before {
            shown.extend(episodes_of(state, before));
        }
        shown
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        render(state, area, buf);
    }

    fn list(&self, state: &State, body: Rect) -> Option<ListRegion> {
        let (_, _, a) = credit(state)?;
        let [top, bottom] = split(state, body);
        let ui = &state.ui.credit;
        Some(match ui.row {
            Some(row) => ListRegion {
                rect: layout::table_body(bottom),
                len: a.behaviours.get(ui.selected).map_or(0, |b| b.rows.len()),
                selected: row,
            },
            None => ListRegion { rect: layout::table_body(top), len: a.behaviours.len(), selected: ui.selected },
        })
    }

    fn move_by(&self, state: &mut State, by: isize) {
        let Some((_, _, a)) = credit(state) else { return };
        let ui = &mut state.ui.credit;
        match ui.row {
            Some(row) => {
                let len = a.behaviours.get(ui.selected).map_or(0, |b| b.rows.len());
                ui.row = Some(clamp_add(row, by, len));
            }
            None => ui.selected = clamp_add(ui.selected, by, a.behaviours.len()),
        }
    }

    fn open(&self, state: &mut State) {
        let Some((_, _, a)) = credit(state) else { return };
        let ui = &mut state.ui.credit;
        let Some(b) = a.behaviours.get(ui.selected) else { return };
        match ui.row {
            None if !b.rows.is_empty() => ui.row = Some(0),
            None => {}
            Some(row) => {
                if let Some(at) = b.rows.get(row) {
                    state.select_row(at.episode as usize, at.step as usize);
                    state.ui.view = View::Episode;
                }
            }
        }
    }

    fn on_action(&self, state: &mut State, a: Action) -> Option<Effects> {
        // Back from a behaviour's rows is back to the behaviours.
        if matches!(a, Action::Back | Action::Left) && state.ui.credit.row.is_some() {
            state.ui.credit.row = None;
            return Some(Effects::redraw());
        }
        if a == Action::Credit {
            return Some(toggle_query(state));
        }
        super::standard(self, state, a)
    }
}

/// The behaviours above; the opened behaviour's rows below, once opened.
fn split(state: &State, body: Rect) -> [Rect; 2] {
    if state.ui.credit.row.is_none() {
        return [body, Rect { height: 0, ..body }];
    }
    Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(body)
}

fn signed(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{v:+.3}"))
}

fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let Some((now, before, a)) = credit(state) else {
        ratatui::widgets::Paragraph::new("select a training iteration in the overview: the play bucket has no update")
            .style(theme.dim())
            .render(area, buf);
        return;
    };
    let [top, bottom] = split(state, area);
    let ui = &state.ui.credit;
    let body = layout::table_body(top);
    // The token mass where the token store counts some of the iteration's steps.
    let token_mass = a.behaviours.iter().any(|b| b.token_mass.is_some());
    let start = layout::window_start(ui.selected, a.behaviours.len(), body.height as usize);
    let rows = a.behaviours.iter().enumerate().skip(start).take(body.height as usize).map(|(i, b)| {
        let per_row = if b.count == 0 { 0.0 } else { b.mass / b.count as f64 };
        let mut cells = vec![
            Cell::from(b.behaviour.clone()),
            Cell::from(b.count.to_string()),
            Cell::from(adv_span(state, b.mass)),
            Cell::from(adv_span(state, per_row)),
        ];
        if token_mass {
            cells.push(Cell::from(Span::raw(signed(b.token_mass))));
        }
        cells.push(Cell::from(Span::raw(signed(b.change))));
        let r = Row::new(cells);
        if i == ui.selected {
            r.style(theme.selected())
        } else {
            r
        }
    });
    let against = before.map_or_else(|| "no earlier iteration".into(), |b| format!("change against iteration {b}"));
    let by = match &ui.by {
        None => String::new(),
        Some(CreditQuery { query, matched: None, .. }) => format!(" · finding the steps of {query} …"),
        Some(CreditQuery { query, matched: Some(_), searched: (n, of) }) if n < of => {
            format!(" · by {query} (matches in the first {n} of {of} episodes)")
        }
        Some(CreditQuery { query, .. }) => format!(" · by {query}"),
    };
    let title = format!("Credit of iteration {now} · {} rows · Σ A {:+.3} · {against}{by}", a.rows, a.total);
    let mut widths = vec![Constraint::Min(20), Constraint::Length(6), Constraint::Length(9), Constraint::Length(9)];
    let mut header = vec!["behaviour (pushed up → down)", "rows", "Σ A", "A/row"];
    if token_mass {
        widths.push(Constraint::Length(10));
        header.push("Σ A×tok");
    }
    widths.push(Constraint::Length(9));
    header.push("change");
    Table::new(rows, widths)
        .column_spacing(super::spacing(state))
        .header(Row::new(header).style(theme.title()))
        .block(block(state, title, top))
        .render(top, buf);
    let (Some(row), Some(b)) = (ui.row, a.behaviours.get(ui.selected)) else { return };
    let body = layout::table_body(bottom);
    let start = layout::window_start(row, b.rows.len(), body.height as usize);
    let table = &state.domain.derived.table;
    let lines = b.rows.iter().enumerate().skip(start).take(body.height as usize).map(|(i, at)| {
        let e = at.episode as usize;
        let response = match state.domain.episode(e) {
            Ok(full) => full.steps.get(at.step as usize).map_or_else(String::new, |s| s.action.replace('\n', " ⏎ ")),
            Err(err) => format!("(cannot read it back: {err})"),
        };
        let advantage = table.get_row(e, at.step as usize).map_or(0.0, |r| r.advantage);
        let r = Row::new(vec![
            Cell::from(trunc(&state.domain.episodes.at(e).id.joined(), 16)),
            Cell::from(at.step.to_string()),
            Cell::from(adv_span(state, advantage)),
            Cell::from(response),
        ]);
        if i == row {
            r.style(theme.selected())
        } else {
            r
        }
    });
    Table::new(lines, [Constraint::Length(16), Constraint::Length(4), Constraint::Length(8), Constraint::Min(10)])
        .column_spacing(super::spacing(state))
        .header(Row::new(["episode", "step", "A", "response (raw)"]).style(theme.title()))
        .block(block(state, format!("{}: {} rows", b.behaviour, b.rows.len()), bottom))
        .render(bottom, buf);
}
