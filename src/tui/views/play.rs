//! The live-play view: the goal picker, then the episode being played (observation, available actions) and
//! the group's finished episodes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use ratatui::layout::{Constraint, Layout};

use super::episode::observation_pane;
use super::{block, clamp_add, hint, layout, trunc, Component, Hint, ListRegion};
use crate::tui::action::Action;
use crate::tui::play::{self, GroupPlay, Play, Played, MAX_GROUP_SIZE};
use crate::tui::state::{Prompt, State, View};
use crate::tui::update::Effects;
use crate::webshop::goals::GoalOptions;
use crate::webshop::shop::Shop;

pub struct PlayView;

impl Component for PlayView {
    fn view(&self) -> View {
        View::Play
    }

    fn title(&self) -> &'static str {
        "Play"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        vec![match state.ui.play.as_ref().map(|p| &p.session) {
            Some(Some(session)) => {
                format!("{} › episode {}/{}", session.group, session.finished.len() + 1, session.size)
            }
            Some(None) => "pick a goal".into(),
            None => "opening the shop".into(),
        }]
    }

    fn hints(&self, state: &State) -> Vec<Hint> {
        use Action::*;
        match state.ui.play.as_ref().map(|p| p.session.is_some()) {
            Some(false) => vec![
                hint(&[Up, Down], "move", "select a goal"),
                hint(&[Open], "start group", "play a group of the selected goal"),
                hint(&[Left, Right], "group size", "fewer / more episodes in the group"),
            ],
            Some(true) => vec![
                hint(&[Up, Down], "move", "select an action"),
                hint(&[Open], "act", "take the selected action (on search[…]: type a query)"),
                hint(&[Autoplay], "policy plays rest", "the run's policy plays the rest of the group"),
                hint(&[Left], "abandon", "abandon the group (nothing is written)"),
                hint(&[ScrollDown, ScrollUp], "scroll obs", "scroll the observation"),
            ],
            None => vec![],
        }
    }

    fn needs_episodes(&self) -> bool {
        false
    }

    fn on_action(&self, state: &mut State, a: Action) -> Option<Effects> {
        on_play(self, state, a).or_else(|| super::standard(self, state, a))
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        render(state, area, buf);
    }

    fn list(&self, state: &State, body: Rect) -> Option<ListRegion> {
        let p = state.ui.play.as_ref()?;
        let a = areas(body);
        Some(match &p.session {
            Some(session) => ListRegion { rect: layout::inner(a.side), len: session.actions().len(), selected: session.cursor },
            None => ListRegion { rect: layout::inner(a.main), len: p.shop.goals.len(), selected: p.goal_cursor },
        })
    }

    fn scroll_region(&self, state: &State, body: Rect) -> Option<Rect> {
        state.ui.play.as_ref().and_then(|p| p.session.as_ref()).map(|_| areas(body).main)
    }

    fn move_by(&self, state: &mut State, by: isize) {
        match state.ui.play.as_mut() {
            Some(Play { session: Some(session), .. }) => {
                session.cursor = clamp_add(session.cursor, by, session.actions().len());
            }
            Some(play) => play.goal_cursor = clamp_add(play.goal_cursor, by, play.shop.goals.len()),
            None => {}
        }
    }

    fn scroll(&self, state: &mut State, by: isize) {
        super::episode::scroll_obs(state, by);
    }
}

/// Keys of the play view; `None` for keys it leaves to the rest of the TUI.
fn on_play(c: &PlayView, state: &mut State, a: Action) -> Option<Effects> {
    state.ui.play.as_ref()?;
    let by = match a {
        Action::Up => -1,
        Action::Down => 1,
        Action::PageUp => -super::page(c, state),
        Action::PageDown => super::page(c, state),
        Action::Top => isize::MIN / 2,
        Action::Bottom => isize::MAX / 2,
        _ => 0,
    };
    if by != 0 {
        c.move_by(state, by);
        return Some(Effects { redraw: true, ..Effects::default() });
    }
    let play = state.ui.play.as_mut()?;
    match &mut play.session {
        None => match a {
            Action::Left => play.group_size = play.group_size.saturating_sub(1).max(1),
            Action::Right => play.group_size = (play.group_size + 1).min(MAX_GROUP_SIZE),
            Action::Open => {
                let taken = state.domain.derived.table.episode_groups.iter().map(|g| g.name.as_str());
                let name = play::fresh_group_name(play.goal_cursor, taken.chain(state.jobs.pending_group.as_deref()));
                state.ui.message = Some(format!("group {name}: episode 1 of {}", play.group_size));
                play.start(name);
            }
            _ => return None,
        },
        Some(session) => match a {
            Action::Open | Action::Right => {
                if session.search_selected() {
                    state.ui.input = Some(String::new());
                    state.ui.prompt = Prompt::PlayQuery;
                    return Some(Effects { redraw: true, ..Effects::default() });
                }
                let Some(action) = session.selected_action() else { return Some(Effects::default()) };
                return Some(play_action(state, &action));
            }
            Action::Left => {
                play.session = None;
                state.ui.message = Some("group abandoned: nothing was written".into());
            }
            _ => return None,
        },
    }
    Some(Effects { redraw: true, ..Effects::default() })
}

/// Take `action` in the play view's episode.
pub fn play_action(state: &mut State, action: &str) -> Effects {
    match state.ui.play.as_mut().and_then(|p| p.act(action)) {
        Some(outcome) => played(state, outcome),
        None => Effects::default(),
    }
}

/// What an action (or the policy) led to: a message, and the finished group to write.
pub fn played(state: &mut State, outcome: Played) -> Effects {
    match outcome {
        Played::Step { reward } => state.ui.message = (reward != 0.0).then(|| format!("reward {reward}")),
        Played::EpisodeDone { reward, finished, size } => {
            state.ui.message = Some(format!(
                "episode {finished}/{size} ended with reward {reward:.3}; the next starts from the same state"
            ))
        }
        Played::GroupDone(episodes) => {
            state.jobs.pending_group = episodes.first().map(|e| e.group.clone());
            state.ui.message = Some(format!("group complete: writing {} episodes to the run …", episodes.len()));
            return Effects { redraw: true, write: episodes, ..Effects::default() };
        }
    }
    Effects { redraw: true, ..Effects::default() }
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

pub fn areas(body: Rect) -> PlayAreas {
    let [header, rest, group] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(0), Constraint::Length(4)]).areas(body);
    let [main, side] = if rest.width >= 100 {
        Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(rest)
    } else {
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(rest)
    };
    PlayAreas { header, main, side, group }
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let Some(play) = &state.ui.play else {
        let text = "Opening the shop: catalog, search index (built once, then cached) and goals …";
        Paragraph::new(text).block(block(state, "Play")).render(area, buf);
        return;
    };
    let a = areas(area);
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
