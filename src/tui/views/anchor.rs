//! Anchor-group view: every step that shares the selected step's anchor state, with the group's mean/std, and
//! the engine's explanation of the selected member's advantage laid out (`crate::advantage::explain`): the
//! headline A first, then the step and episode components, every term with its numbers. The panel scrolls
//! (J/K) when it does not fit. When `gigscope truth` measured the iteration, each member's Monte-Carlo values
//! (Q̂, V̂ and A* ± standard error, `crate::run::truth`) follow its estimates, with the true state each member
//! was in (`s1`, `s2`, … by the environment's fingerprints): the header says how many true states the anchor
//! merges, how far apart their V̂ lie, and how many members get wrong-sign credit (issue 26).

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

use ratatui::layout::Layout;

use super::{adv_span, block, clamp_add, hint, layout, term_text, trunc, Component, Hint, ListRegion};
use crate::advantage::aliasing::is_wrong_sign;
use crate::advantage::Members;
use crate::tui::action::Action;
use crate::tui::estimates::{a_star_text, Truth};
use crate::tui::state::{State, View};

pub struct Anchor;

impl Component for Anchor {
    fn title(&self) -> &'static str {
        "Anchor group"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        super::episode::EpisodeView.crumbs(state)
    }

    fn hints(&self, _state: &State) -> Vec<Hint> {
        use Action::*;
        vec![
            hint(&[Up, Down], "move", "select a member of the anchor group: the panel explains its advantage"),
            hint(&[Open], "go to step", "the selected member's step in its own trajectory"),
            hint(&[ScrollDown, ScrollUp], "scroll formula", "scroll the explanation panel (also the wheel over it)"),
            hint(&[PrevItem, NextItem], "step", "previous / next step of the trajectory"),
            hint(&[Truth], "truth", "measure this group's Monte-Carlo truth in the background (again: cancel)"),
        ]
    }

    fn highlight(&self, state: &State) -> Option<String> {
        let x = state.explanation()?;
        Some(format!("the selected member's {}", term_text(&x.advantage)))
    }

    fn on_action(&self, state: &mut State, a: Action) -> Option<crate::tui::msg::Effects> {
        match a {
            Action::Truth => Some(crate::tui::truth_update::toggle(state)),
            _ => super::standard(self, state, a),
        }
    }

    fn enter(&self, state: &mut State) {
        state.ui.anchor.formula_scroll = 0;
        select_self(state);
    }

    fn selects_step(&self) -> bool {
        true
    }

    fn shows_explanation(&self) -> bool {
        true
    }

    /// The selected step's episode and every member's (one episode group's, so at most its size).
    fn shown_episodes(&self, state: &State) -> Vec<usize> {
        let Some(r) = state.row_ref() else { return Vec::new() };
        let members = state.domain.derived.table.anchor_members_of(r).iter().map(|m| m.episode as usize);
        let mut shown: Vec<usize> = std::iter::once(r.episode as usize).chain(members).collect();
        shown.sort_unstable();
        shown.dedup();
        shown
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        render(state, area, buf);
    }

    fn list(&self, state: &State, body: Rect) -> Option<ListRegion> {
        let len = state.row_ref().map_or(0, |r| state.domain.derived.table.anchor_members_of(r).len());
        let rect = layout::table_body(areas(state, body).members);
        Some(ListRegion { rect, len, selected: state.ui.anchor.member })
    }

    fn scroll_region(&self, state: &State, body: Rect) -> Option<Rect> {
        Some(areas(state, body).formula)
    }

    fn move_by(&self, state: &mut State, by: isize) {
        let n = state.row_ref().map_or(0, |r| state.domain.derived.table.anchor_members_of(r).len());
        state.ui.anchor.member = clamp_add(state.ui.anchor.member, by, n);
    }

    /// Jump to the chosen member's step in its own trajectory.
    fn open(&self, state: &mut State) {
        let Some(r) = state.row_ref() else { return };
        let Some(m) = state.domain.derived.table.anchor_members_of(r).get(state.ui.anchor.member) else {
            return;
        };
        if let Some(t) = state.group_episodes().position(m.episode) {
            state.ui.sel.traj = t;
            state.ui.sel.step = m.step as usize;
            state.ui.episode.obs_scroll = 0;
            state.ui.view = View::Episode;
        }
    }

    fn back_to(&self) -> View {
        View::Episode
    }

    fn item(&self, state: &mut State, by: isize) {
        let n = state.episode_index().map_or(0, |e| state.domain.episodes.at(e).steps.len());
        state.ui.sel.step = clamp_add(state.ui.sel.step, by, n);
        select_self(state);
    }

    fn scroll(&self, state: &mut State, by: isize) {
        let s = (state.ui.anchor.formula_scroll as isize).saturating_add(by).max(0) as usize;
        state.ui.anchor.formula_scroll = s.min(formula_scroll_max(state));
    }
}

/// Select the selected step itself among the members of its anchor group.
fn select_self(state: &mut State) {
    if let Some(r) = state.row_ref() {
        state.ui.anchor.member =
            state.domain.derived.table.anchor_members_of(r).iter().position(|m| m == r).unwrap_or(0);
    }
}

pub struct AnchorAreas {
    pub header: Rect,
    pub members: Rect,
    pub formula: Rect,
}

/// The members table gets the rows its members need up to a third of the body (at least 4), the explanation
/// the rest, up to what it needs: on a small terminal the explanation keeps most of the room (it scrolls).
pub fn areas(state: &State, body: Rect) -> AnchorAreas {
    let header_h = header_lines(state, body.width).len() as u16;
    let [header, rest] = Layout::vertical([Constraint::Length(header_h), Constraint::Min(0)]).areas(body);
    let n = state.row_ref().map_or(0, |r| state.domain.derived.table.anchor_members_of(r).len()) as u16;
    let members_min = (n + 3).min(rest.height / 3).max(4).min(rest.height);
    let wanted = formula_height(state, rest.width);
    let formula_h = wanted.min(rest.height.saturating_sub(members_min)).max(3.min(rest.height));
    let [members, formula] = Layout::vertical([Constraint::Min(0), Constraint::Length(formula_h)]).areas(rest);
    AnchorAreas { header, members, formula }
}

/// Most lines the anchor text takes in the header (it wraps; a longer one is cut, whole in the episode view).
const ANCHOR_LINES: usize = 3;

/// The header: the group's numbers, and the anchor (the state the members share), wrapped.
fn header_lines(state: &State, width: u16) -> Vec<Line<'static>> {
    let Some(r) = state.row_ref() else { return vec![] };
    let theme = &state.config.theme;
    let t = &state.domain.derived.table;
    let ag = t.anchor_group_of(r);
    let anchor_text = match state.domain.episode(r.episode as usize) {
        Ok(ep) => ep.steps.get(r.step as usize).map_or(String::new(), |s| s.anchor_key().to_string()),
        Err(err) => format!("(cannot read it back: {err})"),
    };
    let mut out = Vec::new();
    let title = format!(
        "anchor group #{} · {} member(s) · group {} · mean R {:.4} · std {:.4}",
        t.row(r).step_group,
        ag.members.len(),
        t.episode_groups[ag.episode_group as usize].name,
        ag.mean,
        ag.std
    );
    crate::tui::ui::text::hanging("", &title, width as usize, &mut |m, l| {
        out.push(Line::styled(format!("{m}{l}"), theme.title()))
    });
    let mut anchor = Vec::new();
    crate::tui::ui::text::hanging("", &format!("anchor: {anchor_text}"), width as usize, &mut |m, l| {
        anchor.push(format!("{m}{l}"))
    });
    if anchor.len() > ANCHOR_LINES {
        anchor.truncate(ANCHOR_LINES);
        if let Some(last) = anchor.last_mut() {
            *last = trunc(&format!("{last} …"), width as usize);
        }
    }
    out.extend(anchor.into_iter().map(|l| Line::styled(l, theme.dim())));
    let iteration = state.domain.episodes.at(r.episode as usize).iteration;
    let truth = super::estimators::truth(state, iteration);
    let states = member_states(state, &truth, ag.members);
    if let Some(line) = states.describe() {
        let style = if states.states > 1 || states.wrong_sign > 0 { theme.warn() } else { theme.dim() };
        out.push(Line::styled(trunc(&line, width as usize), style));
    }
    if let Some(job) = &state.jobs.truth {
        out.push(Line::styled(trunc(&job.describe(), width as usize), theme.warn()));
    }
    out
}

/// The true states among an anchor group's measured members, by their truth rows' fingerprints.
struct MemberStates {
    /// Each member's state, numbered from 1 in order of first appearance; `None`: not measured, or measured
    /// without a fingerprint.
    number: Vec<Option<usize>>,
    states: usize,
    measured: usize,
    /// max − min of V̂ over the states.
    v_spread: f64,
    /// Members whose A_S has the opposite sign to A* beyond 2 se.
    wrong_sign: usize,
}

impl MemberStates {
    fn describe(&self) -> Option<String> {
        if self.states == 0 {
            return None;
        }
        let merged = if self.states == 1 {
            "one true state (no aliasing)".to_owned()
        } else {
            format!("{} true states: the anchor aliases · V̂ spread {:.3}", self.states, self.v_spread)
        };
        Some(format!(
            "truth: {merged} among {} measured member(s) · {} wrong-sign (A_S vs A* beyond 2 se)",
            self.measured, self.wrong_sign
        ))
    }
}

fn member_states(state: &State, truth: &Truth, members: Members<'_>) -> MemberStates {
    let t = &state.domain.derived.table;
    let mut fingerprints: Vec<(&str, f64)> = Vec::new();
    let mut out = MemberStates { number: Vec::new(), states: 0, measured: 0, v_spread: 0.0, wrong_sign: 0 };
    for m in members {
        let id = state.domain.episodes.at(m.episode as usize).id.joined();
        let row = truth.row(&id, m.step as usize);
        out.measured += usize::from(row.is_some());
        out.wrong_sign += usize::from(row.is_some_and(|tr| is_wrong_sign(t.row(m).step_advantage, tr)));
        let number = row.and_then(|tr| {
            let fingerprint = tr.state.as_deref()?;
            Some(match fingerprints.iter().position(|(f, _)| *f == fingerprint) {
                Some(i) => i + 1,
                None => {
                    fingerprints.push((fingerprint, tr.v));
                    fingerprints.len()
                }
            })
        });
        out.number.push(number);
    }
    out.states = fingerprints.len();
    let (lo, hi) =
        fingerprints.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), f| (lo.min(f.1), hi.max(f.1)));
    out.v_spread = if fingerprints.is_empty() { 0.0 } else { hi - lo };
    out
}

/// How far the explanation panel can scroll.
pub fn formula_scroll_max(state: &State) -> usize {
    let panel = layout::inner(areas(state, super::body(state)).formula);
    formula_lines(state, panel.width as usize).len().saturating_sub(panel.height as usize)
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let Some(r) = state.row_ref() else { return };
    let theme = &state.config.theme;
    let t = &state.domain.derived.table;
    let ag = t.anchor_group_of(r);
    let a = areas(state, area);
    Paragraph::new(header_lines(state, area.width)).render(a.header, buf);

    let body = layout::table_body(a.members);
    let start = layout::window_start(state.ui.anchor.member, ag.members.len(), body.height as usize);
    let group_eps = state.group_episodes();
    // With a truth file for the iteration, Q̂, V̂ and A* ± se follow each member's estimates; on a narrow
    // terminal the ids keep their distinguishing end and the marker is a glyph, so the numbers fit.
    let iteration = state.domain.episodes.at(r.episode as usize).iteration;
    let truth = super::estimators::truth(state, iteration);
    let with_truth = matches!(truth, Truth::Present { .. });
    let states = member_states(state, &truth, ag.members);
    let narrow = with_truth && area.width < 100;
    let id_w = ag
        .members
        .iter()
        .map(|m| state.domain.episodes.at(m.episode as usize).id.joined().chars().count())
        .max()
        .unwrap_or(7);
    let id_w = if narrow { 7 } else { id_w.clamp(7, (area.width as usize / 3).max(12)) } as u16;
    let mut widths = vec![
        Constraint::Length(4),
        Constraint::Length(id_w),
        Constraint::Length(4),
        Constraint::Min(if narrow { 6 } else { 10 }),
        Constraint::Length(8),
        Constraint::Length(7),
    ];
    let mut titles = vec!["traj", "episode", "step", "action", "R_t", "A_S"];
    if with_truth {
        if !narrow {
            widths.push(Constraint::Length(5));
            titles.push("state");
        }
        widths.extend([Constraint::Length(7), Constraint::Length(7), Constraint::Length(13)]);
        titles.extend(["Q̂", "V̂", "A* ± se"]);
    }
    widths.push(Constraint::Length(if narrow { 1 } else { 11 }));
    titles.push("");
    // The action cut to its column with `…`, so that a cut shows.
    let action_w = layout::column_widths(&widths, super::spacing(state), body.width)[3];
    let rows = ag.members.iter().enumerate().skip(start).take(body.height as usize).map(|(i, m)| {
        let ep = &state.domain.episodes.at(m.episode as usize);
        let row = t.row(m);
        let traj = group_eps.position(m.episode).map_or("?".into(), |p| (p + 1).to_string());
        let this = match (m == r, narrow) {
            (false, _) => "",
            (true, false) => "◀ this step",
            (true, true) => "◀",
        };
        let mut cells = vec![
            Cell::from(traj),
            Cell::from(super::trunc_start(&ep.id.joined(), id_w as usize)),
            Cell::from(m.step.to_string()),
            Cell::from(match state.domain.episode(m.episode as usize) {
                Ok(full) => full.steps.get(m.step as usize).map_or(String::new(), |s| trunc(&s.action, action_w)),
                Err(_) => trunc("(cannot read it back)", action_w),
            }),
            Cell::from(format!("{:.4}", row.ret)),
            Cell::from(adv_span(state, row.step_advantage)),
        ];
        if with_truth {
            let measured = truth.row(&ep.id.joined(), m.step as usize);
            // The true state's number, where there is room for it (the header counts the states anyway).
            if !narrow {
                let number = measured.and(states.number[i]).map_or_else(|| "—".into(), |n| format!("s{n}"));
                cells.push(Cell::from(number));
            }
            cells.extend(match measured {
                Some(tr) => [
                    Cell::from(format!("{:.3}", tr.q)),
                    Cell::from(format!("{:.3}", tr.v)),
                    Cell::from(Span::styled(a_star_text(tr), theme.signed(tr.a_star))),
                ],
                None => ["—", "—", "not measured"].map(|s| Cell::from(Span::styled(s, theme.dim()))),
            });
        }
        cells.push(Cell::from(this));
        let r = Row::new(cells);
        if i == state.ui.anchor.member {
            r.style(theme.selected())
        } else {
            r
        }
    });
    let shown = layout::rows_title("Members", start, body.height as usize, ag.members.len());
    let title = format!("{shown} (every trajectory of the group, any time step)");
    Table::new(rows, widths)
        .column_spacing(super::spacing(state))
        .header(Row::new(titles).style(theme.title()))
        .block(block(state, title, a.members))
        .render(a.members, buf);

    formula_panel(state, a.formula, buf);
}

/// The explanation of the selected member's advantage, scrolled by the user's formula scroll.
pub fn formula_panel(state: &State, area: Rect, buf: &mut Buffer) {
    let inner = layout::inner(area);
    let lines = formula_lines(state, inner.width as usize);
    let h = inner.height as usize;
    let skip = state.ui.anchor.formula_scroll.min(lines.len().saturating_sub(h));
    let more = if lines.len() > h {
        format!(" · J/K scroll {}–{}/{}", skip + 1, (skip + h).min(lines.len()), lines.len())
    } else {
        String::new()
    };
    let shown: Vec<Line> = lines.into_iter().skip(skip).take(h).collect();
    Paragraph::new(shown).block(block(state, format!("Where the numbers come from{more}"), area)).render(area, buf);
}

/// How many rows the formula panel needs at `width` columns (borders included).
pub fn formula_height(state: &State, width: u16) -> u16 {
    formula_lines(state, width.saturating_sub(2) as usize).len() as u16 + 2
}

/// The panel's lines at `width` columns, wrapped (continuations indented).
pub fn formula_lines(state: &State, width: usize) -> Vec<Line<'static>> {
    let theme = &state.config.theme;
    let Some(x) = state.explanation() else { return vec![] };
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut push = |text: &str, style: Style| {
        crate::tui::ui::text::hanging("", text, width, &mut |m, l| out.push(Line::styled(format!("{m}{l}"), style)));
    };
    let estimator = x.estimator.name();
    push(&format!("{} ({estimator})", term_text(&x.advantage)), theme.title());
    if let Some(note) = &x.advantage.note {
        push(&format!("↳ {note}"), theme.accent());
    }
    for section in &x.sections {
        push(&format!("── {}", section.title), theme.accent());
        for term in &section.terms {
            let style = if term.used { Style::new() } else { theme.dim() };
            push(&term_text(term), style);
            if let Some(note) = &term.note {
                push(&format!("↳ {note}"), theme.dim());
            }
        }
    }
    for note in &x.notes {
        push(&format!("· {note}"), theme.dim());
    }
    out
}
