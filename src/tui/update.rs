//! `update(state, msg) -> Effects`: the only place the state changes. No terminal and no clock (time arrives
//! inside messages), so every behaviour here is unit-tested without a terminal; slow work is asked of the app
//! as an [`Effect`] and its outcome comes back as a [`Msg`].

use std::time::Instant;

use super::action::Action;
use super::burst_dialog::{ray_choices, BurstField, BurstStatus};
use super::play::Play;
use super::settings_fields::{self, Field};
use super::state::{Cancel, GroupingRequest, Popup, Prompt, SearchState, State, View};
use super::views::{self, component};
use crate::live::LiveEvent;

pub use super::msg::{AutoplayRequest, Effect, Effects, InputKey, JobError, Msg};

pub fn update(state: &mut State, msg: Msg) -> Effects {
    let mut fx = handle(state, msg);
    // Stored advantages that disagree with the recomputation: look for the settings that reproduce them.
    fx.extend(super::reconcile_update::wanted(state));
    // What the view about to be drawn shows is computed now (drawing only reads it), or asked of a job.
    fx.extend(refresh_estimates(state));
    read_shown_text(state);
    fx
}

/// Read back the full records of the episodes the view about to be drawn shows
/// ([`views::Component::shown_episodes`]), so that drawing does no I/O. `update` calls it after every message;
/// the main loop calls it again before a frame that a message did not cause (a run read anew).
pub fn read_shown_text(state: &mut State) {
    let shown = component(state.ui.view).shown_episodes(state);
    state.domain.show(shown);
    let strip = (state.ui.view == View::Episode).then(|| state.episode_index()).flatten();
    let episode = strip.and_then(|e| state.domain.episodes.get(e)).map(|ep| ep.id.joined());
    state.domain.tokens.show(episode.as_deref());
}

/// What the view about to be drawn shows and takes long enough to keep: the estimators view's columns of the
/// selected group (an iteration's batch columns asked of a job when it is large), and the truth file of the
/// iteration the estimators or anchor-group view shows, read again when it changed.
fn refresh_estimates(state: &mut State) -> Effects {
    let State { domain, estimates, ui, .. } = state;
    let mut fx = Effects::none();
    let iteration = match ui.view {
        View::Estimators => {
            let (computed, job) = estimates.refresh_group(domain, ui.sel.group, ui.estimators.background_rows);
            if computed {
                fx.push(Effect::Redraw);
            }
            fx.extend(job.map(Effect::EstimatorBatch));
            super::estimates::group_iteration(domain, ui.sel.group)
        }
        View::Anchor | View::Timeline => {
            state.row_ref().map(|r| state.domain.episodes.at(r.episode as usize).iteration)
        }
        _ => None,
    };
    if let Some(iteration) = iteration {
        if state.estimates.refresh_truth(&state.domain, iteration) {
            fx.push(Effect::Redraw);
        }
    }
    fx
}

/// A new frame, and the anchor grouping to compute in the background if the settings asked for one.
fn redraw_grouping(request: Option<GroupingRequest>) -> Effects {
    let mut fx = Effects::redraw();
    fx.extend(request.map(Effect::GroupAnchors));
    fx
}

/// A new frame when `changed`.
fn redraw_if(changed: bool) -> Effects {
    if changed {
        Effects::redraw()
    } else {
        Effects::none()
    }
}

fn handle(state: &mut State, msg: Msg) -> Effects {
    match msg {
        Msg::Action(a) => {
            state.ui.message = None;
            on_action(state, a)
        }
        Msg::Click { col, row } => {
            if state.ui.popup.is_some() {
                return Effects::none();
            }
            match views::list_row_at(state, col, row) {
                Some(target) => {
                    component(state.ui.view).select(state, target);
                    state.clamp();
                    Effects::redraw()
                }
                None => Effects::none(),
            }
        }
        Msg::Wheel { col, row, down } => {
            let over_text = views::over_scroll_region(state, col, row);
            let a = match (over_text && state.ui.popup.is_none(), down) {
                (true, true) => Action::ScrollDown,
                (true, false) => Action::ScrollUp,
                (false, true) => Action::Down,
                (false, false) => Action::Up,
            };
            on_action(state, a)
        }
        Msg::Resize(w, h) => {
            state.ui.size = (w, h);
            views::episode::bound_token_scroll(state);
            Effects::redraw()
        }
        Msg::Tick(now) => {
            // Redraw only when the "updated N s ago" text would change.
            let before = age_secs(state);
            state.ui.now = Some(now);
            // The token store is followed on the clock: its writers append beside the files the watcher watches.
            let tokens = state.domain.tokens.refresh();
            let mut fx = redraw_if(tokens || state.domain.live.last_update.is_some() && age_secs(state) != before);
            // The burst dialog follows the trainer's background build, if there is one.
            if matches!(state.ui.popup, Some(Popup::Burst { .. })) {
                fx.push(Effect::ReadTrainerBuild);
            }
            fx
        }
        Msg::Live(events, at) => on_live(state, events, at),
        Msg::CachedPart => on_cached_part(state),
        Msg::Input(key) => on_input(state, key),
        Msg::SearchDone { query, result, partial } => {
            let within = partial
                .map(|(n, of)| {
                    format!(" in the first {n} of {of} episodes (still indexing; searching again when done)")
                })
                .unwrap_or_default();
            // The same query again (once the index is complete): new results, the place kept, the view left
            // where the user is.
            let again = state.ui.search.as_ref().filter(|s| s.query == query).map(|s| s.current);
            match result {
                Err(e) => state.ui.message = Some(e.to_string()),
                Ok(r) if r.hits.is_empty() => state.ui.message = Some(format!("no match for {query}{within}")),
                Ok(r) => {
                    state.ui.message = partial.map(|_| format!("results{within}"));
                    let current = again.unwrap_or(0).min(r.hits.len() - 1);
                    state.ui.search = Some(SearchState { query, total: r.total, hits: r.hits, current });
                    if again.is_none() {
                        state.ui.view = View::Search;
                    }
                }
            }
            Effects::redraw()
        }
        Msg::Matched { query, result, searched } => views::credit::matched(state, query, result, searched),
        Msg::EnvReady(Ok(tasks)) => {
            state.ui.message =
                Some(format!("{} goals · ↑↓ pick a goal, ←→ group size, Enter starts the group", tasks.len()));
            state.ui.play = Some(Play::new(tasks));
            Effects::redraw()
        }
        Msg::EnvReady(Err(e)) | Msg::Autoplayed(Err(e)) | Msg::Written(Err(e)) => {
            state.ui.message = Some(e.to_string());
            Effects::redraw()
        }
        Msg::Autoplayed(Ok((episodes, who))) => views::play::autoplayed(state, episodes, who),
        Msg::Written(Ok(n)) => {
            state.ui.message =
                Some(format!("wrote {n} episodes to the run; the group opens as soon as it is read back"));
            Effects::redraw()
        }
        Msg::TrainerBuild(build) => {
            let changed = state.jobs.trainer_build != build;
            state.jobs.trainer_build = build;
            redraw_if(changed)
        }
        Msg::Burst(news) => {
            let burst = state.jobs.burst.get_or_insert_with(BurstStatus::default);
            let cancelling = burst.running() && burst.cancelling;
            burst.apply(news);
            // The "cancelling: …" message gives way to how the burst ended once it has.
            if let Some(ended) = burst.ended.as_ref().filter(|_| cancelling) {
                state.ui.message = Some(format!("burst {}", ended.lines().next().unwrap_or_default()));
            }
            Effects::redraw()
        }
        Msg::Jobs(kinds) => {
            let changed = state.jobs.running != kinds;
            state.jobs.running = kinds;
            super::truth_update::follow(state);
            redraw_if(changed)
        }
        Msg::Grouped { episodes_version, grouping } => redraw_grouping(state.grouped(episodes_version, grouping)),
        Msg::Truth(outcome) => super::truth_update::finished(state, outcome),
        Msg::EstimatorBatch(batch) => {
            state.estimates.batch_arrived(batch);
            Effects::redraw()
        }
        Msg::Reconciled(answer) => redraw_if(super::reconcile_update::arrived(state, *answer)),
    }
}

fn on_input(state: &mut State, key: InputKey) -> Effects {
    let Some(text) = state.ui.input.as_mut() else { return Effects::none() };
    match key {
        InputKey::Char(c) => text.push(c),
        InputKey::Backspace => {
            text.pop();
        }
        InputKey::Cancel => state.ui.input = None,
        InputKey::Submit => {
            let query = state.ui.input.take().unwrap_or_default();
            if query.trim().is_empty() {
                return Effects::redraw();
            }
            if state.ui.prompt == Prompt::PlayQuery {
                return views::play::play_typed(state, &query);
            }
            if state.ui.prompt == Prompt::RewardWeights {
                return redraw_grouping(set_reward_weights(state, &query));
            }
            state.ui.message = Some(format!("searching for {query} …"));
            return Effects::redraw_and(Effect::Search(query));
        }
    }
    Effects::redraw()
}

fn age_secs(state: &State) -> Option<u64> {
    Some(state.domain.live.since_update(state.ui.now?)?.as_secs())
}

fn on_live(state: &mut State, events: Vec<LiveEvent>, at: Instant) -> Effects {
    // Remember the selected episode by id: a reset (file replaced) renumbers everything.
    let selected_id = state.episode_index().map(|e| state.domain.episodes.at(e).id.to_string());
    let selected_step = state.ui.sel.step;
    let had_meta = state.domain.run.meta.is_some();
    let applied = state.domain.apply_live(events);
    if !applied.changed() {
        return Effects::none();
    }
    // Notes found by the first read are listed in the overview and counted in the status bar, as when the
    // run was read before the first frame; later ones also show as the message.
    let first_read = state.domain.live.first_read;
    state.domain.live.record(&applied, &state.domain.run, at);
    state.ui.now = Some(at);
    if let Some(e) = applied.errors.last().filter(|_| !first_read) {
        state.ui.message = Some(e.clone());
    }
    let mut adopt_settings = false;
    if applied.meta_changed {
        let recorded = super::state::recorded_settings(state.domain.run.meta.as_ref());
        // The first run.json seen (it arrives with the first part of a run read in the background, after the
        // first frame) sets the settings the user has not changed; a later change of it only marks them as
        // differing, so the numbers on screen never change under the user.
        adopt_settings = !had_meta && !state.domain.settings_modified() && state.domain.settings != recorded;
        if adopt_settings {
            state.domain.settings = recorded;
        }
        state.domain.recorded = recorded;
    }
    if applied.episodes_reset || adopt_settings {
        state.rebuild();
    } else if !applied.new_episodes.is_empty() {
        state.extend(applied.new_episodes.start);
    }
    if first_read && !state.domain.live.first_read {
        // The first read caught up: the table grew by doubling as its parts arrived and would keep up to as much
        // room again (once only: a run followed live grows a little at a time).
        state.domain.derived.table.shrink_slack();
    }
    // A played group opens once the run shows it, unless its last page is still on screen (Enter opens it then).
    if let Some(name) = state.jobs.pending_group.clone().filter(|_| !views::play::holds_finished_page(state)) {
        if state.select_group(&name) {
            state.jobs.pending_group = None;
            return Effects::redraw();
        }
    }
    if applied.episodes_reset || !applied.new_episodes.is_empty() {
        if state.ui.follow {
            jump_to_newest(state);
        } else if applied.episodes_reset {
            if let Some(e) = selected_id.and_then(|id| state.domain.episodes.iter().position(|x| x.id == *id)) {
                state.select_row(e, selected_step);
            }
        }
    }
    Effects::redraw()
}

/// The most episodes taken from the load cache merged at once: they come lean (nothing to parse or hash), so a
/// part is a few milliseconds of computing their groups, and a key waits for at most one part (the CHANGELOG
/// has the measurements behind the size).
const CACHED_EPISODES_PER_MERGE: usize = 500;

fn on_cached_part(state: &mut State) -> Effects {
    let added = state.domain.merge_cached(CACHED_EPISODES_PER_MERGE);
    if added.is_empty() {
        return Effects::none();
    }
    state.extend(added.start);
    if state.ui.follow {
        jump_to_newest(state);
    }
    Effects::redraw()
}

/// Follow mode: the newest iteration, its newest group, that group's newest trajectory.
fn jump_to_newest(state: &mut State) {
    state.ui.sel.iteration = state.domain.derived.iterations.len().saturating_sub(1);
    state.ui.sel.group = state.current_groups().last().copied().unwrap_or(0);
    state.ui.sel.traj = state.group_episodes().len().saturating_sub(1);
    state.ui.sel.step = 0;
    state.ui.episode.obs_scroll = 0;
    state.clamp();
}

/// A key: the popup's, else the view's own, else the keys of every view.
fn on_action(state: &mut State, a: Action) -> Effects {
    if a == Action::Quit {
        return Effect::Quit.into();
    }
    match state.ui.popup {
        Some(Popup::Help { scroll }) => return on_help(state, scroll, a),
        Some(Popup::Settings { field }) => return on_settings(state, field, a),
        Some(Popup::Burst { field }) => return on_burst_dialog(state, field, a),
        None => {}
    }
    let view = component(state.ui.view);
    let jobs = matches!(a, Action::Play | Action::Autoplay | Action::WatchPolicy | Action::Train | Action::CancelBurst);
    if view.needs_episodes()
        && state.domain.episodes.is_empty()
        && !jobs
        && !matches!(a, Action::Help | Action::Settings | Action::Follow)
    {
        return Effects::none();
    }
    if let Some(fx) = view.on_action(state, a) {
        return fx;
    }
    match a {
        Action::Play => return open_play(state),
        Action::Autoplay => return autoplay(state, false),
        Action::WatchPolicy => return autoplay(state, true),
        Action::Abandon => {
            state.ui.message =
                Some("there is no group being played here (the play view's groups can be abandoned)".into())
        }
        Action::Train => {
            state.ui.popup = Some(Popup::Burst { field: BurstField::Iterations });
            return Effects::redraw_and(Effect::ReadTrainerBuild);
        }
        Action::CancelBurst => return cancel_burst(state),
        Action::Truth => return super::truth_update::elsewhere(state),
        Action::TokenChannel => state.ui.episode.token_channel = state.ui.episode.token_channel.next(),
        Action::TokenJump => return super::token_jump::jump(state),
        Action::Fold => {
            state.ui.episode.unfolded = !state.ui.episode.unfolded;
            state.ui.episode.obs_scroll = 0;
        }
        Action::Overview => views::go(state, View::Overview),
        Action::Groups => views::go(state, View::Groups),
        Action::Episode => views::go(state, View::Episode),
        Action::Anchor => views::go(state, View::Anchor),
        Action::Compare => views::go(state, View::Compare),
        Action::Estimators => views::go(state, View::Estimators),
        Action::Credit => views::go(state, View::Credit),
        Action::Timeline => views::go(state, View::Timeline),
        Action::Settings => state.ui.popup = Some(Popup::Settings { field: Field::Estimator }),
        Action::Help => state.ui.popup = Some(Popup::Help { scroll: 0 }),
        Action::ResetSettings => {
            let group_anchors = reset_settings(state);
            return redraw_grouping(group_anchors);
        }
        Action::ApplyReconciled => return redraw_grouping(super::reconcile_update::apply(state)),
        Action::Follow => {
            state.ui.follow = !state.ui.follow;
            if state.ui.follow && !state.domain.episodes.is_empty() {
                jump_to_newest(state);
            }
        }
        Action::Search => {
            state.ui.input = Some(String::new());
            state.ui.prompt = Prompt::Search;
        }
        Action::SearchNext => views::search::jump_hit(state, 1),
        Action::SearchPrev => views::search::jump_hit(state, -1),
        // Keys the view did not take (moving in a view without a list, the token strip's outside the episode view).
        Action::Quit
        | Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom
        | Action::Open
        | Action::Back
        | Action::Left
        | Action::Right
        | Action::PrevItem
        | Action::NextItem
        | Action::ScrollUp
        | Action::ScrollDown
        | Action::TokenScrollUp
        | Action::TokenScrollDown
        | Action::TokenZoom => return Effects::none(),
    }
    Effects::redraw()
}

fn on_help(state: &mut State, scroll: u16, a: Action) -> Effects {
    let max = crate::tui::ui::help_scroll_max(state) as u16;
    let scroll = match a {
        Action::Up | Action::ScrollUp => scroll.saturating_sub(1),
        Action::Down | Action::ScrollDown => scroll.saturating_add(1).min(max),
        Action::PageUp => scroll.saturating_sub(10),
        Action::PageDown => scroll.saturating_add(10).min(max),
        Action::Top => 0,
        Action::Bottom => max,
        Action::Help | Action::Back | Action::Open | Action::Left => {
            state.ui.popup = None;
            return Effects::redraw();
        }
        _ => return Effects::none(),
    };
    state.ui.popup = Some(Popup::Help { scroll });
    Effects::redraw()
}

fn open_play(state: &mut State) -> Effects {
    let Some(registered) = crate::env_registry::of_run(&state.domain.run) else {
        let env = state.domain.run.meta.as_ref().and_then(|m| m.env.clone()).unwrap_or_else(|| "not recorded".into());
        state.ui.message = Some(format!(
            "live play needs an environment gigscope has ({}), and this run's is not one (env: {env}, {})",
            crate::env_registry::names(),
            state.domain.run.layout.name()
        ));
        return Effects::redraw();
    };
    state.ui.view = View::Play;
    if state.ui.play.is_some() {
        return Effects::redraw();
    }
    state.ui.message = Some(format!("opening {} …", registered.name));
    Effects::redraw_and(Effect::OpenEnv)
}

fn autoplay(state: &mut State, watch: bool) -> Effects {
    let Some(play) = state.ui.play.as_mut() else {
        state.ui.message = Some("start a group in the play view first (p, then Enter on a goal)".into());
        return Effects::redraw();
    };
    let Some(session) = play.session.as_ref() else {
        state.ui.message = Some("start a group in the play view first (p, then Enter on a goal)".into());
        return Effects::redraw();
    };
    let request = AutoplayRequest {
        goal: session.goal,
        group: session.group.clone(),
        first: session.finished.len(),
        n: session.remaining(),
        seed: state.domain.episodes.len() as u64,
    };
    play.watching = watch;
    state.ui.message = Some(format!(
        "the policy plays {} episode(s){} …",
        request.n,
        if watch { ", to be shown step by step" } else { "" }
    ));
    Effects::redraw_and(Effect::Autoplay(request))
}

/// `X`: cancel what is running. The burst and the truth stop at their next boundary (and say so until they
/// have); the other jobs' outcomes are dropped.
fn cancel_burst(state: &mut State) -> Effects {
    let jobs = &mut state.jobs;
    let burst = jobs.burst.as_mut().filter(|b| b.running() && !b.cancelling);
    let truth = jobs.truth.as_mut().filter(|t| !t.cancelling);
    let dropped = jobs.running.iter().any(|k| k.cancel() == Cancel::Drop);
    let message = match (burst, truth) {
        (Some(b), _) => {
            b.cancelling = true;
            if b.ray_job.is_some() {
                "cancelling: the Ray job is asked to stop"
            } else {
                "cancelling: the burst stops after its current iteration"
            }
        }
        (None, Some(t)) => {
            t.cancelling = true;
            "cancelling the truth: it stops after its current batch of continuations"
        }
        (None, None) if dropped => "cancelled what was running (a played group being written is still saved)",
        (None, None) => {
            state.ui.message = Some("no burst or job is running".into());
            return Effects::redraw();
        }
    };
    state.ui.message = Some(message.into());
    Effects::redraw_and(Effect::CancelJobs)
}

fn on_burst_dialog(state: &mut State, field: BurstField, a: Action) -> Effects {
    let running = state.jobs.burst.as_ref().is_some_and(BurstStatus::running);
    let field = match a {
        Action::Up => field.moved(-1),
        Action::Down => field.moved(1),
        Action::Left | Action::Right if !running => {
            let ray_backends = ray_choices(&state.config.burst).len();
            state.jobs.burst_form = state.jobs.burst_form.adjust(field, a == Action::Right, ray_backends);
            field
        }
        Action::Open if running => {
            state.ui.message = Some("a burst is already running (X cancels it)".into());
            field
        }
        Action::Open => return start_burst(state, field),
        Action::CancelBurst => return cancel_burst(state),
        Action::Train | Action::Back => {
            state.ui.popup = None;
            return Effects::redraw();
        }
        _ => return Effects::none(),
    };
    state.ui.popup = Some(Popup::Burst { field });
    Effects::redraw()
}

/// `Enter` in the burst dialog: the burst in this process, or the Ray job of the backend chosen (a profile that
/// cannot make its command says why and starts nothing).
fn start_burst(state: &mut State, field: BurstField) -> Effects {
    let form = state.jobs.burst_form;
    let choices = ray_choices(&state.config.burst);
    let Some(choice) = form.ray_choice(&choices) else {
        state.jobs.burst = Some(BurstStatus { how: "starting …".into(), ..BurstStatus::default() });
        return Effects::redraw_and(Effect::StartBurst(form));
    };
    let env = crate::env_registry::of_run(&state.domain.run).map(|r| r.name);
    match form.ray_plan(choice, &state.domain.run.dir, env, &state.jobs.burst_host) {
        Ok(plan) => {
            let how = format!("submitting to {} …", plan.address);
            state.jobs.burst = Some(BurstStatus { how, ray_job: Some(String::new()), ..BurstStatus::default() });
            Effects::redraw_and(Effect::StartRayBurst(Box::new(plan)))
        }
        Err(e) => {
            state.ui.message = Some(e);
            state.ui.popup = Some(Popup::Burst { field });
            Effects::redraw()
        }
    }
}

fn reset_settings(state: &mut State) -> Option<GroupingRequest> {
    if state.domain.settings == state.domain.recorded {
        return None;
    }
    state.domain.settings = state.domain.recorded;
    state.apply_settings()
}

/// Typed reward weights: the settings' (with TRL's computation, `scale_rewards` group, if it was off), or why
/// not in the status line.
fn set_reward_weights(state: &mut State, text: &str) -> Option<GroupingRequest> {
    let functions = state.domain.episodes.iter().filter_map(|e| e.reward_names()).map(<[String]>::len).max();
    match settings_fields::parse_weights(text, functions) {
        Ok(weights) => {
            let settings = &mut state.domain.settings;
            settings.reward_weights = Some(weights);
            settings.scale_rewards.get_or_insert(crate::advantage::ScaleRewards::Group);
            state.ui.message = Some(format!("reward weights {}", settings_fields::weights_text(weights.as_slice())));
            state.apply_settings()
        }
        Err(why) => {
            state.ui.message = Some(format!("reward weights not changed: {why}"));
            None
        }
    }
}

fn on_settings(state: &mut State, field: Field, a: Action) -> Effects {
    let mut group_anchors = None;
    let field = match a {
        Action::Up => field.moved(-1),
        Action::Down => field.moved(1),
        Action::Top => Field::all().next().unwrap_or(field),
        Action::Bottom => Field::all().last().unwrap_or(field),
        Action::Left | Action::Right | Action::Open if field.typed() => {
            let weights = state.domain.settings.reward_weights;
            state.ui.input = Some(weights.map_or(String::new(), |w| settings_fields::weights_text(w.as_slice())));
            state.ui.prompt = Prompt::RewardWeights;
            field
        }
        Action::ApplyReconciled => {
            group_anchors = super::reconcile_update::apply(state);
            field
        }
        Action::Left | Action::Right => {
            let mut settings = field.adjust(state.domain.settings, a == Action::Right);
            // Page anchors are an environment's (WebShop's page types): a run of one without them skips them.
            if settings.anchor == crate::advantage::AnchorMode::Page && !state.domain.capabilities().has_page_anchors()
            {
                settings = field.adjust(settings, a == Action::Right);
            }
            state.domain.settings = settings;
            group_anchors = state.apply_settings();
            field
        }
        Action::ResetSettings => {
            group_anchors = reset_settings(state);
            field
        }
        Action::Settings | Action::Back | Action::Open => {
            state.ui.popup = None;
            return Effects::redraw();
        }
        _ => return Effects::none(),
    };
    state.ui.popup = Some(Popup::Settings { field });
    redraw_grouping(group_anchors)
}
