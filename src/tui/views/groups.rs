//! Group view: one episode group's trajectories as rows, each with a heatmap of its steps' combined advantage.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

use ratatui::layout::Layout;

use super::{adv, block, clamp_add, go, hint, layout, trunc, Component, Hint, ListRegion};
use crate::run::bursts::BurstSpan;
use crate::tui::action::Action;
use crate::tui::state::{State, View};

pub struct Groups;

impl Component for Groups {
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
        let row = state.domain.derived.table.get_row(e, 0)?;
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

    /// The selected group's first episode, whose task the header shows.
    fn shown_episodes(&self, state: &State) -> Vec<usize> {
        state.group_episodes().first().map(|e| e as usize).into_iter().collect()
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        let a = areas(state, area);
        if a.narrow {
            group_strip(state, a.groups, buf);
        } else {
            group_list(state, a.groups, buf);
        }
        header(state, a.header, buf);
        trajectories(state, a.table, buf);
        Paragraph::new(Span::styled(LEGEND, state.config.theme.dim()))
            .wrap(ratatui::widgets::Wrap { trim: true })
            .render(a.legend, buf);
    }

    fn list(&self, state: &State, body: Rect) -> Option<ListRegion> {
        let rect = layout::table_body(areas(state, body).table);
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
    /// The iteration's groups: a pane on the left when wide, a strip above the group when narrow.
    pub groups: Rect,
    pub narrow: bool,
    pub header: Rect,
    pub table: Rect,
    pub legend: Rect,
}

/// The legend under the heatmap.
const LEGEND: &str = "cell = sign of A and |A| 1–9 of the max |A| · 00 A = 0 · ! (or underlined) A_E and ω·A_S \
                      disagree · ∅ zero-variance group";

pub fn areas(state: &State, body: Rect) -> GroupAreas {
    let narrow = body.width < 110;
    let (groups, right) = if narrow {
        let [strip, rest] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(body);
        (strip, rest)
    } else {
        let [l, r] = Layout::horizontal([Constraint::Length(30), Constraint::Min(0)]).areas(body);
        (l, r)
    };
    let mut legend_lines = 0u16;
    crate::tui::ui::text::wrap(LEGEND, right.width as usize, &mut |_| legend_lines += 1);
    let header_h = header_lines(state, right.width).len() as u16;
    let [header, table, legend] = Layout::vertical([
        Constraint::Length(header_h.min(4)),
        Constraint::Min(0),
        Constraint::Length(legend_lines.clamp(1, 2)),
    ])
    .areas(right);
    GroupAreas { groups, narrow, header, table, legend }
}

fn group_list(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let groups = state.current_groups();
    let body = layout::table_body(area);
    let sel = groups.iter().position(|&g| g == state.ui.sel.group).unwrap_or(0);
    let start = layout::window_start(sel, groups.len(), body.height as usize);
    let t = &state.domain.derived.table;
    // The burst column (`b2`) only on runs whose bursts tell groups apart; the name gives it room.
    let bursts = state.domain.marked_bursts();
    let gap = super::spacing(state);
    let name_w = if bursts.is_empty() { 14 } else { 16 - 3 * gap };
    let rows = groups.iter().enumerate().skip(start).take(body.height as usize).map(|(i, &g)| {
        let (eg, members) = (&t.episode_groups[g as usize], t.group_episodes(g as usize));
        let ok = members.iter().filter(|&e| state.domain.episodes.at(e as usize).success).count();
        let mut cells = vec![
            trunc(&eg.name, name_w as usize),
            format!("{}/{}", ok, members.len()),
            if eg.zero_variance.is_some() { "∅".into() } else { String::new() },
        ];
        if !bursts.is_empty() {
            cells.push(state.domain.group_burst(&bursts, g).map(BurstSpan::mark).unwrap_or_default());
        }
        let row = Row::new(cells);
        if i == sel {
            row.style(theme.selected())
        } else {
            row
        }
    });
    let mut widths = vec![Constraint::Length(name_w), Constraint::Length(7), Constraint::Length(2)];
    let mut header = vec!["group", "ok", ""];
    if !bursts.is_empty() {
        widths.push(Constraint::Length(3));
        header.push("bst");
    }
    Table::new(rows, widths)
        .column_spacing(gap)
        .header(Row::new(header).style(theme.title()))
        .block(block(state, format!("Groups ({})", groups.len()), area))
        .render(area, buf);
}

/// On a narrow terminal: the iteration's groups in one line, the selected one highlighted, scrolled to keep it
/// in view.
fn group_strip(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let groups = state.current_groups();
    let t = &state.domain.derived.table;
    let sel = groups.iter().position(|&g| g == state.ui.sel.group).unwrap_or(0);
    let bursts = state.domain.marked_bursts();
    let label = |g: u32| {
        let (eg, members) = (&t.episode_groups[g as usize], t.group_episodes(g as usize));
        let ok = members.iter().filter(|&e| state.domain.episodes.at(e as usize).success).count();
        let burst = state.domain.group_burst(&bursts, g).map_or(String::new(), |b| format!(" {}", BurstSpan::mark(b)));
        format!(" {} {ok}/{}{}{burst} ", eg.name, members.len(), if eg.zero_variance.is_some() { " ∅" } else { "" })
    };
    let width = area.width as usize;
    let head = format!("groups ({}/{}):", sel + 1, groups.len());
    // Start far enough back that the selected group fits.
    let mut start = sel;
    let mut used = head.chars().count() + label(groups.get(sel).copied().unwrap_or(0)).chars().count();
    while start > 0 && used + label(groups[start - 1]).chars().count() + 2 <= width {
        start -= 1;
        used += label(groups[start]).chars().count();
    }
    let mut spans = vec![Span::styled(head, theme.title())];
    if start > 0 {
        spans.push(Span::styled("…", theme.dim()));
    }
    for (i, &g) in groups.iter().enumerate().skip(start) {
        let style = if i == sel { theme.selected() } else { Style::new() };
        spans.push(Span::styled(label(g), style));
    }
    Paragraph::new(crate::tui::ui::widgets::fit_line(Line::from(spans), width)).render(area, buf);
}

/// The group header's lines at `width` columns: the group's numbers, the zero-variance note, the task, wrapped.
fn header_lines(state: &State, width: u16) -> Vec<Line<'static>> {
    let theme = &state.config.theme;
    let Some(g) = state.domain.derived.table.episode_groups.get(state.ui.sel.group as usize) else { return vec![] };
    let members = state.group_episodes();
    let first = members.first().map(|e| state.domain.episode(e as usize));
    let instruction = match &first {
        Some(Ok(episode)) => super::task_text(episode),
        Some(Err(err)) => format!("(cannot read it back: {err})"),
        None => String::new(),
    };
    let pos = state.current_groups().iter().position(|&x| x == state.ui.sel.group).map_or(0, |p| p + 1);
    let mut out = Vec::new();
    let mut push = |text: String, style: Style| {
        crate::tui::ui::text::hanging("", &text, width as usize, &mut |m, l| {
            out.push(Line::styled(format!("{m}{l}"), style))
        });
    };
    let bursts = state.domain.marked_bursts();
    let burst = state
        .domain
        .group_burst(&bursts, state.ui.sel.group)
        .map_or(String::new(), |b| format!(" · burst {}", BurstSpan::mark(b)));
    push(
        format!(
            "group {} ({pos}/{}) · {} trajectories · pool {} · mean {:.3} · std {:.3}{burst}",
            g.name,
            state.current_groups().len(),
            members.len(),
            g.pool_size,
            g.mean,
            g.std
        ),
        theme.title(),
    );
    if let Some(why) = g.zero_variance {
        push(format!("∅ zero variance: {}", why.describe()), theme.warn());
    }
    push(format!("task: {instruction}"), theme.dim());
    out
}

fn header(state: &State, area: Rect, buf: &mut Buffer) {
    Paragraph::new(header_lines(state, area.width)).render(area, buf);
}

fn trajectories(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let t = &state.domain.derived.table;
    let eps = state.group_episodes();
    let body = layout::table_body(area);
    // The largest |A| of the group scales the heatmap digits.
    let max = eps
        .iter()
        .flat_map(|e| t.episode_rows(e as usize).into_iter().map(|r| r.advantage.abs()))
        .fold(0.0f64, f64::max);
    // The widest heatmap cell that shows every step of the longest trajectory: sign, digit, the disagreement
    // flag and a gap; then without the gap; then two columns with the flag as an underline.
    let longest = eps.iter().map(|e| t.episode_rows(e as usize).len()).max().unwrap_or(0);
    let gap = super::spacing(state) as usize;
    let id_w = eps.iter().map(|e| state.domain.episodes.at(e as usize).id.joined().chars().count()).max().unwrap_or(7);
    let fixed = |id: usize| 3 + id + 7 + 2 + 3 + 7 + 6 * gap;
    let avail = |id: usize| (body.width as usize).saturating_sub(fixed(id));
    let id_w = (1..=id_w.clamp(7, 24)).rev().find(|&w| w <= 8 || avail(w) >= longest * 3).unwrap_or(7);
    let cell = [4usize, 3, 2].into_iter().find(|c| avail(id_w) >= longest * c).unwrap_or(2);
    let cells = avail(id_w) / cell;
    let start = layout::window_start(state.ui.sel.traj, eps.len(), body.height as usize);
    let omega = state.domain.settings.omega;
    let rows = eps.iter().enumerate().skip(start).take(body.height as usize).map(|(i, e)| {
        let ep = &state.domain.episodes.at(e as usize);
        let rows = t.episode_rows(e as usize);
        let a_e = rows.first().map_or(0.0, |r| r.episode_advantage);
        let shown = if rows.len() > cells { cells.saturating_sub(1) } else { rows.len() };
        let mut heat: Vec<Span> = rows
            .iter()
            .take(shown)
            .map(|r| {
                let sign = if r.advantage > 0.0 {
                    '+'
                } else if r.advantage < 0.0 {
                    '−'
                } else {
                    '0'
                };
                let digit = if max > 0.0 && r.advantage != 0.0 {
                    ((r.advantage.abs() / max * 9.0).round() as u32).clamp(1, 9)
                } else {
                    0
                };
                let step_part = omega * r.step_advantage;
                let disagree = r.episode_advantage * step_part < 0.0;
                let flag = if disagree { "!" } else { " " };
                let (text, style) = match cell {
                    4 => (format!("{sign}{digit}{flag} "), theme.heat(r.advantage, max)),
                    3 => (format!("{sign}{digit}{flag}"), theme.heat(r.advantage, max)),
                    _ => {
                        let style = theme.heat(r.advantage, max);
                        let style =
                            if disagree { style.add_modifier(ratatui::style::Modifier::UNDERLINED) } else { style };
                        (format!("{sign}{digit}"), style)
                    }
                };
                Span::styled(text, style)
            })
            .collect();
        if rows.len() > shown {
            heat.push(Span::styled(format!("+{}", rows.len() - shown), theme.dim()));
        }
        let row = Row::new(vec![
            Cell::from((i + 1).to_string()),
            Cell::from(super::trunc_start(&ep.id.joined(), id_w)),
            Cell::from(format!("{:.3}", ep.total_reward())),
            Cell::from(if ep.success { "✓" } else { "✗" }),
            Cell::from(ep.steps.len().to_string()),
            Cell::from(Span::styled(adv(a_e), theme.signed(a_e))),
            Cell::from(Line::from(heat)),
        ]);
        if i == state.ui.sel.traj {
            row.style(theme.selected())
        } else {
            row.style(Style::new())
        }
    });
    Table::new(
        rows,
        [
            Constraint::Length(3),
            Constraint::Length(id_w as u16),
            Constraint::Length(7),
            Constraint::Length(2),
            Constraint::Length(3),
            Constraint::Length(7),
            Constraint::Min(0),
        ],
    )
    .column_spacing(super::spacing(state))
    .header(Row::new(["#", "episode", "return", "ok", "len", "A_E", "A per step (heatmap)"]).style(theme.title()))
    .block(block(state, format!("Trajectories · max |A| {max:.3}"), area))
    .render(area, buf);
}
