//! Episode view: the step list with every advantage component, and the selected step's observation (its
//! `[SEP]` segments as page elements), available actions, thought, tokens and trainer-vs-recomputed advantage.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget, Wrap};

use std::sync::Arc;

use super::token_strip as strip;
use super::{adv, adv_span, block, clamp_add, go, hint, layout, trunc, Component, Hint, ListRegion};
use crate::run::tokens::{StepSummary, StepTokens};
use crate::run::{Episode, Step};
use crate::tui::action::Action;
use crate::tui::state::{State, View};
use crate::tui::ui::text::{hanging, wrap};

pub struct EpisodeView;

impl Component for EpisodeView {
    fn title(&self) -> &'static str {
        "Episode"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        let mut v = super::groups::Groups.crumbs(state);
        if let Some(e) = state.episode_index() {
            v.push(format!("ep {}", state.domain.episodes.at(e).id));
        }
        v.push(format!("step {}", state.ui.sel.step));
        v
    }

    fn hints(&self, state: &State) -> Vec<Hint> {
        use Action::*;
        let mut hints = vec![
            hint(&[Up, Down], "move", "select a step"),
            hint(&[Open], "anchor grp", "the selected step's anchor group and where its numbers come from"),
            hint(&[ScrollDown, ScrollUp], "scroll obs", "scroll the observation"),
            hint(&[PrevItem, NextItem], "traj", "previous / next trajectory of the group"),
            hint(&[Fold], "fold", "fold / unfold the middle of a long plain-text observation"),
        ];
        if state.episode_index().is_some_and(|e| step_tokens(state, e).is_some()) {
            hints.push(hint(&[TokenChannel], "token channel", "colour the token strip by the next channel"));
            // Spare: the token pane names the key where its strip does not show whole.
            let zoom =
                hint(&[TokenZoom], "zoom tokens", "the token pane takes the observation's and the actions' room");
            hints.push(Hint { spare: true, ..zoom });
            // Spare: the line over the strip names these keys where the strip is long enough to scroll.
            let scroll = hint(&[TokenScrollUp, TokenScrollDown], "scroll tokens", "scroll the token strip");
            hints.push(Hint { spare: true, ..scroll });
        }
        hints
    }

    fn highlight(&self, state: &State) -> Option<String> {
        let x = state.explanation()?;
        Some(format!(
            "step {}: {} — A_E {} from the episode's score, A_S {} from its anchor group (a shows why)",
            state.ui.sel.step,
            super::term_text(&x.advantage),
            x.term(crate::advantage::explain::Symbol::EpisodeAdvantage).map_or(String::new(), |t| adv(t.value)),
            x.term(crate::advantage::explain::Symbol::StepAdvantage).map_or(String::new(), |t| adv(t.value)),
        ))
    }

    fn selects_step(&self) -> bool {
        true
    }

    fn shown_episodes(&self, state: &State) -> Vec<usize> {
        state.episode_index().into_iter().collect()
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        let Some(e) = state.episode_index() else { return };
        let ep = match state.domain.episode(e) {
            Ok(ep) => ep,
            Err(err) => return super::unreadable(state, err, area, buf),
        };
        let a = areas(state, area);
        header(state, ep, a.header, buf);
        steps(state, e, a.steps, buf);
        if let Some(step) = ep.steps.get(state.ui.sel.step) {
            detail(state, e, step, a.detail, buf);
        }
    }

    fn list(&self, state: &State, body: Rect) -> Option<ListRegion> {
        let len = state.episode_index().map_or(0, |e| state.domain.episodes.at(e).steps.len());
        Some(ListRegion { rect: layout::table_body(areas(state, body).steps), len, selected: state.ui.sel.step })
    }

    fn scroll_region(&self, state: &State, body: Rect) -> Option<Rect> {
        Some(areas(state, body).detail)
    }

    fn move_by(&self, state: &mut State, by: isize) {
        let n = state.episode_index().map_or(0, |e| state.domain.episodes.at(e).steps.len());
        state.ui.sel.step = clamp_add(state.ui.sel.step, by, n);
        state.ui.episode.obs_scroll = 0;
        state.ui.episode.token_scroll = 0;
    }

    fn open(&self, state: &mut State) {
        go(state, View::Anchor);
    }

    fn back_to(&self) -> View {
        View::Groups
    }

    fn item(&self, state: &mut State, by: isize) {
        state.ui.sel.traj = clamp_add(state.ui.sel.traj, by, state.group_episodes().len());
        state.ui.episode.obs_scroll = 0;
        state.ui.episode.token_scroll = 0;
    }

    fn on_action(&self, state: &mut State, a: Action) -> Option<crate::tui::update::Effects> {
        let by = match a {
            Action::TokenScrollUp => -TOKEN_SCROLL,
            Action::TokenScrollDown => TOKEN_SCROLL,
            Action::TokenZoom => {
                state.ui.episode.token_zoom = !state.ui.episode.token_zoom;
                0
            }
            _ => return super::standard(self, state, a),
        };
        let scroll = &mut state.ui.episode.token_scroll;
        *scroll = (*scroll as isize).saturating_add(by).max(0) as usize;
        bound_token_scroll(state);
        Some(crate::tui::update::Effects::redraw())
    }

    fn scroll(&self, state: &mut State, by: isize) {
        scroll_obs(state, by);
    }
}

/// Lines of the token strip one scroll key moves.
const TOKEN_SCROLL: isize = 4;

/// Scroll the observation pane (the episode view's, and the play view's).
pub fn scroll_obs(state: &mut State, by: isize) {
    state.ui.episode.obs_scroll = (state.ui.episode.obs_scroll as isize).saturating_add(by).max(0) as usize;
}

pub struct EpisodeAreas {
    pub header: Rect,
    pub steps: Rect,
    pub detail: Rect,
}

pub fn areas(state: &State, body: Rect) -> EpisodeAreas {
    let header_h = header_lines(state, body.width).len().max(1) as u16;
    let [header, rest] = Layout::vertical([Constraint::Length(header_h), Constraint::Min(0)]).areas(body);
    let (steps, detail) = if rest.width >= 120 {
        let [l, r] = Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(rest);
        (l, r)
    } else {
        let n = state.episode_index().map_or(0, |e| state.domain.episodes.at(e).steps.len()) as u16;
        let h = (n + 3).min(rest.height * 2 / 5).max(4.min(rest.height));
        let [t, d] = Layout::vertical([Constraint::Length(h), Constraint::Min(0)]).areas(rest);
        (t, d)
    };
    EpisodeAreas { header, steps, detail }
}

/// The episode's numbers and its task, wrapped to `width` (at most three lines).
fn header_lines(state: &State, width: u16) -> Vec<Line<'static>> {
    let theme = &state.config.theme;
    let Some(e) = state.episode_index() else { return vec![] };
    let Ok(ep) = state.domain.episode(e) else { return vec![] };
    // A TRL completion records no success, and none of its numbers when every reward function returned None.
    let per_function = ep.reward_functions().is_some();
    let unscored = crate::advantage::trl::unscored(&state.domain.episodes, e);
    let outcome = match &ep.outcome {
        _ if unscored => "unscored (every reward function returned None)".into(),
        Some(o) if per_function => format!("score {:.3}", o.score),
        Some(o) => format!("{} score {:.3}", if o.success { "✓ success" } else { "✗ failure" }, o.score),
        None => "no outcome".into(),
    };
    let ret = if unscored { "—".into() } else { format!("{:.3}", ep.total_reward()) };
    let mut out = Vec::new();
    let l1 = format!(
        "episode {} · traj {}/{} · iteration {} · {} steps · return {ret} · {outcome}",
        ep.id,
        state.ui.sel.traj + 1,
        state.group_episodes().len(),
        ep.iteration,
        ep.steps.len(),
    );
    hanging("", &l1, width as usize, &mut |m, l| out.push(Line::styled(format!("{m}{l}"), theme.title())));
    let task = format!("task: {}", super::task_text(ep));
    // Three lines' worth of it at most is wrapped: more than that is cut below anyway (a long task, read from a
    // long first observation, would otherwise be wrapped whole twice a frame).
    let task = match task.char_indices().nth(3 * width as usize) {
        Some((cut, _)) => &task[..cut],
        None => &task,
    };
    hanging("", task, width as usize, &mut |m, l| out.push(Line::styled(format!("{m}{l}"), theme.dim())));
    if out.len() > 3 {
        // The task goes on (whole in the observation): its last line shown says so.
        out.truncate(3);
        if let Some(last) = out.last_mut() {
            *last = Line::styled(trunc(&format!("{} …", last.to_string().trim_end()), width as usize), theme.dim());
        }
    }
    out
}

fn header(state: &State, _ep: &Episode, area: Rect, buf: &mut Buffer) {
    Paragraph::new(header_lines(state, area.width)).render(area, buf);
}

fn steps(state: &State, e: usize, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let Ok(ep) = state.domain.episode(e) else { return };
    let t = &state.domain.derived.table;
    let rows_adv = t.episode_rows(e);
    let body = layout::table_body(area);
    let start = layout::window_start(state.ui.sel.step, ep.steps.len(), body.height as usize);
    // The page column is WebShop's: runs of other environments record none and get the room for actions.
    let pages = ep.steps.iter().any(|s| s.page.is_some());
    let scored = !crate::advantage::trl::unscored(&state.domain.episodes, e);
    let number = move |x: f64, decimals: usize| if scored { format!("{x:.decimals$}") } else { "—".into() };
    let mut names = vec!["#", "page", "action", "reward", "return", "A_E", "A_S", "A", "sg"];
    let mut widths = vec![
        Constraint::Length(2),
        Constraint::Length(8),
        Constraint::Min(12),
        Constraint::Length(6),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(3),
    ];
    if !pages {
        names.remove(1);
        widths.remove(1);
    }
    // The action cut to its column with `…`, so that a cut shows.
    let action_w = layout::column_widths(&widths, super::spacing(state), body.width)[if pages { 2 } else { 1 }];
    let rows = ep.steps.iter().zip(rows_adv).enumerate().skip(start).take(body.height as usize).map(|(i, (s, r))| {
        let size = t.anchor_groups.size(r.step_group as usize);
        let action = trunc(&if s.valid { s.action.clone() } else { format!("⚠ {}", s.action) }, action_w);
        let mut cells = vec![Cell::from(i.to_string())];
        if pages {
            cells.push(Cell::from(trunc(s.page.as_deref().unwrap_or("—"), 8)));
        }
        cells.extend([
            Cell::from(action),
            Cell::from(number(r.reward, 2)),
            Cell::from(number(r.ret, 3)),
            Cell::from(adv_span(state, r.episode_advantage)),
            Cell::from(adv_span(state, r.step_advantage)),
            Cell::from(adv_span(state, r.advantage)),
            Cell::from(size.to_string()),
        ]);
        let row = Row::new(cells);
        if i == state.ui.sel.step {
            row.style(theme.selected())
        } else {
            row
        }
    });
    let title = layout::rows_title("Steps", start, body.height as usize, ep.steps.len());
    Table::new(rows, widths)
        .column_spacing(super::spacing(state))
        .header(Row::new(names).style(theme.title()))
        .block(block(state, title, area))
        .render(area, buf);
}

fn detail(state: &State, e: usize, step: &Step, area: Rect, buf: &mut Buffer) {
    let actions = step.available_actions.as_deref().unwrap_or(&[]);
    let tokens = step_tokens(state, e);
    // The strip is laid out once a frame: its line count sizes the pane, its lines fill it.
    let strip = tokens
        .and_then(|t| t.as_ref().ok())
        .map(|(t, _)| strip::strip_lines(&state.config.theme, t, state.ui.episode.token_channel, token_width(area)));
    let split = split_detail(state, e, step, tokens, strip.as_ref().map(|(lines, _)| lines.len()), area);
    if let (Some(tokens), Some(rect)) = (tokens, split.tokens) {
        tokens_pane(state, e, tokens, strip, rect, buf);
    }
    if let Some(rect) = split.observation {
        observation(state, step, rect, buf);
    }
    if let Some(rect) = split.info {
        info(state, e, step, actions, rect, buf);
    }
}

/// The strip's width in the detail area `area` (inside the pane's border).
fn token_width(area: Rect) -> usize {
    area.width.saturating_sub(2) as usize
}

/// The detail area's panes: the observation, the token pane (where the step has tokens) and the actions;
/// zoomed, the token pane takes the whole area.
struct DetailSplit {
    observation: Option<Rect>,
    tokens: Option<Rect>,
    info: Option<Rect>,
}

/// `strip`: the line count of the selected step's strip at [`token_width`] (`None`: its record is unreadable).
fn split_detail(
    state: &State,
    e: usize,
    step: &Step,
    tokens: Option<&Result<(Arc<StepTokens>, StepSummary), String>>,
    strip: Option<usize>,
    area: Rect,
) -> DetailSplit {
    if tokens.is_some() && state.ui.episode.token_zoom {
        return DetailSplit { observation: None, tokens: Some(area), info: None };
    }
    // The actions pane as tall as its lines wrapped to its width (the offer to reconcile the trainer's A may
    // take several), at most half the area.
    let actions = step.available_actions.as_deref().unwrap_or(&[]);
    let width = token_width(area);
    let wrapped: usize = info_lines(state, e, step, actions, width).iter().map(|l| wrapped_rows(l, width)).sum();
    let mut info_h = (wrapped as u16 + 2).min(area.height / 2);
    if tokens.is_some() {
        // The token pane keeps a line (the strip's, or one naming the zoom key) and the observation one.
        info_h = info_h.min(area.height.saturating_sub(6));
    }
    let [obs_area, info_area] = Layout::vertical([Constraint::Min(3), Constraint::Length(info_h)]).areas(area);
    let Some(tokens) = tokens else {
        return DetailSplit { observation: Some(obs_area), tokens: None, info: Some(info_area) };
    };
    let h = tokens_height(state, tokens, strip.unwrap_or(0), obs_area);
    let [obs_area, tokens_area] = Layout::vertical([Constraint::Min(3), Constraint::Length(h)]).areas(obs_area);
    DetailSplit { observation: Some(obs_area), tokens: Some(tokens_area), info: Some(info_area) }
}

/// The selected step's tokens as the domain read them (`None`: the step has none recorded).
fn step_tokens(state: &State, e: usize) -> Option<&Result<(Arc<StepTokens>, StepSummary), String>> {
    let episode = state.domain.tokens.episode(&state.domain.episodes.get(e)?.id.joined())?;
    episode.steps.get(&(state.ui.sel.step as u32))
}

/// The token pane's height: its strip of `strip` lines whole with the summary and the legend, leaving the
/// observation three lines where `area` has room for them.
fn tokens_height(
    state: &State,
    tokens: &Result<(Arc<StepTokens>, StepSummary), String>,
    strip: usize,
    area: Rect,
) -> u16 {
    let lines = match tokens {
        Ok((_, s)) => strip + strip::summary_lines(&state.config.theme, s, token_width(area)).len(),
        Err(_) => 1,
    };
    let most = area.height.saturating_sub(3).max(area.height * 3 / 5);
    (lines as u16 + 3).min(most).max(3.min(area.height))
}

/// What the token pane's `height` lines hold, for a summary of `summary` lines and a strip of `strip`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PaneWindow {
    /// The summary's lines kept (where room is short, the legend goes first, then the summary's later lines).
    summary: usize,
    legend: bool,
    strip: StripWindow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StripWindow {
    Whole,
    /// `shown` lines from the user's scroll kept in range, under a line saying where they are.
    Scrolled {
        skip: usize,
        shown: usize,
    },
    /// No room for a line of it: one line says so and how to zoom the pane.
    Hidden,
}

fn pane_window(height: usize, summary: usize, strip: usize, scroll: usize) -> PaneWindow {
    let legend = height > summary + strip.min(2);
    let mut kept = summary.min(height.saturating_sub(1 + usize::from(legend)).max(1));
    let room = height.saturating_sub(kept + usize::from(legend));
    let window = if strip <= room {
        StripWindow::Whole
    } else if room >= 2 {
        let shown = room - 1;
        StripWindow::Scrolled { skip: scroll.min(strip - shown), shown }
    } else {
        // The line saying so takes the summary's last where the pane has one line.
        kept = kept.min(height.saturating_sub(1));
        StripWindow::Hidden
    };
    PaneWindow { summary: kept, legend, strip: window }
}

/// The largest token scroll of the selected step's strip as the episode view lays it out now (0: the step has
/// no tokens, or its strip shows whole or not at all).
fn token_scroll_max(state: &State) -> usize {
    let Some(e) = state.episode_index() else { return 0 };
    let Ok(ep) = state.domain.episode(e) else { return 0 };
    let Some(step) = ep.steps.get(state.ui.sel.step) else { return 0 };
    let Some(tokens @ Ok((t, summary))) = step_tokens(state, e) else { return 0 };
    let detail = areas(state, super::body(state)).detail;
    let width = token_width(detail);
    let strip = strip::strip_lines(&state.config.theme, t, state.ui.episode.token_channel, width).0.len();
    let Some(pane) = split_detail(state, e, step, Some(tokens), Some(strip), detail).tokens else { return 0 };
    let summary = strip::summary_lines(&state.config.theme, summary, width).len();
    match pane_window(layout::inner(pane).height as usize, summary, strip, usize::MAX).strip {
        StripWindow::Scrolled { skip, .. } => skip,
        StripWindow::Whole | StripWindow::Hidden => 0,
    }
}

/// Keep the token scroll within the selected step's strip as laid out now (after a scroll key, the zoom key or
/// a resize).
pub fn bound_token_scroll(state: &mut State) {
    if state.ui.view == View::Episode && state.ui.episode.token_scroll > 0 {
        state.ui.episode.token_scroll = state.ui.episode.token_scroll.min(token_scroll_max(state));
    }
}

fn tokens_pane(
    state: &State,
    e: usize,
    tokens: &Result<(Arc<StepTokens>, StepSummary), String>,
    strip: Option<(Vec<Line<'static>>, Vec<usize>)>,
    area: Rect,
    buf: &mut Buffer,
) {
    let theme = &state.config.theme;
    let (t, summary, (strip, starts)) = match (tokens, strip) {
        (Ok((t, summary)), Some(strip)) => (t, summary, strip),
        (Err(err), _) => {
            let line = Line::styled(err.clone(), theme.warn());
            return Paragraph::new(line)
                .wrap(Wrap { trim: false })
                .block(block(state, "Tokens", area))
                .render(area, buf);
        }
        (Ok(_), None) => return,
    };
    let channel = state.ui.episode.token_channel;
    let inner = layout::inner(area);
    let mut lines = strip::summary_lines(theme, summary, inner.width as usize);
    let window = pane_window(inner.height as usize, lines.len(), strip.len(), state.ui.episode.token_scroll);
    lines.truncate(window.summary);
    let label = |a: Action| state.config.keymap.first_label(a).unwrap_or_default();
    let zoom = format!("{} {}", label(Action::TokenZoom), if state.ui.episode.token_zoom { "unzoom" } else { "zoom" });
    match window.strip {
        StripWindow::Whole => lines.extend(strip),
        StripWindow::Scrolled { skip, shown } => {
            let first = starts.get(skip).map_or(0, |&i| i + 1);
            let last = starts.get(skip + shown).map_or(t.len(), |&i| i);
            let keys = [Action::TokenScrollUp, Action::TokenScrollDown].map(label).join("/");
            let marker = format!("tokens {first}-{last} of {} · {keys} scroll · {zoom}", t.len());
            lines.push(Line::styled(marker, theme.dim()));
            lines.extend(strip.into_iter().skip(skip).take(shown));
        }
        StripWindow::Hidden => {
            let hidden = format!("the strip of {} tokens has no room here · {zoom}s this pane", t.len());
            lines.push(Line::styled(hidden, theme.warn()));
        }
    }
    if window.legend {
        lines.push(strip::legend_line(theme, channel));
    }
    let episode = state.domain.episodes.get(e).and_then(|ep| state.domain.tokens.episode(&ep.id.joined()));
    let title = strip::title(
        t,
        channel,
        &label(Action::TokenChannel),
        &episode.map_or(*summary, |ep| ep.total),
        inner.width as usize,
    );
    Paragraph::new(lines).block(block(state, title, area)).render(area, buf);
}

/// Whether `chosen` fills in a templated action such as `search[<query>]`.
fn fills(template: &str, chosen: &str) -> bool {
    match template.split_once('<') {
        Some((prefix, _)) => template.ends_with(">]") && chosen.starts_with(prefix) && chosen.ends_with(']'),
        None => false,
    }
}

/// Page elements of an observation: the text between `[SEP]` markers, trimmed, empty ones dropped.
pub fn segments(obs: &str) -> impl Iterator<Item = &str> {
    obs.split("[SEP]").map(str::trim).filter(|s| !s.is_empty())
}

/// Source lines kept at the start and at the end of a folded plain-text observation.
pub const FOLD_HEAD: usize = 6;
pub const FOLD_TAIL: usize = 30;

/// The lines of the observation pane from `skip` on, at most `take` of them, and the total line count. Only
/// the visible lines are built, so a long observation costs one cheap scan, not a full layout.
///
/// With `pages` (a run of an environment with paged observations, such as WebShop), the text between `[SEP]` markers shows one page element per item; any
/// other text (ALFWorld, Sokoban, a chat prompt with its history) shows its own lines, wrapped. With `fold`, a plain text longer than
/// [`FOLD_HEAD`] + [`FOLD_TAIL`] lines shows its start and its end, the middle folded into one line: long
/// prompts repeat the whole history, and what the policy saw last is at the end.
pub fn observation_lines(
    obs: &str,
    width: usize,
    skip: usize,
    take: usize,
    pages: bool,
    fold: bool,
) -> (Vec<String>, usize) {
    let mut lines = Vec::with_capacity(take);
    let mut n = 0usize;
    lay_out(obs, width, pages, fold, &mut |marker, l| {
        // Only the visible lines are built: a long observation is counted, not laid out.
        if n >= skip && lines.len() < take {
            lines.push(format!("{marker}{l}"));
        }
        n += 1;
    });
    (lines, n)
}

/// Each line of the observation pane's layout of `obs` (see [`observation_lines`]), in order, as its marker and
/// its text.
fn lay_out(obs: &str, width: usize, pages: bool, fold: bool, emit: &mut dyn FnMut(&str, &str)) {
    if pages {
        for seg in segments(obs) {
            hanging("▪ ", seg, width, emit);
        }
        return;
    }
    let source_lines = obs.lines().count();
    let folded =
        if fold && source_lines > FOLD_HEAD + FOLD_TAIL + 1 { FOLD_HEAD..source_lines - FOLD_TAIL } else { 0..0 };
    for (i, line) in obs.lines().enumerate() {
        if folded.contains(&i) {
            if i == folded.start {
                emit("", &format!("⋯ {} lines folded (z unfolds) ⋯", folded.len()));
            }
            continue;
        }
        if line.trim().is_empty() {
            emit("", "");
        } else {
            wrap(line.trim_end(), width, &mut |l| emit("", l));
        }
    }
}

/// The pane's `height` lines of `obs` from `scroll`, kept within the text (the last `height` lines when scrolled
/// past its end), the first one's index and the line count, from one layout pass: the lines before `scroll`
/// are kept in a ring of `height` reused strings in case the text ends before the pane is full.
fn window_lines(
    obs: &str,
    width: usize,
    scroll: usize,
    height: usize,
    pages: bool,
    fold: bool,
) -> (Vec<String>, usize, usize) {
    let (mut from_scroll, mut ring) = (Vec::with_capacity(height), Vec::<String>::new());
    let mut n = 0usize;
    lay_out(obs, width, pages, fold, &mut |marker, l| {
        if n >= scroll {
            if from_scroll.len() < height {
                from_scroll.push(format!("{marker}{l}"));
            }
        } else if height > 0 {
            let slot = n % height;
            if slot == ring.len() {
                ring.push(String::new());
            }
            let kept = &mut ring[slot];
            kept.clear();
            kept.push_str(marker);
            kept.push_str(l);
        }
        n += 1;
    });
    let skip = scroll.min(n.saturating_sub(height));
    if skip == scroll {
        return (from_scroll, skip, n);
    }
    // Scrolled past the end: lines `skip..` from the ring (it holds those before `scroll` or the end), then
    // those from `scroll` on.
    let before = scroll.min(n);
    let mut lines: Vec<String> = (skip..before).map(|j| std::mem::take(&mut ring[j % height])).collect();
    lines.extend(from_scroll);
    (lines, skip, n)
}

/// Observations longer than this (bytes) are laid out lazily, so that a key costs the same whatever their size:
/// folded (the default), their first [`LARGE_HEAD`] and last [`LARGE_TAIL`] bytes show around a line saying how
/// much is folded; unfolded, the text is laid out from its start only as far as the pane is scrolled.
pub const LARGE_OBSERVATION: usize = 256 * 1024;
pub const LARGE_HEAD: usize = 8 * 1024;
pub const LARGE_TAIL: usize = 32 * 1024;

/// What the observation pane shows of an observation: its lines from `skip` on, the line count when it is
/// known (an unfolded large observation is counted only once scrolled to its end), and how many bytes of the
/// text were laid out to show them.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservationWindow {
    pub lines: Vec<String>,
    pub skip: usize,
    pub total: Option<usize>,
    pub read: usize,
}

/// The observation pane's `height` lines of `obs` at `width`, scrolled by `scroll` (kept within the text),
/// laid out by [`observation_lines`]; a large observation ([`LARGE_OBSERVATION`]) only in part.
pub fn observation_window(
    obs: &str,
    width: usize,
    scroll: usize,
    height: usize,
    pages: bool,
    fold: bool,
) -> ObservationWindow {
    let window = |text: &str, fold: bool, read: usize| {
        let (lines, skip, total) = window_lines(text, width, scroll, height, pages, fold);
        ObservationWindow { lines, skip, total: Some(total), read }
    };
    if obs.len() <= LARGE_OBSERVATION {
        return window(obs, fold, obs.len());
    }
    if fold {
        let head = &obs[..obs.floor_char_boundary(LARGE_HEAD)];
        let tail = &obs[obs.ceil_char_boundary(obs.len() - LARGE_TAIL)..];
        let marker = format!(
            "⋯ {} of {} folded (z unfolds) ⋯",
            size_text(obs.len() - head.len() - tail.len()),
            size_text(obs.len())
        );
        let joined =
            if pages { format!("{head} [SEP] {marker} [SEP] {tail}") } else { format!("{head}\n{marker}\n{tail}") };
        return window(&joined, false, head.len() + tail.len());
    }
    // Unfolded: a prefix of the text, doubled until it holds the lines shown and one more (the last line of a
    // cut prefix may be cut itself); the whole text only once scrolled to its end.
    let mut end = LARGE_HEAD.max(scroll.saturating_add(height + 2).saturating_mul(width.max(1) * 4));
    loop {
        let prefix = &obs[..obs.floor_char_boundary(end)];
        if prefix.len() == obs.len() {
            return window(obs, false, obs.len());
        }
        let (_, n) = observation_lines(prefix, width, 0, 0, pages, false);
        if n > scroll + height + 1 {
            let (lines, _) = observation_lines(prefix, width, scroll, height, pages, false);
            return ObservationWindow { lines, skip: scroll, total: None, read: prefix.len() };
        }
        end = end.saturating_mul(2);
    }
}

/// A size in bytes as people read it: `512 B`, `40.0 KB`, `100.0 MB`.
fn size_text(bytes: usize) -> String {
    match bytes {
        b if b >= 1_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 1_000 => format!("{:.1} KB", b as f64 / 1e3),
        b => format!("{b} B"),
    }
}

fn observation(state: &State, step: &Step, area: Rect, buf: &mut Buffer) {
    let label = step.page.as_deref().map(|p| format!(" · {p}")).unwrap_or_default();
    observation_pane(state, &step.observation, &label, area, buf);
}

/// An observation as page elements, scrolled by the user's observation scroll; `label` follows "Observation"
/// in the title.
pub fn observation_pane(state: &State, obs: &str, label: &str, area: Rect, buf: &mut Buffer) {
    let inner = layout::inner(area);
    let (w, h) = (inner.width as usize, inner.height as usize);
    let paged = state.domain.capabilities().paged_observations;
    // Whether the text has page elements, from its start (a large one is not searched whole).
    let start = &obs[..obs.floor_char_boundary(LARGE_OBSERVATION)];
    let (pages, fold) = (paged || start.contains("[SEP]"), !state.ui.episode.unfolded);
    let window = observation_window(obs, w, state.ui.episode.obs_scroll, h, pages, fold);
    let (first, last) = (window.skip + 1, window.skip + window.lines.len());
    let title = match window.total {
        Some(total) => format!("Observation{label} · {}–{}/{total}", first.min(total), (window.skip + h).min(total)),
        None => format!("Observation{label} · {first}–{last} of a {} text", size_text(obs.len())),
    };
    let lines = window.lines.into_iter().map(Line::from).collect::<Vec<_>>();
    Paragraph::new(lines).block(block(state, title, area)).render(area, buf);
}

fn info(state: &State, e: usize, step: &Step, actions: &[String], area: Rect, buf: &mut Buffer) {
    let lines = info_lines(state, e, step, actions, layout::inner(area).width as usize);
    let title = format!("Actions ({}) · chosen highlighted", actions.len());
    Paragraph::new(lines).wrap(Wrap { trim: false }).block(block(state, title, area)).render(area, buf);
}

/// The rows `line` takes wrapped at spaces to `width`, as the actions pane wraps it.
fn wrapped_rows(line: &Line, width: usize) -> usize {
    let mut rows = 0;
    wrap(&line.to_string(), width, &mut |_| rows += 1);
    rows.max(1)
}

/// The actions pane's lines for a pane `width` columns wide inside its border (before the pane wraps them).
fn info_lines(state: &State, e: usize, step: &Step, actions: &[String], width: usize) -> Vec<Line<'static>> {
    let theme = &state.config.theme;
    let mut lines = Vec::new();
    let chosen =
        actions.iter().position(|a| *a == step.action).or_else(|| actions.iter().position(|a| fills(a, &step.action)));
    if actions.is_empty() {
        lines.push(Line::styled("no available actions recorded", theme.dim()));
    } else if let (true, Some(c)) = (one_line_actions(actions, width), chosen) {
        // Few short actions (Sokoban's four moves) on one line, leaving the rows to the observation.
        let mut spans = Vec::new();
        for (i, a) in actions.iter().enumerate() {
            if i > 0 {
                spans.push(Span::raw("  "));
            }
            spans.push(if i == c {
                Span::styled(format!("▶ {a}"), theme.selected().add_modifier(Modifier::BOLD))
            } else {
                Span::raw(format!("  {a}"))
            });
        }
        lines.push(Line::from(spans));
    } else {
        // A window of actions around the chosen one.
        let show = 8usize;
        let start = chosen.map_or(0, |c| c.saturating_sub(show / 2)).min(actions.len().saturating_sub(show));
        for (i, a) in actions.iter().enumerate().skip(start).take(show) {
            if Some(i) == chosen {
                let text = if *a == step.action { a.clone() } else { format!("{a} → {}", step.action) };
                let style = theme.selected().add_modifier(Modifier::BOLD);
                hanging("▶ ", &text, width, &mut |m, l| lines.push(Line::styled(format!("{m}{l}"), style)));
            } else {
                hanging("  ", a, width, &mut |m, l| lines.push(Line::from(format!("{m}{l}"))));
            }
        }
        if chosen.is_none() {
            lines.push(Line::styled(format!("▶ {} (not among the available actions)", step.action), theme.warn()));
        }
    }
    if let Some(th) = step.thought.as_deref().filter(|t| !t.is_empty()) {
        lines.push(Line::from(vec![Span::styled("thought: ", theme.title()), Span::raw(th.to_string())]));
    }
    let mut facts = vec![format!("tokens {}", step.tokens.map_or("—".into(), |t| t.to_string()))];
    if let Some(lp) = step.logprob {
        facts.push(format!("logprob {lp:.3}"));
    }
    facts.push(format!("valid {}", if step.valid { "yes" } else { "no" }));
    lines.push(Line::from(facts.join(" · ")));
    if let Some(line) = reward_functions_line(state, e) {
        lines.push(Line::from(line));
    }
    let row = state.domain.derived.table.get_row(e, state.ui.sel.step);
    let recorded = state.domain.episodes.at(e).advantages().and_then(|a| a.get(state.ui.sel.step));
    if let (Some(r), Some(rec)) = (row, recorded) {
        let d = rec - r.advantage;
        lines.push(Line::from(vec![
            Span::raw(format!("trainer A {} · recomputed A {} · Δ ", adv(rec), adv(r.advantage))),
            Span::styled(super::diff_text(d), if d.abs() > 1e-6 { theme.warn() } else { theme.dim() }),
        ]));
        if let Some(offer) = crate::tui::ui::widgets::offer_line(state) {
            lines.push(Line::styled(offer, theme.accent()));
        }
    }
    lines
}

/// Whether the available actions go on one line of `width` (each with room for the `▶ ` marker and a gap):
/// a few short words (Sokoban's moves), not WebShop's bracketed actions, which take a line each.
fn one_line_actions(actions: &[String], width: usize) -> bool {
    let total: usize = actions.iter().map(|a| a.chars().count() + 4).sum();
    actions.len() > 1 && actions.len() <= 8 && total <= width && !actions.iter().any(|a| a.contains('['))
}

/// Each reward function's value for a TRL completion (`None` where it returned None), with the weights when
/// they are not TRL's default of 1 each.
fn reward_functions_line(state: &State, e: usize) -> Option<String> {
    let episode = state.domain.episodes.get(e)?;
    let (names, values) = (episode.reward_names()?, episode.rewards()?);
    let weights = state.domain.settings.reward_weights;
    let terms: Vec<String> = names
        .iter()
        .zip(values.iter())
        .enumerate()
        .map(|(k, (name, v))| {
            let value = if v.is_nan() { "None".to_string() } else { format!("{v:.3}") };
            match weights.and_then(|w| w.as_slice().get(k).copied()) {
                Some(w) => format!("{name} {value} ×{w}"),
                None => format!("{name} {value}"),
            }
        })
        .collect();
    Some(format!("rewards: {}", terms.join(" · ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_on_sep() {
        let v: Vec<&str> = segments("WebShop [SEP] Instruction: [SEP] buy a hat [SEP] Search").collect();
        assert_eq!(v, ["WebShop", "Instruction:", "buy a hat", "Search"]);
    }

    #[test]
    fn wrapping_breaks_at_spaces_and_windows() {
        let (lines, total) = observation_lines("aaa bbb ccc [SEP] dd", 9, 0, 10, true, true);
        assert_eq!(lines, ["▪ aaa bbb", "  ccc", "▪ dd"]);
        assert_eq!(total, 3);
        let (lines, total) = observation_lines("aaa bbb ccc [SEP] dd", 9, 1, 1, true, true);
        assert_eq!(lines, ["  ccc"]);
        assert_eq!(total, 3);
    }

    #[test]
    fn long_actions_wrap_under_their_own_text() {
        let mut lines = Vec::new();
        hanging("▶ ", "search[red cotton socks for men]", 16, &mut |m, l| lines.push(format!("{m}{l}")));
        assert_eq!(lines, ["▶ search[red", "  cotton socks", "  for men]"]);
    }

    #[test]
    fn templated_search_action_is_matched() {
        assert!(fills("search[<query>]", "search[red hat]"));
        assert!(!fills("click[b01]", "click[b01]"));
        assert!(!fills("search[<query>]", "click[x]"));
    }

    #[test]
    fn a_huge_observation_only_builds_the_visible_lines() {
        let obs = "word ".repeat(200_000) + "[SEP] end";
        let (lines, total) = observation_lines(&obs, 80, 1000, 5, true, true);
        assert_eq!(lines.len(), 5);
        assert_eq!(total, 13_335, "200,000 words at 15 per 78-column line, then the last segment");
        let (last, _) = observation_lines(&obs, 80, total - 1, 5, true, true);
        assert_eq!(last, ["▪ end"]);
    }

    #[test]
    fn plain_text_keeps_its_lines_and_folds_the_middle_of_a_long_prompt() {
        let (lines, total) =
            observation_lines("You are in a room.\n\nYour task is: put a mug in the sink.", 20, 0, 10, false, true);
        assert_eq!(lines, ["You are in a room.", "", "Your task is: put a", "mug in the sink."]);
        assert_eq!(total, 4);
        let prompt: String = (0..100).map(|i| format!("turn {i}\n")).collect();
        let (lines, total) = observation_lines(&prompt, 40, 0, 100, false, true);
        assert_eq!(total, FOLD_HEAD + 1 + FOLD_TAIL);
        assert_eq!(lines[FOLD_HEAD - 1], format!("turn {}", FOLD_HEAD - 1));
        assert_eq!(lines[FOLD_HEAD], format!("⋯ {} lines folded (z unfolds) ⋯", 100 - FOLD_HEAD - FOLD_TAIL));
        assert_eq!(lines.last().map(String::as_str), Some("turn 99"));
        let (_, total) = observation_lines(&prompt, 40, 0, 0, false, false);
        assert_eq!(total, 100, "unfolded, every line shows");
    }

    #[test]
    fn a_huge_observation_is_laid_out_only_where_it_shows() {
        let obs: String = (0..2_000_000).map(|i| format!("line {i} of the log\n")).collect();
        assert!(obs.len() > 40_000_000);
        // Folded: its start and its end around a line saying how much is folded, whatever its size.
        let folded = observation_window(&obs, 78, 0, 100_000, false, true);
        assert_eq!(folded.read, LARGE_HEAD + LARGE_TAIL);
        assert_eq!(folded.lines[0], "line 0 of the log");
        let marker = folded.lines.iter().find(|l| l.starts_with("⋯ ")).expect("a fold marker");
        assert!(marker.ends_with(" MB folded (z unfolds) ⋯") && marker.contains(" MB of "), "{marker}");
        assert_eq!(folded.lines.last().map(String::as_str), Some("line 1999999 of the log"));
        assert_eq!(folded.total, Some(folded.lines.len()));
        // Unfolded: laid out as far as the pane is scrolled, the lines those of the whole text.
        let paged = observation_window(&obs, 78, 5_000, 20, false, false);
        assert!(paged.read < obs.len() / 10, "{} bytes laid out", paged.read);
        assert_eq!(paged.total, None);
        assert_eq!(paged.lines.first().map(String::as_str), Some("line 5000 of the log"));
        assert_eq!(paged.lines.len(), 20);
        // Scrolled past the end: the last lines, and now the count.
        let end = observation_window(&obs, 78, usize::MAX / 2, 20, false, false);
        assert_eq!(
            (end.total, end.lines.last().map(String::as_str)),
            (Some(2_000_000), Some("line 1999999 of the log"))
        );
        // Page elements too: the head's first element, the marker as one, the tail's last.
        let sep: String = (0..500_000).map(|i| format!("element {i} [SEP] ")).collect();
        let folded = observation_window(&sep, 78, 0, 100_000, true, true);
        assert_eq!(folded.lines[0], "▪ element 0");
        assert!(folded.lines.iter().any(|l| l.starts_with("▪ ⋯ ") && l.contains("folded")));
        assert_eq!(folded.lines.last().map(String::as_str), Some("▪ element 499999"));
        // A small one is laid out whole, as before.
        let small = observation_window("a [SEP] b", 78, 0, 10, true, true);
        assert_eq!((small.lines, small.total), (vec!["▪ a".to_string(), "▪ b".to_string()], Some(2)));
    }

    #[test]
    fn one_pass_window_is_the_counted_windows_lines_at_every_scroll() {
        let plain: String = (0..60).map(|i| format!("line {i} {}\n", "word ".repeat(i % 7))).collect();
        let paged = "a b c d e f [SEP] gh [SEP] ij kl mn op [SEP] q";
        for (text, pages, fold) in [(plain.as_str(), false, true), (&plain, false, false), (paged, true, true)] {
            for height in [0, 1, 3, 10, 200] {
                for scroll in [0, 1, 2, 5, 9, 30, 59, 75, 76, 80, 500] {
                    let (_, total) = observation_lines(text, 12, 0, 0, pages, fold);
                    let skip = scroll.min(total.saturating_sub(height));
                    let (lines, _) = observation_lines(text, 12, skip, height, pages, fold);
                    let one = window_lines(text, 12, scroll, height, pages, fold);
                    assert_eq!(one, (lines, skip, total), "height {height}, scroll {scroll}, pages {pages}");
                }
            }
        }
    }

    #[test]
    fn long_word_is_cut_hard() {
        let (lines, _) = observation_lines("abcdefghij", 6, 0, 10, true, true);
        assert_eq!(lines, ["▪ abcd", "  efgh", "  ij"]);
    }
}
