//! The frame's panes and the helpers every view's layout uses, as pure functions of the state and the terminal
//! size. Each view's own panes are laid out by its component (`super::super::views`), which draws into them
//! and maps mouse clicks through the same rectangles, so a click lands on what was drawn.

use ratatui::layout::{Constraint, Layout, Rect};

use crate::tui::state::State;

/// Breadcrumb, body, status bar, hint bar.
pub fn root(area: Rect) -> [Rect; 4] {
    Layout::vertical([Constraint::Length(1), Constraint::Min(0), Constraint::Length(1), Constraint::Length(1)])
        .areas(area)
}

/// The most rows a message takes (status and hint bar together, then up to two more from the body).
pub const MESSAGE_ROWS: usize = 4;

/// The lines of the one-line message wrapped to `width`, at most [`MESSAGE_ROWS`].
pub fn message_lines(state: &State, width: u16) -> Vec<String> {
    let Some(msg) = state.ui.message.as_deref().filter(|_| state.ui.input.is_none()) else { return vec![] };
    let mut lines = Vec::new();
    super::text::hanging("", msg, width as usize, &mut |m, l| lines.push(format!("{m}{l}")));
    if lines.len() > MESSAGE_ROWS {
        lines.truncate(MESSAGE_ROWS);
        if let Some(last) = lines.last_mut() {
            *last = super::trunc(&format!("{last} …"), width as usize);
        }
    }
    lines
}

/// Present mode's status line: the view's name and what the highlighted number means, wrapped to `width`, at
/// most two lines; empty outside present mode or when the view highlights nothing.
pub fn present_lines(state: &State, width: u16) -> Vec<String> {
    if !state.ui.present || state.ui.message.is_some() || state.ui.input.is_some() {
        return vec![];
    }
    let view = crate::tui::views::component(state.ui.view);
    let Some(what) = view.highlight(state) else { return vec![] };
    let mut lines = Vec::new();
    super::text::hanging("", &format!("{} · {what}", view.title()), width as usize, &mut |m, l| {
        lines.push(format!("{m}{l}"))
    });
    lines.truncate(2);
    lines
}

/// Breadcrumb, body, status bar, hint bar of the state's screen: a message longer than the status bar wraps
/// into the hint bar's row (it goes with the next key) and, if it must, a little of the body; present mode's
/// line (or two) above the status bar takes rows from the body.
pub fn frame(state: &State, area: Rect) -> [Rect; 4] {
    let [crumb, body, status, hints] = root(area);
    let n = message_lines(state, area.width).len() as u16;
    if n > 1 {
        let footer = n.max(2).min(body.height + 2);
        let body = Rect { height: body.height + 2 - footer, ..body };
        let status = Rect { y: body.y + body.height, height: footer, ..status };
        return [crumb, body, status, Rect { y: status.y + footer, height: 0, ..hints }];
    }
    // Present mode's line(s) go above the status bar, which stays.
    let p = (present_lines(state, area.width).len() as u16).min(body.height);
    if p > 0 {
        let body = Rect { height: body.height - p, ..body };
        let status = Rect { y: body.y + body.height, height: p + 1, ..status };
        return [crumb, body, status, hints];
    }
    [crumb, body, status, hints]
}

/// The state's screen.
pub fn screen(state: &State) -> Rect {
    Rect::new(0, 0, state.ui.size.0, state.ui.size.1)
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

pub fn contains(r: Rect, col: u16, row: u16) -> bool {
    col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height
}
