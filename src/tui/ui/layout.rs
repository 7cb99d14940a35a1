//! Where each view puts its panes, as pure functions of the state and the terminal size. Rendering draws into
//! these rectangles and `update` maps mouse clicks through the same ones, so a click lands on what was drawn.

use ratatui::layout::{Constraint, Layout, Rect};

use crate::tui::state::{State, View};

/// Breadcrumb, body, status bar, hint bar.
pub fn root(area: Rect) -> [Rect; 4] {
    Layout::vertical([Constraint::Length(1), Constraint::Min(0), Constraint::Length(1), Constraint::Length(1)])
        .areas(area)
}

/// The most rows a message takes (status and hint bar together, then up to two more from the body).
pub const MESSAGE_ROWS: usize = 4;

/// The lines of the one-line message wrapped to `width`, at most [`MESSAGE_ROWS`].
pub fn message_lines(state: &State, width: u16) -> Vec<String> {
    let Some(msg) = state.message.as_deref().filter(|_| state.input.is_none()) else { return vec![] };
    let mut lines = Vec::new();
    super::episode::hanging("", msg, width as usize, &mut |m, l| lines.push(format!("{m}{l}")));
    if lines.len() > MESSAGE_ROWS {
        lines.truncate(MESSAGE_ROWS);
        if let Some(last) = lines.last_mut() {
            *last = super::trunc(&format!("{last} …"), width as usize);
        }
    }
    lines
}

/// Breadcrumb, body, status bar, hint bar of the state's screen: a message longer than the status bar wraps
/// into the hint bar's row (it goes with the next key) and, if it must, a little of the body.
pub fn frame(state: &State, area: Rect) -> [Rect; 4] {
    let [crumb, body, status, hints] = root(area);
    let n = message_lines(state, area.width).len() as u16;
    if n <= 1 {
        return [crumb, body, status, hints];
    }
    let footer = n.max(2).min(body.height + 2);
    let body = Rect { height: body.height + 2 - footer, ..body };
    let status = Rect { y: body.y + body.height, height: footer, ..status };
    [crumb, body, status, Rect { y: status.y + footer, height: 0, ..hints }]
}

/// The state's screen.
pub fn screen(state: &State) -> Rect {
    Rect::new(0, 0, state.size.0, state.size.1)
}

/// First visible row of a list of `len` rows showing `height` rows with row `sel` selected: the selection is
/// kept in the middle once the list scrolls, so the result depends only on these three numbers.
pub fn window_start(sel: usize, len: usize, height: usize) -> usize {
    if height == 0 || len <= height {
        return 0;
    }
    sel.saturating_sub(height / 2).min(len - height)
}

/// Inside of a bordered block.
pub fn inner(r: Rect) -> Rect {
    Rect { x: r.x + 1, y: r.y + 1, width: r.width.saturating_sub(2), height: r.height.saturating_sub(2) }
}

/// The rows of a bordered table below its header line.
pub fn table_body(r: Rect) -> Rect {
    let i = inner(r);
    Rect { y: i.y + 1, height: i.height.saturating_sub(1), ..i }
}

pub struct OverviewAreas {
    pub table: Rect,
    pub charts: Rect,
    pub histogram: Rect,
    pub metrics: Option<Rect>,
}

pub fn overview(state: &State, body: Rect) -> OverviewAreas {
    let wanted = state.derived.iterations.len() as u16 + 3;
    let table_h = wanted.min((body.height / 2).max(5)).min(body.height);
    let [table, bottom] = Layout::vertical([Constraint::Length(table_h), Constraint::Min(0)]).areas(body);
    let [charts, right] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(bottom);
    let (histogram, metrics) = if state.run.metrics.is_empty() {
        (right, None)
    } else {
        let [h, m] = Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(right);
        (h, Some(m))
    };
    OverviewAreas { table, charts, histogram, metrics }
}

pub struct GroupAreas {
    pub groups: Option<Rect>,
    pub header: Rect,
    pub table: Rect,
    pub legend: Rect,
}

pub fn groups(body: Rect) -> GroupAreas {
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

pub struct EpisodeAreas {
    pub header: Rect,
    pub steps: Rect,
    pub detail: Rect,
}

pub fn episode(state: &State, body: Rect) -> EpisodeAreas {
    let [header, rest] = Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(body);
    let (steps, detail) = if rest.width >= 120 {
        let [l, r] = Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(rest);
        (l, r)
    } else {
        let n = state.episode_index().map_or(0, |e| state.run.episodes[e].steps.len()) as u16;
        let h = (n + 3).min(rest.height * 2 / 5).max(4.min(rest.height));
        let [t, d] = Layout::vertical([Constraint::Length(h), Constraint::Min(0)]).areas(rest);
        (t, d)
    };
    EpisodeAreas { header, steps, detail }
}

pub struct AnchorAreas {
    pub header: Rect,
    pub members: Rect,
    pub formula: Rect,
}

/// The members table gets the rows its members need up to a third of the body (at least 4), the explanation
/// the rest, up to what it needs: on a small terminal the explanation keeps most of the room (it scrolls).
pub fn anchor(state: &State, body: Rect) -> AnchorAreas {
    let [header, rest] = Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(body);
    let n = state.row_ref().map_or(0, |r| state.derived.table.anchor_group_of(r).members.len()) as u16;
    let members_min = (n + 3).min(rest.height / 3).max(4).min(rest.height);
    let wanted = super::anchor::formula_height(state, rest.width);
    let formula_h = wanted.min(rest.height.saturating_sub(members_min)).max(3.min(rest.height));
    let [members, formula] = Layout::vertical([Constraint::Min(0), Constraint::Length(formula_h)]).areas(rest);
    AnchorAreas { header, members, formula }
}

pub struct PlayAreas {
    pub header: Rect,
    /// The goal picker's goal list, or the episode's observation.
    pub main: Rect,
    /// The selected goal's details, or the available actions.
    pub side: Rect,
    /// The group's finished episodes.
    pub group: Rect,
}

pub fn play(body: Rect) -> PlayAreas {
    let [header, rest, group] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(0), Constraint::Length(4)]).areas(body);
    let [main, side] = if rest.width >= 100 {
        Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(rest)
    } else {
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(rest)
    };
    PlayAreas { header, main, side, group }
}

/// The clickable list of the current view: its row rectangle, length, and selected row.
pub fn list(state: &State) -> Option<(Rect, usize, usize)> {
    let [_, body, _, _] = frame(state, screen(state));
    match state.view {
        View::Overview => {
            let a = overview(state, body);
            Some((table_body(a.table), state.derived.iterations.len(), state.sel.iteration))
        }
        View::Groups => Some((table_body(groups(body).table), state.group_episodes().len(), state.sel.traj)),
        View::Episode => {
            let n = state.episode_index().map_or(0, |e| state.run.episodes[e].steps.len());
            Some((table_body(episode(state, body).steps), n, state.sel.step))
        }
        View::Anchor => {
            let n = state.row_ref().map_or(0, |r| state.derived.table.anchor_group_of(r).members.len());
            Some((table_body(anchor(state, body).members), n, state.sel.member))
        }
        View::Search => {
            let s = state.search.as_ref();
            Some((table_body(body), s.map_or(0, |s| s.hits.len()), s.map_or(0, |s| s.current)))
        }
        View::Play => {
            let p = state.play.as_ref()?;
            let a = play(body);
            Some(match &p.session {
                Some(session) => (inner(a.side), session.actions().len(), session.cursor),
                None => (inner(a.main), p.shop.goals.len(), p.goal_cursor),
            })
        }
        View::Compare => None,
    }
}

/// The episode view's detail pane (observation), where the mouse wheel scrolls the text.
pub fn detail(state: &State) -> Option<Rect> {
    let [_, body, _, _] = frame(state, screen(state));
    match state.view {
        View::Episode => Some(episode(state, body).detail),
        View::Anchor => Some(anchor(state, body).formula),
        View::Play if state.play.as_ref().is_some_and(|p| p.session.is_some()) => Some(play(body).main),
        _ => None,
    }
}

/// How far the anchor view's explanation panel can scroll.
pub fn formula_scroll_max(state: &State) -> usize {
    let [_, body, _, _] = frame(state, screen(state));
    let panel = inner(anchor(state, body).formula);
    super::anchor::formula_lines(state, panel.width as usize).len().saturating_sub(panel.height as usize)
}

pub fn contains(r: Rect, col: u16, row: u16) -> bool {
    col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height
}
