//! The live-play view: the goal picker, then the episode being played (observation, available actions) and
//! the group's finished episodes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::episode::observation_pane;
use super::{block, layout, trunc};
use crate::tui::play::{GroupPlay, Play};
use crate::tui::state::State;
use crate::webshop::goals::GoalOptions;
use crate::webshop::shop::Shop;

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let Some(play) = &state.play else {
        let text = "Opening the shop: catalog, search index (built once, then cached) and goals …";
        Paragraph::new(text).block(block(state, "Play")).render(area, buf);
        return;
    };
    let a = layout::play(area);
    match &play.session {
        None => {
            picker_header(state, play, a.header, buf);
            goal_list(state, play, a.main, buf);
            goal_detail(state, play, a.side, buf);
            group_note(state, a.group, buf);
        }
        Some(session) => {
            session_header(state, &play.shop, session, a.header, buf);
            observation(state, session, a.main, buf);
            actions(state, session, a.side, buf);
            finished(state, session, a.group, buf);
        }
    }
}

fn picker_header(state: &State, play: &Play, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let lines = vec![
        Line::from(vec![
            Span::styled("Pick a goal", theme.title()),
            Span::raw(format!(" · {} goals · group size N = ", play.shop.goals.len())),
            Span::styled(play.group_size.to_string(), theme.accent()),
            Span::raw(" (←→)"),
        ]),
        Line::styled("Enter starts the group: N episodes of the goal, each from the same start state.", theme.dim()),
    ];
    Paragraph::new(lines).render(area, buf);
}

fn goal_list(state: &State, play: &Play, area: Rect, buf: &mut Buffer) {
    let goals = &play.shop.goals;
    let text = |i: usize| format!("{i:>5}  {}", goals[i].instruction_text);
    cursor_list(state, "Goals".into(), goals.len(), play.goal_cursor, text, area, buf);
}

/// A bordered list of `len` rows (`text(i)` each, cut to the width) scrolled to keep `cursor` in view.
fn cursor_list(
    state: &State,
    title: String,
    len: usize,
    cursor: usize,
    text: impl Fn(usize) -> String,
    area: Rect,
    buf: &mut Buffer,
) {
    let theme = &state.config.theme;
    let inner = layout::inner(area);
    let start = layout::window_start(cursor, len, inner.height as usize);
    let lines: Vec<Line> = (start..len)
        .take(inner.height as usize)
        .map(|i| {
            let line = trunc(&text(i), inner.width as usize);
            if i == cursor { Line::styled(line, theme.selected()) } else { Line::raw(line) }
        })
        .collect();
    Paragraph::new(lines).block(block(state, title)).render(area, buf);
}

fn goal_detail(state: &State, play: &Play, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let Some(goal) = play.shop.goals.get(play.goal_cursor) else { return };
    let options = match &goal.goal_options {
        GoalOptions::Pairs(p) => p.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", "),
        GoalOptions::Values(v) => v.join(", "),
    };
    let row = |k: &str, v: String| Line::from(vec![Span::styled(format!("{k:<11}"), theme.dim()), Span::raw(v)]);
    let lines = vec![
        Line::raw(goal.instruction_text.clone()),
        Line::raw(""),
        row("task", Shop::task_id(play.goal_cursor)),
        row("product", format!("{} ({})", goal.asin, trunc(&goal.name, 60))),
        row("price <", format!("{:.2}", goal.price_upper)),
        row("attributes", goal.attributes.join(", ")),
        row("options", options),
        row("category", goal.product_category.clone()),
    ];
    Paragraph::new(lines).wrap(Wrap { trim: false }).block(block(state, "Goal")).render(area, buf);
}

fn group_note(state: &State, area: Rect, buf: &mut Buffer) {
    let text = "The finished group is appended to this run (iteration 0) and opens in the group view with its \
                anchor groups and advantages. In a group, A lets the run's policy play the remaining episodes.";
    Paragraph::new(text).style(state.config.theme.dim()).wrap(Wrap { trim: true }).render(area, buf);
}

fn session_header(state: &State, shop: &Shop, session: &GroupPlay, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let instruction = shop.goals.get(session.goal).map_or("", |g| g.instruction_text.as_str());
    let lines = vec![
        Line::from(vec![
            Span::styled(session.group.clone(), theme.accent()),
            Span::raw(format!(
                " · episode {}/{} · step {} · {}",
                session.finished.len() + 1,
                session.size,
                session.env.steps(),
                session.env.page().as_str()
            )),
        ]),
        Line::raw(trunc(instruction, area.width as usize)),
    ];
    Paragraph::new(lines).render(area, buf);
}

fn observation(state: &State, session: &GroupPlay, area: Rect, buf: &mut Buffer) {
    observation_pane(state, session.env.observation(), "", area, buf);
}

fn actions(state: &State, session: &GroupPlay, area: Rect, buf: &mut Buffer) {
    let actions = session.actions();
    let title = format!("Actions ({}) · Enter acts, on search[…] type a query", actions.len());
    let text = |i: usize| with_title(session, &actions[i]);
    cursor_list(state, title, actions.len(), session.cursor, text, area, buf);
}

/// A product click with the product's title, so the user need not remember asins.
fn with_title(session: &GroupPlay, action: &str) -> String {
    let catalog = session.env.catalog();
    let asin = action.strip_prefix("click[").and_then(|a| a.strip_suffix(']')).map(str::to_uppercase);
    match asin.and_then(|a| catalog.by_asin.get(&a)) {
        Some(&i) => format!("{action} · {}", catalog.products[i].title),
        None => action.to_string(),
    }
}

fn finished(state: &State, session: &GroupPlay, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let mut spans = vec![Span::styled(format!("Group so far ({}/{}): ", session.finished.len(), session.size), theme.title())];
    if session.finished.is_empty() {
        spans.push(Span::styled("no episode finished yet", theme.dim()));
    }
    for e in &session.finished {
        spans.push(Span::raw(format!("{} steps → {:.3}   ", e.steps.len(), e.total_reward())));
    }
    let note = Line::styled(
        "Advantages appear when the group is complete (A_E needs every return of the group). ← abandons the group.",
        theme.dim(),
    );
    Paragraph::new(vec![Line::from(spans), note]).wrap(Wrap { trim: true }).render(area, buf);
}
