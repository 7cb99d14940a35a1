//! One component per view: each owns its keys ([`Component::on_action`] and the navigation hooks), its hints
//! (one list drives the hint bar and the help), its drawing and its mouse regions. [`component`] is the only
//! place that matches on [`View`]; adding a view means adding a component there.

pub(crate) mod anchor;
pub(crate) mod compare;
pub(crate) mod credit;
pub(crate) mod episode;
pub(crate) mod estimators;
pub(crate) mod groups;
pub(crate) mod overview;
pub(crate) mod play;
pub(crate) mod search;
pub(crate) mod timeline;
pub(crate) mod token_strip;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub(crate) use crate::tui::ui::layout;
pub use crate::tui::ui::widgets::Hint;
pub(crate) use crate::tui::ui::widgets::{adv, adv_span, block, diff_text, spacing, term_text, trunc, trunc_start};

use super::action::Action;
use super::msg::Effects;
use super::state::{State, View};

/// A clickable list: where its rows are drawn, how many there are, and which is selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListRegion {
    pub rect: Rect,
    pub len: usize,
    pub selected: usize,
}

/// A view of the TUI.
pub trait Component: Sync {
    /// The view's name, in the breadcrumb and the present-mode status line.
    fn title(&self) -> &'static str;

    /// The breadcrumb after the run's name.
    fn crumbs(&self, _state: &State) -> Vec<String> {
        Vec::new()
    }

    /// The view's own keys, most useful first, for the hint bar and the help.
    fn hints(&self, state: &State) -> Vec<Hint>;

    /// What the highlighted number means (the present-mode status line).
    fn highlight(&self, _state: &State) -> Option<String> {
        None
    }

    /// A key in this view; `None` leaves it to the rest of the TUI (help, settings, view switches, search …).
    fn on_action(&self, state: &mut State, a: Action) -> Option<Effects> {
        standard(self, state, a)
    }

    /// Coming into the view (its key, or Enter from the view before it).
    fn enter(&self, _state: &mut State) {}

    /// Whether a step is selected in the view (the settings panel then summarises its advantage).
    fn selects_step(&self) -> bool {
        false
    }

    /// Whether the view shows the explanation panel at its bottom (the settings panel then opens at the top).
    fn shows_explanation(&self) -> bool {
        false
    }

    /// Whether the view draws and takes keys without episodes (play does).
    fn needs_episodes(&self) -> bool {
        true
    }

    /// The episodes whose full records (text and all) the view draws: read back from the run's file before it
    /// is drawn ([`crate::tui::domain::Domain::show`]), since drawing reads them from memory only
    /// ([`crate::tui::domain::Domain::episode`]).
    fn shown_episodes(&self, _state: &State) -> Vec<usize> {
        Vec::new()
    }

    fn render(&self, state: &State, body: Rect, buf: &mut Buffer);

    /// The clickable list in `body`.
    fn list(&self, _state: &State, _body: Rect) -> Option<ListRegion> {
        None
    }

    /// Where the mouse wheel scrolls text instead of moving the selection.
    fn scroll_region(&self, _state: &State, _body: Rect) -> Option<Rect> {
        None
    }

    // ---- Navigation hooks of `standard` ----

    /// Up/down by `by` rows.
    fn move_by(&self, _state: &mut State, _by: isize) {}

    /// Select row `i` of the list (a click).
    fn select(&self, state: &mut State, i: usize) {
        if let Some(list) = self.list(state, body(state)) {
            self.move_by(state, i as isize - list.selected as isize);
        }
    }

    /// Enter / →.
    fn open(&self, _state: &mut State) {}

    /// Esc / ←: the view to go back to.
    fn back_to(&self) -> View {
        View::Overview
    }

    /// `[` / `]`.
    fn item(&self, state: &mut State, by: isize) {
        self.move_by(state, by);
    }

    /// J / K (and the wheel over the scroll region), by `by` lines.
    fn scroll(&self, _state: &mut State, _by: isize) {}
}

/// The component of `view`.
pub fn component(view: View) -> &'static dyn Component {
    match view {
        View::Overview => &overview::Overview,
        View::Groups => &groups::Groups,
        View::Episode => &episode::EpisodeView,
        View::Anchor => &anchor::Anchor,
        View::Compare => &compare::Compare,
        View::Estimators => &estimators::Estimators,
        View::Search => &search::Search,
        View::Play => &play::PlayView,
        View::Credit => &credit::Credit,
        View::Timeline => &timeline::Timeline,
    }
}

/// The body of the state's screen.
pub fn body(state: &State) -> Rect {
    frame(state, layout::screen(state))[1]
}

/// The row of the current view's list under the pointer, if any.
pub fn list_row_at(state: &State, col: u16, row: u16) -> Option<usize> {
    let list = component(state.ui.view).list(state, body(state))?;
    if !layout::contains(list.rect, col, row) {
        return None;
    }
    let start = layout::window_start(list.selected, list.len, list.rect.height as usize);
    let target = start + (row - list.rect.y) as usize;
    (target < list.len).then_some(target)
}

/// Whether the pointer is over the text the current view scrolls (the wheel scrolls it there).
pub fn over_scroll_region(state: &State, col: u16, row: u16) -> bool {
    component(state.ui.view).scroll_region(state, body(state)).is_some_and(|r| layout::contains(r, col, row))
}

/// Present mode's status line: the view's name and what the highlighted number means, wrapped to `width`, at
/// most two lines; empty outside present mode or when the view highlights nothing.
pub fn present_lines(state: &State, width: u16) -> Vec<String> {
    if !state.ui.present || state.ui.message.is_some() || state.ui.input.is_some() {
        return vec![];
    }
    let view = component(state.ui.view);
    let Some(what) = view.highlight(state) else { return vec![] };
    let mut lines = Vec::new();
    crate::tui::ui::text::hanging("", &format!("{} · {what}", view.title()), width as usize, &mut |m, l| {
        lines.push(format!("{m}{l}"))
    });
    // Two lines at most; a sentence cut there ends in `…` (the view shows the rest).
    if lines.len() > 2 {
        lines.truncate(2);
        if let Some(last) = lines.last_mut() {
            let keep = (width as usize).saturating_sub(1).min(last.chars().count());
            *last = format!("{}…", last.chars().take(keep).collect::<String>());
        }
    }
    lines
}

/// Breadcrumb, body, status bar, hint bar of the state's screen: a message longer than the status bar wraps
/// into the hint bar's row (it goes with the next key) and, if it must, a little of the body; present mode's
/// line (or two) above the status bar takes rows from the body.
pub fn frame(state: &State, area: Rect) -> [Rect; 4] {
    let [crumb, body, status, hints] = layout::root(area);
    let n = layout::message_lines(state, area.width).len() as u16;
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

/// Rows a page key moves: the visible height of the view's list.
pub fn page(c: &(impl Component + ?Sized), state: &State) -> isize {
    c.list(state, body(state)).map_or(10, |l| l.rect.height.max(1) as isize)
}

/// The keys every list view shares, through the component's hooks.
pub fn standard<C: Component + ?Sized>(c: &C, state: &mut State, a: Action) -> Option<Effects> {
    match a {
        Action::Up => c.move_by(state, -1),
        Action::Down => c.move_by(state, 1),
        Action::PageUp => c.move_by(state, -page(c, state)),
        Action::PageDown => c.move_by(state, page(c, state)),
        Action::Top => c.move_by(state, isize::MIN / 2),
        Action::Bottom => c.move_by(state, isize::MAX / 2),
        Action::Open | Action::Right => c.open(state),
        Action::Back | Action::Left => state.ui.view = c.back_to(),
        Action::PrevItem => c.item(state, -1),
        Action::NextItem => c.item(state, 1),
        Action::ScrollUp => c.scroll(state, -3),
        Action::ScrollDown => c.scroll(state, 3),
        _ => return None,
    }
    state.clamp();
    Some(Effects::redraw())
}

/// `v + by` within `0..len`.
pub fn clamp_add(v: usize, by: isize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    (v as isize).saturating_add(by).clamp(0, len as isize - 1) as usize
}

/// Switch to `view` (a view key, or a drill-down): its component's `enter` runs.
pub fn go(state: &mut State, view: View) {
    state.ui.view = view;
    component(view).enter(state);
    state.clamp();
}

/// A hint for the bar and the help.
pub fn hint(actions: &[Action], label: &'static str, help: &'static str) -> Hint {
    Hint { actions: actions.to_vec(), label, help, essential: false, spare: false }
}

/// What a view draws instead of an episode whose text could not be read back from the run's file (truncated,
/// replaced or rewritten since it was read: the watcher reads the run again).
pub fn unreadable(state: &State, err: &crate::run::text_on_disk::TextError, area: Rect, buf: &mut Buffer) {
    use ratatui::widgets::{Paragraph, Widget, Wrap};
    Paragraph::new(format!("cannot show this episode: {err}"))
        .style(state.config.theme.warn())
        .wrap(Wrap { trim: false })
        .render(area, buf);
}

/// The most bytes of a first observation [`task_text`] reads the task from.
const TASK_SCAN: usize = 64 * 1024;

/// What an episode's `task:` line shows: its instruction, else (a verl-agent export records none) its first
/// observation; of a chat-templated prompt (verl's dumps, verl-agent's prompts) the user's turn, and of
/// verl-agent's prompt the sentence after "Your task is to:". Line breaks show as `⏎`.
pub fn task_text(episode: &crate::run::Episode) -> String {
    let recorded = episode.instruction();
    let text =
        if recorded.trim().is_empty() { episode.steps.first().map_or("", |s| &*s.observation) } else { recorded };
    // A task is read from the text's start: a key costs the same however long the first observation is.
    let text = &text[..text.floor_char_boundary(TASK_SCAN)];
    let turn = crate::text::chat::user_turn(text).unwrap_or_else(|| text.to_string());
    let task = match turn.split_once("Your task is to:") {
        Some((_, rest)) => rest.split(". Your ").next().unwrap_or(rest).trim().to_string(),
        None => turn,
    };
    task.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ⏎ ")
}
