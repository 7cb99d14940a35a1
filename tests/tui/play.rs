//! Live play and the burst dialog through the pure `update`: a real shop (the embedded demo catalog with its
//! tantivy index), the fixture run, and the effects `update` asks the app to carry out.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use gigscope::live::LiveEvent;
use gigscope::run::Episode;
use gigscope::tui::burst_dialog::{BurstPoint, BurstRequest, BurstUpdate};
use gigscope::tui::play::fresh_group_name;
use gigscope::tui::play::TasksHandle;
use gigscope::tui::state::{Popup, Prompt};
use gigscope::tui::update::{AutoplayRequest, InputKey};
use gigscope::tui::{open, update, Action, Config, Effect, Effects, Msg, State, View};
use gigscope::webshop::tasks::WebShopTasks;

fn shop() -> TasksHandle {
    static SHOP: OnceLock<TasksHandle> = OnceLock::new();
    Arc::clone(SHOP.get_or_init(|| Arc::new(WebShopTasks::open(None, None).unwrap())))
}

fn state() -> State {
    let config = Config::defaults(true).unwrap();
    open(Path::new("tests/fixtures/tui/basic"), config, (120, 40)).unwrap().0
}

/// The played group an update asks the app to write (none: empty).
fn to_write(fx: Effects) -> Vec<Episode> {
    fx.find(|e| match e {
        Effect::Write(episodes) => Some(episodes),
        _ => None,
    })
    .unwrap_or_default()
}

/// What an update asks the run's policy to play.
fn autoplay(fx: Effects) -> Option<AutoplayRequest> {
    fx.find(|e| match e {
        Effect::Autoplay(request) => Some(request),
        _ => None,
    })
}

/// The burst an update asks the app to start.
fn burst(fx: Effects) -> Option<BurstRequest> {
    fx.find(|e| match e {
        Effect::StartBurst(request) => Some(request),
        _ => None,
    })
}

fn act(s: &mut State, a: Action) -> Effects {
    update(s, Msg::Action(a))
}

/// The play view with the shop open.
fn playing() -> State {
    let mut s = state();
    let fx = act(&mut s, Action::Play);
    assert!(fx.contains(&Effect::OpenEnv), "the first play asks the app to open the run's environment");
    assert_eq!(s.ui.view, View::Play);
    update(&mut s, Msg::EnvReady(Ok(shop())));
    assert!(s.ui.play.is_some());
    s
}

fn actions(s: &State) -> Vec<String> {
    s.ui.play.as_ref().unwrap().session.as_ref().unwrap().actions()
}

/// Move the cursor to `action` and take it.
fn choose(s: &mut State, action: &str) -> Effects {
    let i = actions(s).iter().position(|a| a == action).unwrap_or_else(|| panic!("{action} not in {:?}", actions(s)));
    act(s, Action::Top);
    for _ in 0..i {
        act(s, Action::Down);
    }
    act(s, Action::Open)
}

/// Search by typing a query, open the first result, buy it.
fn play_one_episode(s: &mut State, query: &str) -> Effects {
    choose(s, "search[<your query>]");
    assert_eq!((s.ui.input.as_deref(), s.ui.prompt), (Some(""), Prompt::PlayQuery), "search[…] opens the query prompt");
    for c in query.chars() {
        update(s, Msg::Input(InputKey::Char(c)));
    }
    update(s, Msg::Input(InputKey::Submit));
    let first_product = actions(s).into_iter().find(|a| a.starts_with("click[b0")).expect("results list products");
    choose(s, &first_product);
    choose(s, "click[buy now]")
}

#[test]
fn a_group_played_by_hand_is_written_whole_and_then_selected() {
    let mut s = playing();
    act(&mut s, Action::Down);
    act(&mut s, Action::Left);
    act(&mut s, Action::Left);
    assert_eq!(s.ui.play.as_ref().unwrap().group_size, 2);
    act(&mut s, Action::Open);
    let group = s.ui.play.as_ref().unwrap().session.as_ref().unwrap().group.clone();
    assert_eq!(group, "play-goal-1-1");

    let fx = play_one_episode(&mut s, "shorts");
    assert!(to_write(fx).is_empty(), "nothing is written before the group is complete");
    let session = s.ui.play.as_ref().unwrap().session.as_ref().unwrap();
    assert_eq!((session.finished.len(), session.steps()), (1, 0), "the next episode starts afresh");
    let page = s.ui.play.as_ref().unwrap().finished_page.clone().expect("the page the episode ended on is shown");
    assert!(page.observation.contains("Thank you"), "{}", page.observation);
    act(&mut s, Action::Open);
    assert!(s.ui.play.as_ref().unwrap().finished_page.is_none(), "Enter leaves it");

    let fx = play_one_episode(&mut s, "workout shorts khaki");
    assert!(s.ui.play.as_ref().unwrap().session.is_none(), "the group is over");
    let written = to_write(fx);
    assert_eq!(written.len(), 2);
    for (i, e) in written.iter().enumerate() {
        assert_eq!(e.id, format!("{group}-{i}"));
        assert_eq!(e.group, group);
        assert_eq!(e.iteration, 0);
        assert_eq!(e.extra["source"], "play", "kept apart from the training iterations");
        assert_eq!(e.task.as_ref().unwrap().id, "goal-1");
        assert_eq!(e.steps.len(), 3);
        assert!(e.steps.iter().all(|st| st.anchor.is_some() && st.available_actions.is_some()));
        assert!(e.outcome.is_some());
    }
    assert_eq!(written[0].steps[0].observation, written[1].steps[0].observation, "same start state");
    assert_eq!(s.jobs.pending_group.as_deref(), Some(group.as_str()));

    // The watcher reads the lines back: the group opens, its shared start state is one anchor group of 2.
    update(&mut s, Msg::Written(Ok(2)));
    let records = written.into_iter().enumerate().map(|(i, e)| (13 + i as u64, e)).collect();
    update(&mut s, Msg::Live(vec![LiveEvent::Episodes(records)], Instant::now()));
    assert_eq!(s.ui.view, View::Play, "the Thank you page stays until Enter");
    act(&mut s, Action::Open);
    assert_eq!(s.ui.view, View::Groups);
    // The played group is in the play bucket, which the training charts leave out.
    let last = s.domain.derived.iterations.last().unwrap();
    assert!(last.is_play() && last.stats.groups.len() == 1, "{last:?}");
    assert!(s.domain.derived.iterations[..s.domain.derived.iterations.len() - 1].iter().all(|i| !i.is_play()));
    assert_eq!(*s.domain.derived.table.episode_groups[s.ui.sel.group as usize].name, *group);
    assert!(s.jobs.pending_group.is_none());
    let row = s.row_ref().unwrap();
    assert_eq!(s.domain.derived.table.anchor_group_of(row).members.len(), 2);
}

/// ← and Esc go back (the group is kept, as everywhere else); abandoning asks twice (issue 16, item 13).
#[test]
fn left_goes_back_and_abandoning_asks_twice() {
    let mut s = playing();
    act(&mut s, Action::Open);
    choose(&mut s, "search[<your query>]");
    update(&mut s, Msg::Input(InputKey::Cancel));
    act(&mut s, Action::Left);
    assert_eq!(s.ui.view, View::Overview);
    assert!(s.ui.play.as_ref().unwrap().session.is_some(), "← leaves the view, not the group");
    act(&mut s, Action::Play);
    act(&mut s, Action::Back);
    assert!(s.ui.play.as_ref().unwrap().session.is_some(), "so does Esc");
    act(&mut s, Action::Play);
    act(&mut s, Action::Abandon);
    assert!(s.ui.play.as_ref().unwrap().session.is_some(), "the first press only asks");
    assert!(s.ui.message.as_deref().unwrap().contains("again"), "{:?}", s.ui.message);
    act(&mut s, Action::Down);
    act(&mut s, Action::Abandon);
    assert!(s.ui.play.as_ref().unwrap().session.is_some(), "another key in between cancels the question");
    let fx = act(&mut s, Action::Abandon);
    assert!(s.ui.play.as_ref().unwrap().session.is_none());
    assert!(to_write(fx).is_empty(), "an abandoned group writes nothing");
}

/// After a step the cursor stays on the action it was on when the page still offers it (an item's options).
#[test]
fn the_cursor_stays_on_an_action_the_page_still_offers() {
    let mut s = playing();
    act(&mut s, Action::Open);
    choose(&mut s, "search[<your query>]");
    for c in "shirt".chars() {
        update(&mut s, Msg::Input(InputKey::Char(c)));
    }
    update(&mut s, Msg::Input(InputKey::Submit));
    let products: Vec<String> = actions(&s).into_iter().filter(|a| a.starts_with("click[b0")).collect();
    let fixed = [
        "click[back to search]",
        "click[< prev]",
        "click[description]",
        "click[features]",
        "click[reviews]",
        "click[buy now]",
    ];
    for product in products {
        choose(&mut s, &product);
        let options: Vec<String> = actions(&s).into_iter().filter(|a| !fixed.contains(&a.as_str())).collect();
        if let Some(option) = options.first() {
            choose(&mut s, option);
            let session = s.ui.play.as_ref().unwrap().session.as_ref().unwrap();
            assert_eq!(session.actions()[session.cursor], *option, "the cursor stays on the option just chosen");
            return;
        }
        choose(&mut s, "click[< prev]");
    }
    panic!("no product of the results has options");
}

/// The policy's episodes can be watched one step per key before they join the group.
#[test]
fn the_policy_can_be_watched_step_by_step() {
    let mut s = playing();
    act(&mut s, Action::Left);
    act(&mut s, Action::Left);
    act(&mut s, Action::Open);
    let request = autoplay(act(&mut s, Action::WatchPolicy)).expect("the policy is asked to play");
    let session = s.ui.play.as_ref().unwrap().session.as_ref().unwrap();
    let step = |a: &str| gigscope::run::Step::new(session.env.observation(), a, 0.0);
    let episodes: Vec<_> = (0..request.n)
        .map(|i| {
            gigscope::run::Episode::new(
                format!("{}-{i}", request.group),
                request.group.clone(),
                vec![step("search[a]"), step("click[b]")],
            )
        })
        .collect();
    let fx = update(&mut s, Msg::Autoplayed(Ok((episodes, "the policy".into()))));
    assert!(to_write(fx).is_empty(), "nothing is written while the steps are shown");
    let shown = |s: &State| {
        let r = s.ui.play.as_ref().unwrap().replay.as_ref().unwrap();
        (r.episode, r.step)
    };
    assert_eq!(shown(&s), (0, 0));
    act(&mut s, Action::Open);
    assert_eq!(shown(&s), (0, 1));
    act(&mut s, Action::Open);
    assert_eq!(shown(&s), (1, 0));
    act(&mut s, Action::Open);
    let fx = act(&mut s, Action::Open);
    assert_eq!(to_write(fx).len(), 2, "after the last step the episodes join the group, which is written");
    assert!(s.ui.play.as_ref().unwrap().replay.is_none());
}

#[test]
fn the_policy_plays_the_rest_of_the_group() {
    let mut s = playing();
    act(&mut s, Action::Open);
    let fx = act(&mut s, Action::Autoplay);
    let request = autoplay(fx).expect("autoplay asks the app to let the policy play");
    assert_eq!((request.first, request.n, request.goal), (0, 4, 0));
    // What the app answers with: episodes of that group (their content is the trainer's business).
    let session = s.ui.play.as_ref().unwrap().session.as_ref().unwrap();
    let mut episode = gigscope::run::Episode::new("x", request.group.clone(), vec![]);
    episode.steps.push(gigscope::run::Step::new(session.env.observation(), "click[search]", 0.0));
    let episodes: Vec<_> =
        (0..4).map(|i| gigscope::run::Episode { id: format!("{}-{i}", request.group), ..episode.clone() }).collect();
    let fx = update(&mut s, Msg::Autoplayed(Ok((episodes, "the policy".into()))));
    assert_eq!(to_write(fx).len(), 4);
    assert!(s.ui.message.as_deref().unwrap().starts_with("the policy played 4"));
}

#[test]
fn group_names_never_collide() {
    let taken = ["play-goal-3-1", "play-goal-3-2", "play-goal-4-1"];
    assert_eq!(fresh_group_name(3, taken.iter().copied()), "play-goal-3-3");
    assert_eq!(fresh_group_name(5, taken.iter().copied()), "play-goal-5-1");
}

#[test]
fn the_burst_dialog_offers_every_estimator_that_trains() {
    use gigscope::advantage::estimators::EstimatorKind;
    use gigscope::tui::burst_dialog::BurstField;
    let mut form = BurstRequest::default();
    let mut seen = vec![form.estimator];
    for _ in 0..EstimatorKind::ALL.len() - 1 {
        form = form.adjust(BurstField::Estimator, true, 0);
        seen.push(form.estimator);
    }
    assert_eq!(seen, EstimatorKind::ALL, "the whole family, each once, in order");
    assert_eq!(form.adjust(BurstField::Estimator, true, 0).estimator, EstimatorKind::QMinusV, "the last stays");
    assert_eq!(form.value(BurstField::Estimator, &[]), "q-minus-v");
    // A successor trains as the family estimator of the burst; an engine estimator as the engine's.
    let tasks = gigscope::plugin_host::TaskSource::new("sokoban", gigscope::env::EnvOptions::default());
    let burst = form.train_request(std::path::Path::new("run"), tasks.clone()).config;
    assert_eq!(burst.estimator.map(|f| f.kind), Some(EstimatorKind::QMinusV));
    assert_eq!(burst.advantage.estimator, None);
    let first = BurstRequest::default();
    let engine = first.train_request(std::path::Path::new("run"), tasks).config;
    assert_eq!((engine.estimator, engine.advantage.estimator), (None, Some(gigscope::advantage::Estimator::Gigpo)));
    assert_eq!(BurstField::Device.moved(1), BurstField::Backend, "moving past the last field wraps");
}

#[test]
fn the_burst_dialog_starts_one_burst_and_follows_it() {
    let mut s = state();
    act(&mut s, Action::Train);
    assert_eq!(s.ui.popup, Some(Popup::Burst { field: gigscope::tui::burst_dialog::BurstField::Iterations }));
    act(&mut s, Action::Left);
    act(&mut s, Action::Down);
    act(&mut s, Action::Right);
    assert_eq!(s.jobs.burst_form, BurstRequest { iterations: 3, goals: 32, ..BurstRequest::default() });
    let fx = act(&mut s, Action::Open);
    assert_eq!(burst(fx), Some(s.jobs.burst_form));
    assert!(burst(act(&mut s, Action::Open)).is_none(), "one burst at a time");
    act(&mut s, Action::Right);
    assert_eq!(s.jobs.burst_form.goals, 32, "the form is frozen while the burst runs");

    update(
        &mut s,
        Msg::Burst(BurstUpdate::Started {
            first_iteration: 2,
            iterations: 3,
            device: "Cpu".into(),
            how: "new run".into(),
        }),
    );
    let point = BurstPoint {
        iteration: 2,
        success: 0.25,
        score: 0.5,
        eval_success: None,
        env_steps_per_s: 1000.0,
        seconds: 1.0,
    };
    update(&mut s, Msg::Burst(BurstUpdate::Iteration(point)));
    let b = s.jobs.burst.as_ref().unwrap();
    assert!(b.running());
    assert!((b.progress() - 1.0 / 3.0).abs() < 1e-12);

    assert!(act(&mut s, Action::CancelBurst).contains(&Effect::CancelJobs));
    assert_eq!(s.ui.message.as_deref(), Some("cancelling: the burst stops after its current iteration"));
    assert!(!act(&mut s, Action::CancelBurst).contains(&Effect::CancelJobs), "cancel is asked once");
    update(&mut s, Msg::Burst(BurstUpdate::Finished { completed: 1, cancelled: true }));
    let b = s.jobs.burst.as_ref().unwrap();
    assert!(!b.running());
    assert_eq!(b.ended.as_deref(), Some("cancelled after 1 iteration(s)"));
    // The status bar says how it ended, no longer that it is cancelling.
    assert_eq!(s.ui.message.as_deref(), Some("burst cancelled after 1 iteration(s)"));
    assert!(screen(&s).contains("burst cancelled after 1 iteration(s)"), "{}", screen(&s));
    assert!(burst(act(&mut s, Action::Open)).is_some(), "a new burst can start once it ended");
}

fn screen(s: &State) -> String {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(s.ui.size.0, s.ui.size.1)).unwrap();
    terminal.draw(|f| f.render_widget(s, f.area())).unwrap();
    terminal.backend().to_string()
}

/// An option click leaves the observation the policy sees as it was (the original's text page shows no
/// selection) and the screen says what is selected: the option's mark in the actions and the selection in
/// the observation's title. Buying shows the reward's parts and its formula filled in.
#[test]
fn the_play_screen_shows_the_selected_options_and_the_rewards_parts() {
    let mut s = playing();
    update(&mut s, Msg::Resize(80, 24));
    act(&mut s, Action::Open);
    choose(&mut s, "search[<your query>]");
    for c in "shirt".chars() {
        update(&mut s, Msg::Input(InputKey::Char(c)));
    }
    update(&mut s, Msg::Input(InputKey::Submit));
    let fixed = ["click[back to search]", "click[< prev]", "click[description]", "click[features]", "click[reviews]"];
    let products: Vec<String> = actions(&s).into_iter().filter(|a| a.starts_with("click[b0")).collect();
    let session = |s: &State| s.ui.play.as_ref().unwrap().session.as_ref().unwrap().env.observation().to_string();
    for product in products {
        choose(&mut s, &product);
        let options: Vec<String> =
            actions(&s).into_iter().filter(|a| !fixed.contains(&a.as_str()) && a != "click[buy now]").collect();
        let Some(option) = options.first().cloned() else {
            choose(&mut s, "click[< prev]");
            continue;
        };
        let before = session(&s);
        let screen_before = screen(&s);
        choose(&mut s, &option);
        assert_eq!(session(&s), before, "the observation the policy sees is byte for byte the same");
        let value = option.trim_start_matches("click[").trim_end_matches(']');
        let after = screen(&s);
        assert_ne!(after, screen_before, "the screen changes after an option click");
        assert!(after.contains(&format!("{option} · ◉ selected")), "the option is marked:\n{after}");
        assert!(after.contains("selected: ") && after.contains(value), "{after}");
        insta::assert_snapshot!("play_item_page_after_an_option_click_80x24", after);
        choose(&mut s, "click[buy now]");
        let recorded = &s.ui.play.as_ref().unwrap().session.as_ref().unwrap().finished[0];
        assert!(
            recorded.steps.iter().all(|st| !st.observation.contains("◉") && !st.observation.contains("selected:")),
            "the recorded observations carry no mark"
        );
        let page = s.ui.play.as_ref().unwrap().finished_page.clone().unwrap();
        let shown = screen(&s);
        for part in ["r_type", "r_att", "r_option", "r_price", "reward = (attributes matched + options chosen"] {
            assert!(shown.contains(part), "{part} on the Thank-you page:\n{shown}");
        }
        let formula = page.explained.last().unwrap();
        let value: f64 = formula.rsplit(" = ").next().unwrap().parse().unwrap();
        assert!((value - page.reward).abs() < 5e-4, "{formula} against the reward {}", page.reward);
        insta::assert_snapshot!("play_thank_you_page_80x24", shown);
        return;
    }
    panic!("no product of the results has options");
}
