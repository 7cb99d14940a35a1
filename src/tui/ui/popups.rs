//! Popups drawn over the current view: help (generated from the keymap) and the settings panel.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Gauge, Paragraph, Widget, Wrap};

use super::widgets::block;
use crate::advantage::estimators::EstimatorKind;
use crate::advantage::explain::{self, Symbol};
use crate::tui::action::Action;
use crate::tui::burst_dialog::{ray_choices, BurstField, BurstStatus};
use crate::tui::settings_fields::{Field, FIELDS};
use crate::tui::state::State;

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(h.min(area.height))]).flex(Flex::Center).areas(area);
    let [r] = Layout::horizontal([Constraint::Length(w.min(area.width))]).flex(Flex::Center).areas(v);
    r
}

/// The help popup's size on a screen of `area`.
pub fn help_area(area: Rect) -> Rect {
    centered(area, 96, area.height.saturating_sub(2).max(3))
}

/// The help: the keys of the current view (the list the hint bar shows), every key, the glyphs, and the formula.
pub fn help_lines(state: &State, width: usize) -> Vec<Line<'static>> {
    let theme = &state.config.theme;
    let km = &state.config.keymap;
    let mut out: Vec<Line<'static>> = Vec::new();
    let entry = |out: &mut Vec<Line<'static>>, keys: &str, text: &str| {
        let keys = format!("{keys:<14}");
        let mut first = true;
        super::text::hanging("", text, width.saturating_sub(15), &mut |m, l| {
            let key = if first { keys.clone() } else { " ".repeat(14) };
            first = false;
            out.push(Line::from(vec![Span::styled(key, theme.accent()), Span::raw(format!(" {m}{l}"))]));
        });
    };
    let heading = |out: &mut Vec<Line<'static>>, text: String| {
        out.push(Line::styled(text, theme.title()));
    };
    heading(&mut out, format!("In this view ({})", crate::tui::views::component(state.ui.view).title()));
    for h in super::bars::view_hints(state) {
        let keys: Vec<String> = h.actions.iter().map(|&a| km.labels(a)).filter(|k| !k.is_empty()).collect();
        entry(&mut out, &keys.join(" / "), h.help);
    }
    out.push(Line::raw(""));
    heading(&mut out, "Every key (from the keymap; edit in ~/.config/gigscope/config.toml)".into());
    for &a in Action::ALL {
        let keys = km.labels(a);
        entry(&mut out, if keys.is_empty() { "(unbound)" } else { &keys }, a.describe());
    }
    out.push(Line::raw(""));
    heading(&mut out, "Glyphs".into());
    for (glyph, meaning) in GLYPHS {
        entry(&mut out, glyph, meaning);
    }
    out.push(Line::raw(""));
    heading(&mut out, "The formula (the anchor view fills it in with the selected step's numbers)".into());
    for (term, meaning) in formula_help() {
        entry(&mut out, &term, &meaning);
    }
    out
}

/// What each glyph on the screens means.
pub const GLYPHS: &[(&str, &str)] = &[
    ("+4 −2", "heatmap cell: the sign of the step's A and |A| in ninths (1–9) of the group's largest |A|"),
    ("00", "heatmap cell: A is exactly 0 (a zero-variance group under grpo, a singleton step group under step, or A_E and ω·A_S cancelling)"),
    ("!", "heatmap cell: A_E and ω·A_S have opposite signs (the episode and the step disagree)"),
    ("∅", "zero-variance group: the episode pool's scores are all equal (A_E = 0) or their std is below the engine's epsilon (A_E ≈ 0)"),
    ("✓ ✗", "the episode succeeded / failed"),
    ("⚠", "in a step list: the action was invalid (its s and R_t lose the penalty c); in the status bar: broken lines or reader notes"),
    ("◀ this step", "the selected step among the members of its anchor group"),
    ("▶", "the chosen action, the first divergent step (compare), the selected field"),
    ("=", "compare: the steps before the divergence are identical"),
    ("* ✎", "a setting differs from the run's recorded one (run.json); R resets"),
    ("⇣ follow", "follow mode: the newest episodes are selected as they arrive"),
    ("⟳", "an anchor grouping is being computed in the background"),
    ("traj 1…", "trajectories are numbered from 1 in their group; steps from 0, as gigscope advantages numbers them"),
    ("sg", "the size of the step's anchor (step) group; 1 means A_S = 0"),
    ("it grp succ", "the overview's iterations table where its full headers do not fit: iteration, groups, success rate"),
    ("ret 0-var", "the same: mean return, share of zero-variance groups (A_E = 0)"),
    ("st/ep tok/st", "the same: steps per episode, tokens per step (sg: the mean step-group size)"),
    ("2–4 of 5 ↑↓", "a table's title when it cannot show all its rows: the rows shown, and on which side the hidden ones are"),
];

/// The formula's terms in words, ε from the engine.
fn formula_help() -> Vec<(String, String)> {
    use crate::advantage::explain::epsilon_text;
    use crate::advantage::STD_EPSILON;
    let mut terms: Vec<(String, String)> = vec![
        ("R_t".into(), "Σ_k γ^k·r_(t+k) − c·[invalid]: the discounted return from step t".into()),
        ("s".into(), "Σ_k r_k − c·[invalid]: the episode's whole reward, the row's score".into()),
        ("A_S".into(), "(R_t − mean_S) / F_S over the step's anchor group (same state, any trajectory of the group); 0 for a group of one".into()),
        ("A_E".into(), "(s − mean_E) / F_E over the episode group's pool: every row (pooling steps) or each trajectory's first row (trajectories)".into()),
        ("F".into(), format!("1 (mean_norm) or the sample standard deviation (N−1) + {} (mean_std_norm)", epsilon_text(STD_EPSILON))),
        ("A gigpo".into(), "A_E + ω·A_S".into()),
        ("A grpo".into(), "A_E".into()),
        ("A step".into(), "A_S".into()),
        ("A rloo".into(), "n/(n−1)·(s − mean_E) over the pool: s minus the mean of the other n−1 samples (leave-one-out); no F, the norm is not used".into()),
        ("TRL".into(), "with scale_rewards set, A_E is TRL GRPOTrainer's (R − group mean) / (std + 1e-4, the batch's, or 1)".into()),
    ];
    // GiGPO's successors (the estimators view's other columns), as the family states them.
    let successors = EstimatorKind::ALL.into_iter().filter(|k| k.engine().is_none());
    let at = terms.iter().position(|(t, _)| t == "TRL").unwrap_or(terms.len());
    terms.splice(at..at, successors.map(|k| (format!("A {k}"), k.formula().trim_start_matches("A = ").to_string())));
    terms
}

pub fn help(state: &State, scroll: u16, area: Rect, buf: &mut Buffer) {
    let r = help_area(area);
    let inner = super::layout::inner(r);
    let lines = help_lines(state, inner.width as usize);
    let max = lines.len().saturating_sub(inner.height as usize);
    let skip = (scroll as usize).min(max);
    Clear.render(r, buf);
    let title =
        format!("Help · {}–{}/{} · ↑↓ scroll", skip + 1, (skip + inner.height as usize).min(lines.len()), lines.len());
    Paragraph::new(lines).scroll((skip as u16, 0)).block(block(state, title, r)).render(r, buf);
}

/// How far the help can scroll on a screen of `size`.
pub fn help_scroll_max(state: &State) -> usize {
    let r = help_area(Rect::new(0, 0, state.ui.size.0, state.ui.size.1));
    let inner = super::layout::inner(r);
    help_lines(state, inner.width as usize).len().saturating_sub(inner.height as usize)
}

pub fn settings(state: &State, field: Field, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let width = 76u16.min(area.width);
    let inner_w = width.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = FIELDS
        .iter()
        .map(|spec| {
            let f = spec.field;
            let changed = f.differs(&state.domain.settings, &state.domain.recorded);
            let text = format!(
                "{} {:<16} {:<20} {}",
                if f == field { "▶" } else { " " },
                spec.label,
                f.value(&state.domain.settings),
                if changed { format!("* run: {}", f.value(&state.domain.recorded)) } else { String::new() }
            );
            let style = if f == field {
                theme.selected()
            } else if changed {
                theme.warn()
            } else {
                Default::default()
            };
            Line::styled(text, style)
        })
        .collect();
    let wrapped = |text: &str, style: ratatui::style::Style, lines: &mut Vec<Line>| {
        super::text::hanging("", text, inner_w, &mut |m, l| lines.push(Line::styled(format!("{m}{l}"), style)));
    };
    wrapped(&format!("{}: {}", field.label(), field.help()), theme.dim(), &mut lines);
    if state.domain.settings_modified() {
        wrapped("* differs from the run's recorded settings (R resets)", theme.warn(), &mut lines);
    } else {
        wrapped("same as the run's recorded settings", theme.dim(), &mut lines);
    }
    if let Some(pending) = state.domain.grouping_job {
        wrapped(&super::bars::grouping_note(state, pending), theme.warn(), &mut lines);
    }
    if let Some(offer) = super::widgets::offer_line(state) {
        wrapped(&offer, theme.accent(), &mut lines);
    }
    // What the change does to the selected step, live: the panel it covers, summarised.
    if let (Some(x), true) = (state.explanation(), summarises(state)) {
        let head = super::widgets::term_text(&x.advantage);
        let parts: Vec<String> = [Symbol::EpisodeAdvantage, Symbol::StepAdvantage]
            .into_iter()
            .filter_map(|sym| x.term(sym))
            .map(|t| format!("{} {}", t.label, explain::signed(t.value)))
            .collect();
        wrapped(&format!("selected step: {head} ({})", parts.join(", ")), theme.accent(), &mut lines);
    }
    let h = lines.len() as u16 + 2;
    // Over the anchor view the panel sits at the top, leaving the explanation at the bottom in view.
    let r = if crate::tui::views::component(state.ui.view).shows_explanation() {
        let [_, body, _, _] = crate::tui::views::frame(state, area);
        let [v] = Layout::horizontal([Constraint::Length(width)]).flex(Flex::Center).areas(body);
        Rect { height: h.min(body.height), ..v }
    } else {
        centered(area, width, h)
    };
    Clear.render(r, buf);
    Paragraph::new(lines).block(block(state, "Advantage settings (every change recomputes)", r)).render(r, buf);
}

/// Views where a step is selected, whose advantage the settings panel summarises.
fn summarises(state: &State) -> bool {
    crate::tui::views::component(state.ui.view).selects_step()
}

pub fn burst(state: &State, field: BurstField, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let running = state.jobs.burst.as_ref().is_some_and(BurstStatus::running);
    let choices = ray_choices(&state.config.burst);
    let form = &state.jobs.burst_form;
    let mut lines: Vec<Line> = BurstField::ALL
        .iter()
        .map(|&f| {
            let text = format!("{} {:<18} {}", if f == field { "▶" } else { " " }, f.label(), form.value(f, &choices));
            let style = if f == field {
                theme.selected()
            } else if running {
                theme.dim()
            } else {
                Default::default()
            };
            Line::styled(text, style)
        })
        .collect();
    const WIDTH: u16 = 76;
    match form.ray_choice(&choices) {
        None => {
            lines.push(Line::styled("Trains into this run: its checkpoint, else a fresh policy", theme.dim()));
            if let Some(build) = &state.jobs.trainer_build {
                // Said whole (wrapped): a burst started now waits for the build.
                let text = format!("{build}; a burst started now starts when it is ready");
                lines.extend(wrapped_lines(&text, usize::from(WIDTH - 2), theme.accent()));
            }
        }
        Some(choice) => {
            let env = crate::env_registry::of_run(&state.domain.run).map(|r| r.name);
            let address = choice.profile.address.as_deref().unwrap_or("(none)");
            lines.push(Line::raw(format!("Ray profile {} at {address}; the job runs:", choice.name)));
            let command = match form.ray_plan(choice, &state.domain.run.dir, env, &state.jobs.burst_host) {
                Ok(plan) => Line::styled(plan.command, theme.accent()),
                Err(e) => Line::styled(format!("cannot start: {e}"), theme.dim()),
            };
            // The whole command, wrapped to the dialog's width.
            let text: String = command.spans.iter().map(|s| s.content.as_ref()).collect();
            lines.extend(wrapped_lines(&text, usize::from(WIDTH - 2), command.style));
        }
    }
    let status_h = if state.jobs.burst.is_some() { 12 } else { 0 };
    let r = centered(area, WIDTH, lines.len() as u16 + 2 + status_h);
    Clear.render(r, buf);
    let title =
        if running { "Training burst (running: X cancels, Esc hides)" } else { "Training burst (Enter starts)" };
    let outer = block(state, title, r);
    let inner = outer.inner(r);
    outer.render(r, buf);
    let [form, status] = Layout::vertical([Constraint::Length(lines.len() as u16), Constraint::Min(0)]).areas(inner);
    Paragraph::new(lines).render(form, buf);
    if let Some(b) = &state.jobs.burst {
        burst_status(state, b, status, buf);
    }
}

/// `text` cut into lines of `width` characters (a command or a path, where any place is a fair place to cut).
fn wrapped_lines(text: &str, width: usize, style: Style) -> Vec<Line<'static>> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(width.max(1)).map(|c| Line::styled(c.iter().collect::<String>(), style)).collect()
}

fn burst_status(state: &State, b: &BurstStatus, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    if b.ray_job.is_some() {
        // A Ray job: which, its log's last lines, and how it ended (a failure with its log's tail).
        let mut lines = vec![Line::raw(b.how.clone())];
        lines.extend(b.log.iter().map(|l| Line::styled(l.clone(), theme.dim())));
        if let Some(ended) = &b.ended {
            lines.extend(ended.lines().map(|l| Line::raw(l.to_string())));
        }
        // The end is what matters once the job has ended: the lines that do not fit are the first ones.
        let skip = lines.len().saturating_sub(usize::from(area.height));
        Paragraph::new(lines.split_off(skip)).render(area, buf);
        return;
    }
    let not_started = b.points.is_empty() && b.device.is_empty();
    // It never started (e.g. the training plugin could not be loaded), or waits for the trainer's build: the
    // whole reason, wrapped.
    if let (Some(why), true) = (b.ended.as_ref().or(b.waiting.as_ref()), not_started) {
        Paragraph::new(why.as_str()).wrap(Wrap { trim: true }).render(area, buf);
        return;
    }
    let [info, gauge, chart] =
        Layout::vertical([Constraint::Length(2), Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let mut head = format!(
        "{} · {}",
        b.how,
        if b.device.is_empty() { "…".into() } else { super::widgets::device_label(&b.device) }
    );
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
        None if b.failed => "no iteration finished".into(),
        None => b.ended.clone().unwrap_or_else(|| "first iteration running …".into()),
    };
    Paragraph::new(vec![Line::raw(head), Line::styled(last, theme.dim())]).render(info, buf);
    Gauge::default()
        .gauge_style(theme.accent())
        .ratio(b.progress())
        .label(format!("{}/{} iterations", b.completed(), b.iterations))
        .render(gauge, buf);
    // A failure is said whole, wrapped where the chart would be: cut to the dialog's width, its reason (after the
    // full path of the file a full disk refused) would be lost.
    if let (Some(failure), true) = (&b.ended, b.failed) {
        Paragraph::new(failure.as_str()).wrap(Wrap { trim: true }).render(chart, buf);
        return;
    }
    let data: Vec<(f64, f64)> = b.points.iter().map(|p| (p.iteration as f64, p.success)).collect();
    crate::tui::views::overview::line_chart(state, "train success", &data, Some((0.0, 1.0)), chart, buf);
}
