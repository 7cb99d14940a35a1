//! The burst dialog's backend (issue 27): in-process or a Ray profile of the config; for a Ray backend the
//! dialog shows the profile, its address and the exact command, the profile's own rendering with the dialog's
//! settings, and `Enter` asks the app to submit that very command.

use std::path::{Path, PathBuf};

use gigscope::ray_job::{render_command, BurstTable};
use gigscope::tui::burst_dialog::{ray_choices, BurstField, BurstHost, BurstRequest, BurstUpdate, RayPlan};
use gigscope::tui::state::Popup;
use gigscope::tui::{open, update, Action, Config, Effect, Effects, Msg, State};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

const CONFIG: &str = r#"
[burst]
address = "http://127.0.0.1:8265"

[burst.profiles.verl]
backend = "ray"
address = "http://head:8265"
entrypoint = "python3 -m verl.trainer.main_ppo {overrides} +gigscope.run={run}"
trainer = "verl-agent"

[burst.profiles.nowhere]
backend = "ray"
entrypoint = "python3 train.py {overrides}"
"#;

const RUN: &str = "tests/fixtures/tui/basic";

fn state(config: &str) -> State {
    let config = Config::from_str(config, true).unwrap();
    let mut s = open(Path::new(RUN), config, (120, 48)).unwrap().0;
    s.jobs.burst_host = BurstHost { gigscope: PathBuf::from("/opt/gigscope"), cwd: PathBuf::from("/work") };
    s
}

fn act(s: &mut State, a: Action) -> Effects {
    update(s, Msg::Action(a))
}

/// The screen as text, one line per row.
fn screen(s: &State) -> String {
    let area = Rect::new(0, 0, s.ui.size.0, s.ui.size.1);
    let mut buf = Buffer::empty(area);
    s.render(area, &mut buf);
    (0..area.height)
        .map(|y| (0..area.width).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

fn backend_shown(s: &State) -> String {
    s.jobs.burst_form.value(BurstField::Backend, &ray_choices(&s.config.burst))
}

fn plan(fx: Effects) -> Option<RayPlan> {
    fx.find(|e| match e {
        Effect::StartRayBurst(plan) => Some(*plan),
        _ => None,
    })
}

#[test]
fn the_backend_cycles_through_in_process_and_the_configs_ray_profiles() {
    let mut s = state(CONFIG);
    act(&mut s, Action::Train);
    act(&mut s, Action::Up);
    assert_eq!(s.ui.popup, Some(Popup::Burst { field: BurstField::Backend }), "the backend is the first field");
    assert_eq!(backend_shown(&s), "in-process", "in-process is the default");
    let mut seen = Vec::new();
    for _ in 0..4 {
        act(&mut s, Action::Right);
        seen.push(backend_shown(&s));
    }
    // `default` (gigscope's own train) because [burst] names an address; then the profiles in name order.
    assert_eq!(seen, ["ray: default", "ray: nowhere", "ray: verl", "in-process"]);
    act(&mut s, Action::Left);
    assert_eq!(backend_shown(&s), "ray: verl", "left goes back, wrapping");
    // Without an address in [burst], no `default`; without profiles, in-process only.
    let bare = state("[burst.profiles.verl]\nbackend = \"ray\"\n");
    assert_eq!(ray_choices(&bare.config.burst).iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["verl"]);
    assert!(ray_choices(&state("").config.burst).is_empty());
    assert_eq!(BurstRequest::default().adjust(BurstField::Backend, true, 0).backend, 0);
}

#[test]
fn a_ray_backend_shows_and_submits_the_profiles_own_command_with_the_dialogs_settings() {
    let mut s = state(CONFIG);
    act(&mut s, Action::Train);
    act(&mut s, Action::Right); // iterations 5 -> 10
    act(&mut s, Action::Down);
    act(&mut s, Action::Left); // goals 16 -> 8
    act(&mut s, Action::Up);
    act(&mut s, Action::Up);
    for _ in 0..3 {
        act(&mut s, Action::Right); // default, nowhere, verl
    }
    assert_eq!(backend_shown(&s), "ray: verl");

    let table = BurstTable::from_config_text(CONFIG, Path::new("config.toml")).unwrap();
    let profile = table.profile("verl", Path::new("config.toml")).unwrap();
    let settings: Vec<(String, String)> =
        [("estimator", "gigpo"), ("iterations", "10"), ("goals", "8"), ("group_size", "8")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
    let run = Path::new("/work").join(RUN);
    let expected =
        render_command("verl", profile, &settings, &run, Path::new("/opt/gigscope"), &[], Path::new("/work")).unwrap();
    assert!(expected.contains("trainer.total_training_steps=10 data.train_batch_size=8"), "{expected}");

    let text = screen(&s);
    assert!(text.contains("Ray profile verl at http://head:8265; the job runs:"), "{text}");
    // The rows below the profile's line, from its column on, hold the whole command wrapped.
    let rows: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    let head = "Ray profile".chars().collect::<Vec<_>>();
    let (y, x) = rows
        .iter()
        .enumerate()
        .find_map(|(y, r)| r.windows(head.len()).position(|w| w == head.as_slice()).map(|x| (y, x)))
        .unwrap();
    let shown: String = rows[y + 1..].iter().flat_map(|r| r[x..(x + 74).min(r.len())].iter()).collect();
    assert!(shown.contains(&expected), "the whole command is shown:\n{text}");

    let plan = plan(act(&mut s, Action::Open)).expect("Enter asks the app to submit the Ray burst");
    assert_eq!(plan.command, expected, "what is submitted is what was shown");
    assert_eq!((plan.profile.as_str(), plan.address.as_str()), ("verl", "http://head:8265"));
    assert_eq!((plan.settings, plan.run, plan.own_train), (settings, run, false));
    assert!(s.jobs.burst.as_ref().is_some_and(|b| b.ray_job.is_some() && b.running()));

    // X asks the job to stop; once it has, the status bar says so instead of "cancelling".
    act(&mut s, Action::Back);
    act(&mut s, Action::CancelBurst);
    assert_eq!(s.ui.message.as_deref(), Some("cancelling: the Ray job is asked to stop"));
    let stopped = "stopped: Ray job gigscope-burst-1 (the run keeps what it wrote)";
    update(&mut s, Msg::Burst(BurstUpdate::RayEnded(stopped.into())));
    assert_eq!(s.ui.message.as_deref(), Some(format!("burst {stopped}").as_str()));
    let text = screen(&s);
    assert!(text.contains("burst stopped: Ray job gigscope-burst-1") && !text.contains("cancelling"), "{text}");
}

#[test]
fn a_profile_without_an_address_says_so_and_starts_nothing() {
    let mut s = state("[burst.profiles.nowhere]\nbackend = \"ray\"\nentrypoint = \"python3 t.py {overrides}\"\n");
    act(&mut s, Action::Train);
    act(&mut s, Action::Up);
    act(&mut s, Action::Right);
    assert!(screen(&s).contains("cannot start: burst profile \"nowhere\" names no Ray address"), "{}", screen(&s));
    let fx = act(&mut s, Action::Open);
    assert!(plan(fx).is_none());
    assert!(s.jobs.burst.is_none());
    assert!(s.ui.message.as_deref().is_some_and(|m| m.contains("names no Ray address")), "{:?}", s.ui.message);
}
