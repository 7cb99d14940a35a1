//! Rendering: reads the state, never changes it. `impl Widget for &State` draws the whole screen.

pub mod layout;
mod anchor;
mod compare;
mod episode;
mod groups;
mod overview;
mod play;
mod popups;
mod search;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::action::Action;
use super::burst::BurstStatus;
use super::state::{Popup, Prompt, State, View};

impl Widget for &State {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let [crumb, body, status, hints] = layout::root(area);
        breadcrumb(self, crumb, buf);
        if self.view == View::Play {
            play::render(self, body, buf);
        } else if self.run.episodes.is_empty() {
            empty(self, body, buf);
        } else {
            match self.view {
                View::Overview => overview::render(self, body, buf),
                View::Groups => groups::render(self, body, buf),
                View::Episode => episode::render(self, body, buf),
                View::Anchor => anchor::render(self, body, buf),
                View::Compare => compare::render(self, body, buf),
                View::Search => search::render(self, body, buf),
                View::Play => unreachable!("drawn above"),
            }
        }
        status_bar(self, status, buf);
        hint_bar(self, hints, buf);
        match self.popup {
            Some(Popup::Help { scroll }) => popups::help(self, scroll, area, buf),
            Some(Popup::Settings { field }) => popups::settings(self, field, area, buf),
            Some(Popup::Burst { field }) => popups::burst(self, field, area, buf),
            None => {}
        }
    }
}

fn empty(state: &State, area: Rect, buf: &mut Buffer) {
    let text = vec![
        Line::from(""),
        Line::from(format!("  No episodes in {} yet.", state.run.dir.display())),
        Line::from("  Waiting for episodes.jsonl to grow (the view updates as lines arrive)."),
        Line::from(format!(
            "  {} plays episodes by hand into this run; {} starts a training burst into it.",
            state.config.keymap.first_label(Action::Play).unwrap_or_default(),
            state.config.keymap.first_label(Action::Train).unwrap_or_default()
        )),
    ];
    Paragraph::new(text).block(block(state, "Run")).render(area, buf);
}

/// A bordered block with the theme's border and title styles.
pub(crate) fn block<'a>(state: &State, title: impl Into<Line<'a>>) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(state.config.theme.border())
        .title(title.into().style(state.config.theme.title()))
}

/// A signed advantage as text: always a sign, so meaning survives without colour.
pub(crate) fn adv(v: f64) -> String {
    if v == 0.0 { " 0.000".into() } else { format!("{v:+.3}") }
}

pub(crate) fn adv_span(state: &State, v: f64) -> Span<'static> {
    Span::styled(adv(v), state.config.theme.signed(v))
}

/// Cut `s` to `width` characters, marking the cut with `…`.
pub(crate) fn trunc(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn breadcrumb(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let mut parts = vec![state.run_name.clone()];
    if let Some(play) = state.play.as_ref().filter(|_| state.view == View::Play) {
        parts.push(match &play.session {
            Some(session) => format!("{} › episode {}/{}", session.group, session.finished.len() + 1, session.size),
            None => "pick a goal".into(),
        });
    } else if !state.run.episodes.is_empty() {
        if let Some(it) = state.derived.iterations.get(state.sel.iteration) {
            parts.push(format!("iter {}", it.iteration));
        }
        if state.view != View::Overview {
            if let Some(g) = state.derived.table.episode_groups.get(state.sel.group as usize) {
                parts.push(format!("group {}", g.name));
            }
        }
        if matches!(state.view, View::Episode | View::Anchor | View::Compare) {
            if let Some(e) = state.episode_index() {
                parts.push(format!("ep {}", state.run.episodes[e].id));
            }
        }
        if matches!(state.view, View::Episode | View::Anchor) {
            parts.push(format!("step {}", state.sel.step));
        }
        if state.view == View::Compare {
            if let Some(o) = state.other_index() {
                parts.push(format!("vs {}", state.run.episodes[o].id));
            }
        }
    }
    // The view name first: on a narrow terminal the end of the path is what gets cut.
    let mut spans = vec![Span::styled(format!("[{}] ", state.view.title()), theme.title())];
    spans.push(Span::styled(parts.join(" › "), theme.accent()));
    if state.settings_modified() {
        spans.push(Span::styled("  ✎ settings differ from run", theme.warn()));
    }
    if state.follow {
        spans.push(Span::styled("  ⇣ follow", theme.warn()));
    }
    Paragraph::new(Line::from(spans)).render(area, buf);
}

fn status_bar(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    if let Some(text) = &state.input {
        let label = match state.prompt {
            Prompt::Search => "/",
            Prompt::PlayQuery => "search[",
        };
        let line = Line::from(vec![Span::styled(label, theme.accent()), Span::raw(text.clone()), Span::styled("▏", theme.accent())]);
        Paragraph::new(line).render(area, buf);
        return;
    }
    if let Some(msg) = &state.message {
        Paragraph::new(Span::styled(msg.clone(), theme.warn())).render(area, buf);
        return;
    }
    let t = &state.derived.table;
    let s = &state.settings;
    // Most important first, so a narrow terminal cuts the least useful part.
    let mut spans = Vec::new();
    if let Some(pending) = state.grouping_job {
        spans.push(Span::styled(format!("{} · ", grouping_note(state, pending)), theme.warn()));
    }
    if let Some(b) = &state.burst {
        spans.push(Span::styled(format!("{} · ", burst_summary(b)), theme.accent()));
    }
    if state.live.broken_lines > 0 {
        let at = state.run.errors.last().map(|e| format!(", last at line {}", e.line)).unwrap_or_default();
        spans.push(Span::styled(format!("⚠ {} broken line(s) skipped{at} · ", state.live.broken_lines), theme.warn()));
    }
    if !state.run.notices.is_empty() {
        spans.push(Span::styled(format!("⚠ {} reader note(s), last in the overview · ", state.run.notices.len()), theme.warn()));
    }
    if let Some(age) = state.now.and_then(|now| state.live.since_update(now)) {
        let secs = age.as_secs();
        spans.push(Span::raw(format!("updated {} · ", ago(secs))));
    }
    spans.push(Span::raw(format!(
        "{} ep · {} steps · {} groups · {} γ{:.2} ω{:.2}",
        state.run.episodes.len(),
        t.rows.len(),
        t.episode_groups.len(),
        super::fields::value(s, 0),
        s.gamma,
        s.omega
    )));
    if state.settings_modified() {
        spans.push(Span::styled("*", theme.warn()));
    }
    Paragraph::new(Line::from(spans)).style(theme.dim()).render(area, buf);
}

/// What the views show while an anchor grouping is computed in the background.
pub(crate) fn grouping_note(state: &State, pending: crate::advantage::AnchorMode) -> String {
    format!(
        "⟳ grouping anchors by {} (showing {} until then)",
        super::fields::anchor_label(pending),
        super::fields::anchor_label(state.derived.settings.anchor)
    )
}

/// One line on the burst: a text gauge while it runs, how it ended after.
pub(crate) fn burst_summary(b: &BurstStatus) -> String {
    if let Some(ended) = &b.ended {
        return format!("burst {ended}");
    }
    const CELLS: usize = 10;
    let filled = (b.progress() * CELLS as f64).round() as usize;
    let last = b.points.last().map_or(String::new(), |p| format!(" success {:.0}%", 100.0 * p.success));
    format!(
        "burst {}/{} [{}{}]{last}{}",
        b.completed(),
        b.iterations,
        "█".repeat(filled),
        "░".repeat(CELLS - filled.min(CELLS)),
        if b.cancelling { " cancelling" } else { "" }
    )
}

fn ago(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs}s ago"),
        60..=3599 => format!("{}m{:02}s ago", secs / 60, secs % 60),
        _ => format!("{}h{:02}m ago", secs / 3600, secs / 60 % 60),
    }
}

/// The actions worth advertising in the current context, each shown with its first bound key.
fn hints(state: &State) -> Vec<(Vec<Action>, &'static str)> {
    use Action::*;
    if state.input.is_some() {
        return vec![];
    }
    match state.popup {
        Some(Popup::Help { .. }) => return vec![(vec![Up, Down], "scroll"), (vec![Back], "close")],
        Some(Popup::Settings { .. }) => {
            return vec![
                (vec![Up, Down], "field"),
                (vec![Left, Right], "change"),
                (vec![ResetSettings], "reset"),
                (vec![Back], "close"),
            ]
        }
        Some(Popup::Burst { .. }) => {
            return vec![
                (vec![Up, Down], "field"),
                (vec![Left, Right], "change"),
                (vec![Open], "start"),
                (vec![CancelBurst], "cancel"),
                (vec![Back], "close"),
            ]
        }
        None => {}
    }
    let mut v: Vec<(Vec<Action>, &'static str)> = vec![(vec![Up, Down], "move")];
    match state.view {
        View::Overview => v.push((vec![Open], "groups")),
        View::Groups => {
            v.extend([(vec![Open], "episode"), (vec![PrevItem, NextItem], "group"), (vec![Compare], "compare")])
        }
        View::Episode => v.extend([
            (vec![Open], "anchor grp"),
            (vec![ScrollDown, ScrollUp], "scroll obs"),
            (vec![PrevItem, NextItem], "traj"),
        ]),
        View::Anchor => v.extend([
            (vec![Open], "go to step"),
            (vec![PrevItem, NextItem], "step"),
            (vec![ScrollDown, ScrollUp], "scroll formula"),
        ]),
        View::Compare => v.push((vec![PrevItem, NextItem], "other traj")),
        View::Search => v.push((vec![Open], "go to step")),
        View::Play => match state.play.as_ref().map(|p| p.session.is_some()) {
            Some(false) => v.extend([(vec![Open], "start group"), (vec![Left, Right], "group size")]),
            Some(true) => v.extend([
                (vec![Open], "act"),
                (vec![Autoplay], "policy plays rest"),
                (vec![Left], "abandon"),
                (vec![ScrollDown, ScrollUp], "scroll obs"),
            ]),
            None => {}
        },
    }
    v.push((vec![Search], "search"));
    if state.search.is_some() {
        v.push((vec![SearchNext, SearchPrev], "hits"));
    }
    if state.view != View::Overview {
        v.push((vec![Back], "back"));
    }
    // Help and quit before the rest: what is cut on a narrow terminal is still listed in the help.
    v.extend([(vec![Help], "help"), (vec![Quit], "quit"), (vec![Settings], "settings"), (vec![Follow], "follow")]);
    v
}

fn hint_bar(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    if state.input.is_some() {
        let text = match state.prompt {
            Prompt::Search => {
                "search: words, field:word, action:\"buy now\", success:false, adv:<-1, AND/OR/NOT · Enter run · Esc cancel"
            }
            Prompt::PlayQuery => "type a WebShop search query · Enter searches · Esc cancels",
        };
        Paragraph::new(Span::styled(text, theme.dim())).render(area, buf);
        return;
    }
    let mut spans = Vec::new();
    for (actions, label) in hints(state) {
        let keys: Vec<String> = actions.iter().filter_map(|a| state.config.keymap.first_label(*a)).collect();
        if keys.is_empty() {
            continue; // unbound by the user: nothing to advertise
        }
        spans.push(Span::styled(keys.join("/"), theme.accent().add_modifier(ratatui::style::Modifier::BOLD)));
        spans.push(Span::raw(format!(" {label}  ")));
    }
    Paragraph::new(Line::from(spans)).style(Style::new()).render(area, buf);
}
