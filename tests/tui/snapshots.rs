//! Every view rendered on a `TestBackend` and compared with a committed snapshot (`tests/tui/snapshots/`).
//! 80×24 is the smallest supported terminal; 120×40 shows the wide layouts.

use std::path::Path;

use gigscope::tui::{open, update, Action, Config, Effect, Msg, State};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn state(size: (u16, u16), color: bool) -> State {
    let config = Config::defaults(color).unwrap();
    open(Path::new("tests/fixtures/tui/basic"), config, size).unwrap().0
}

fn keys(s: &mut State, actions: &[Action]) {
    for &a in actions {
        update(s, Msg::Action(a));
    }
}

fn render(s: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(s.ui.size.0, s.ui.size.1)).unwrap();
    terminal.draw(|f| f.render_widget(s, f.area())).unwrap();
    terminal.backend().to_string()
}

/// The socks group (the core issue's worked example), first trajectory.
fn socks(s: &mut State) {
    keys(s, &[Action::Open]);
    while &*s.domain.derived.table.episode_groups[s.ui.sel.group as usize].name != "socks-it0" {
        keys(s, &[Action::NextItem]);
    }
}

#[test]
fn overview_80x24() {
    insta::assert_snapshot!(render(&state((80, 24), true)));
}

#[test]
fn overview_120x40() {
    insta::assert_snapshot!(render(&state((120, 40), true)));
}

#[test]
fn groups_80x24() {
    let mut s = state((80, 24), true);
    keys(&mut s, &[Action::Open]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn groups_zero_variance_120x40() {
    let mut s = state((120, 40), true);
    keys(&mut s, &[Action::Down, Action::Open, Action::NextItem]);
    // Without the invalid-action penalty the group's pool has equal scores: the engine's zero-variance verdict
    // (with the default penalty its invalid rows spread the pool, std 0.041, and the group is not flagged).
    keys(&mut s, &[Action::Settings, Action::Down, Action::Down, Action::Down, Action::Down, Action::Down]);
    keys(&mut s, &[Action::Left, Action::Left, Action::Left, Action::Back]);
    assert_eq!(s.domain.settings.invalid_penalty, 0.0);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn episode_80x24() {
    let mut s = state((80, 24), true);
    keys(&mut s, &[Action::Open, Action::Open, Action::Down]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn episode_120x40_item_page_scrolled() {
    let mut s = state((120, 40), true);
    keys(&mut s, &[Action::Open, Action::Open, Action::Down, Action::Down, Action::ScrollDown]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn episode_with_trainer_advantages() {
    let mut s = state((120, 40), true);
    socks(&mut s);
    keys(&mut s, &[Action::Open]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn anchor_golden_example_80x24() {
    let mut s = state((80, 24), true);
    socks(&mut s);
    keys(&mut s, &[Action::Open, Action::Anchor]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn anchor_mean_std_norm_120x40() {
    let mut s = state((120, 40), true);
    keys(&mut s, &[Action::Open, Action::Open, Action::Down, Action::Anchor, Action::Down]);
    keys(&mut s, &[Action::Settings, Action::Down, Action::Down, Action::Down, Action::Right, Action::Back]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn compare_80x24() {
    let mut s = state((80, 24), true);
    keys(&mut s, &[Action::Open, Action::Compare]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn settings_panel_modified() {
    let mut s = state((80, 24), true);
    keys(&mut s, &[Action::Open, Action::Settings, Action::Down, Action::Down, Action::Left, Action::Left]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn help_popup_from_keymap() {
    let mut s = state((100, 36), true);
    keys(&mut s, &[Action::Help]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn help_follows_a_remapped_key() {
    let config = Config::from_str("[keys]\nquit = [\"x\"]\nhelp = [\"f1\"]\n", true).unwrap();
    let mut s = open(Path::new("tests/fixtures/tui/basic"), config, (90, 40)).unwrap().0;
    let screen = render(&s);
    assert!(screen.contains("x quit"), "the hint bar shows the remapped key:\n{screen}");
    keys(&mut s, &[Action::Help]);
    let screen = render(&s);
    assert!(screen.contains("x              quit"), "{screen}");
    assert!(screen.contains("F1             every key, the glyphs and the formula"), "{screen}");
}

#[test]
fn broken_run_shows_skipped_lines() {
    let config = Config::defaults(false).unwrap();
    let s = open(Path::new("tests/fixtures/tui/broken"), config, (80, 24)).unwrap().0;
    assert_eq!(s.domain.episodes.len(), 3);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn no_color_marks_selection_without_colour() {
    let mut s = state((80, 24), false);
    keys(&mut s, &[Action::Open]);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| f.render_widget(&s, f.area())).unwrap();
    let buf = terminal.backend().buffer();
    for cell in buf.content() {
        assert_eq!(cell.fg, ratatui::style::Color::Reset, "NO_COLOR: no foreground colour anywhere");
        assert_eq!(cell.bg, ratatui::style::Color::Reset, "NO_COLOR: no background colour anywhere");
    }
    // The selected trajectory row is reversed instead.
    let row6: Vec<_> = (0..80).map(|x| buf[(x, 6)].modifier).collect();
    assert!(row6.iter().any(|m| m.contains(ratatui::style::Modifier::REVERSED)));
}

fn with_shop(size: (u16, u16)) -> State {
    let mut s = state(size, true);
    keys(&mut s, &[Action::Play]);
    let shop = gigscope::webshop::tasks::WebShopTasks::open(None, None).unwrap();
    update(&mut s, Msg::EnvReady(Ok(std::sync::Arc::new(shop))));
    s
}

#[test]
fn play_goal_picker_120x40() {
    let mut s = with_shop((120, 40));
    keys(&mut s, &[Action::Down, Action::Down, Action::Left]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn play_results_page_80x24() {
    let mut s = with_shop((80, 24));
    keys(&mut s, &[Action::Open, Action::Open]);
    for c in "dining table".chars() {
        update(&mut s, Msg::Input(gigscope::tui::update::InputKey::Char(c)));
    }
    update(&mut s, Msg::Input(gigscope::tui::update::InputKey::Submit));
    keys(&mut s, &[Action::Down, Action::Down]);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn burst_dialog_with_progress() {
    use gigscope::tui::burst_dialog::{BurstPoint, BurstUpdate};
    let mut s = state((100, 36), true);
    keys(&mut s, &[Action::Train, Action::Open]);
    let news = [
        BurstUpdate::Started {
            first_iteration: 2,
            iterations: 5,
            device: "Cpu".into(),
            how: "resumes the checkpoint".into(),
        },
        BurstUpdate::Evaluated { success: 0.1, baseline: 0.05 },
    ];
    for n in news {
        update(&mut s, Msg::Burst(n));
    }
    for (i, success) in [0.2, 0.35, 0.5].into_iter().enumerate() {
        let point = BurstPoint {
            iteration: 2 + i as u64,
            success,
            score: success + 0.1,
            eval_success: (i == 2).then_some(0.4),
            env_steps_per_s: 3000.0,
            seconds: 4.0,
        };
        update(&mut s, Msg::Burst(BurstUpdate::Iteration(point)));
    }
    insta::assert_snapshot!(render(&s));
}

#[test]
fn settings_panel_while_similarity_groups_in_the_background_120x40() {
    let mut s = state((120, 40), true);
    s.config.background_grouping_steps = 0;
    keys(&mut s, &[Action::Settings]);
    for _ in 0..7 {
        keys(&mut s, &[Action::Down]);
    }
    let fx = update(&mut s, Msg::Action(Action::Left));
    assert!(fx.iter().any(|e| matches!(e, Effect::GroupAnchors(_))));
    insta::assert_snapshot!(render(&s));
    // Closed, the status bar still says the grouping is on its way.
    keys(&mut s, &[Action::Back]);
    insta::assert_snapshot!(
        "status_bar_while_grouping",
        render(&s).lines().rev().nth(1).unwrap_or_default().to_string()
    );
}

/// The socks group's first step in the anchor view.
fn socks_anchor(size: (u16, u16)) -> State {
    let mut s = state(size, true);
    socks(&mut s);
    keys(&mut s, &[Action::Open, Action::Anchor]);
    s
}

/// Estimator rloo under mean_std_norm: the panel says leave-one-out and that the norm is not used (issue 16,
/// item 1).
#[test]
fn anchor_rloo_mean_std_norm_80x24() {
    let mut s = socks_anchor((80, 24));
    keys(
        &mut s,
        &[Action::Settings, Action::Right, Action::Right, Action::Down, Action::Down, Action::Down, Action::Right],
    );
    keys(&mut s, &[Action::Back]);
    assert_eq!(s.domain.settings.estimator, gigscope::advantage::Estimator::Rloo);
    insta::assert_snapshot!(render(&s));
}

#[test]
fn anchor_rloo_mean_std_norm_160x45() {
    let mut s = socks_anchor((160, 45));
    keys(
        &mut s,
        &[Action::Settings, Action::Right, Action::Right, Action::Down, Action::Down, Action::Down, Action::Right],
    );
    keys(&mut s, &[Action::Back]);
    let screen = render(&s);
    assert!(screen.contains("A = n/(n−1)·(s − mean_E) = 5/4·(10.0000 − 6.0000) = +5.000 (rloo)"), "{screen}");
    assert!(screen.contains("(mean_std_norm) and F are not used"), "{screen}");
    insta::assert_snapshot!(screen);
}

/// The settings panel over the anchor view leaves the explanation in view (160×45) or summarises the selected
/// step's A (80×24), live as settings change (issue 16, item 2).
#[test]
fn settings_over_the_anchor_view_160x45() {
    let mut s = socks_anchor((160, 45));
    keys(&mut s, &[Action::Settings, Action::Down, Action::Down, Action::Left]);
    let screen = render(&s);
    assert!(screen.contains("A = A_E + ω·A_S = +4.0000 + 0.90·(+4.5125) = +8.061"), "{screen}");
    assert!(screen.contains("A_E = (s − mean_E) / F_E"), "the explanation stays in view:\n{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn settings_over_the_anchor_view_80x24() {
    let mut s = socks_anchor((80, 24));
    keys(&mut s, &[Action::Settings, Action::Down, Action::Down, Action::Left]);
    let screen = render(&s);
    assert!(screen.contains("selected step: A = A_E + ω·A_S = +4.0000 + 0.90·(+4.5125) = +8.061"), "{screen}");
    insta::assert_snapshot!(screen);
}

/// The status bar names the norm and the anchor mode and marks each changed setting alone; page anchors are
/// not a θ difference; no internal names (issue 16, item 4).
#[test]
fn status_bar_marks_each_changed_setting() {
    let mut s = state((120, 40), true);
    let status = |s: &State| render(s).lines().rev().nth(1).unwrap_or_default().to_string();
    assert!(status(&s).contains("gigpo γ0.95 ω1.00 mean_norm exact"), "{}", status(&s));
    keys(&mut s, &[Action::Settings, Action::Down, Action::Down, Action::Down, Action::Right, Action::Back]);
    let line = status(&s);
    assert!(line.contains("ω1.00 mean_std_norm*"), "only the norm is marked: {line}");
    assert!(!line.contains("ω1.00*"), "{line}");
    // Page anchors: the anchor differs, θ does not.
    keys(&mut s, &[Action::ResetSettings, Action::Settings]);
    for _ in 0..6 {
        keys(&mut s, &[Action::Down]);
    }
    // Back from exact through state and step to page.
    keys(&mut s, &[Action::Left, Action::Left, Action::Left]);
    assert_eq!(s.domain.settings.anchor, gigscope::advantage::AnchorMode::Page);
    let screen = render(&s);
    assert!(screen.contains("anchor           page                 * run: exact"), "{screen}");
    assert!(!screen.contains("* run: —"), "θ is no difference between page and exact:\n{screen}");
    keys(&mut s, &[Action::Back]);
    assert!(status(&s).contains("mean_norm page*"), "{}", status(&s));
    for internal in ["(Grpo)", "(Rloo)", "Gigpo", "MeanNorm"] {
        assert!(!render(&s).contains(internal), "{internal}");
    }
}

/// Help explains the glyphs (the heatmap's 00 cells among them) and the formula, with the engine's ε (issue 16,
/// item 5); trajectories are numbered from 1 in every view.
#[test]
fn help_explains_glyphs_and_the_formula() {
    let mut s = state((100, 36), true);
    keys(&mut s, &[Action::Help]);
    for _ in 0..200 {
        keys(&mut s, &[Action::Down]);
    }
    let bottom = render(&s);
    assert!(bottom.contains("A rloo") && bottom.contains("leave-one-out"), "{bottom}");
    assert!(bottom.contains("std + 1e-6") || bottom.contains("(N−1) + 1e-6"), "{bottom}");
    keys(&mut s, &[Action::Top]);
    for _ in 0..45 {
        keys(&mut s, &[Action::Down]);
    }
    let glyphs = render(&s);
    assert!(glyphs.contains("00") && glyphs.contains("A is exactly 0"), "{glyphs}");
    assert!(glyphs.contains("∅") && glyphs.contains("zero-variance group"), "{glyphs}");
    let mut g = state((120, 40), true);
    keys(&mut g, &[Action::Open, Action::Open]);
    assert!(render(&g).contains("traj 1/4"));
    keys(&mut g, &[Action::Back, Action::Compare]);
    assert!(render(&g).contains("(traj 1, return 10.000, ✓)"), "{}", render(&g));
}

/// Every view at the smallest supported size and at a projector's 160×45 (issue 16: layout at 80×24).
#[test]
fn every_view_at_80x24_and_160x45() {
    use gigscope::index::{Hit, SearchResults};
    for (w, h) in [(80u16, 24u16), (160, 45)] {
        let name = |view: &str| format!("view_{view}_{w}x{h}");
        let s = state((w, h), true);
        insta::assert_snapshot!(name("overview"), render(&s));
        let mut s = state((w, h), true);
        socks(&mut s);
        insta::assert_snapshot!(name("groups"), render(&s));
        keys(&mut s, &[Action::Open]);
        insta::assert_snapshot!(name("episode"), render(&s));
        keys(&mut s, &[Action::Anchor]);
        insta::assert_snapshot!(name("anchor"), render(&s));
        keys(&mut s, &[Action::Compare]);
        insta::assert_snapshot!(name("compare"), render(&s));
        keys(&mut s, &[Action::Estimators]);
        insta::assert_snapshot!(name("estimators"), render(&s));
        let hit = |episode: usize, step: usize| Hit { episode, episode_id: String::new(), step, score: 1.0 };
        let result = Ok(SearchResults { total: 2, hits: vec![hit(1, 2), hit(5, 1)] });
        update(&mut s, Msg::SearchDone { query: "adv_s:<0".into(), result, partial: None });
        insta::assert_snapshot!(name("search"), render(&s));
        keys(&mut s, &[Action::Help]);
        insta::assert_snapshot!(name("help"), render(&s));
        let mut p = with_shop((w, h));
        insta::assert_snapshot!(name("play_goals"), render(&p));
        keys(&mut p, &[Action::Open]);
        insta::assert_snapshot!(name("play_episode"), render(&p));
    }
}

/// At 80×24 the groups list stays (as a strip), the heatmap shows every step of 15-step episodes, the
/// zero-variance note and the legend wrap, ids keep their distinguishing end (issue 16, item 11).
#[test]
fn the_80x24_layout_keeps_what_matters() {
    let config = Config::defaults(false).unwrap();
    let mut s = open(Path::new("sample_runs/webshop-gigpo"), config, (80, 24)).unwrap().0;
    keys(&mut s, &[Action::Open]);
    // A group with a 15-step trajectory.
    let longest =
        |s: &State| s.group_episodes().iter().map(|e| s.domain.episodes.at(e as usize).steps.len()).max().unwrap_or(0);
    for _ in 0..40 {
        if longest(&s) == 15 {
            break;
        }
        keys(&mut s, &[Action::NextItem]);
    }
    assert_eq!(longest(&s), 15);
    let screen = render(&s);
    assert!(screen.contains("groups ("), "the groups strip is there:\n{screen}");
    let row = screen.lines().find(|l| l.contains(" 15 ") && l.contains('│')).unwrap_or_else(|| panic!("{screen}"));
    let cells = row.matches(['+', '−']).count() + row.matches("00").count();
    assert!(cells >= 15, "every step of the 15-step trajectory has a cell: {row}");
    for line in screen.lines() {
        assert!(!line.contains("q qui "), "{line}");
    }
    // The histogram keeps every count.
    let o = open(Path::new("sample_runs/webshop-gigpo"), Config::defaults(false).unwrap(), (80, 24)).unwrap().0;
    let screen = render(&o);
    for count in o.domain.derived.size_histogram.values().filter(|&&c| c >= 10).take(3) {
        assert!(screen.contains(&count.to_string()), "count {count}:\n{screen}");
    }
    // A zero-variance note wraps instead of being cut (the group has equal scores without the invalid-action
    // penalty).
    let mut z = state((80, 24), false);
    keys(&mut z, &[Action::Down, Action::Open, Action::NextItem]);
    keys(&mut z, &[Action::Settings, Action::Down, Action::Down, Action::Down, Action::Down, Action::Down]);
    keys(&mut z, &[Action::Left, Action::Left, Action::Left, Action::Back]);
    let screen = render(&z);
    assert!(screen.contains("so A_E = 0"), "{screen}");
}

/// Played groups (by hand or by the policy) are kept apart: a `play` row of their own, left out of the
/// training charts (issue 16, item 10).
#[test]
fn played_groups_have_their_own_row_out_of_the_charts() {
    let mut s = state((120, 40), false);
    let line = r#"{"id":"play-goal-9-1-0","group":"play-goal-9-1","iteration":0,"source":"play","steps":[{"observation":"o","action":"a","reward":1}]}"#;
    let e: gigscope::run::Episode = serde_json::from_str(line).unwrap();
    update(&mut s, Msg::Live(vec![gigscope::live::LiveEvent::Episodes(vec![(13, e)])], std::time::Instant::now()));
    let its = &s.domain.derived.iterations;
    assert_eq!(its.len(), 3);
    assert!(its[2].is_play() && !its[0].is_play());
    assert_eq!((its[0].stats.episodes, its[0].iteration), (6, 0), "iteration 0 keeps only its training episodes");
    let screen = render(&s);
    assert!(screen.contains("│play "), "{screen}");
    assert!(
        screen.contains("success rate by iteration · last 0.333"),
        "the chart ends at the last training iteration:\n{screen}"
    );
}

/// Workshop mode: the status line names the view and what the highlighted number means; high-contrast theme.
#[test]
fn present_mode_names_the_view_and_the_highlighted_number() {
    let config = Config::defaults(true).unwrap().with_display(None, true).unwrap();
    let mut s = open(Path::new("tests/fixtures/tui/basic"), config, (160, 45)).unwrap().0;
    socks(&mut s);
    keys(&mut s, &[Action::Open, Action::Anchor]);
    let screen = render(&s);
    assert!(
        screen.contains("Anchor group · the selected member's A = A_E + ω·A_S = +4.0000 + 1.00·(+4.5125) = +8.512"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
    let mut terminal = Terminal::new(TestBackend::new(160, 45)).unwrap();
    terminal.draw(|f| f.render_widget(&s, f.area())).unwrap();
    let selected =
        terminal.backend().buffer().content().iter().any(|c| c.bg == ratatui::style::Color::Rgb(0, 0x40, 0xff));
    assert!(selected, "the high-contrast selection");
}

/// `--theme light` (or `preset = "light"`): no dark selection background anywhere.
#[test]
fn the_light_theme_draws_no_dark_shades() {
    let config = Config::defaults(true).unwrap().with_display(Some("light"), false).unwrap();
    let mut s = open(Path::new("tests/fixtures/tui/basic"), config, (80, 24)).unwrap().0;
    keys(&mut s, &[Action::Open]);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| f.render_widget(&s, f.area())).unwrap();
    // Relative luminance (WCAG) of an exact colour; named colours are the terminal's own.
    let luminance = |c: ratatui::style::Color| match c {
        ratatui::style::Color::Rgb(r, g, b) => {
            let lin = |v: u8| {
                let v = v as f64 / 255.0;
                if v <= 0.03928 {
                    v / 12.92
                } else {
                    ((v + 0.055) / 1.055).powf(2.4)
                }
            };
            Some(0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b))
        }
        ratatui::style::Color::Black => Some(0.0),
        _ => None,
    };
    let mut shaded = 0;
    for cell in terminal.backend().buffer().content() {
        let Some(bg) = luminance(cell.bg) else { continue };
        shaded += 1;
        let fg = luminance(cell.fg).unwrap_or(0.0);
        let contrast = (fg.max(bg) + 0.05) / (fg.min(bg) + 0.05);
        assert!(bg > 0.18 && contrast >= 4.5, "{:?} on {:?} under {:?}", cell.fg, cell.bg, cell.symbol());
    }
    assert!(shaded > 0, "the selection and the heatmap are shaded");
}

/// The help's formula section states every estimator the estimators view shows, the successors as the family
/// states them (`EstimatorKind::formula`).
#[test]
fn help_states_every_estimators_formula() {
    use gigscope::advantage::estimators::EstimatorKind;
    let mut s = state((100, 36), true);
    keys(&mut s, &[Action::Help, Action::Bottom]);
    let screen = render(&s);
    for kind in EstimatorKind::ALL {
        let formula = kind.formula().trim_start_matches("A = ");
        let line = screen
            .lines()
            .find(|l| l.contains(&format!("A {kind} ")))
            .unwrap_or_else(|| panic!("no line for {kind} in the help's formula section:\n{screen}"));
        let wrapped: String = screen.lines().skip_while(|l| *l != line).take(3).collect::<Vec<_>>().join(" ");
        let first_words: String = formula.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        assert!(wrapped.contains(&first_words), "{kind}: {formula:?} in {wrapped}");
    }
}
