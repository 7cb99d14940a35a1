//! The credit view (`7`/`u`) on a run whose credit is known by construction: GRPO with mean normalisation over
//! trajectories (recorded in `run.json`), so each row gets its episode's total minus its group's mean total.

use std::path::Path;

use gigscope::advantage::{compute, AdvantageOverrides};
use gigscope::index::TrajectoryIndex;
use gigscope::run::tokens::{StepRecord, StepTokens, TokenWriter};
use gigscope::run::{Episode, Run, RunMeta, RunWriter, Step};
use gigscope::tui::{open, update, Action, Config, Effect, Msg, State, View};
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
    assert_eq!((s.domain.episodes.at(e).id.to_string(), s.ui.sel.step), ("a".to_string(), 0));
}

/// The cells of the screen's line showing `text`, split at spaces.
fn cells(screen: &str, text: &str) -> Vec<String> {
    // The title line names the query the view groups by.
    let line = screen
        .lines()
        .find(|l| l.contains(text) && !l.contains("Credit of"))
        .unwrap_or_else(|| panic!("{text}: {screen}"));
    line.trim_matches('"').split_whitespace().map(str::to_owned).collect()
}

/// With a token store, a token-mass column (Σ A × trained tokens): a's purchase has 2 trained tokens of 3
/// (+0.5 × 2), b's search 4 of 4 (−0.5 × 4) beside a's untokenised one; steps without tokens add nothing.
#[test]
fn credit_view_shows_the_token_mass_of_the_steps_the_store_counts() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let buy = StepTokens::new(vec![1, 2, 3], vec![true, true, false], &[Some("buy"), Some(" now"), Some("!")]);
    let search =
        StepTokens::new(vec![4, 5, 6, 7], vec![true; 4], &[Some("search"), Some("["), Some("blue"), Some("]")]);
    TokenWriter::create(dir.path())
        .unwrap()
        .append(
            "iteration-1.bin",
            &[
                StepRecord { episode: "a", step: 3, iteration: Some(1), tokens: &buy },
                StepRecord { episode: "b", step: 0, iteration: Some(1), tokens: &search },
            ],
        )
        .unwrap();
    let mut s = open(dir.path(), Config::defaults(false).unwrap(), (100, 18)).unwrap().0;
    act(&mut s, Action::Down);
    act(&mut s, Action::Credit);
    let screen = render(&s);
    assert!(screen.contains("Σ A×tok"), "{screen}");
    assert!(cells(&screen, "click[buy now]")
        .ends_with(&["1", "+0.500", "+0.500", "+1.000", "+0.000", "│"].map(String::from)));
    assert!(cells(&screen, "search[*]").ends_with(&["2", "0.000", "0.000", "-2.000", "+0.500", "│"].map(String::from)));
    assert!(cells(&screen, "click[option]").ends_with(&["1", "+0.500", "+0.500", "—", "+0.500", "│"].map(String::from)));
    insta::assert_snapshot!(screen);
}

/// The view's key again groups by the last search's query: the steps the run's index matches (a real tantivy
/// index here) against the rest; once more, back by verb and target.
#[test]
fn credit_view_groups_by_the_last_search_query() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let mut s = open(dir.path(), Config::defaults(false).unwrap(), (120, 40)).unwrap().0;
    act(&mut s, Action::Down);
    act(&mut s, Action::Credit);
    // No search yet: the key says what to do and asks the index nothing.
    let fx = update(&mut s, Msg::Action(Action::Credit));
    assert!(fx.find(|e| matches!(e, Effect::Matches(_)).then_some(())).is_none());
    assert!(s.ui.message.as_deref().unwrap_or_default().contains("search first"), "{:?}", s.ui.message);

    let cache = tempfile::tempdir().unwrap();
    let run = Run::open(dir.path()).unwrap();
    let mut index = TrajectoryIndex::open(dir.path(), cache.path(), &s.domain.settings).unwrap();
    index.update(&run.episodes, &compute(&run.episodes, &s.domain.settings)).unwrap();
    let query = r#"action:"buy now""#.to_string();
    update(
        &mut s,
        Msg::SearchDone { query: query.clone(), result: Ok(index.search(&query, 10).unwrap()), partial: None },
    );
    assert_eq!(s.ui.view, View::Search);
    act(&mut s, Action::Credit);
    let fx = update(&mut s, Msg::Action(Action::Credit));
    let asked = fx.find(|e| match e {
        Effect::Matches(q) => Some(q),
        _ => None,
    });
    assert_eq!(asked.as_deref(), Some(query.as_str()));
    assert!(render(&s).contains("finding the steps of action:\"buy now\" …"));
    // Another query's answer (the user moved on) changes nothing.
    update(&mut s, Msg::Matched { query: "id:a".into(), result: Ok(vec![(2, 0)]), searched: (4, 4) });
    assert!(s.ui.credit.by.as_ref().unwrap().matched.is_none());
    let found = index.positions(&query).unwrap();
    assert_eq!(found, [(0, 0), (2, 3)], "c's purchase in iteration 0 and a's in iteration 1");
    update(&mut s, Msg::Matched { query: query.clone(), result: Ok(found), searched: (4, 4) });
    let screen = render(&s);
    // a: +0.5 on 4 rows, b: −0.5 on 3; iteration 0: c's purchase +0.5, d's search −0.5.
    assert!(
        screen.contains(
            "Credit of iteration 1 · 7 rows · Σ A +0.500 · change against iteration 0 · by action:\"buy now\""
        ),
        "{screen}"
    );
    let (buy, rest) = (cells(&screen, "action:\"buy now\""), cells(&screen, "(unmatched)"));
    assert!(buy.ends_with(&["1", "+0.500", "+0.500", "+0.000", "│"].map(String::from)), "{buy:?}");
    assert!(rest.ends_with(&["6", "0.000", "0.000", "+0.500", "│"].map(String::from)), "{rest:?}");
    assert!(!screen.contains("search[*]"), "{screen}");
    // Its rows are the query's.
    act(&mut s, Action::Open);
    assert!(render(&s).contains("<think>done</think><action>click[buy now]</action>"));
    act(&mut s, Action::Back);
    // Back by verb and target.
    let fx = update(&mut s, Msg::Action(Action::Credit));
    assert!(fx.find(|e| matches!(e, Effect::Matches(_)).then_some(())).is_none());
    assert!(s.ui.credit.by.is_none());
    assert!(render(&s).contains("search[*]"));
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
