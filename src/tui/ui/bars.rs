//! The frame's bars: the breadcrumb, the status bar (the run, the settings, jobs and messages) and the hint
//! bar, and the hints they and the help popup advertise.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::layout;
use super::widgets::Hint;
use crate::tui::action::Action;
use crate::tui::burst_dialog::BurstStatus;
use crate::tui::settings_fields::Field;
use crate::tui::state::{JobKind, Popup, Prompt, State};
use crate::tui::views::component;

pub(super) fn breadcrumb(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let view = component(state.ui.view);
    let mut parts = vec![state.domain.run_name.clone()];
    if !view.needs_episodes() || !state.domain.episodes.is_empty() {
        parts.extend(view.crumbs(state));
    }
    // The view name first: on a narrow terminal the end of the path is what gets cut.
    let mut spans = vec![Span::styled(format!("[{}] ", view.title()), theme.title())];
    spans.push(Span::styled(parts.join(" › "), theme.accent()));
    if state.domain.settings_modified() {
        spans.push(Span::styled("  ✎ settings differ from run", theme.warn()));
    }
    if state.ui.follow {
        spans.push(Span::styled("  ⇣ follow", theme.warn()));
    }
    Paragraph::new(super::widgets::fit_line(Line::from(spans), area.width as usize)).render(area, buf);
}

pub(super) fn status_bar(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    if let Some(text) = &state.ui.input {
        let label = match state.ui.prompt {
            Prompt::Search => "/".to_owned(),
            Prompt::PlayQuery => {
                let session = state.ui.play.as_ref().and_then(|p| p.session.as_ref());
                format!("{}[", session.and_then(|s| s.selected_template()).unwrap_or_default())
            }
            Prompt::RewardWeights => "reward weights: ".to_owned(),
        };
        let line = Line::from(vec![
            Span::styled(label, theme.accent()),
            Span::raw(text.clone()),
            Span::styled("▏", theme.accent()),
        ]);
        Paragraph::new(line).render(area, buf);
        return;
    }
    if state.ui.message.is_some() {
        let lines: Vec<Line> =
            layout::message_lines(state, area.width).into_iter().map(|l| Line::styled(l, theme.warn())).collect();
        Paragraph::new(lines).render(area, buf);
        return;
    }
    let present = crate::tui::views::present_lines(state, area.width);
    let area = if present.is_empty() {
        area
    } else {
        let n = present.len() as u16;
        let lines: Vec<Line> = present.into_iter().map(|l| Line::styled(l, theme.title())).collect();
        Paragraph::new(lines).render(Rect { height: n.min(area.height), ..area }, buf);
        Rect { y: area.y + n, height: area.height.saturating_sub(n), ..area }
    };
    let t = &state.domain.derived.table;
    let s = &state.domain.settings;
    // Most important first, so a narrow terminal cuts the least useful part.
    let mut spans = Vec::new();
    if let Some(loading) = &state.domain.live.loading {
        spans.push(Span::styled(format!("{} · ", loading_summary(loading)), theme.accent()));
    }
    // A grouping and a burst have lines of their own below (what is shown meanwhile; the burst's gauge).
    let own_line = |job: &JobKind| matches!(job, JobKind::Grouping | JobKind::Burst { .. });
    for job in state.jobs.running.iter().filter(|job| !own_line(job)) {
        let cancels = if job.cancel() == crate::tui::state::Cancel::No { "" } else { " (X cancels)" };
        spans.push(Span::styled(format!("⟳ {}{cancels} · ", job.label()), theme.accent()));
    }
    if let Some(pending) = state.domain.grouping_job {
        let short = |m| Field::Anchor.short(&crate::advantage::AdvantageSettings { anchor: m, ..*s });
        let note =
            format!("⟳ grouping by {} ({} shown) · ", short(pending), short(state.domain.derived.settings.anchor));
        spans.push(Span::styled(note, theme.warn()));
    }
    if let Some(b) = &state.jobs.burst {
        spans.push(Span::styled(format!("{} · ", burst_summary(b)), theme.accent()));
    }
    if state.domain.live.broken_lines > 0 {
        let at = state.domain.run.errors.last().map(|e| format!(", last at line {}", e.line)).unwrap_or_default();
        spans.push(Span::styled(
            format!("⚠ {} broken line(s) skipped{at} · ", state.domain.live.broken_lines),
            theme.warn(),
        ));
    }
    let fallbacks = state.domain.derived.state_fallbacks;
    if fallbacks > 0 {
        // As the command line's note says it: under state anchors, these steps are keyed by anchor and step.
        spans.push(Span::styled(
            format!("⚠ {fallbacks} of {} steps record no state (grouped by anchor and step) · ", t.row_count()),
            theme.warn(),
        ));
    }
    if !state.domain.run.notices.is_empty() {
        spans.push(Span::styled(
            format!("⚠ {} reader note(s), last in the overview · ", state.domain.run.notices.len()),
            theme.warn(),
        ));
    }
    if let Some(age) = state.ui.now.and_then(|now| state.domain.live.since_update(now)) {
        let secs = age.as_secs();
        spans.push(Span::raw(format!("updated {} · ", ago(secs))));
    }
    spans.push(Span::raw(format!(
        "{} ep · {} steps · {} groups ·",
        state.domain.episodes.len(),
        t.row_count(),
        t.episode_groups.len()
    )));
    for field in status_fields(state) {
        spans.push(Span::raw(" "));
        if field.differs(s, &state.domain.recorded) {
            spans.push(Span::styled(format!("{}*", field.short(s)), theme.warn()));
        } else {
            spans.push(Span::raw(field.short(s)));
        }
    }
    Paragraph::new(super::widgets::fit_line(Line::from(spans), area.width as usize))
        .style(theme.dim())
        .render(area, buf);
}

/// The settings the status bar names: the ones that shape every number under the run's estimator (a TRL run's
/// `grpo scale=group`, not GiGPO's γ and ω), then any other that differs from the run's recorded settings (each
/// changed one is marked `*` on its own).
pub(crate) fn status_fields(state: &State) -> Vec<Field> {
    let s = &state.domain.settings;
    let mut shown: Vec<Field> = [Field::Estimator, Field::Gamma, Field::Omega, Field::Norm, Field::Anchor]
        .into_iter()
        .filter(|f| f.applies(s))
        .collect();
    if s.scale_rewards.is_some() {
        shown.push(Field::ScaleRewards);
        if s.reward_weights.is_some() {
            shown.push(Field::RewardWeights);
        }
        if s.aggregation != crate::advantage::Aggregation::default() {
            shown.push(Field::Aggregation);
        }
    }
    for f in crate::tui::settings_fields::changed(&state.domain.settings, &state.domain.recorded) {
        // A changed θ shows in the anchor label.
        if !shown.contains(&f) && f != Field::Similarity {
            shown.push(f);
        }
    }
    shown
}

/// What the views show while an anchor grouping is computed in the background.
pub(crate) fn grouping_note(state: &State, pending: crate::advantage::AnchorMode) -> String {
    format!("⟳ grouping by {} ({} shown meanwhile)", pending.label(), state.domain.derived.settings.anchor.label())
}

/// One line on the burst: a text gauge while it runs, how it ended after.
pub(crate) fn burst_summary(b: &BurstStatus) -> String {
    if let Some(ended) = &b.ended {
        return format!("burst {}", ended.lines().next().unwrap_or_default());
    }
    if b.ray_job.is_some() {
        let last = b.log.last().map_or(b.how.as_str(), String::as_str);
        return format!("Ray burst: {last}{}", if b.cancelling { " · stopping" } else { "" });
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

/// Queries the search prompt shows as examples; each finds steps in the bundled sample run at its recorded
/// settings (checked by a test), so trying one teaches something.
pub const SEARCH_EXAMPLES: &[&str] = &["action:\"buy now\"", "success:false", "adv:<0", "adv_s:<0"];

fn search_prompt_hint() -> String {
    format!("words, {}, AND OR NOT · Enter · Esc", SEARCH_EXAMPLES.join(", "))
}

fn hint(actions: &[Action], label: &'static str, help: &'static str) -> Hint {
    Hint { actions: actions.to_vec(), label, help, essential: false, spare: false }
}

fn essential(actions: &[Action], label: &'static str, help: &'static str) -> Hint {
    Hint { essential: true, ..hint(actions, label, help) }
}

/// The keys worth advertising in the current context, most useful first.
pub fn hints(state: &State) -> Vec<Hint> {
    use Action::*;
    if state.ui.input.is_some() {
        return vec![];
    }
    match state.ui.popup {
        Some(Popup::Help { .. }) => {
            return vec![hint(&[Up, Down], "scroll", "scroll the help"), essential(&[Back], "close", "close the help")]
        }
        Some(Popup::Settings { .. }) => {
            let mut v = vec![
                hint(&[Up, Down], "field", "choose a setting"),
                hint(&[Left, Right], "change", "change it: everything is recomputed at once"),
                hint(&[ResetSettings], "reset", "back to the run's recorded settings"),
            ];
            if state.offered_settings().is_some() {
                v.push(hint(&[ApplyReconciled], "apply offered", "the settings that reproduce the stored advantages"));
            }
            v.push(essential(&[Back], "close", "close the panel (the settings stay)"));
            return v;
        }
        Some(Popup::Burst { .. }) => {
            return vec![
                hint(&[Up, Down], "field", "choose a field"),
                hint(&[Left, Right], "change", "change it"),
                hint(&[Open], "start", "start the burst"),
                hint(&[CancelBurst], "cancel", "cancel the running burst after its iteration"),
                essential(&[Back], "close", "close the dialog (the burst goes on)"),
            ]
        }
        None => {}
    }
    view_hints(state)
}

/// The keys of the current view (whatever popup is open): the view's own, then the keys of every view.
pub fn view_hints(state: &State) -> Vec<Hint> {
    use Action::*;
    let mut v = if component(state.ui.view).needs_episodes() && state.domain.episodes.is_empty() {
        vec![]
    } else {
        component(state.ui.view).hints(state)
    };
    // Settings that reproduce the trainer's stored advantages, offered: first, since the offer is news.
    if state.offered_settings().is_some() {
        v.insert(
            0,
            essential(
                &[ApplyReconciled],
                "apply offered settings",
                "the settings that reproduce the stored advantages",
            ),
        );
    }
    v.push(hint(&[Search], "search", "search the run's steps"));
    if state.ui.search.is_some() {
        v.push(hint(&[SearchNext, SearchPrev], "hits", "next / previous search hit"));
    }
    if state.ui.view != crate::tui::state::View::Overview {
        v.push(essential(&[Back], "back", "the previous view"));
    }
    v.extend([
        essential(&[Help], "help", "every key, the glyphs and the formula"),
        essential(&[Quit], "quit", "quit"),
        hint(&[Settings], "settings", "the advantage settings"),
        hint(&[Follow], "follow", "jump to the newest episodes as they arrive"),
    ]);
    v
}

/// A hint's keys as the bar shows them (`k/j`); empty when the user unbound them all.
pub(crate) fn hint_keys(state: &State, h: &Hint) -> String {
    h.actions.iter().filter_map(|a| state.config.keymap.first_label(*a)).collect::<Vec<_>>().join("/")
}

/// The hints that fit in `width` columns, in order: the spare ones are left out first, then the least useful
/// non-essential ones, so help and quit are never cut (everything left out is in the help).
pub fn fitted_hints(state: &State, width: usize) -> Vec<(String, Hint)> {
    let mut v: Vec<(String, Hint)> =
        hints(state).into_iter().map(|h| (hint_keys(state, &h), h)).filter(|(k, _)| !k.is_empty()).collect();
    let len =
        |v: &[(String, Hint)]| v.iter().map(|(k, h)| k.chars().count() + h.label.chars().count() + 3).sum::<usize>();
    while len(&v) > width {
        match v.iter().rposition(|(_, h)| h.spare).or_else(|| v.iter().rposition(|(_, h)| !h.essential)) {
            Some(i) => {
                v.remove(i);
            }
            None => break,
        }
    }
    v
}

pub(super) fn hint_bar(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    if state.ui.input.is_some() {
        let text = match state.ui.prompt {
            Prompt::Search => search_prompt_hint(),
            Prompt::PlayQuery => {
                let typed = state.domain.capabilities().typed_action.unwrap_or("type the argument · Enter plays it");
                format!("{typed} · Esc cancels")
            }
            Prompt::RewardWeights => "one weight per reward function, in the run's order (1,2) · Enter · Esc".into(),
        };
        Paragraph::new(Span::styled(text, theme.dim())).render(area, buf);
        return;
    }
    let mut spans = Vec::new();
    for (keys, h) in fitted_hints(state, area.width as usize) {
        spans.push(Span::styled(keys, theme.accent().add_modifier(ratatui::style::Modifier::BOLD)));
        spans.push(Span::raw(format!(" {}  ", h.label)));
    }
    Paragraph::new(Line::from(spans)).style(Style::new()).render(area, buf);
}

/// "⟳ loading 35% of 623 MB · 210 MB/s · 2 s left": the first read of a large run, under way.
fn loading_summary(loading: &crate::live::Loading) -> String {
    const MB: f64 = 1e6;
    let mut text = format!("⟳ loading {:.0}% of {:.0} MB", 100.0 * loading.fraction(), loading.total as f64 / MB);
    if let Some(rate) = loading.rate() {
        text.push_str(&format!(" · {:.0} MB/s", rate / MB));
    }
    if let Some(eta) = loading.eta() {
        text.push_str(&format!(" · {} s left", eta.as_secs_f64().ceil() as u64));
    }
    text
}
