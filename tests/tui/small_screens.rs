//! Every screen at 80×24, in both themes, with `--present` on and off, shows what it claims or says what it
//! hides: no word of the data runs into the right edge of its box or of the screen without an ellipsis
//! (issue 29 item 7).

use std::path::Path;

use gigscope::index::{Hit, SearchResults};
use gigscope::tui::{open, update, Action, Config, Msg, State};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// A rendered screen, row by row.
type Screen = Vec<Vec<char>>;

fn render(s: &State) -> Screen {
    let mut terminal = Terminal::new(TestBackend::new(s.ui.size.0, s.ui.size.1)).unwrap();
    terminal.draw(|f| f.render_widget(s, f.area())).unwrap();
    let buf = terminal.backend().buffer();
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).flat_map(|x| buf[(x, y)].symbol().chars().take(1)).collect())
        .collect()
}

fn keys(s: &mut State, actions: &[Action]) {
    for &a in actions {
        update(s, Msg::Action(a));
    }
}

/// A character of a word of the data (a number, an id, an action string).
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || "_[]()/.-+%·<>".contains(c)
}

/// The places where a word runs into the right edge of the screen unmarked (a bar, the breadcrumb, a strip
/// cut there mid-word): the word is cut, or may be, and nothing says so. A word that ends at the edge reads as
/// cut too: the screens leave a space there. And the boxes whose title runs into the top right corner
/// (`┌Steps · 1–4 of 5 ↑┐`, or cut after a space: `size ┐`): a title that fits leaves at least a stroke of the
/// border before the corner, one that does not ends in `…` and that stroke.
fn cut_words(screen: &[Vec<char>]) -> Vec<String> {
    let mut out = Vec::new();
    for (y, line) in screen.iter().enumerate() {
        let text = line.iter().collect::<String>();
        let x = line.len() - 1;
        if word_char(line[x]) && word_char(line[x - 1]) {
            let from = line[..=x].iter().rposition(|&c| !word_char(c)).map_or(0, |i| i + 1);
            let word: String = line[from..=x].iter().collect();
            out.push(format!("row {y}: {word:?} in {text:?}"));
        }
        for corner in (1..line.len()).filter(|&x| line[x] == '┐' && line[x - 1] != '─') {
            let from = line[..corner].iter().rposition(|&c| c == '┌').unwrap_or(0);
            let title: String = line[from..=corner].iter().collect();
            out.push(format!("row {y}: title {title:?} runs into its corner in {text:?}"));
        }
    }
    out
}

/// Every screen of the sample runs (WebShop and Sokoban) and of play, named.
/// The screen at 80×24 and the same state's screen 300 columns wide (where present mode's line fits whole).
fn both(s: &mut State) -> (Screen, Screen) {
    let small = render(s);
    update(s, Msg::Resize(300, 24));
    let wide = render(s);
    update(s, Msg::Resize(80, 24));
    (small, wide)
}

fn screens(color: bool, theme: Option<&str>, present: bool) -> Vec<(String, (Screen, Screen))> {
    let config = || Config::defaults(color).unwrap().with_display(theme, present).unwrap();
    let mut out = Vec::new();
    let mut s = open(Path::new("sample_runs/webshop-gigpo"), config(), (80, 24)).unwrap().0;
    out.push(("overview".into(), both(&mut s)));
    keys(&mut s, &[Action::Open]);
    out.push(("groups".into(), both(&mut s)));
    keys(&mut s, &[Action::Open]);
    out.push(("episode".into(), both(&mut s)));
    keys(&mut s, &[Action::Anchor]);
    out.push(("anchor".into(), both(&mut s)));
    keys(&mut s, &[Action::Compare]);
    out.push(("compare".into(), both(&mut s)));
    keys(&mut s, &[Action::Estimators]);
    out.push(("estimators".into(), both(&mut s)));
    keys(&mut s, &[Action::Credit]);
    out.push(("credit".into(), both(&mut s)));
    keys(&mut s, &[Action::Timeline]);
    out.push(("timeline".into(), both(&mut s)));
    let hits: Vec<Hit> = s
        .domain
        .episodes
        .iter()
        .enumerate()
        // The last step of an episode: the purchase, `click[buy now]`, on WebShop.
        .map(|(e, ep)| (e, ep.steps.len().saturating_sub(1)))
        .take(5)
        .map(|(episode, step)| Hit { episode, episode_id: String::new(), step, score: 1.0 })
        .collect();
    let result = Ok(SearchResults { total: hits.len(), hits });
    update(&mut s, Msg::SearchDone { query: "action:buy".into(), result, partial: None });
    out.push(("search".into(), both(&mut s)));
    keys(&mut s, &[Action::Help]);
    out.push(("help".into(), both(&mut s)));
    let mut k = open(Path::new("sample_runs/sokoban-gigpo"), config(), (80, 24)).unwrap().0;
    keys(&mut k, &[Action::Open, Action::Open]);
    out.push(("sokoban episode".into(), both(&mut k)));
    let run = tempfile::tempdir().unwrap();
    write_burst_run(run.path());
    let mut b = open(run.path(), config(), (80, 24)).unwrap().0;
    out.push(("overview after a burst".into(), both(&mut b)));
    out
}

/// A run as a few iterations of a burst leave it: six iterations of ten one-step episodes each, one or two of
/// which succeed (success rate 0.1 or 0.2), so that the overview's table is tall and its charts low.
fn write_burst_run(dir: &Path) {
    let mut lines = String::new();
    for iteration in 1..=6 {
        for k in 0..10 {
            let success = k < 1 + iteration % 2;
            let reward = if success { 1.0 } else { 0.0 };
            let episode = serde_json::json!({
                "id": format!("i{iteration}-e{k}"),
                "group": format!("i{iteration}-g"),
                "iteration": iteration,
                "steps": [{"observation": "start", "action": format!("a{k}"), "reward": reward, "valid": true}],
                "outcome": {"success": success, "score": reward},
            });
            lines += &format!("{episode}\n");
        }
    }
    std::fs::write(dir.join("episodes.jsonl"), lines).unwrap();
    let meta = serde_json::json!({
        "format": "gigscope-run/1",
        "name": "burst",
        "advantage": {"estimator": "gigpo", "gamma": 0.95, "omega": 1.0, "norm": "mean_norm", "anchor": "exact"},
    });
    std::fs::write(dir.join("run.json"), meta.to_string()).unwrap();
}

fn text(line: &[char]) -> String {
    line.iter().collect()
}

/// The box whose top border begins `┌{name}` at the screen's left edge: its title line and the rows inside it.
fn boxed(screen: &Screen, name: &str) -> Option<(String, Vec<String>)> {
    let top = screen.iter().position(|l| text(l).starts_with(&format!("┌{name}")))?;
    let rows = screen[top + 1..].iter().map(|l| text(l)).take_while(|l| !l.starts_with('└')).collect();
    Some((text(&screen[top]), rows))
}

/// The rows a table's title says it shows, `a–b of n`, as (a, b, n).
fn shown_range(title: &str) -> Option<(usize, usize, usize)> {
    let (range, rest) = title.split_once(" of ")?;
    let (a, b) = range.rsplit(' ').next()?.split_once('–')?;
    let n = rest.split(' ').next()?;
    Some((a.parse().ok()?, b.parse().ok()?, n.parse().ok()?))
}

fn config(present: bool) -> Config {
    Config::defaults(true).unwrap().with_display(None, present).unwrap()
}

/// A table with `len` rows showing `rows` of them (`rows` counts its header) says which, and the selected
/// row (`sel`, from 0) is among them.
fn assert_says_what_it_hides(what: &str, title: &str, rows: usize, len: usize, sel: usize) {
    let shown = rows - 1;
    if shown >= len {
        return;
    }
    let (a, b, n) = shown_range(title).unwrap_or_else(|| panic!("{what}: {shown} of {len} rows, title {title:?}"));
    assert_eq!((n, b + 1 - a), (len, shown), "{what}: title {title:?}");
    assert!((a..=b).contains(&(sel + 1)), "{what}: selected row {} not among {a}–{b}", sel + 1);
}

#[test]
fn tables_that_cannot_show_all_their_rows_say_so_and_follow_the_selection() {
    for present in [false, true] {
        let mut s = open(Path::new("sample_runs/webshop-gigpo"), config(present), (80, 24)).unwrap().0;
        keys(&mut s, &[Action::Open, Action::Open]);
        let n = s.domain.episodes.at(s.episode_index().unwrap()).steps.len();
        let mut hid = false;
        for step in 0..n {
            let (title, rows) = boxed(&render(&s), "Steps").expect("a steps table");
            hid |= rows.len() - 1 < n;
            assert_says_what_it_hides(&format!("steps, present {present}"), &title, rows.len(), n, step);
            assert!(rows.iter().any(|r| r.starts_with(&format!("│{step} "))), "step {step} not shown: {rows:?}");
            keys(&mut s, &[Action::Down]);
        }
        assert!(hid || !present, "present mode at 80×24 shows the first episode's steps whole: nothing to check");
        keys(&mut s, &[Action::Up, Action::Up, Action::Up, Action::Up, Action::Up, Action::Anchor]);
        let m = s.domain.derived.table.anchor_group_of(s.row_ref().unwrap()).members.len();
        assert!(m > 4, "{m} members");
        for _ in 0..m {
            let (title, rows) = boxed(&render(&s), "Members").expect("a members table");
            assert!(rows.len() - 1 < m, "{m} members all shown");
            assert_says_what_it_hides(
                &format!("members, present {present}"),
                &title,
                rows.len(),
                m,
                s.ui.anchor.member,
            );
            keys(&mut s, &[Action::Down]);
        }
    }
}

#[test]
fn the_iterations_table_headers_are_whole_words() {
    let names = ["iter", "eps", "groups", "success", "return", "steps/ep", "tok/step", "zero-var", "sg", "size"];
    let short = ["it", "grp", "succ", "ret", "st/ep", "tok/st", "0-var"];
    for present in [false, true] {
        let s = open(Path::new("sample_runs/webshop-gigpo"), config(present), (80, 24)).unwrap().0;
        let (_, rows) = boxed(&render(&s), "Iterations").expect("the iterations table");
        let header = rows[0].trim_matches('│');
        for word in header.split_whitespace() {
            assert!(names.contains(&word) || short.contains(&word), "present {present}: {word:?} in {header:?}");
        }
        assert_eq!(header.split_whitespace().filter(|w| *w != "size").count(), 9, "{header:?}");
    }
}

/// The Sokoban board whole at 80×24 (its few actions share a line to leave it the room); in present mode,
/// whose line takes two rows more, whole or with the rows it shows in the title.
#[test]
fn the_sokoban_board_shows_whole_at_80x24_or_says_it_is_cut() {
    for present in [false, true] {
        let mut s = open(Path::new("sample_runs/sokoban-gigpo"), config(present), (80, 24)).unwrap().0;
        keys(&mut s, &[Action::Open, Action::Open]);
        let board = s.domain.episode(s.episode_index().unwrap()).unwrap().steps[0].observation.clone();
        let board: Vec<&str> = board.lines().collect();
        let (title, rows) = boxed(&render(&s), "Observation").expect("the observation");
        let cells: Vec<String> = rows.iter().map(|r| r.trim_matches('│').trim_end().to_string()).collect();
        let whole = cells.windows(board.len()).any(|w| w == board.as_slice());
        let marked = title.contains(&format!("1–{}/{}", rows.len(), board.len()));
        assert!(whole || (present && marked), "present {present}: {title:?} {cells:#?}");
    }
}

#[test]
fn a_low_success_chart_labels_both_ends_of_what_it_draws() {
    let run = tempfile::tempdir().unwrap();
    write_burst_run(run.path());
    for present in [false, true] {
        let s = open(run.path(), config(present), (80, 24)).unwrap().0;
        let (_, rows) = boxed(&render(&s), "success rate").expect("the success chart");
        let labelled = |label: &str| rows.iter().filter(|r| r.contains(label)).count();
        assert!(labelled("0.00") == 1 && labelled("1.00") == 1, "present {present}: {rows:#?}");
        // Below the 1.00 label no row draws the values near 0.1 but the 0.00 label's or a compact line's.
        let top = rows.iter().position(|r| r.contains("1.00")).unwrap();
        let bottom = rows.iter().position(|r| r.contains("0.00")).unwrap();
        assert!(bottom > top || rows[top].find("0.00") < rows[top].find("1.00"), "present {present}: {rows:#?}");
    }
}

#[test]
fn search_results_mark_a_cut_action() {
    let screens = screens(true, None, true);
    let (_, (screen, _)) = screens.iter().find(|(n, _)| n == "search").unwrap();
    let (_, rows) = boxed(screen, "Search").expect("the results");
    let mut seen = 0;
    for r in rows.iter().filter(|r| r.contains("click[")) {
        let from = r.find("click[").unwrap();
        let action = r[from..].split("  ").next().unwrap().trim_end();
        assert!(action.ends_with(']') || action.ends_with('…'), "{action:?} in {r:?}");
        seen += 1;
    }
    assert!(seen >= 3, "{rows:#?}");
}

/// Every screen at 80×24, `--present` off and on, as text (the themes differ only in colour).
#[test]
fn snapshots_80x24() {
    for present in [false, true] {
        for (name, (screen, _)) in screens(true, None, present) {
            let lines: Vec<String> = screen.iter().map(|l| text(l)).collect();
            insta::assert_snapshot!(format!("small_{}_present_{present}", name.replace(' ', "_")), lines.join("\n"));
        }
    }
}

#[test]
fn no_screen_at_80x24_cuts_a_word_unmarked() {
    let mut found = Vec::new();
    for (color, theme) in [(true, None), (true, Some("light"))] {
        for present in [false, true] {
            for (name, (screen, _)) in screens(color, theme, present) {
                for cut in cut_words(&screen) {
                    found.push(format!("{name} (theme {theme:?}, present {present}): {cut}"));
                }
            }
        }
    }
    assert!(found.is_empty(), "{} cut word(s):\n{}", found.len(), found.join("\n"));
}

/// Present mode's line above the status bar (two lines at most) at 80×24: the sentence it shows whole on a
/// wide screen, or its beginning ending in `…`.
#[test]
fn the_present_line_says_where_it_is_cut() {
    let text = |l: &Vec<char>| l.iter().collect::<String>().trim().to_string();
    let mut checked = 0;
    for (name, (small, wide)) in screens(true, None, true) {
        let title = format!("{} · ", text(&small[0]).trim_start_matches('[').split(']').next().unwrap());
        let Some(full) = wide.iter().map(text).find(|l| l.starts_with(&title)) else { continue };
        let at = small.iter().position(|l| text(l).starts_with(&title)).unwrap_or_else(|| panic!("{name}: {title}"));
        let shown: Vec<String> = small[at..(at + 2).min(small.len())].iter().map(text).collect();
        let words = |t: &str| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        let first = words(&shown[0]);
        let both = words(&shown.join(" "));
        let whole = words(&full);
        assert!(first == whole || both == whole || shown[1].ends_with('…'), "{name}: {full:?} is shown as {shown:?}");
        checked += 1;
    }
    assert!(checked >= 8, "{checked} present lines checked");
}

#[test]
fn the_checker_catches_a_title_cut_at_its_corner() {
    let screen = |rows: &[&str]| rows.iter().map(|r| r.chars().collect()).collect::<Screen>();
    let cut = screen(&["│└──│┌step-group sizes · 17 · 35% size 1┐ ", "┌Steps · 35% size ┐┌x──┐     "]);
    assert_eq!(cut_words(&cut).len(), 2, "{:?}", cut_words(&cut));
    let marked = screen(&["│└──│┌step-group sizes · 17 · 35% size…─┐ ", "┌Steps────────────┐┌x──┐     "]);
    assert!(cut_words(&marked).is_empty(), "{:?}", cut_words(&marked));
}
