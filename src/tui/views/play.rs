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
use crate::tui::msg::{Effect, Effects};
use crate::tui::play::{self, GroupPlay, Play, Played, MAX_GROUP_SIZE};
use crate::tui::state::{Prompt, State, View};

pub struct PlayView;

impl Component for PlayView {
    fn title(&self) -> &'static str {
        "Play"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        vec![match state.ui.play.as_ref().map(|p| &p.session) {
            Some(Some(session)) => {
                format!("{} › episode {}/{}", session.group, session.finished.len() + 1, session.size)
            }
            Some(None) => "pick a goal".into(),
            None => "opening the environment".into(),
        }]
    }

    fn hints(&self, state: &State) -> Vec<Hint> {
        use Action::*;
        let Some(play) = state.ui.play.as_ref() else { return vec![] };
        if play.replay.is_some() {
            return vec![
                hint(&[Open], "next step", "show the policy's next step"),
                hint(&[Autoplay], "rest at once", "add the rest of the policy's episodes at once"),
            ];
        }
        if let Some(page) = &play.finished_page {
            let label = if page.group_done { "open group" } else { "next episode" };
            return vec![hint(&[Open], label, "leave the page the episode ended on")];
        }
        match play.session.is_some() {
            false => vec![
                hint(&[Up, Down], "move", "select a goal"),
                hint(&[Open], "start group", "play a group of the selected goal"),
                hint(&[Left, Right], "group size", "fewer / more episodes in the group"),
            ],
            true => vec![
                hint(&[Up, Down], "move", "select an action"),
                hint(&[Open], "act", "take the selected action (on search[…]: type a query)"),
                hint(&[Autoplay], "policy plays rest", "the run's policy plays the rest of the group"),
                hint(&[WatchPolicy], "watch policy", "the policy plays the rest step by step: Enter shows each step"),
                hint(&[Abandon], "abandon", "abandon the group (asks again; nothing is written)"),
                hint(&[ScrollDown, ScrollUp], "scroll obs", "scroll the observation"),
            ],
        }
    }

    fn highlight(&self, state: &State) -> Option<String> {
        let play = state.ui.play.as_ref()?;
        if let Some(r) = &play.replay {
            let step = r.current()?;
            return Some(format!("the policy chose {} (reward {})", step.action, step.reward));
        }
        let session = play.session.as_ref()?;
        let actions = session.actions();
        Some(format!("the highlighted action {} is the one Enter takes", actions.get(session.cursor)?))
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
            Some(session) => {
                ListRegion { rect: layout::inner(a.side), len: session.actions().len(), selected: session.cursor }
            }
            None => ListRegion { rect: layout::inner(a.main), len: p.tasks.len(), selected: p.goal_cursor },
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
            Some(play) => play.goal_cursor = clamp_add(play.goal_cursor, by, play.tasks.len()),
            None => {}
        }
    }

    fn scroll(&self, state: &mut State, by: isize) {
        super::episode::scroll_obs(state, by);
    }
}

/// Keys of the play view; `None` for keys it leaves to the rest of the TUI.
fn on_play(c: &PlayView, state: &mut State, a: Action) -> Option<Effects> {
    let play = state.ui.play.as_mut()?;
    let redraw = Some(Effects::redraw());
    // The policy's episodes, one step per key.
    if play.replay.is_some() {
        match a {
            Action::Open | Action::Right => {
                if play.replay.as_mut().is_some_and(|r| r.advance()) {
                    return redraw;
                }
                return Some(finish_replay(state));
            }
            Action::Autoplay => return Some(finish_replay(state)),
            _ => return None,
        }
    }
    // The page an episode ended on stays until Enter.
    if let Some(page) = play.finished_page.take() {
        if matches!(a, Action::Open | Action::Right) {
            if page.group_done {
                open_played_group(state);
            }
            return redraw;
        }
    }
    let confirming = std::mem::take(&mut play.confirm_abandon);
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
        return redraw;
    }
    let play = state.ui.play.as_mut()?;
    match &mut play.session {
        None => match a {
            Action::Left => play.group_size = play.group_size.saturating_sub(1).max(1),
            Action::Right => play.group_size = (play.group_size + 1).min(MAX_GROUP_SIZE),
            Action::Open => {
                let taken = state.domain.derived.table.episode_groups.iter().map(|g| &*g.name);
                let name = play::fresh_group_name(play.goal_cursor, taken.chain(state.jobs.pending_group.as_deref()));
                state.ui.message = Some(format!("group {name}: episode 1 of {}", play.group_size));
                play.start(name);
            }
            _ => return None,
        },
        Some(session) => match a {
            Action::Open | Action::Right => {
                if session.selected_template().is_some() {
                    state.ui.input = Some(String::new());
                    state.ui.prompt = Prompt::PlayQuery;
                    return redraw;
                }
                let Some(action) = session.selected_action() else { return Some(Effects::none()) };
                return Some(play_action(state, &action));
            }
            Action::Abandon if confirming => {
                play.session = None;
                state.ui.message = Some("group abandoned: nothing was written".into());
            }
            Action::Abandon => {
                play.confirm_abandon = true;
                state.ui.message = Some(format!(
                    "abandon {} ({} of {} episodes played)? Press {} again: nothing is written. Any other key keeps it.",
                    session.group,
                    session.finished.len(),
                    session.size,
                    state.config.keymap.first_label(Action::Abandon).unwrap_or_default()
                ));
            }
            _ => return None,
        },
    }
    redraw
}

/// Every step of the policy's episodes was shown (or the rest was asked for at once): they join the group.
fn finish_replay(state: &mut State) -> Effects {
    let Some(play) = state.ui.play.as_mut() else { return Effects::none() };
    let Some(replay) = play.replay.take() else { return Effects::none() };
    let n = replay.episodes.len();
    match play.add_generated(replay.episodes) {
        Some(outcome) => {
            let fx = played(state, outcome);
            let rest = state.ui.message.take().unwrap_or_default();
            state.ui.message = Some(format!("{} played {n} episode(s) · {rest}", replay.who));
            fx
        }
        None => Effects::redraw(),
    }
}

/// The finished group in the group view, once the run shows it (else it opens when it is read back).
fn open_played_group(state: &mut State) {
    let Some(name) = state.jobs.pending_group.clone() else { return };
    if state.select_group(&name) {
        state.jobs.pending_group = None;
    } else {
        state.ui.message = Some(format!("{name} is being written; it opens as soon as the run shows it"));
    }
}

/// Whether the play view holds the screen for a page the user has not dismissed (a played group then waits to
/// open until Enter).
pub fn holds_finished_page(state: &State) -> bool {
    state.ui.view == View::Play && state.ui.play.as_ref().is_some_and(|p| p.finished_page.is_some())
}

/// The policy's episodes arrived: watched step by step (`w`), or added to the group at once (`A`).
pub fn autoplayed(state: &mut State, episodes: Vec<crate::run::Episode>, who: String) -> Effects {
    let Some(play) = state.ui.play.as_mut() else { return Effects::none() };
    if std::mem::take(&mut play.watching) && play.session.is_some() && !episodes.is_empty() {
        let n = episodes.len();
        play.replay = Some(play::Replay { episodes, who: who.clone(), episode: 0, step: 0 });
        state.ui.message = Some(format!(
            "{who} played {n} episode(s): Enter shows its next step, {} the rest at once",
            state.config.keymap.first_label(Action::Autoplay).unwrap_or_default()
        ));
        return Effects::redraw();
    }
    let n = episodes.len();
    match play.add_generated(episodes) {
        Some(outcome) => {
            let fx = played(state, outcome);
            let rest = state.ui.message.take().unwrap_or_default();
            state.ui.message = Some(format!("{who} played {n} episode(s) · {rest}"));
            fx
        }
        None => Effects::none(),
    }
}

/// Fill the selected action template (WebShop's search bar) with the text typed at the prompt, and take it.
pub fn play_typed(state: &mut State, text: &str) -> Effects {
    let template = state.ui.play.as_ref().and_then(|p| p.session.as_ref()).and_then(|s| s.selected_template());
    match template {
        Some(name) => play_action(state, &format!("{name}[{text}]")),
        None => Effects::none(),
    }
}

/// Take `action` in the play view's episode.
pub fn play_action(state: &mut State, action: &str) -> Effects {
    match state.ui.play.as_mut().and_then(|p| p.act(action)) {
        Some(outcome) => played(state, outcome),
        None => Effects::none(),
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
            return Effects::redraw_and(Effect::Write(episodes));
        }
    }
    Effects::redraw()
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
        let text = match state.domain.capabilities().opening {
            Some(opening) => format!("Opening the environment ({opening}) …"),
            None => "Opening the environment …".to_owned(),
        };
        Paragraph::new(text).block(block(state, "Play", area)).render(area, buf);
        return;
    };
    let a = areas(area);
    if let Some(replay) = &play.replay {
        replay_view(state, replay, &a, buf);
        return;
    }
    if let Some(page) = &play.finished_page {
        finished_page(state, page, &a, buf);
        return;
    }
    match &play.session {
        None => {
            picker_header(state, play, a.header, buf);
            goal_list(state, play, a.main, buf);
            goal_detail(state, play, a.side, buf);
            group_note(state, a.group, buf);
        }
        Some(session) => {
            session_header(state, play, session, a.header, buf);
            observation(state, session, a.main, buf);
            actions(state, session, a.side, buf);
            finished(state, session, a.group, buf);
        }
    }
}

/// The policy's episode at the step shown: what it saw, what it could do, what it chose.
fn replay_view(state: &State, replay: &play::Replay, a: &PlayAreas, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let Some(ep) = replay.episodes.get(replay.episode) else { return };
    let Some(step) = ep.steps.get(replay.step) else { return };
    let head = vec![
        Line::from(vec![
            Span::styled(format!("{} plays ", replay.who), theme.accent()),
            Span::raw(format!(
                "· episode {}/{} · step {}/{}",
                replay.episode + 1,
                replay.episodes.len(),
                replay.step + 1,
                ep.steps.len()
            )),
        ]),
        Line::raw(trunc(ep.instruction(), a.header.width as usize)),
    ];
    Paragraph::new(head).render(a.header, buf);
    observation_pane(state, &step.observation, " · what the policy saw", a.main, buf);
    let actions: Vec<String> = step.available_actions.clone().unwrap_or_default();
    let chosen = actions.iter().position(|x| *x == step.action);
    let mut list = actions.clone();
    if chosen.is_none() {
        list.push(step.action.clone());
    }
    let cursor = chosen.unwrap_or(list.len().saturating_sub(1));
    cursor_list(
        state,
        "What it could do · ▶ what it chose".into(),
        list.len(),
        cursor,
        |i| format!("{}{}", if i == cursor { "▶ " } else { "  " }, list[i]),
        a.side,
        buf,
    );
    let last = !replay.clone().advance();
    let note = format!(
        "reward {} · Enter: {} · A: the rest at once",
        step.reward,
        if last { "add the episodes to the group" } else { "its next step" }
    );
    Paragraph::new(Line::styled(note, theme.dim())).wrap(Wrap { trim: true }).render(a.group, buf);
}

/// The page an episode ended on (WebShop's "Thank you" page after a purchase), and under it the reward
/// explained (WebShop: its parts and formula) with what Enter does next, given the rows they need.
fn finished_page(state: &State, page: &play::FinishedPage, a: &PlayAreas, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let head = Line::from(vec![
        Span::styled(format!("Episode {}/{} ended ", page.episode, page.size), theme.title()),
        Span::raw(format!("· reward {:.3}", page.reward)),
    ]);
    Paragraph::new(head).render(a.header, buf);
    let next = if page.group_done {
        "The group is complete and written to the run: Enter opens it in the group view, with its advantages."
    } else {
        "Enter starts the next episode of the group, from the same start state."
    };
    let body = Rect { height: a.group.bottom().saturating_sub(a.main.y), ..a.main };
    let width = layout::inner(body).width as usize;
    let mut lines: Vec<Line> = Vec::new();
    for (text, style) in
        page.explained.iter().map(|l| (l.as_str(), ratatui::style::Style::new())).chain([(next, theme.dim())])
    {
        crate::tui::ui::text::hanging("", text, width, &mut |m, l| lines.push(Line::styled(format!("{m}{l}"), style)));
    }
    let [obs, side] = Layout::vertical([Constraint::Min(3), Constraint::Length(lines.len() as u16 + 2)]).areas(body);
    observation_pane(state, &page.observation, " · the last page", obs, buf);
    let title = if page.explained.is_empty() { "Next" } else { "Reward · Next" };
    Paragraph::new(lines).block(block(state, title, side)).render(side, buf);
}

fn picker_header(state: &State, play: &Play, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let lines = vec![
        Line::from(vec![
            Span::styled("Pick a goal", theme.title()),
            Span::raw(format!(" · {} goals · group size N = ", play.tasks.len())),
            Span::styled(play.group_size.to_string(), theme.accent()),
            Span::raw(" (←→)"),
        ]),
        Line::styled("Enter starts the group: N episodes of the goal, each from the same start state.", theme.dim()),
    ];
    Paragraph::new(lines).render(area, buf);
}

fn goal_list(state: &State, play: &Play, area: Rect, buf: &mut Buffer) {
    let inner = layout::inner(area);
    let start = layout::window_start(play.goal_cursor, play.tasks.len(), inner.height as usize);
    // Only the visible tasks are asked for (a task list may be long).
    let visible: Vec<String> = (start..play.tasks.len())
        .take(inner.height as usize)
        .map(|i| play.tasks.task(i).map_or(String::new(), |t| t.instruction))
        .collect();
    let text = |i: usize| format!("{i:>5}  {}", visible.get(i - start).map_or("", String::as_str));
    cursor_list(state, "Goals".into(), play.tasks.len(), play.goal_cursor, text, area, buf);
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
            if i == cursor {
                Line::styled(line, theme.selected())
            } else {
                Line::raw(line)
            }
        })
        .collect();
    Paragraph::new(lines).block(block(state, title, area)).render(area, buf);
}

fn goal_detail(state: &State, play: &Play, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let Some(task) = play.tasks.task(play.goal_cursor) else { return };
    let row = |k: &str, v: String| Line::from(vec![Span::styled(format!("{k:<11}"), theme.dim()), Span::raw(v)]);
    let mut lines = vec![Line::raw(task.instruction), Line::raw(""), row("task", task.id)];
    lines.extend(task.details.into_iter().map(|(k, v)| row(&k, v)));
    Paragraph::new(lines).wrap(Wrap { trim: false }).block(block(state, "Goal", area)).render(area, buf);
}

fn group_note(state: &State, area: Rect, buf: &mut Buffer) {
    let text = "The finished group is appended to this run, kept apart from the training iterations (the \
                overview's play row), and opens in the group view with its anchor groups and advantages. In a \
                group, A lets the run's policy play the remaining episodes, w shows them step by step.";
    Paragraph::new(text).style(state.config.theme.dim()).wrap(Wrap { trim: true }).render(area, buf);
}

fn session_header(state: &State, play: &Play, session: &GroupPlay, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let instruction = play.tasks.task(session.goal).map_or(String::new(), |t| t.instruction);
    let page = session.env.page().map_or(String::new(), |p| format!(" · {p}"));
    let lines = vec![
        Line::from(vec![
            Span::styled(session.group.clone(), theme.accent()),
            Span::raw(format!(
                " · episode {}/{} · step {}{page}",
                session.finished.len() + 1,
                session.size,
                session.steps(),
            )),
        ]),
        Line::raw(trunc(&instruction, area.width as usize)),
    ];
    Paragraph::new(lines).render(area, buf);
}

/// The observation as the policy sees it; the choices it does not show (WebShop's selected options) go in the
/// pane's title.
fn observation(state: &State, session: &GroupPlay, area: Rect, buf: &mut Buffer) {
    let choices: Vec<String> =
        session.env.choices().into_iter().map(|(name, value)| format!("{name} {value}")).collect();
    let title = if choices.is_empty() { String::new() } else { format!(" · selected: {}", choices.join(", ")) };
    observation_pane(state, session.env.observation(), &title, area, buf);
}

fn actions(state: &State, session: &GroupPlay, area: Rect, buf: &mut Buffer) {
    let actions = session.actions();
    let title = match session.template_seen() {
        Some(name) => format!("Actions ({}) · Enter acts, on {name}[…] type a query", actions.len()),
        None => format!("Actions ({}) · Enter acts", actions.len()),
    };
    let text = |i: usize| with_title(session, &actions[i]);
    cursor_list(state, title, actions.len(), session.cursor, text, area, buf);
}

/// An action with the environment's label for it (a WebShop product click's title, so the user need not
/// remember asins).
fn with_title(session: &GroupPlay, action: &str) -> String {
    match session.env.action_label(action) {
        Some(label) => format!("{action} · {label}"),
        None => action.to_string(),
    }
}

fn finished(state: &State, session: &GroupPlay, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let mut spans =
        vec![Span::styled(format!("Group so far ({}/{}): ", session.finished.len(), session.size), theme.title())];
    if session.finished.is_empty() {
        spans.push(Span::styled("no episode finished yet", theme.dim()));
    }
    for e in &session.finished {
        spans.push(Span::raw(format!("{} steps → {:.3}   ", e.steps.len(), e.total_reward())));
    }
    let note = Line::styled(
        format!(
            "Advantages appear when the group is complete (A_E needs every return of the group). {} abandons the \
             group, Esc leaves the view and keeps it.",
            state.config.keymap.first_label(Action::Abandon).unwrap_or_default()
        ),
        theme.dim(),
    );
    Paragraph::new(vec![Line::from(spans), note]).wrap(Wrap { trim: true }).render(area, buf);
}
