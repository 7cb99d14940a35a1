//! Group view: one episode group's trajectories as rows, each with a heatmap of its steps' combined advantage.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

use ratatui::layout::Layout;

use super::{adv, block, clamp_add, go, hint, layout, trunc, Component, Hint, ListRegion};
use crate::tui::action::Action;
use crate::tui::state::{State, View};

/// Width of one heatmap cell: sign, magnitude digit, disagreement flag, gap.
const CELL: usize = 4;

pub struct Groups;

impl Component for Groups {
    fn view(&self) -> View {
        View::Groups
    }

    fn title(&self) -> &'static str {
        "Groups"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        let mut v = super::overview::Overview.crumbs(state);
        if let Some(g) = state.domain.derived.table.episode_groups.get(state.ui.sel.group as usize) {
            v.push(format!("group {}", g.name));
        }
        v
    }

    fn hints(&self, _state: &State) -> Vec<Hint> {
        use Action::*;
        vec![
            hint(&[Up, Down], "move", "select a trajectory of the group"),
            hint(&[Open], "episode", "the selected trajectory's steps"),
            hint(&[PrevItem, NextItem], "group", "previous / next group of the iteration"),
            hint(&[Compare], "compare", "the selected trajectory beside another of the group"),
        ]
    }

    fn highlight(&self, state: &State) -> Option<String> {
        let e = state.episode_index()?;
        let eg = state.domain.derived.table.episode_group_of(e);
        let row = state.domain.derived.table.episode_rows(e).first()?;
        Some(format!(
            "trajectory {}: A_E {} = its score {:.3} against the group's baseline {:.3} (pool of {}); the cells are each step's A",
            state.ui.sel.traj + 1,
            adv(row.episode_advantage),
            row.score,
            eg.baseline,
            eg.pool_size
        ))
    }

    fn selects_step(&self) -> bool {
        true
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        let a = areas(area);
        if let Some(g) = a.groups {
            group_list(state, g, buf);
        }
        header(state, a.header, buf);
        trajectories(state, a.table, buf);
        Paragraph::new(Line::from(vec![Span::styled(
            "cell = sign of A, |A| 1–9 of the max · 00 A = 0 · ! A_E and ω·A_S disagree · ∅ zero-variance group",
            state.config.theme.dim(),
        )]))
        .render(a.legend, buf);
    }

    fn list(&self, state: &State, body: Rect) -> Option<ListRegion> {
        let rect = layout::table_body(areas(body).table);
        Some(ListRegion { rect, len: state.group_episodes().len(), selected: state.ui.sel.traj })
    }

    fn move_by(&self, state: &mut State, by: isize) {
        state.ui.sel.traj = clamp_add(state.ui.sel.traj, by, state.group_episodes().len());
    }

    fn open(&self, state: &mut State) {
        state.ui.sel.step = 0;
        state.ui.episode.obs_scroll = 0;
        go(state, View::Episode);
    }

    fn item(&self, state: &mut State, by: isize) {
        let groups = state.current_groups();
        let pos = groups.iter().position(|&g| g == state.ui.sel.group).unwrap_or(0);
        if let Some(&g) = groups.get(clamp_add(pos, by, groups.len())) {
            state.ui.sel.group = g;
            state.ui.sel.traj = 0;
            state.ui.compare.other = 0;
        }
    }
}

pub struct GroupAreas {
    pub groups: Option<Rect>,
    pub header: Rect,
    pub table: Rect,
    pub legend: Rect,
}

pub fn areas(body: Rect) -> GroupAreas {
    let (groups, right) = if body.width >= 110 {
        let [l, r] = Layout::horizontal([Constraint::Length(30), Constraint::Min(0)]).areas(body);
        (Some(l), r)
    } else {
        (None, body)
    };
    let [header, table, legend] =
        Layout::vertical([Constraint::Length(3), Constraint::Min(0), Constraint::Length(1)]).areas(right);
    GroupAreas { groups, header, table, legend }
}

fn group_list(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let groups = state.current_groups();
    let body = layout::table_body(area);
    let sel = groups.iter().position(|&g| g == state.ui.sel.group).unwrap_or(0);
    let start = layout::window_start(sel, groups.len(), body.height as usize);
    let t = &state.domain.derived.table;
    let rows = groups.iter().enumerate().skip(start).take(body.height as usize).map(|(i, &g)| {
        let eg = &t.episode_groups[g as usize];
        let ok = eg.episodes.iter().filter(|&&e| state.domain.run.episodes[e as usize].success()).count();
        let row = Row::new(vec![
            trunc(&eg.name, 14),
            format!("{}/{}", ok, eg.episodes.len()),
            if eg.zero_variance { "∅".into() } else { String::new() },
        ]);
        if i == sel { row.style(theme.selected()) } else { row }
    });
    Table::new(rows, [Constraint::Length(14), Constraint::Length(7), Constraint::Length(2)])
        .header(Row::new(["group", "ok", ""]).style(theme.title()))
        .block(block(state, format!("Groups ({})", groups.len())))
        .render(area, buf);
}

fn header(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let Some(g) = state.domain.derived.table.episode_groups.get(state.ui.sel.group as usize) else { return };
    let instruction = g.episodes.first().map_or("", |&e| state.domain.run.episodes[e as usize].instruction());
    let pos = state.current_groups().iter().position(|&x| x == state.ui.sel.group).map_or(0, |p| p + 1);
    let mut l1 = vec![
        Span::styled(format!("group {} ", g.name), theme.title()),
        Span::raw(format!(
            "({pos}/{}) · {} trajectories · pool {} · mean {:.3} · std {:.3}",
            state.current_groups().len(),
            g.episodes.len(),
            g.pool_size,
            g.mean,
            g.std
        )),
    ];
    if g.zero_variance {
        l1.push(Span::styled("  ∅ zero variance: every trajectory has the same return, A_E = 0", theme.warn()));
    }
    let lines = vec![Line::from(l1), Line::from(Span::styled(format!("task: {instruction}"), theme.dim()))];
    Paragraph::new(lines).render(area, buf);
}

fn trajectories(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let t = &state.domain.derived.table;
    let eps = state.group_episodes();
    let body = layout::table_body(area);
    // The largest |A| of the group scales the heatmap digits.
    let max = eps
        .iter()
        .flat_map(|&e| t.episode_rows(e as usize).iter().map(|r| r.advantage.abs()))
        .fold(0.0f64, f64::max);
    const FIXED: usize = 3 + 12 + 8 + 3 + 4 + 8 + 6;
    let cells = (body.width as usize).saturating_sub(FIXED) / CELL;
    let start = layout::window_start(state.ui.sel.traj, eps.len(), body.height as usize);
    let omega = state.domain.settings.omega;
    let rows = eps.iter().enumerate().skip(start).take(body.height as usize).map(|(i, &e)| {
        let ep = &state.domain.run.episodes[e as usize];
        let rows = t.episode_rows(e as usize);
        let a_e = rows.first().map_or(0.0, |r| r.episode_advantage);
        let mut heat: Vec<Span> = rows
            .iter()
            .take(cells)
            .map(|r| {
                let sign = if r.advantage > 0.0 { '+' } else if r.advantage < 0.0 { '−' } else { '0' };
                let digit = if max > 0.0 && r.advantage != 0.0 {
                    ((r.advantage.abs() / max * 9.0).round() as u32).clamp(1, 9)
                } else {
                    0
                };
                let step_part = omega * r.step_advantage;
                let disagree = r.episode_advantage * step_part < 0.0;
                let text = format!("{sign}{digit}{} ", if disagree { '!' } else { ' ' });
                Span::styled(text, theme.heat(r.advantage, max))
            })
            .collect();
        if rows.len() > cells {
            heat.push(Span::raw("…"));
        }
        let row = Row::new(vec![
            Cell::from((i + 1).to_string()),
            Cell::from(trunc(&ep.id, 12)),
            Cell::from(format!("{:.3}", ep.total_reward())),
            Cell::from(if ep.success() { "✓" } else { "✗" }),
            Cell::from(ep.steps.len().to_string()),
            Cell::from(Span::styled(adv(a_e), theme.signed(a_e))),
            Cell::from(Line::from(heat)),
        ]);
        if i == state.ui.sel.traj { row.style(theme.selected()) } else { row.style(Style::new()) }
    });
    Table::new(
        rows,
        [
            Constraint::Length(3),
            Constraint::Length(12),
            Constraint::Length(8),
            Constraint::Length(3),
            Constraint::Length(4),
            Constraint::Length(8),
            Constraint::Min(0),
        ],
    )
    .header(Row::new(["#", "episode", "return", "ok", "len", "A_E", "A per step (heatmap)"]).style(theme.title()))
    .block(block(state, format!("Trajectories · max |A| {max:.3}")))
    .render(area, buf);
}
