//! TRL's reward shaping as settings of the TUI (issue 29): the reward weights typed in the settings panel beside
//! `scale_rewards` and the aggregation, and the offer of the settings that reproduce the trainer's stored
//! advantages when they disagree with the recomputation (`y` applies it). On the fixture TRL's own
//! GRPOTrainer wrote with `scale_rewards=batch` and reward weights [2, 0.5], which its log does not record.

use std::path::Path;
use std::time::Instant;

use gigscope::advantage::ScaleRewards;
use gigscope::tui::settings_fields::Field;
use gigscope::tui::state::{Popup, Prompt};
use gigscope::tui::update::InputKey;
use gigscope::tui::{open, update, Action, Config, Effect, Effects, Msg, State};

use crate::support::screen::{keys, render};

const RUN: &str = "tests/fixtures/trl/batch_weights";

fn opened() -> State {
    open(Path::new(RUN), Config::defaults(true).expect("config"), (120, 40)).expect("the run opens").0
}

fn disagreement(s: &State) -> f64 {
    s.domain.derived.max_trainer_diff.expect("the run stores advantages")
}

/// The search asked for in `fx`, run here as the app's job would, and its answer delivered.
fn answer_search(s: &mut State, fx: Effects) -> Effects {
    let key = fx
        .find(|e| match e {
            Effect::Reconcile(key) => Some(key),
            _ => None,
        })
        .expect("the disagreement asks for a search");
    let answer = s.reconcile_request(key).compute();
    update(s, Msg::Reconciled(Box::new(answer)))
}

fn type_text(s: &mut State, text: &str) {
    for c in text.chars() {
        update(s, Msg::Input(InputKey::Char(c)));
    }
    update(s, Msg::Input(InputKey::Submit));
}

/// Open the settings panel on `field`.
fn settings_on(s: &mut State, field: Field) {
    keys(s, &[Action::Settings]);
    while s.ui.popup != Some(Popup::Settings { field }) {
        keys(s, &[Action::Down]);
    }
}

#[test]
fn the_settings_that_reproduce_the_stored_advantages_are_offered_and_y_applies_them() {
    let mut s = opened();
    assert!(disagreement(&s) > 1e-3, "with TRL's defaults the stored advantages differ");
    let fx = update(&mut s, Msg::Tick(Instant::now()));
    answer_search(&mut s, fx);
    let offer = s.ui.message.clone().expect("the offer is said");
    assert!(offer.starts_with("stored advantages match `--scale-rewards batch --reward-weights "), "{offer}");
    assert!(offer.ends_with("`: apply? (y)"), "{offer}");
    assert!(
        update(&mut s, Msg::Tick(Instant::now())).find(|e| matches!(e, Effect::Reconcile(_)).then_some(())).is_none(),
        "one search per episodes and settings"
    );

    // The hint bar names the key everywhere; the episode view (given room) shows the offer under the trainer's
    // and the recomputed A, until it is applied.
    assert!(render(&s).contains("y apply offered settings"), "{}", render(&s));
    keys(&mut s, &[Action::Open, Action::Open]);
    update(&mut s, Msg::Resize(200, 60));
    let screen = render(&s);
    assert!(
        screen.contains("trainer A ") && screen.contains("stored advantages match `--scale-rewards batch"),
        "{screen}"
    );
    keys(&mut s, &[Action::ApplyReconciled]);
    assert_eq!(s.domain.settings.scale_rewards, Some(ScaleRewards::Batch));
    assert!(disagreement(&s) <= 1e-4, "the settings applied reproduce every stored advantage");
    assert!(
        s.ui.message.as_deref().is_some_and(|m| m.starts_with("applied: stored advantages match")),
        "{:?}",
        s.ui.message
    );
    keys(&mut s, &[Action::Top]);
    let screen = render(&s);
    assert!(
        !screen.contains("stored advantages match") && !screen.contains("apply offered"),
        "nothing left:\n{screen}"
    );
    // trainer A and recomputed A agree at the shown precision.
    let shown = screen.lines().find(|l| l.contains("trainer A ")).expect("the stored advantage is shown");
    let value = |after: &str| shown.split(after).nth(1).and_then(|r| r.split(' ').next()).unwrap_or_default();
    assert_eq!(value("trainer A "), value("recomputed A "), "{shown}");
    // R puts the run's recorded settings back, and the offer with them.
    keys(&mut s, &[Action::ResetSettings]);
    assert!(render(&s).contains("stored advantages match"));
}

#[test]
fn an_answer_to_settings_no_longer_shown_is_not_offered() {
    let mut s = opened();
    let fx = update(&mut s, Msg::Tick(Instant::now()));
    settings_on(&mut s, Field::Aggregation);
    keys(&mut s, &[Action::Right]);
    update(&mut s, Msg::Action(Action::Back));
    answer_search(&mut s, fx);
    assert!(s.offered_settings().is_none());
    assert!(s.ui.message.is_none(), "{:?}", s.ui.message);
    keys(&mut s, &[Action::ApplyReconciled]);
    assert!(s.ui.message.as_deref().is_some_and(|m| m.starts_with("nothing to apply")), "{:?}", s.ui.message);
}

#[test]
fn reward_weights_are_typed_in_the_settings_panel() {
    let mut s = opened();
    settings_on(&mut s, Field::RewardWeights);
    assert!(render(&s).contains("reward weights   1 each"), "{}", render(&s));
    // Enter opens a prompt for the list; one weight for a run of two reward functions is refused.
    keys(&mut s, &[Action::Open]);
    assert_eq!((s.ui.input.as_deref(), s.ui.prompt), (Some(""), Prompt::RewardWeights));
    type_text(&mut s, "2");
    assert_eq!(s.domain.settings.reward_weights, None);
    let said = s.ui.message.clone().unwrap_or_default();
    assert_eq!(said, "reward weights not changed: the run has 2 reward function(s), 1 weight(s) given");
    keys(&mut s, &[Action::Right]);
    assert_eq!(s.ui.input.as_deref(), Some(""), "←/→ open the prompt too");
    type_text(&mut s, "2, 0.5");
    assert_eq!(s.domain.settings.reward_weights.map(|w| w.as_slice().to_vec()), Some(vec![2.0, 0.5]));
    assert_eq!(s.ui.popup, Some(Popup::Settings { field: Field::RewardWeights }), "the panel stays open");
    // With the trainer's scaling too, trainer A and recomputed A agree.
    assert!(disagreement(&s) > 1e-3, "group scaling still differs");
    while s.ui.popup != Some(Popup::Settings { field: Field::ScaleRewards }) {
        keys(&mut s, &[Action::Up]);
    }
    while s.domain.settings.scale_rewards != Some(ScaleRewards::Batch) {
        keys(&mut s, &[Action::Right]);
    }
    assert!(disagreement(&s) <= 1e-4, "{}", disagreement(&s));
    let screen = render(&s);
    assert!(screen.contains("reward weights   2,0.5") && screen.contains("* run: 1 each"), "{screen}");
    assert!(screen.contains("scale=batch") && screen.contains("w=2,0.5"), "the status bar names them:\n{screen}");
}

#[test]
fn settings_panel_with_the_offer_120x40() {
    let mut s = opened();
    let fx = update(&mut s, Msg::Tick(Instant::now()));
    answer_search(&mut s, fx);
    settings_on(&mut s, Field::RewardWeights);
    insta::assert_snapshot!(render(&s));
}

/// At 120×40 the episode view's actions pane shows the offer whole, wrapped under the trainer's and the
/// recomputed A (issue 29 item 2).
#[test]
fn the_offer_shows_whole_in_the_episode_view_at_120x40() {
    let mut s = opened();
    let fx = update(&mut s, Msg::Tick(Instant::now()));
    answer_search(&mut s, fx);
    let offer = s.ui.message.clone().expect("the offer is said");
    keys(&mut s, &[Action::Open, Action::Open]);
    let screen = render(&s);
    // The actions pane's rows, from the line of the trainer's A on, joined as the pane wrapped them.
    let pane: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.contains("trainer A "))
        .take_while(|l| !l.contains('└'))
        .map(|l| l.rsplit('│').nth(1).unwrap_or_default().trim())
        .collect();
    let joined = pane[1..].join(" ");
    assert!(joined.contains(&offer), "{offer:?} is not whole in the pane:\n{screen}");
    insta::assert_snapshot!(screen);
}
