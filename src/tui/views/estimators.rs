//! Estimators view: every step row of the selected episode group with one column per estimator of the family
//! (`crate::advantage::estimators`: gigpo, grpo, rloo, step, hgpo, graphgpo, proxmo, soft-page, q-minus-v)
//! and the Monte-Carlo truth A* of `gigscope truth` (`crate::run::truth`), and under the table each
//! estimator's agreement with A* over the iteration, as the truth file records it.
//!
//! The episode group is the unit shown because it is the unit every estimator computes over: all of its rows,
//! trajectory by trajectory, so the rows that share an anchor state (the `sg` column) are compared across
//! trajectories as the step-level estimators compare them; the cursor row is the shared selected step.
//!
//! The numbers come from [`crate::tui::estimates`], filled before the frame is drawn; drawing only reads them.

use std::sync::Arc;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

use super::{adv_span, block, clamp_add, go, hint, layout, trunc, Component, Hint, ListRegion};
use crate::advantage::estimators::EstimatorKind;
use crate::advantage::RowRef;
use crate::run::truth::TruthAgreement;
use crate::tui::action::Action;
use crate::tui::estimates::{self, a_star_text, ColumnValues, GroupColumns, Truth, PENDING};
use crate::tui::state::{State, View};

pub struct Estimators;

impl Component for Estimators {
    fn title(&self) -> &'static str {
        "Estimators"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        super::groups::Groups.crumbs(state)
    }

    fn hints(&self, _state: &State) -> Vec<Hint> {
        use Action::*;
        vec![
            hint(&[Up, Down], "move", "select a step row of the group (the other views follow)"),
            hint(&[PrevItem, NextItem], "group", "previous / next group of the iteration"),
            hint(&[Left, Right], "columns", "show the estimator columns left / right of these when not all fit"),
            hint(&[ScrollDown, ScrollUp], "scroll agreement", "scroll the agreement panel under the table"),
            hint(&[Open], "episode", "the selected step in the episode view"),
            hint(&[Truth], "truth", "measure this group's Monte-Carlo truth in the background (again: cancel)"),
        ]
    }

    fn highlight(&self, state: &State) -> Option<String> {
        let (cols, i) = (group_columns(state)?, cursor_row(state)?);
        let values: Vec<String> = cols
            .columns
            .iter()
            .filter_map(|c| match &c.values {
                ColumnValues::Computed(values) => Some(format!("{} {}", c.kind, super::adv(*values.get(i)?))),
                ColumnValues::Pending | ColumnValues::Absent(_) => None,
            })
            .collect();
        Some(format!("the selected row's A under each estimator: {}", values.join(", ")))
    }

    fn enter(&self, state: &mut State) {
        state.ui.estimators.panel_scroll = 0;
    }

    fn selects_step(&self) -> bool {
        true
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        render(state, area, buf);
    }

    fn list(&self, state: &State, body: Rect) -> Option<ListRegion> {
        let rect = layout::table_body(areas(state, body).table);
        Some(ListRegion { rect, len: group_rows(state).len(), selected: cursor_row(state).unwrap_or(0) })
    }

    fn scroll_region(&self, state: &State, body: Rect) -> Option<Rect> {
        Some(areas(state, body).panel)
    }

    fn on_action(&self, state: &mut State, a: Action) -> Option<crate::tui::msg::Effects> {
        let ui = &mut state.ui.estimators;
        match a {
            Action::Left => ui.first_column = ui.first_column.saturating_sub(1),
            Action::Right => ui.first_column = (ui.first_column + 1).min(EstimatorKind::ALL.len() - 1),
            Action::Truth => return Some(crate::tui::truth_update::toggle(state)),
            _ => return super::standard(self, state, a),
        }
        Some(crate::tui::msg::Effects::redraw())
    }

    fn move_by(&self, state: &mut State, by: isize) {
        let rows = group_rows(state);
        let Some(&to) = rows.get(clamp_add(cursor_row(state).unwrap_or(0), by, rows.len())) else { return };
        state.ui.sel.traj = state.group_episodes().position(to.episode).unwrap_or(0);
        state.ui.sel.step = to.step as usize;
    }

    fn open(&self, state: &mut State) {
        state.ui.episode.obs_scroll = 0;
        go(state, View::Episode);
    }

    fn back_to(&self) -> View {
        View::Groups
    }

    fn item(&self, state: &mut State, by: isize) {
        super::groups::Groups.item(state, by);
        state.ui.sel.step = 0;
    }

    fn scroll(&self, state: &mut State, by: isize) {
        let max = panel_lines(state, layout::inner(areas(state, super::body(state)).panel).width as usize)
            .len()
            .saturating_sub(layout::inner(areas(state, super::body(state)).panel).height as usize);
        let s = (state.ui.estimators.panel_scroll as isize).saturating_add(by).max(0) as usize;
        state.ui.estimators.panel_scroll = s.min(max);
    }
}

// ---- The group's rows and what was computed for them ----

/// Every step row of the selected episode group.
fn group_rows(state: &State) -> Vec<RowRef> {
    estimates::group_rows(&state.domain, state.ui.sel.group)
}

/// The cursor's index in [`group_rows`].
fn cursor_row(state: &State) -> Option<usize> {
    let r = state.row_ref()?;
    group_rows(state).iter().position(|&x| x == r)
}

/// The selected group's columns, as computed before the frame.
fn group_columns(state: &State) -> Option<Arc<GroupColumns>> {
    state.estimates.group_columns(&state.domain, state.ui.sel.group)
}

fn group_iteration(state: &State) -> Option<i64> {
    estimates::group_iteration(&state.domain, state.ui.sel.group)
}

/// Why an iteration has no truth, or its truth file, as looked at before the frame.
pub fn truth(state: &State, iteration: i64) -> Truth {
    let run = &state.domain.run;
    match state.estimates.truth(&run.dir, iteration) {
        Some(Truth::NotMeasured) => {
            let command = format!("`gigscope truth {} --iteration {iteration}`", run.dir.display());
            Truth::Absent(match state.config.keymap.first_label(Action::Truth) {
                Some(key) => format!("no truth file — press {key} (this group) / {command} (the iteration)"),
                None => format!("no truth file — {command} writes one"),
            })
        }
        Some(truth) => truth.clone(),
        None => Truth::Absent("not looked for yet".into()),
    }
}

// ---- Layout and drawing ----

struct Areas {
    header: Rect,
    table: Rect,
    panel: Rect,
}

const HEADER_LINES: u16 = 2;

fn areas(state: &State, body: Rect) -> Areas {
    let [header, rest] = Layout::vertical([Constraint::Length(HEADER_LINES), Constraint::Min(0)]).areas(body);
    let wanted = panel_lines(state, rest.width.saturating_sub(2) as usize).len() as u16 + 2;
    let panel_h = wanted.min(rest.height / 2).max(3.min(rest.height));
    let [table, panel] = Layout::vertical([Constraint::Min(0), Constraint::Length(panel_h)]).areas(rest);
    Areas { header, table, panel }
}

/// Width of an estimator's column: its values (`-10.512`) and its name; of the truth column (`+0.512±0.081`).
fn value_width(kind: EstimatorKind) -> u16 {
    (kind.name().len() as u16).max(7)
}
const TRUTH_W: u16 = 13;
const ABSENT_TRUTH_W: u16 = 3;

/// The columns that fit `width`: the first estimator shown, how many, and the action column's width (0: none).
fn fit(state: &State, width: u16, truth_present: bool) -> (usize, usize, u16) {
    let gap = super::spacing(state);
    let truth_w = if truth_present { TRUTH_W } else { ABSENT_TRUTH_W };
    let room = width.saturating_sub(4 + 4 + 3 + truth_w + 4 * gap);
    let all = EstimatorKind::ALL.len();
    let span = |kinds: &[EstimatorKind]| kinds.iter().map(|&k| value_width(k) + gap).sum::<u16>();
    // From the user's first column on, as many as fit (at least one); moved left while every column up to the
    // last still fits, so that scrolling never leaves room unused.
    let mut first = state.ui.estimators.first_column.min(all - 1);
    while first > 0 && span(&EstimatorKind::ALL[first - 1..]) <= room {
        first -= 1;
    }
    let end = (first + 1..=all).take_while(|&end| span(&EstimatorKind::ALL[first..end]) <= room).last();
    let end = end.unwrap_or(first + 1);
    let left = room.saturating_sub(span(&EstimatorKind::ALL[first..end]));
    let action_w = if first == 0 && end == all && left >= 12 + gap { left - gap } else { 0 };
    (first, end - first, action_w)
}

fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let Some(cols) = group_columns(state) else { return };
    let iteration = group_iteration(state).unwrap_or(0);
    let truth = truth(state, iteration);
    let a = areas(state, area);
    let rows = group_rows(state);
    let table = &state.domain.derived.table;
    let group = table.episode_groups.get(state.ui.sel.group as usize);
    let header = vec![
        Line::styled(
            trunc(
                &format!(
                    "group {} · iteration {iteration} · {} trajectories · {} step rows",
                    group.map_or("", |g| &*g.name),
                    state.group_episodes().len(),
                    rows.len()
                ),
                area.width as usize,
            ),
            theme.title(),
        ),
        match &state.jobs.truth {
            Some(job) => Line::styled(trunc(&job.describe(), area.width as usize), theme.warn()),
            None => Line::styled(
                trunc(
                    "sg = anchor-group size · A* = Q̂ − V̂ ± se · family estimators at their defaults",
                    area.width as usize,
                ),
                theme.dim(),
            ),
        },
    ];
    Paragraph::new(header).render(a.header, buf);

    let truth_present = matches!(truth, Truth::Present { .. });
    let inner_w = layout::inner(a.table).width;
    let (first, fits, action_w) = fit(state, inner_w, truth_present);
    let shown = &cols.columns[first..first + fits];
    let body = layout::table_body(a.table);
    let selected = cursor_row(state).unwrap_or(0);
    let start = layout::window_start(selected, rows.len(), body.height as usize);
    let group_eps = state.group_episodes();
    let lines = rows.iter().enumerate().skip(start).take(body.height as usize).map(|(i, r)| {
        let ep = estimates::episode(&state.domain, r.episode);
        let traj = group_eps.position(r.episode).map_or("?".into(), |p| (p + 1).to_string());
        let sg = table.anchor_members_of(*r).len();
        let mut cells = vec![Cell::from(traj), Cell::from(r.step.to_string()), Cell::from(sg.to_string())];
        if action_w > 0 {
            cells.push(Cell::from(trunc(&ep.steps[r.step as usize].action, action_w as usize)));
        }
        for c in shown {
            cells.push(match &c.values {
                ColumnValues::Computed(v) => {
                    v.get(i).map_or_else(|| Cell::from("—"), |&v| Cell::from(adv_span(state, v)))
                }
                ColumnValues::Pending => Cell::from(Span::styled("…", theme.dim())),
                ColumnValues::Absent(_) => Cell::from(Span::styled("absent", theme.dim())),
            });
        }
        cells.push(match truth.row(&ep.id, r.step as usize) {
            Some(t) => Cell::from(Span::styled(a_star_text(t), theme.signed(t.a_star))),
            None => Cell::from(Span::styled("—", theme.dim())),
        });
        let row = Row::new(cells);
        if i == selected {
            row.style(theme.selected())
        } else {
            row
        }
    });
    let mut widths = vec![Constraint::Length(4), Constraint::Length(4), Constraint::Length(3)];
    let mut titles: Vec<String> = vec!["traj".into(), "step".into(), "sg".into()];
    if action_w > 0 {
        widths.push(Constraint::Length(action_w));
        titles.push("action".into());
    }
    for c in shown {
        widths.push(Constraint::Length(value_width(c.kind)));
        titles.push(c.kind.name().into());
    }
    widths.push(Constraint::Length(if truth_present { TRUTH_W } else { ABSENT_TRUTH_W }));
    titles.push("A*".into());
    let more = if fits < EstimatorKind::ALL.len() {
        format!(" · estimators {}–{} of {} · ←/→ more", first + 1, first + fits, EstimatorKind::ALL.len())
    } else {
        String::new()
    };
    Table::new(lines, widths)
        .column_spacing(super::spacing(state))
        .header(Row::new(titles).style(theme.title()))
        .block(block(state, format!("Step rows × estimators{more}"), a.table))
        .render(a.table, buf);

    let inner = layout::inner(a.panel);
    let lines = panel_lines(state, inner.width as usize);
    let h = inner.height as usize;
    let skip = state.ui.estimators.panel_scroll.min(lines.len().saturating_sub(h));
    let scrolled = if lines.len() > h {
        format!(" · J/K scroll {}–{}/{}", skip + 1, (skip + h).min(lines.len()), lines.len())
    } else {
        String::new()
    };
    let title = match &truth {
        Truth::Present { file, .. } => {
            format!("Agreement with A* over iteration {iteration} (K = {})", file.header.rollouts)
        }
        Truth::NotMeasured | Truth::Absent(_) => "Truth A* and absent columns".into(),
    };
    Paragraph::new(lines.into_iter().skip(skip).take(h).collect::<Vec<_>>())
        .block(block(state, format!("{title}{scrolled}"), a.panel))
        .render(a.panel, buf);
}

/// The panel under the table: where the truth comes from (or why there is none), each estimator's agreement
/// with it over the iteration, and why an absent column is absent; wrapped to `width`.
fn panel_lines(state: &State, width: usize) -> Vec<Line<'static>> {
    let theme = &state.config.theme;
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut push = |text: &str, style: Style| {
        crate::tui::ui::text::hanging("", text, width, &mut |m, l| out.push(Line::styled(format!("{m}{l}"), style)));
    };
    let Some(iteration) = group_iteration(state) else { return vec![] };
    match truth(state, iteration) {
        Truth::Present { file, path } => {
            let h = &file.header;
            push(
                &format!(
                    "{} · {} of {} groups · {} rows · seed {}",
                    path.display(),
                    h.groups.len(),
                    h.groups_in_iteration,
                    file.rows.len(),
                    h.seed
                ),
                theme.dim(),
            );
            for kind in EstimatorKind::ALL {
                match file.agreements.iter().find(|a| a.estimator == kind.name()) {
                    Some(a) => push(&agreement_text(a), Style::new()),
                    None => push(&format!("{:<10} not in the truth file", kind.name()), theme.dim()),
                }
            }
        }
        Truth::Absent(reason) => push(&format!("A* absent: {reason}"), theme.warn()),
        // [`truth`] puts it in words.
        Truth::NotMeasured => {}
    }
    if let Some(cols) = group_columns(state) {
        for c in &cols.columns {
            match &c.values {
                ColumnValues::Pending => push(&format!("{}: {PENDING} …", c.kind), theme.warn()),
                ColumnValues::Absent(e) => push(&format!("{} absent: {e}", c.kind), theme.dim()),
                ColumnValues::Computed(_) => {}
            }
        }
    }
    out
}

/// One estimator's agreement with A*: Spearman ρ, sign agreement, the error after the best scale fit.
pub fn agreement_text(a: &TruthAgreement) -> String {
    if let Some(e) = &a.error {
        return format!("{:<10} absent: {e}", a.estimator);
    }
    let num = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("—".to_string(), f);
    format!(
        "{:<10} Spearman {} · sign {} · scale-fit RMSE {} (c = {}) · {} rows",
        a.estimator,
        num(a.spearman, &|v| format!("{v:+.3}")),
        num(a.sign_agreement, &|v| format!("{:.0}%", v * 100.0)),
        num(a.rmse, &|v| format!("{v:.3}")),
        num(a.scale, &|v| format!("{v:.3}")),
        a.rows
    )
}
