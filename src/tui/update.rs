//! `update(state, msg) -> Effects`: the only place the state changes. Pure: no terminal, no files, no clock
//! (time arrives inside messages), so every behaviour here is unit-tested without a terminal.

use std::sync::Arc;
use std::time::Instant;

use super::action::Action;
use super::burst::{BurstRequest, BurstStatus, BurstUpdate};
use super::fields::Field;
use super::play::{self, Play, Played, MAX_GROUP_SIZE};
use super::state::{GroupingRequest, Popup, Prompt, SearchState, State, View};
use crate::advantage::AnchorGrouping;
use crate::index::SearchResults;
use crate::run::Episode;
use crate::webshop::shop::Shop;
use crate::live::{self, Applied, LiveEvent};
use super::ui::layout;

/// Everything that can happen to the TUI.
#[derive(Debug)]
pub enum Msg {
    Action(Action),
    Click { col: u16, row: u16 },
    Wheel { col: u16, row: u16, down: bool },
    Resize(u16, u16),
    /// Periodic clock, for "updated N s ago".
    Tick(Instant),
    /// What the run watcher found, received at the given instant.
    Live(Vec<LiveEvent>, Instant),
    /// A key typed while the search prompt is open.
    Input(InputKey),
    /// The outcome of a search the app ran for an [`Effects::search`].
    SearchDone { query: String, result: Result<SearchResults, String> },
    /// The shop for live play, opened for an [`Effects::open_shop`].
    ShopReady(Result<Arc<Shop>, String>),
    /// The policy played the rest of a play group ([`Effects::autoplay`]): its episodes and which policy.
    Autoplayed(Result<(Vec<Episode>, String), String>),
    /// A play group was appended to the run ([`Effects::write`]): how many episodes, or why not.
    Written(Result<usize, String>),
    /// News from the running training burst.
    Burst(BurstUpdate),
    /// An anchor grouping computed in the background for an [`Effects::group_anchors`].
    Grouped { episodes_version: u64, grouping: AnchorGrouping },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKey {
    Char(char),
    Backspace,
    Submit,
    Cancel,
}

/// What the caller must do after an update.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects {
    pub redraw: bool,
    pub quit: bool,
    /// Run this query against the run's index and answer with [`Msg::SearchDone`].
    pub search: Option<String>,
    /// Open the shop (catalog, search index, goals) and answer with [`Msg::ShopReady`].
    pub open_shop: bool,
    /// Append these episodes (a finished play group) to the run and answer with [`Msg::Written`].
    pub write: Vec<Episode>,
    /// Let the run's policy play episodes and answer with [`Msg::Autoplayed`].
    pub autoplay: Option<AutoplayRequest>,
    /// Start a training burst into the run; progress comes back as [`Msg::Burst`].
    pub start_burst: Option<BurstRequest>,
    /// Ask the running burst to stop after its current iteration.
    pub cancel_burst: bool,
    /// Compute this anchor grouping in the background and answer with [`Msg::Grouped`] (a request replaces
    /// one still running).
    pub group_anchors: Option<GroupingRequest>,
}

/// Episodes `{group}-{first}` … `{group}-{first+n-1}` of goal `goal`, played by the run's policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoplayRequest {
    pub goal: usize,
    pub group: String,
    pub first: usize,
    pub n: usize,
    pub seed: u64,
}

impl Effects {
    fn redraw() -> Effects {
        Effects { redraw: true, ..Effects::default() }
    }
}

pub fn update(state: &mut State, msg: Msg) -> Effects {
    match msg {
        Msg::Action(a) => {
            state.message = None;
            on_action(state, a)
        }
        Msg::Click { col, row } => {
            if state.popup.is_some() {
                return Effects::default();
            }
            match layout::list(state) {
                Some((rect, len, sel)) if layout::contains(rect, col, row) => {
                    let start = layout::window_start(sel, len, rect.height as usize);
                    let target = start + (row - rect.y) as usize;
                    if target < len {
                        set_list_selection(state, target);
                    }
                    Effects::redraw()
                }
                _ => Effects::default(),
            }
        }
        Msg::Wheel { col, row, down } => {
            let over_detail = layout::detail(state).is_some_and(|r| layout::contains(r, col, row));
            let a = match (over_detail && state.popup.is_none(), down) {
                (true, true) => Action::ScrollDown,
                (true, false) => Action::ScrollUp,
                (false, true) => Action::Down,
                (false, false) => Action::Up,
            };
            on_action(state, a)
        }
        Msg::Resize(w, h) => {
            state.size = (w, h);
            Effects::redraw()
        }
        Msg::Tick(now) => {
            // Redraw only when the "updated N s ago" text would change.
            let before = age_secs(state);
            state.now = Some(now);
            Effects { redraw: state.live.last_update.is_some() && age_secs(state) != before, ..Effects::default() }
        }
        Msg::Live(events, at) => on_live(state, events, at),
        Msg::Input(key) => on_input(state, key),
        Msg::SearchDone { query, result } => {
            match result {
                Err(e) => state.message = Some(e),
                Ok(r) if r.hits.is_empty() => state.message = Some(format!("no match for {query}")),
                Ok(r) => {
                    state.message = None;
                    state.search = Some(SearchState { query, total: r.total, hits: r.hits, current: 0 });
                    state.view = View::Search;
                }
            }
            Effects::redraw()
        }
        Msg::ShopReady(Ok(shop)) => {
            state.message = Some(format!(
                "{} goals · ↑↓ pick a goal, ←→ group size, Enter starts the group",
                shop.goals.len()
            ));
            state.play = Some(Play::new(shop));
            Effects::redraw()
        }
        Msg::ShopReady(Err(e)) | Msg::Autoplayed(Err(e)) | Msg::Written(Err(e)) => {
            state.message = Some(e);
            Effects::redraw()
        }
        Msg::Autoplayed(Ok((episodes, who))) => {
            let n = episodes.len();
            match state.play.as_mut().and_then(|p| p.add_generated(episodes)) {
                Some(outcome) => {
                    let fx = played(state, outcome);
                    let rest = state.message.take().unwrap_or_default();
                    state.message = Some(format!("{who} played {n} episode(s) · {rest}"));
                    fx
                }
                None => Effects::default(),
            }
        }
        Msg::Written(Ok(n)) => {
            state.message = Some(format!("wrote {n} episodes to the run; the group opens as soon as it is read back"));
            Effects::redraw()
        }
        Msg::Burst(news) => {
            state.burst.get_or_insert_with(BurstStatus::default).apply(news);
            Effects::redraw()
        }
        Msg::Grouped { episodes_version, grouping } => {
            Effects { redraw: true, group_anchors: state.grouped(episodes_version, grouping), ..Effects::default() }
        }
    }
}

fn on_input(state: &mut State, key: InputKey) -> Effects {
    let Some(text) = state.input.as_mut() else { return Effects::default() };
    match key {
        InputKey::Char(c) => text.push(c),
        InputKey::Backspace => {
            text.pop();
        }
        InputKey::Cancel => state.input = None,
        InputKey::Submit => {
            let query = state.input.take().unwrap_or_default();
            if query.trim().is_empty() {
                return Effects::redraw();
            }
            if state.prompt == Prompt::PlayQuery {
                return play_action(state, &format!("search[{query}]"));
            }
            state.message = Some(format!("searching for {query} …"));
            return Effects { redraw: true, search: Some(query), ..Effects::default() };
        }
    }
    Effects::redraw()
}

/// `n` / `N`: the next or previous hit, shown in the episode view.
fn jump_hit(state: &mut State, by: isize) {
    let Some(search) = state.search.as_mut() else {
        state.message = Some("no search yet: press / to search".into());
        return;
    };
    let n = search.hits.len() as isize;
    search.current = (search.current as isize + by).rem_euclid(n.max(1)) as usize;
    let Some(hit) = search.hits.get(search.current) else { return };
    let (e, step, current) = (hit.episode, hit.step, search.current);
    if e < state.run.episodes.len() {
        state.select_row(e, step);
        state.view = View::Episode;
        state.message = Some(format!("hit {}/{}", current + 1, n));
    }
}

fn age_secs(state: &State) -> Option<u64> {
    Some(state.live.since_update(state.now?)?.as_secs())
}

fn on_live(state: &mut State, events: Vec<LiveEvent>, at: Instant) -> Effects {
    // Remember the selected episode by id: a reset (file replaced) renumbers everything.
    let selected_id = state.episode_index().map(|e| state.run.episodes[e].id.clone());
    let selected_step = state.sel.step;
    let mut applied = Applied { new_episodes: state.run.episodes.len()..state.run.episodes.len(), ..Applied::default() };
    for event in events {
        applied.absorb(live::apply(&mut state.run, event));
    }
    if !applied.changed() {
        return Effects::default();
    }
    state.live.record(&applied, &state.run, at);
    state.now = Some(at);
    if let Some(e) = applied.errors.last() {
        state.message = Some(e.clone());
    }
    if applied.meta_changed {
        state.recorded = super::state::recorded_settings(state.run.meta.as_ref());
    }
    if applied.episodes_reset {
        state.rebuild();
    } else if !applied.new_episodes.is_empty() {
        state.extend(applied.new_episodes.start);
    }
    if let Some(name) = state.pending_group.clone() {
        if state.select_group(&name) {
            state.pending_group = None;
            return Effects::redraw();
        }
    }
    if applied.episodes_reset || !applied.new_episodes.is_empty() {
        if state.follow {
            jump_to_newest(state);
        } else if applied.episodes_reset {
            if let Some(e) = selected_id.and_then(|id| state.run.episodes.iter().position(|x| x.id == id)) {
                state.select_row(e, selected_step);
            }
        }
    }
    Effects::redraw()
}

/// Follow mode: the newest iteration, its newest group, that group's newest trajectory.
fn jump_to_newest(state: &mut State) {
    state.sel.iteration = state.derived.iterations.len().saturating_sub(1);
    state.sel.group = state.current_groups().last().copied().unwrap_or(0);
    state.sel.traj = state.group_episodes().len().saturating_sub(1);
    state.sel.step = 0;
    state.sel.obs_scroll = 0;
    state.clamp();
}

fn on_action(state: &mut State, a: Action) -> Effects {
    if a == Action::Quit {
        return Effects { quit: true, ..Effects::default() };
    }
    match state.popup {
        Some(Popup::Help { scroll }) => {
            let max = crate::tui::ui::help_scroll_max(state) as u16;
            let scroll = match a {
                Action::Up | Action::ScrollUp => scroll.saturating_sub(1),
                Action::Down | Action::ScrollDown => scroll.saturating_add(1).min(max),
                Action::PageUp => scroll.saturating_sub(10),
                Action::PageDown => scroll.saturating_add(10).min(max),
                Action::Top => 0,
                Action::Bottom => max,
                Action::Help | Action::Back | Action::Open | Action::Left => {
                    state.popup = None;
                    return Effects::redraw();
                }
                _ => return Effects::default(),
            };
            state.popup = Some(Popup::Help { scroll });
            return Effects::redraw();
        }
        Some(Popup::Settings { field }) => return on_settings(state, field, a),
        Some(Popup::Burst { field }) => return on_burst_dialog(state, field, a),
        None => {}
    }
    if state.view == View::Play {
        if let Some(fx) = on_play(state, a) {
            return fx;
        }
    }
    match a {
        Action::Play => return open_play(state),
        Action::Autoplay => return autoplay(state),
        Action::Train => {
            state.popup = Some(Popup::Burst { field: 0 });
            return Effects::redraw();
        }
        Action::CancelBurst => return cancel_burst(state),
        _ => {}
    }
    if state.run.episodes.is_empty()
        && state.view != View::Play
        && !matches!(a, Action::Help | Action::Settings | Action::Follow)
    {
        return Effects::default();
    }
    match a {
        Action::Up => move_by(state, -1),
        Action::Down => move_by(state, 1),
        Action::PageUp => move_by(state, -page(state)),
        Action::PageDown => move_by(state, page(state)),
        Action::Top => move_by(state, isize::MIN / 2),
        Action::Bottom => move_by(state, isize::MAX / 2),
        Action::Open | Action::Right => open(state),
        Action::Back | Action::Left => back(state),
        Action::PrevItem => item(state, -1),
        Action::NextItem => item(state, 1),
        Action::ScrollUp | Action::ScrollDown => {
            let down = a == Action::ScrollDown;
            if state.view == View::Anchor {
                let s = state.sel.formula_scroll;
                let s = if down { s.saturating_add(3) } else { s.saturating_sub(3) };
                state.sel.formula_scroll = s.min(layout::formula_scroll_max(state));
            } else if down {
                state.sel.obs_scroll = state.sel.obs_scroll.saturating_add(3);
            } else {
                state.sel.obs_scroll = state.sel.obs_scroll.saturating_sub(3);
            }
        }
        Action::Fold => {
            state.sel.unfolded = !state.sel.unfolded;
            state.sel.obs_scroll = 0;
        }
        Action::Overview => state.view = View::Overview,
        Action::Groups => state.view = View::Groups,
        Action::Episode => state.view = View::Episode,
        Action::Anchor => {
            state.view = View::Anchor;
            state.sel.formula_scroll = 0;
            select_self_in_anchor_group(state);
        }
        Action::Compare => {
            state.view = View::Compare;
            state.sel.compare_scroll = 0;
            if state.sel.other == state.sel.traj {
                let n = state.group_episodes().len();
                state.sel.other = if n > 1 { (state.sel.traj + 1) % n } else { state.sel.traj };
            }
        }
        Action::Settings => state.popup = Some(Popup::Settings { field: Field::Estimator }),
        Action::Help => state.popup = Some(Popup::Help { scroll: 0 }),
        Action::ResetSettings => {
            let group_anchors = reset_settings(state);
            return Effects { redraw: true, group_anchors, ..Effects::default() };
        }
        Action::Follow => {
            state.follow = !state.follow;
            if state.follow && !state.run.episodes.is_empty() {
                jump_to_newest(state);
            }
        }
        Action::Search => {
            state.input = Some(String::new());
            state.prompt = Prompt::Search;
        }
        Action::SearchNext => jump_hit(state, 1),
        Action::SearchPrev => jump_hit(state, -1),
        Action::Quit | Action::Play | Action::Autoplay | Action::Train | Action::CancelBurst => {
            unreachable!("handled above")
        }
    }
    Effects::redraw()
}

fn open_play(state: &mut State) -> Effects {
    if !state.is_webshop() {
        let env = state.run.meta.as_ref().and_then(|m| m.env.clone()).unwrap_or_else(|| "not recorded".into());
        state.message = Some(format!(
            "live play is WebShop's, and this run is not a WebShop run (env: {env}, {})",
            state.run.layout.name()
        ));
        return Effects::redraw();
    }
    state.view = View::Play;
    if state.play.is_some() {
        return Effects::redraw();
    }
    state.message = Some("opening the shop (catalog, search index, goals) …".into());
    Effects { redraw: true, open_shop: true, ..Effects::default() }
}

/// Keys of the play view; `None` for keys it leaves to the rest of the TUI.
fn on_play(state: &mut State, a: Action) -> Option<Effects> {
    state.play.as_ref()?;
    let by = match a {
        Action::Up => -1,
        Action::Down => 1,
        Action::PageUp => -page(state),
        Action::PageDown => page(state),
        Action::Top => isize::MIN / 2,
        Action::Bottom => isize::MAX / 2,
        _ => 0,
    };
    if by != 0 {
        move_by(state, by);
        return Some(Effects::redraw());
    }
    let play = state.play.as_mut()?;
    match &mut play.session {
        None => match a {
            Action::Left => play.group_size = play.group_size.saturating_sub(1).max(1),
            Action::Right => play.group_size = (play.group_size + 1).min(MAX_GROUP_SIZE),
            Action::Open => {
                let taken = state.derived.table.episode_groups.iter().map(|g| g.name.as_str());
                let name = play::fresh_group_name(play.goal_cursor, taken.chain(state.pending_group.as_deref()));
                state.message = Some(format!("group {name}: episode 1 of {}", play.group_size));
                play.start(name);
            }
            _ => return None,
        },
        Some(session) => match a {
            Action::Open | Action::Right => {
                if session.search_selected() {
                    state.input = Some(String::new());
                    state.prompt = Prompt::PlayQuery;
                    return Some(Effects::redraw());
                }
                let Some(action) = session.selected_action() else { return Some(Effects::default()) };
                return Some(play_action(state, &action));
            }
            Action::Left => {
                play.session = None;
                state.message = Some("group abandoned: nothing was written".into());
            }
            _ => return None,
        },
    }
    Some(Effects::redraw())
}

/// Take `action` in the play view's episode.
fn play_action(state: &mut State, action: &str) -> Effects {
    match state.play.as_mut().and_then(|p| p.act(action)) {
        Some(outcome) => played(state, outcome),
        None => Effects::default(),
    }
}

fn played(state: &mut State, outcome: Played) -> Effects {
    match outcome {
        Played::Step { reward } => state.message = (reward != 0.0).then(|| format!("reward {reward}")),
        Played::EpisodeDone { reward, finished, size } => {
            state.message =
                Some(format!("episode {finished}/{size} ended with reward {reward:.3}; the next starts from the same state"))
        }
        Played::GroupDone(episodes) => {
            state.pending_group = episodes.first().map(|e| e.group.clone());
            state.message = Some(format!("group complete: writing {} episodes to the run …", episodes.len()));
            return Effects { redraw: true, write: episodes, ..Effects::default() };
        }
    }
    Effects::redraw()
}

fn autoplay(state: &mut State) -> Effects {
    let Some(session) = state.play.as_ref().and_then(|p| p.session.as_ref()) else {
        state.message = Some("start a group in the play view first (p, then Enter on a goal)".into());
        return Effects::redraw();
    };
    let request = AutoplayRequest {
        goal: session.goal,
        group: session.group.clone(),
        first: session.finished.len(),
        n: session.remaining(),
        seed: state.run.episodes.len() as u64,
    };
    state.message = Some(format!("the policy plays {} episode(s) …", request.n));
    Effects { redraw: true, autoplay: Some(request), ..Effects::default() }
}

fn cancel_burst(state: &mut State) -> Effects {
    match state.burst.as_mut() {
        Some(b) if b.running() && !b.cancelling => {
            b.cancelling = true;
            state.message = Some("cancelling: the burst stops after its current iteration".into());
            Effects { redraw: true, cancel_burst: true, ..Effects::default() }
        }
        _ => {
            state.message = Some("no burst is running".into());
            Effects::redraw()
        }
    }
}

fn on_burst_dialog(state: &mut State, field: usize, a: Action) -> Effects {
    let n = super::burst::FIELDS.len();
    let running = state.burst.as_ref().is_some_and(BurstStatus::running);
    let field = match a {
        Action::Up => (field + n - 1) % n,
        Action::Down => (field + 1) % n,
        Action::Left | Action::Right if !running => {
            state.burst_form = state.burst_form.adjust(field, a == Action::Right);
            field
        }
        Action::Open if running => {
            state.message = Some("a burst is already running (X cancels it)".into());
            field
        }
        Action::Open => {
            state.burst = Some(BurstStatus { how: "starting …".into(), ..BurstStatus::default() });
            return Effects { redraw: true, start_burst: Some(state.burst_form), ..Effects::default() };
        }
        Action::CancelBurst => return cancel_burst(state),
        Action::Train | Action::Back => {
            state.popup = None;
            return Effects::redraw();
        }
        _ => return Effects::default(),
    };
    state.popup = Some(Popup::Burst { field });
    Effects::redraw()
}

fn reset_settings(state: &mut State) -> Option<GroupingRequest> {
    if state.settings == state.recorded {
        return None;
    }
    state.settings = state.recorded;
    state.apply_settings()
}

fn on_settings(state: &mut State, field: Field, a: Action) -> Effects {
    let mut group_anchors = None;
    let field = match a {
        Action::Up => field.moved(-1),
        Action::Down => field.moved(1),
        Action::Top => Field::all().next().unwrap_or(field),
        Action::Bottom => Field::all().last().unwrap_or(field),
        Action::Left | Action::Right => {
            state.settings = field.adjust(state.settings, a == Action::Right);
            group_anchors = state.apply_settings();
            field
        }
        Action::ResetSettings => {
            group_anchors = reset_settings(state);
            field
        }
        Action::Settings | Action::Back | Action::Open => {
            state.popup = None;
            return Effects::redraw();
        }
        _ => return Effects::default(),
    };
    state.popup = Some(Popup::Settings { field });
    Effects { redraw: true, group_anchors, ..Effects::default() }
}

/// Rows a page key moves: the visible height of the current list.
fn page(state: &State) -> isize {
    layout::list(state).map_or(10, |(r, _, _)| r.height.max(1) as isize)
}

fn clamp_add(v: usize, by: isize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    (v as isize).saturating_add(by).clamp(0, len as isize - 1) as usize
}

fn move_by(state: &mut State, by: isize) {
    match state.view {
        View::Overview => {
            let n = state.derived.iterations.len();
            state.sel.iteration = clamp_add(state.sel.iteration, by, n);
            state.sel.group = state.current_groups().first().copied().unwrap_or(0);
            state.sel.traj = 0;
        }
        View::Groups => state.sel.traj = clamp_add(state.sel.traj, by, state.group_episodes().len()),
        View::Episode => {
            let n = state.episode_index().map_or(0, |e| state.run.episodes[e].steps.len());
            state.sel.step = clamp_add(state.sel.step, by, n);
            state.sel.obs_scroll = 0;
        }
        View::Anchor => {
            let n = state.row_ref().map_or(0, |r| state.derived.table.anchor_group_of(r).members.len());
            state.sel.member = clamp_add(state.sel.member, by, n);
        }
        View::Compare => {
            state.sel.compare_scroll = clamp_add(state.sel.compare_scroll, by, compare_len(state));
        }
        View::Search => {
            if let Some(search) = state.search.as_mut() {
                search.current = clamp_add(search.current, by, search.hits.len());
            }
        }
        View::Play => match state.play.as_mut() {
            Some(Play { session: Some(session), .. }) => {
                session.cursor = clamp_add(session.cursor, by, session.actions().len());
            }
            Some(play) => play.goal_cursor = clamp_add(play.goal_cursor, by, play.shop.goals.len()),
            None => {}
        },
    }
    state.clamp();
}

fn compare_len(state: &State) -> usize {
    let len = |e: Option<usize>| e.map_or(0, |e| state.run.episodes[e].steps.len());
    len(state.episode_index()).max(len(state.other_index()))
}

fn set_list_selection(state: &mut State, i: usize) {
    let cur = match state.view {
        View::Overview => state.sel.iteration,
        View::Groups => state.sel.traj,
        View::Episode => state.sel.step,
        View::Anchor => state.sel.member,
        View::Search => state.search.as_ref().map_or(0, |s| s.current),
        View::Play => match &state.play {
            Some(Play { session: Some(session), .. }) => session.cursor,
            Some(play) => play.goal_cursor,
            None => return,
        },
        View::Compare => return,
    };
    move_by(state, i as isize - cur as isize);
}

fn open(state: &mut State) {
    match state.view {
        View::Overview => state.view = View::Groups,
        View::Groups => {
            state.view = View::Episode;
            state.sel.step = 0;
            state.sel.obs_scroll = 0;
        }
        View::Episode => {
            state.view = View::Anchor;
            state.sel.formula_scroll = 0;
            select_self_in_anchor_group(state);
        }
        View::Anchor => {
            // Jump to the chosen member's step in its own trajectory.
            let Some(r) = state.row_ref() else { return };
            let Some(&m) = state.derived.table.anchor_group_of(r).members.get(state.sel.member) else { return };
            if let Some(t) = state.group_episodes().iter().position(|&e| e == m.episode) {
                state.sel.traj = t;
                state.sel.step = m.step as usize;
                state.sel.obs_scroll = 0;
                state.view = View::Episode;
            }
        }
        View::Compare => state.view = View::Episode,
        View::Search => jump_hit(state, 0),
        View::Play => {}
    }
    state.clamp();
}

fn select_self_in_anchor_group(state: &mut State) {
    if let Some(r) = state.row_ref() {
        state.sel.member = state.derived.table.anchor_group_of(r).members.iter().position(|&m| m == r).unwrap_or(0);
    }
}

fn back(state: &mut State) {
    state.view = match state.view {
        View::Overview | View::Groups | View::Search | View::Play => View::Overview,
        View::Episode | View::Compare => View::Groups,
        View::Anchor => View::Episode,
    };
}

/// `[` / `]`: the neighbouring group, trajectory, step or compared trajectory, depending on the view.
fn item(state: &mut State, by: isize) {
    match state.view {
        View::Overview | View::Search | View::Play => move_by(state, by),
        View::Groups => {
            let groups = state.current_groups();
            let pos = groups.iter().position(|&g| g == state.sel.group).unwrap_or(0);
            if let Some(&g) = groups.get(clamp_add(pos, by, groups.len())) {
                state.sel.group = g;
                state.sel.traj = 0;
                state.sel.other = 0;
            }
        }
        View::Episode => {
            state.sel.traj = clamp_add(state.sel.traj, by, state.group_episodes().len());
            state.sel.obs_scroll = 0;
        }
        View::Anchor => {
            let n = state.episode_index().map_or(0, |e| state.run.episodes[e].steps.len());
            state.sel.step = clamp_add(state.sel.step, by, n);
            select_self_in_anchor_group(state);
        }
        View::Compare => {
            let n = state.group_episodes().len();
            if n > 1 {
                let mut o = state.sel.other;
                // Skip the trajectory being compared against itself.
                loop {
                    o = (o as isize + by).rem_euclid(n as isize) as usize;
                    if o != state.sel.traj {
                        break;
                    }
                }
                state.sel.other = o;
                state.sel.compare_scroll = 0;
            }
        }
    }
    state.clamp();
}
