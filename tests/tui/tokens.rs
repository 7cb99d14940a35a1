//! The token strip of the episode view and the run's token summaries, on a copy of the basic fixture given a
//! token store by the store's own writer: the strip drawn (snapshot), null drawn unlike 0, a trained tool
//! turn flagged, the channel key cycling, the jump key reaching the step of largest mismatch; and in the real
//! binary (tmux), the strip shown, cycled, and tokens appended while the viewer follows appearing.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use gigscope::run::tokens::{Channel, StepRecord, StepTokens, TokenWriter};
use gigscope::tui::{open, update, Action, Config, Msg, State};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;
use support::runs::copy_fixture;
use support::screen::{keys, open_group, render};
use support::tmux::{tmux_available, Session};

/// Step 0 of the socks episode: a zero advantage ("zero"), a null one ("nul"), a masked token, a clipped one.
fn step0() -> StepTokens {
    let texts = ["search", "[", "zero", "nul", "socks", "]", "<eos>"];
    StepTokens::new(vec![11, 12, 13, 14, 15, 16, 2], vec![true, true, true, true, true, true, false], &texts.map(Some))
        .with(Channel::Advantage, vec![Some(1.5), Some(1.5), Some(0.0), None, Some(-0.75), Some(1.5), Some(1.5)])
        .with(Channel::OldLogprob, vec![Some(-0.1), Some(-0.2), Some(-0.3), Some(-2.5), Some(-0.4), Some(-0.05), None])
        .with(
            Channel::RolloutLogprob,
            vec![Some(-0.1), Some(-0.25), Some(-0.3), Some(-0.5), Some(-0.4), Some(-0.05), None],
        )
        .with(Channel::RefLogprob, vec![Some(-0.2), Some(-0.2), Some(-0.3), Some(-1.0), Some(-0.9), Some(-0.05), None])
        .with(Channel::Entropy, vec![Some(0.5), Some(0.1), Some(0.2), Some(2.0), Some(0.7), Some(0.1), None])
        .with(Channel::Clipped, vec![Some(0.0), Some(0.0), Some(0.0), Some(1.0), Some(0.0), Some(0.0), None])
}

/// Step 1: the policy's turn, then a tool turn trained by mistake (mask 1 on "socks A").
fn step1() -> StepTokens {
    let texts = ["click", "[socks a]", "<|im_end|>", "<|im_start|>", "tool", "\nsocks A", "<|im_end|>"];
    StepTokens::new((30..37).collect(), vec![true, true, true, false, false, true, false], &texts.map(Some))
        .with(Channel::Advantage, vec![Some(0.5); 7])
}

fn write(dir: &Path, episode: &str, steps: &[(u32, StepTokens)]) {
    let records: Vec<StepRecord> =
        steps.iter().map(|(step, tokens)| StepRecord { episode, step: *step, iteration: Some(0), tokens }).collect();
    TokenWriter::create(dir).unwrap().append("it0.bin", &records).unwrap();
}

fn state(dir: &Path, size: (u16, u16)) -> State {
    open(dir, Config::defaults(true).unwrap(), size).unwrap().0
}

/// The socks episode's first trajectory, in the episode view.
fn socks_episode(s: &mut State) {
    open_group(s, "socks-it0");
    keys(s, &[Action::Open]);
    assert_eq!(s.domain.episodes.at(s.episode_index().unwrap()).id, "it0-socks-t1");
}

fn buffer(s: &State) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(s.ui.size.0, s.ui.size.1)).unwrap();
    terminal.draw(|f| f.render_widget(s, f.area())).unwrap();
    terminal.backend().buffer().clone()
}

/// The style of the first cell of the first occurrence of `text` on screen (in the token pane, below the
/// pane's title row).
fn style_of(buf: &Buffer, text: &str, below: u16) -> ratatui::style::Style {
    for y in below..buf.area.height {
        let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol().to_string()).collect();
        if let Some(at) = row.find(text) {
            let x = row[..at].chars().count() as u16;
            return buf[(x, y)].style();
        }
    }
    panic!("{text:?} is not on screen");
}

fn title_row(buf: &Buffer) -> u16 {
    (0..buf.area.height)
        .find(|&y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>().contains("Tokens ·"))
        .expect("the token pane is drawn")
}

#[test]
fn the_strip_shows_a_steps_tokens_with_its_summary_and_legend() {
    let (_tmp, dir) = copy_fixture("basic");
    write(&dir, "it0-socks-t1", &[(0, step0()), (1, step1())]);
    let mut s = state(&dir, (120, 40));
    socks_episode(&mut s);
    insta::assert_snapshot!("token_strip_effective_weight_120x40", render(&s));
    keys(&mut s, &[Action::TokenChannel, Action::TokenChannel]);
    let screen = render(&s);
    assert!(screen.contains("Tokens · log-probability (old_logprob) (v)"), "{screen}");
    keys(&mut s, &[Action::Down]);
    insta::assert_snapshot!("token_strip_trained_tool_turn_80x24", {
        update(&mut s, Msg::Resize(80, 24));
        render(&s)
    });
}

#[test]
fn null_and_zero_look_different_and_a_trained_tool_turn_is_flagged() {
    let (_tmp, dir) = copy_fixture("basic");
    write(&dir, "it0-socks-t1", &[(0, step0()), (1, step1())]);
    for color in [true, false] {
        let mut s = open(&dir, Config::defaults(color).unwrap(), (120, 40)).unwrap().0;
        socks_episode(&mut s);
        keys(&mut s, &[Action::TokenChannel]); // the advantage: "zero" is 0, "nul" was not recorded
        let buf = buffer(&s);
        let below = title_row(&buf);
        let (zero, null) = (style_of(&buf, "zero", below), style_of(&buf, "nul", below));
        assert_ne!(zero, null, "colour {color}: null and 0 look different");
        assert!(zero.add_modifier.is_empty(), "colour {color}: 0 is plain: {zero:?}");
        assert!(zero.bg.is_none_or(|bg| bg == ratatui::style::Color::Reset), "colour {color}: 0 is plain: {zero:?}");
        assert_ne!(style_of(&buf, "<eos>", below), null, "colour {color}: masked is not null");
        let screen = render(&s);
        assert!(screen.contains("6/7 trained · clipped 16.7% ·"), "{screen}");
        assert!(screen.contains("legend"), "{screen}");
        keys(&mut s, &[Action::Down]);
        let screen = render(&s);
        assert!(screen.contains("⚠ 1 observation/tool token(s) trained"), "{screen}");
    }
}

#[test]
fn the_channel_key_cycles_through_every_channel_and_back() {
    let (_tmp, dir) = copy_fixture("basic");
    write(&dir, "it0-socks-t1", &[(0, step0())]);
    let mut s = state(&dir, (120, 40));
    socks_episode(&mut s);
    let mut seen = Vec::new();
    for _ in 0..8 {
        let screen = render(&s);
        let title = screen.lines().find(|l| l.contains("Tokens · ")).unwrap_or_default();
        let name = title.split("Tokens · ").nth(1).unwrap_or_default().split(" (").next().unwrap_or_default();
        seen.push(name.to_string());
        keys(&mut s, &[Action::TokenChannel]);
    }
    let expected = [
        "effective weight",
        "advantage",
        "log-probability",
        "entropy",
        "KL",
        "mismatch",
        "clipped",
        "effective weight",
    ];
    assert_eq!(seen, expected);
}

#[test]
fn the_jump_key_opens_the_step_of_largest_mismatch_then_of_largest_kl() {
    let (_tmp, dir) = copy_fixture("basic");
    // Another episode's step with a larger KL and no mismatch.
    let kl = StepTokens::new(vec![1], vec![true], &[Some("far")])
        .with(Channel::OldLogprob, vec![Some(-0.1)])
        .with(Channel::RefLogprob, vec![Some(-3.0)]);
    write(&dir, "it0-socks-t1", &[(0, step0())]);
    write(&dir, "it0-g0-t1", &[(1, kl)]);
    let mut s = state(&dir, (120, 40));
    // The summaries are made by a thread of their own: wait for them on the clock, as the viewer does.
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.domain.tokens.summaries().is_none_or(|f| f.steps < 2) {
        assert!(Instant::now() < deadline, "no token summaries");
        std::thread::sleep(Duration::from_millis(50));
        update(&mut s, Msg::Tick(Instant::now()));
    }
    let figures = s.domain.tokens.summaries().unwrap();
    let it0 = figures.by_iteration[&Some(0)];
    assert_eq!((it0.tokens, it0.trained), (8, 7));
    assert_eq!(figures.largest_mismatch[0].episode, "it0-socks-t1");
    assert_eq!(figures.largest_kl[0].episode, "it0-g0-t1");
    keys(&mut s, &[Action::TokenJump]);
    assert_eq!(s.ui.view, gigscope::tui::View::Episode);
    assert_eq!(
        (s.domain.episodes.at(s.episode_index().unwrap()).id.to_string(), s.ui.sel.step),
        ("it0-socks-t1".to_string(), 0)
    );
    assert!(render(&s).contains("largest mismatch 2.0000"), "{}", render(&s));
    keys(&mut s, &[Action::TokenJump]);
    assert_eq!(
        (s.domain.episodes.at(s.episode_index().unwrap()).id.to_string(), s.ui.sel.step),
        ("it0-g0-t1".to_string(), 1)
    );
    let screen = render(&s);
    assert!(screen.contains("far"), "{screen}");
    // The overview shows the iteration's token figures.
    keys(&mut s, &[Action::Overview]);
    let screen = render(&s);
    assert!(screen.contains("Tokens by iteration"), "{screen}");
}

#[test]
fn the_strip_shows_cycles_and_follows_tokens_appended_while_the_viewer_runs() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    write(&dir, "it0-socks-t1", &[(0, step0())]);
    let s = Session::start("tokens", &dir, "");
    s.wait_for(&["[Overview]", "12 ep"]);
    s.keys(&["Enter"]);
    s.wait_for(&["[Groups]", "group hat-it0"]);
    s.keys(&["]"]);
    s.wait_for(&["group socks-it0"]);
    s.keys(&["Enter"]);
    s.wait_for(&["ep it0-socks-t1", "Tokens · effective weight (v)", "6/7 trained", "legend"]);
    s.keys(&["v"]);
    s.wait_for(&["Tokens · advantage (v)"]);
    // Step 1 has no tokens yet; the trainer writes them while the viewer shows it.
    s.keys(&["j"]);
    s.wait_until("step 1 without a token pane", |screen| screen.contains("step 1") && !screen.contains("Tokens ·"));
    write(&dir, "it0-socks-t1", &[(1, step1())]);
    s.wait_for(&["Tokens · advantage", "[socks a]", "⚠ 1 observation/tool token(s) trained"]);
    // Following the run: a new episode arrives, then its tokens.
    s.keys(&["f"]);
    let late = r#"{"id":"late-0","group":"late-it2","iteration":2,"task":{"id":"late","instruction":"buy late socks"},"steps":[{"observation":"Search","action":"search[late socks]","reward":0},{"observation":"Item [SEP] Buy Now","action":"click[buy now]","reward":10}],"outcome":{"success":true,"score":1}}"#;
    let mut f = std::fs::OpenOptions::new().append(true).open(dir.join("episodes.jsonl")).unwrap();
    std::io::Write::write_all(&mut f, format!("{late}\n").as_bytes()).unwrap();
    s.wait_for(&["follow", "ep late-0"]);
    let late_tokens = StepTokens::new(vec![7, 8], vec![true, true], &[Some("late"), Some("_tok")])
        .with(Channel::Advantage, vec![Some(1.0), Some(1.0)]);
    write(&dir, "late-0", &[(0, late_tokens)]);
    s.wait_for(&["ep late-0", "late_tok", "2/2 trained"]);
    s.keys(&["q"]);
}

/// The anchor view's panel under α₁ for `e1`'s last step, of the DEPO run with or without its token store.
fn depo_panel(counted: bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    support::depo::depo_run(dir.path(), counted);
    let mut s = state(dir.path(), (160, 50));
    s.domain.settings.efficiency_alpha1 = 2.0;
    s.apply_settings();
    s.select_row(0, 1);
    update(&mut s, Msg::Action(Action::Anchor));
    render(&s)
}

#[test]
fn the_explanation_panel_says_whether_depos_tokens_per_step_were_counted_or_estimated() {
    let counted = depo_panel(true);
    assert!(counted.contains("tokens per step: counted (tokens/"), "{counted}");
    let estimated = depo_panel(false);
    assert!(estimated.contains("tokens per step: estimated (the run's recorded"), "{estimated}");
}

/// A step of `n` tokens ` w0`, ` w1`, …, every one trained.
fn long_step(n: usize) -> StepTokens {
    let texts: Vec<String> = (0..n).map(|i| format!(" w{i}")).collect();
    let texts: Vec<Option<&str>> = texts.iter().map(|t| Some(t.as_str())).collect();
    StepTokens::new((0..n as i32).collect(), vec![true; n], &texts)
        .with(Channel::Advantage, (0..n).map(|i| Some(i as f32 / n as f32 - 0.5)).collect())
}

#[test]
fn the_scroll_keys_move_the_strip_and_another_step_starts_it_from_the_top() {
    let (_tmp, dir) = copy_fixture("basic");
    write(&dir, "it0-socks-t1", &[(0, long_step(600)), (1, step1())]);
    let mut s = state(&dir, (80, 24));
    socks_episode(&mut s);
    // At 80×24 the strip has room only in the zoomed pane.
    keys(&mut s, &[Action::TokenZoom, Action::TokenScrollDown, Action::TokenScrollDown]);
    assert_eq!(s.ui.episode.token_scroll, 8);
    keys(&mut s, &[Action::TokenScrollUp]);
    assert_eq!(s.ui.episode.token_scroll, 4);
    keys(&mut s, &[Action::TokenScrollUp, Action::TokenScrollUp]);
    assert_eq!(s.ui.episode.token_scroll, 0, "never above the first line");
    keys(&mut s, &[Action::TokenScrollDown, Action::Down]);
    assert_eq!(s.ui.episode.token_scroll, 0, "another step shows its strip from the top");
}

#[test]
fn the_scroll_keys_are_on_the_hint_bar_only_where_every_other_hint_fits() {
    let (_tmp, dir) = copy_fixture("basic");
    write(&dir, "it0-socks-t1", &[(0, long_step(600)), (1, step1())]);
    let mut s = state(&dir, (80, 24));
    socks_episode(&mut s);
    let labels = |width: usize| -> Vec<&str> {
        gigscope::tui::ui::fitted_hints(&s, width).into_iter().map(|(_, h)| h.label).collect()
    };
    let narrow = labels(80);
    assert!(!narrow.contains(&"scroll tokens"), "{narrow:?}");
    // The scroll hint would fit where search does, but goes first: the line over the strip names its keys.
    let medium = labels(120);
    assert!(medium.contains(&"search") && !medium.contains(&"scroll tokens"), "{medium:?}");
    let wide = labels(400);
    assert!(wide.contains(&"scroll tokens") && wide.contains(&"follow"), "{wide:?}");
}

#[test]
fn a_long_strip_scrolls_with_its_position_shown() {
    let (_tmp, dir) = copy_fixture("basic");
    write(&dir, "it0-socks-t1", &[(0, long_step(2048)), (1, step1())]);
    let mut s = state(&dir, (120, 40));
    socks_episode(&mut s);
    let top = render(&s);
    let marker = |screen: &str| {
        let line = screen.lines().find(|l| l.contains("tokens ") && l.contains(" of 2048")).unwrap_or_else(|| {
            panic!("no position marker:\n{screen}");
        });
        let at = line.find("tokens ").unwrap();
        line[at..].split_whitespace().nth(1).unwrap().to_string()
    };
    assert!(marker(&top).starts_with("1-"), "{top}");
    assert!(top.contains(" w0 w1"), "{top}");
    keys(&mut s, &[Action::TokenScrollDown]);
    let moved = render(&s);
    let range = marker(&moved);
    let first: usize = range.split('-').next().unwrap().parse().unwrap();
    assert!(first > 1, "{moved}");
    assert!(moved.contains(&format!(" w{}", first - 1)) && !moved.contains(" w0 w1"), "{moved}");
    insta::assert_snapshot!("token_strip_scrolled_120x40", moved);
    // Past the end, the last lines stay shown: the marker ends at the last token.
    for _ in 0..200 {
        keys(&mut s, &[Action::TokenScrollDown]);
    }
    let end = render(&s);
    assert!(marker(&end).ends_with("-2048"), "{end}");
}

/// The strip's lines on screen: those in the token pane under its position line (` w` words).
fn strip_rows(screen: &str) -> usize {
    screen.lines().filter(|l| l.contains(" w1") || l.matches(" w").count() >= 5).count()
}

#[test]
fn at_80x24_the_token_pane_says_the_strip_is_hidden_and_its_zoom_shows_it() {
    for present in [false, true] {
        let (_tmp, dir) = copy_fixture("basic");
        write(&dir, "it0-socks-t1", &[(0, long_step(600)), (1, step1())]);
        let config = Config::defaults(true).unwrap().with_display(None, present).unwrap();
        let mut s = open(&dir, config, (80, 24)).unwrap().0;
        socks_episode(&mut s);
        let small = render(&s);
        assert!(small.contains("the strip of 600 tokens has no room here · Z zooms this pane"), "{small}");
        assert!(small.contains("Observation") && small.contains("Actions"), "{small}");
        keys(&mut s, &[Action::TokenZoom]);
        let zoomed = render(&s);
        assert!(strip_rows(&zoomed) >= 2, "present {present}:\n{zoomed}");
        assert!(zoomed.contains("tokens 1-") && zoomed.contains(" of 600 · </> scroll · Z unzoom"), "{zoomed}");
        assert!(!zoomed.contains("Observation") && !zoomed.contains("Actions ("), "{zoomed}");
        insta::assert_snapshot!(format!("token_pane_zoomed_80x24_present_{present}"), zoomed);
        // The zoom stays while moving between steps; the key again gives the panes back.
        keys(&mut s, &[Action::Down]);
        assert!(render(&s).contains("Tokens ·") && !render(&s).contains("Observation"));
        keys(&mut s, &[Action::Up, Action::TokenZoom]);
        assert_eq!(render(&s), small);
    }
}

#[test]
fn the_token_scroll_stays_within_the_steps_strip_whatever_the_keys_and_the_screen() {
    let (_tmp, dir) = copy_fixture("basic");
    write(&dir, "it0-socks-t1", &[(0, long_step(600)), (1, step1())]);
    let mut s = state(&dir, (80, 24));
    socks_episode(&mut s);
    keys(&mut s, &[Action::TokenScrollDown]);
    assert_eq!(s.ui.episode.token_scroll, 0, "the strip shows no line here: nothing to scroll");
    keys(&mut s, &[Action::TokenZoom]);
    for _ in 0..500 {
        keys(&mut s, &[Action::TokenScrollDown]);
    }
    let end = s.ui.episode.token_scroll;
    let screen = render(&s);
    assert!(screen.contains("-600 of 600"), "the last window shows the last token:\n{screen}");
    assert!(end > 0 && end < 600 / 5, "bounded by the strip's lines, not by the presses: {end}");
    keys(&mut s, &[Action::TokenScrollUp]);
    assert_eq!(s.ui.episode.token_scroll, end - 4, "one key up from the end moves the strip at once");
    keys(&mut s, &[Action::TokenScrollDown]);
    assert_eq!(s.ui.episode.token_scroll, end);
    // A taller screen shows more of the strip: the scroll shrinks with its room; unzoomed, nothing scrolls.
    update(&mut s, Msg::Resize(80, 60));
    assert!(s.ui.episode.token_scroll < end, "{} after resize", s.ui.episode.token_scroll);
    update(&mut s, Msg::Resize(80, 24));
    keys(&mut s, &[Action::TokenZoom]);
    assert_eq!(s.ui.episode.token_scroll, 0);
}
