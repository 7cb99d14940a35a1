//! The estimators view on an iteration large enough that its batch columns (ProxMO's TF-IDF spans the whole
//! iteration) are computed as a job: the update asks for the job once, the view says what is being computed,
//! and when the columns arrive the screen is the one a synchronous computation draws.

use crate::support;

use std::path::Path;

use gigscope::tui::estimates::BatchRequest;
use gigscope::tui::{open, update, Action, Config, Effect, Effects, Msg, State};
use support::screen::{keys, open_group, render};

/// The batch columns an update asks a job to compute.
fn batch(fx: Effects) -> Option<Box<BatchRequest>> {
    fx.find(|e| match e {
        Effect::EstimatorBatch(request) => Some(request),
        _ => None,
    })
}

fn socks_state() -> State {
    let config = Config::defaults(false).expect("default config");
    let mut s = open(Path::new("tests/fixtures/tui/basic"), config, (160, 45)).expect("open the fixture").0;
    open_group(&mut s, "socks-it0");
    s
}

#[test]
fn a_large_iterations_batch_columns_are_computed_as_a_job() {
    let mut s = socks_state();
    // Every iteration counts as large here.
    s.ui.estimators.background_rows = 1;
    let fx = update(&mut s, Msg::Action(Action::Estimators));
    let request = batch(fx).expect("the iteration's batch columns as a job");
    let screen = render(&s);
    assert!(screen.contains("proxmo: being computed over the whole iteration in the background"), "{screen}");
    let row = screen.lines().find(|l| l.contains("search[socks]")).unwrap_or_else(|| panic!("{screen}"));
    assert!(row.contains('…'), "ProxMO's cell waits: {row}");
    // Asked for once, whatever happens meanwhile.
    assert!(batch(update(&mut s, Msg::Action(Action::Down))).is_none());
    keys(&mut s, &[Action::Up]);

    update(&mut s, Msg::EstimatorBatch(request.compute()));
    let arrived = render(&s);
    assert!(!arrived.contains("being computed") && !arrived.contains('…'), "{arrived}");

    let mut sync = socks_state();
    let fx = update(&mut sync, Msg::Action(Action::Estimators));
    assert!(batch(fx).is_none(), "a small iteration is computed as it is drawn");
    assert_eq!(arrived, render(&sync));
}
