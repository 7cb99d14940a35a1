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
/// cut too: the screens leave a space there.
fn cut_words(screen: &[Vec<char>]) -> Vec<String> {
    let mut out = Vec::new();
    for (y, line) in screen.iter().enumerate() {
        let x = line.len() - 1;
        if word_char(line[x]) && word_char(line[x - 1]) {
            let from = line[..=x].iter().rposition(|&c| !word_char(c)).map_or(0, |i| i + 1);
            let word: String = line[from..=x].iter().collect();
            out.push(format!("row {y}: {word:?} in {:?}", line.iter().collect::<String>()));
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
    out
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
