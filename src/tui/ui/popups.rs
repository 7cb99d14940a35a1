//! Popups drawn over the current view: help (generated from the keymap) and the settings panel.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Gauge, Paragraph, Widget};

use super::block;
use crate::tui::action::Action;
use crate::tui::burst::{self, BurstStatus};
use crate::tui::fields;
use crate::tui::state::State;

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(h.min(area.height))]).flex(Flex::Center).areas(area);
    let [r] = Layout::horizontal([Constraint::Length(w.min(area.width))]).flex(Flex::Center).areas(v);
    r
}

pub fn help(state: &State, scroll: u16, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let km = &state.config.keymap;
    let lines: Vec<Line> = Action::ALL
        .iter()
        .map(|&a| {
            let keys = km.labels(a);
            Line::from(vec![
                Span::styled(format!("{:<14}", if keys.is_empty() { "(unbound)".into() } else { keys }), theme.accent()),
                Span::raw(a.describe()),
            ])
        })
        .collect();
    let r = centered(area, 84, Action::ALL.len() as u16 + 2);
    Clear.render(r, buf);
    Paragraph::new(lines)
        .scroll((scroll, 0))
        .block(block(state, "Keys (from the keymap; edit in ~/.config/gigscope/config.toml)"))
        .render(r, buf);
}

pub fn settings(state: &State, field: usize, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let mut lines: Vec<Line> = fields::FIELDS
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let changed = fields::differs(&state.settings, &state.recorded, i);
            let text = format!(
                "{} {:<16} {:<20} {}",
                if i == field { "▶" } else { " " },
                name,
                fields::value(&state.settings, i),
                if changed { format!("* run: {}", fields::value(&state.recorded, i)) } else { String::new() }
            );
            let style = if i == field { theme.selected() } else if changed { theme.warn() } else { Default::default() };
            Line::styled(text, style)
        })
        .collect();
    lines.push(Line::from(""));
    let marker = if state.settings_modified() {
        Span::styled("* differs from the run's recorded settings (R resets)", theme.warn())
    } else {
        Span::styled("same as the run's recorded settings", theme.dim())
    };
    lines.push(Line::from(marker));
    if let Some(pending) = state.grouping_job {
        lines.push(Line::styled(super::grouping_note(state, pending), theme.warn()));
    }
    let r = centered(area, 66, lines.len() as u16 + 2);
    Clear.render(r, buf);
    Paragraph::new(lines).block(block(state, "Advantage settings (every change recomputes)")).render(r, buf);
}

pub fn burst(state: &State, field: usize, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let running = state.burst.as_ref().is_some_and(BurstStatus::running);
    let mut lines: Vec<Line> = burst::FIELDS
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let text = format!("{} {:<18} {}", if i == field { "▶" } else { " " }, name, state.burst_form.value(i));
            let style = if i == field { theme.selected() } else if running { theme.dim() } else { Default::default() };
            Line::styled(text, style)
        })
        .collect();
    lines.push(Line::styled(
        "Trains into this run: its checkpoint, else a fresh policy",
        theme.dim(),
    ));
    let status_h = if state.burst.is_some() { 12 } else { 0 };
    let r = centered(area, 76, lines.len() as u16 + 2 + status_h);
    Clear.render(r, buf);
    let title = if running { "Training burst (running: X cancels, Esc hides)" } else { "Training burst (Enter starts)" };
    let outer = block(state, title);
    let inner = outer.inner(r);
    outer.render(r, buf);
    let [form, status] =
        Layout::vertical([Constraint::Length(lines.len() as u16), Constraint::Min(0)]).areas(inner);
    Paragraph::new(lines).render(form, buf);
    if let Some(b) = &state.burst {
        burst_status(state, b, status, buf);
    }
}

fn burst_status(state: &State, b: &BurstStatus, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let [info, gauge, chart] =
        Layout::vertical([Constraint::Length(2), Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let mut head = format!("{} · {}", b.how, if b.device.is_empty() { "…" } else { &b.device });
    if let (Some(s), Some(base)) = (b.initial_success, b.baseline) {
        head.push_str(&format!(" · before: greedy {:.0}%, rule baseline {:.0}%", 100.0 * s, 100.0 * base));
    }
    let last = match b.points.last() {
        Some(p) => format!(
            "iteration {} · train success {:.0}% · score {:.3}{} · {:.0} env steps/s · {:.1}s",
            p.iteration,
            100.0 * p.success,
            p.score,
            p.eval_success.map_or(String::new(), |e| format!(" · eval {:.0}%", 100.0 * e)),
            p.env_steps_per_s,
            p.seconds
        ),
        None => b.ended.clone().unwrap_or_else(|| "first iteration running …".into()),
    };
    Paragraph::new(vec![Line::raw(head), Line::styled(last, theme.dim())]).render(info, buf);
    Gauge::default()
        .gauge_style(theme.accent())
        .ratio(b.progress())
        .label(format!("{}/{} iterations", b.completed(), b.iterations))
        .render(gauge, buf);
    let data: Vec<(f64, f64)> = b.points.iter().map(|p| (p.iteration as f64, p.success)).collect();
    super::overview::line_chart(state, "train success", &data, Some((0.0, 1.0)), chart, buf);
}
