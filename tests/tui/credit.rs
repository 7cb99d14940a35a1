//! The credit view (`7`/`u`) on a run whose credit is known by construction: GRPO with mean normalisation over
//! trajectories (recorded in `run.json`), so each row gets its episode's total minus its group's mean total.

use std::path::Path;

use gigscope::advantage::AdvantageOverrides;
use gigscope::run::{Episode, RunMeta, RunWriter, Step};
use gigscope::tui::{open, update, Action, Config, Msg, State, View};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn episode(id: &str, iteration: i64, steps: &[(&str, f64)]) -> Episode {
    let steps = steps.iter().map(|&(action, reward)| Step::new(format!("obs of {action}"), action, reward)).collect();
    let mut e = Episode::new(id, format!("g{iteration}"), steps);
    e.iteration = iteration;
    e
}

fn write_run(dir: &Path) {
    let mut w = RunWriter::create(dir).unwrap();
    let advantage = AdvantageOverrides {
        estimator: Some(gigscope::advantage::Estimator::Grpo),
        norm: Some(gigscope::advantage::Norm::MeanNorm),
        pooling: Some(gigscope::advantage::Pooling::Trajectories),
        invalid_penalty: Some(0.0),
        ..AdvantageOverrides::default()
    };
    w.write_meta(&RunMeta { name: Some("credit".into()), advantage: Some(advantage), ..RunMeta::default() }).unwrap();
    for e in [
        episode("c", 0, &[("click[buy now]", 1.0)]),
        episode("d", 0, &[("search[shirt]", 0.0)]),
        episode(
            "a",
            1,
            &[
                ("<think>red</think><action>search[red shirt]</action>", 0.0),
                ("<action>click[b0aaaaaaaa]</action>", 0.0),
                ("<action>click[medium]</action>", 0.0),
                ("<think>done</think><action>click[buy now]</action>", 1.0),
            ],
        ),
        episode("b", 1, &[("search[blue shirt]", 0.0), ("click[b0bbbbbbbb]", 0.0), ("click[< prev]", 0.0)]),
    ] {
        w.append_episode(&e).unwrap();
    }
}

fn act(s: &mut State, a: Action) {
    update(s, Msg::Action(a));
}

fn render(s: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(s.ui.size.0, s.ui.size.1)).unwrap();
    terminal.draw(|f| f.render_widget(s, f.area())).unwrap();
    terminal.backend().to_string()
}

#[test]
fn credit_view_lists_behaviours_and_opens_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let mut s = open(dir.path(), Config::defaults(false).unwrap(), (120, 40)).unwrap().0;
    act(&mut s, Action::Down);
    act(&mut s, Action::Credit);
    assert_eq!(s.ui.view, View::Credit);
    let screen = render(&s);
    // a: A = +0.5 on 4 rows, b: −0.5 on 3; iteration 0 gave buy now +0.5 and search −0.5.
    assert!(screen.contains("Credit of iteration 1 · 7 rows · Σ A +0.500 · change against iteration 0"), "{screen}");
    let line = |behaviour: &str| {
        let line =
            screen.lines().position(|l| l.contains(behaviour)).unwrap_or_else(|| panic!("{behaviour}: {screen}"));
        let text = screen.lines().nth(line).unwrap().trim_matches('"');
        let cells: Vec<&str> = text.split_whitespace().collect();
        (line, cells)
    };
    let (buy, option, product, search, prev) = (
        line("click[buy now]"),
        line("click[option]"),
        line("click[product]"),
        line("search[*]"),
        line("click[< prev]"),
    );
    assert!(buy.0 < option.0 && option.0 < product.0 && product.0 < search.0 && search.0 < prev.0, "{screen}");
    assert!(buy.1.ends_with(&["1", "+0.500", "+0.500", "+0.000", "│"]), "{:?}", buy.1);
    assert!(search.1.ends_with(&["2", "0.000", "0.000", "+0.500", "│"]), "{:?}", search.1);
    assert!(prev.1.ends_with(&["1", "-0.500", "-0.500", "-0.500", "│"]), "{:?}", prev.1);
    // search[*]: its rows, the raw responses shown; the first opens in the episode view.
    act(&mut s, Action::Down);
    act(&mut s, Action::Down);
    act(&mut s, Action::Down);
    act(&mut s, Action::Open);
    assert_eq!(s.ui.credit.row, Some(0));
    let screen = render(&s);
    assert!(screen.contains("<think>red</think><action>search[red shirt]</action>"), "{screen}");
    act(&mut s, Action::Back);
    assert_eq!((s.ui.view, s.ui.credit.row), (View::Credit, None), "back from the rows is back to the list");
    act(&mut s, Action::Open);
    act(&mut s, Action::Open);
    assert_eq!(s.ui.view, View::Episode);
    let e = s.episode_index().unwrap();
    assert_eq!((s.domain.episodes[e].id.as_str(), s.ui.sel.step), ("a", 0));
}

/// The state timeline (`8`/`S`) from a selected step: its anchor state in both iterations, the same `<action>`
/// with other thoughts counted as one action.
#[test]
fn timeline_follows_the_selected_rows_state_across_iterations() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(dir.path()).unwrap();
    let start = |id: &str, iteration: i64, action: &str, reward: f64| {
        let mut e = Episode::new(id, format!("g{iteration}"), vec![Step::new("start", action, reward)]);
        e.iteration = iteration;
        e
    };
    for e in [
        start("a0", 0, "up", 1.0),
        start("b0", 0, "down", 0.0),
        start("a1", 1, "<action>up</action>", 1.0),
        start("b1", 1, "<think>surely</think><action>up</action>", 1.0),
        start("c1", 1, "down", 0.0),
    ] {
        w.append_episode(&e).unwrap();
    }
    let mut s = open(dir.path(), Config::defaults(false).unwrap(), (120, 40)).unwrap().0;
    act(&mut s, Action::Open);
    act(&mut s, Action::Open);
    assert_eq!(s.ui.view, View::Episode);
    act(&mut s, Action::Timeline);
    assert_eq!(s.ui.view, View::Timeline);
    let screen = render(&s);
    assert!(screen.contains("State timeline · 5 visits over 2 iterations"), "{screen}");
    assert!(screen.contains("iteration 0: 2 visits in 2 episodes"), "{screen}");
    assert!(screen.contains("iteration 1: 3 visits in 3 episodes"), "{screen}");
    let up_in_1 = screen
        .lines()
        .skip_while(|l| !l.contains("iteration 1:"))
        .find(|l| l.contains(" up "))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(up_in_1.contains("   2   67%"), "{up_in_1}");
    act(&mut s, Action::Back);
    assert_eq!(s.ui.view, View::Episode);
}
