//! The frame's rows and the helpers every view's layout uses, as pure functions of the state and the terminal
//! size. The frame itself is laid out in `crate::tui::views` (present mode's line depends on the view), and
//! each view's own panes by its component, which draws into them and maps mouse clicks through the same
//! rectangles, so a click lands on what was drawn.

use ratatui::layout::{Constraint, Flex, Layout, Rect};

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
            *last = super::widgets::trunc(&format!("{last} …"), width as usize);
        }
    }
    lines
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

/// The width each column of a table gets in `width` columns (inside its border), laid out as ratatui's
/// `Table` lays them out (from the left, `spacing` between columns, no selection column): a view cuts a
/// cell's text to its column with `…` instead of letting the table cut it silently.
pub fn column_widths(widths: &[Constraint], spacing: u16, width: u16) -> Vec<usize> {
    let rects =
        Layout::horizontal(widths.iter().copied()).flex(Flex::Start).spacing(spacing).split(Rect::new(0, 0, width, 1));
    rects.iter().map(|r| r.width as usize).collect()
}

/// A table's title naming the rows it shows when it cannot show them all, the arrows saying on which side
/// the hidden ones are: `Steps · 2–4 of 5 ↑↓`. `start` and `height` as [`window_start`] and the table's body
/// give them.
pub fn rows_title(name: &str, start: usize, height: usize, len: usize) -> String {
    let end = (start + height).min(len);
    if start == 0 && end >= len {
        return name.to_string();
    }
    if end <= start {
        return format!("{name} · none of {len} shown ↓");
    }
    let up = if start > 0 { "↑" } else { "" };
    let down = if end < len { "↓" } else { "" };
    format!("{name} · {}–{end} of {len} {up}{down}", start + 1)
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
