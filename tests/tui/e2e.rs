//! End to end: the real binary in a tmux session, driven with send-keys and read with capture-pane.
//!
//! Needs tmux. Without it the tests are skipped locally, but fail when `CI` is set: CI must install tmux.
//! Waiting for text polls the screen until it appears (or a generous deadline passes); nothing here
//! asserts on how long anything took.

use crate::support;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::runs::{copy_fixture, episode_lines};
use support::tmux::{tmux_available, Session};

impl Session {
    /// From the start screen of the basic fixture: overview → groups of iteration 0 → next group (the worked
    /// example) → its first episode; the screen then.
    fn open_socks_episode(&self) -> String {
        self.wait_for(&["[Overview]", "12 ep"]);
        self.keys(&["Enter"]);
        self.wait_for(&["[Groups]", "group hat-it0"]);
        self.keys(&["]"]);
        self.wait_for(&["group socks-it0"]);
        self.keys(&["Enter"]);
        // The hint bar is the frame's last row: once it shows the episode view's keys, the frame is complete.
        self.wait_for(&["[Episode]", "ep it0-socks-t1", "Enter anchor grp"])
    }
}

fn append(dir: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new().append(true).open(dir.join("episodes.jsonl")).unwrap();
    f.write_all(bytes).unwrap();
}

const LATE: &str = r#"{"id":"late-0","group":"late-it2","iteration":2,"task":{"id":"late","instruction":"buy late socks"},"steps":[{"observation":"Search","action":"search[late socks]","reward":0},{"observation":"Item [SEP] Buy Now","action":"click[buy now]","reward":10}],"outcome":{"success":true,"score":1}}"#;

#[test]
fn navigate_to_a_step_and_read_its_advantages_then_see_an_appended_episode() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    let s = Session::start("nav", &dir, "");
    let screen = s.open_socks_episode();
    // Step 0: A_E = +4, A_S = +4.5125, A = +8.5125 (shown to 3 decimals), step group of 2.
    let step0 = screen.lines().find(|l| l.contains("search[socks")).unwrap_or_default().to_string();
    for v in ["+4.000", "+4.513", "+8.512"] {
        assert!(step0.contains(v), "step 0 row shows {v}: {step0}\n{screen}");
    }
    assert!(screen.contains("trainer A +8.512 · recomputed A +8.512"), "{screen}");
    // The anchor group view with the filled-in formula.
    s.keys(&["a"]);
    s.wait_for(&[
        "[Anchor group]",
        "mean_S = mean of the members' R_t = (9.0250 + 0.0000) / 2 = 4.5125",
        "A = A_E + ω·A_S = +4.0000 + 1.00·(+4.5125) = +8.512",
    ]);
    // A settings change recomputes everything at once: ω 1.0 → 0.9.
    s.keys(&["s", "j", "j", "h"]);
    s.wait_for(&["ω step weight    0.90", "* run: 1.00"]);
    s.keys(&["Escape"]);
    s.wait_for(&["A = A_E + ω·A_S = +4.0000 + 0.90·(+4.5125) = +8.061", "settings differ from run"]);

    // Appending an episode while the TUI runs: it shows up, the position is kept.
    append(&dir, format!("{LATE}\n").as_bytes());
    s.wait_for(&["13 ep", "[Anchor group]", "ep it0-socks-t1"]);
    // Follow mode jumps to it.
    s.keys(&["f"]);
    s.wait_for(&["follow", "ep late-0"]);
    // Search, then walk the hits with n.
    s.keys(&["/"]);
    s.type_text("action:\"buy now\" AND success:true");
    s.keys(&["Enter"]);
    s.wait_for(&["[Search]", "5 matching steps", "it0-socks-t1", "late-0"]);
    s.keys(&["n"]);
    s.wait_for(&["[Episode]", "hit 2/5", "ep it0-socks-t1"]);
    s.keys(&["C-c"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !s.screen().contains("EXITED:0") {
        assert!(Instant::now() < deadline, "Ctrl-C did not end gigscope cleanly:\n{}", s.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn broken_lines_are_skipped_and_counted_without_crashing() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("broken");
    let s = Session::start("broken", &dir, "");
    s.wait_for(&["3 ep", "4 broken line(s) skipped"]);
    // The torn last line gets a garbage ending (broken), then a good line and more garbage arrive.
    append(&dir, b"\x00garbage\n");
    s.wait_for(&["5 broken line(s) skipped"]);
    append(&dir, format!("{LATE}\n{{\"id\": 1}}\n\n[1,2]\n").as_bytes());
    s.wait_for(&["4 ep", "7 broken line(s) skipped"]);
    // Walk every view on the damaged run.
    for k in ["Enter", "Enter", "j", "a", "Enter", "c", "]", "1", "s", "l", "Escape", "?", "Escape"] {
        s.keys(&[k]);
    }
    s.wait_for(&["[Overview]", "4 ep"]);
    s.keys(&["q"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !s.screen().contains("EXITED:0") {
        assert!(Instant::now() < deadline, "q did not end gigscope cleanly:\n{}", s.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Live play: a group of one episode played by hand to the purchase is written to the run and opens in the
/// group view.
#[test]
fn a_group_played_by_hand_lands_in_the_run() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    let before = episode_lines(&dir).len();
    let s = Session::start("play", &dir, "");
    s.wait_for(&["Iterations"]);
    s.keys(&["p"]);
    s.wait_for(&["Pick a goal", "group size N = 4"]);
    s.keys(&["h", "h", "h"]);
    s.wait_for(&["group size N = 1"]);
    s.keys(&["Enter"]);
    s.wait_for(&["search[<your query>]", "episode 1/1"]);
    s.keys(&["Enter"]);
    s.type_text("table");
    s.keys(&["Enter"]);
    // Results: back to search, next >, then the products.
    s.wait_for(&["Total results", "click[next >]"]);
    s.keys(&["j", "j", "Enter"]);
    // Item page: back to search, < prev, description, features, reviews, buy now, options.
    s.wait_for(&["click[buy now]", "click[description]"]);
    s.keys(&["j", "j", "j", "j", "j", "Enter"]);
    // The purchase's page stays until Enter, which opens the written group.
    s.wait_for(&["Thank you for shopping with us", "Episode 1/1 ended"]);
    s.keys(&["Enter"]);
    let screen = s.wait_for(&["[Groups]", "play-goal-0-1"]);
    assert!(screen.contains("1 trajectories") || screen.contains("1 trajectory"), "{screen}");
    let episodes = episode_lines(&dir);
    assert_eq!(episodes.len(), before + 1);
    let played = episodes.last().unwrap();
    assert_eq!(played["group"], "play-goal-0-1");
    assert_eq!(played["iteration"], 0);
    assert_eq!(played["source"], "play");
    assert_eq!(played["steps"].as_array().unwrap().len(), 3);
    assert_eq!(played["steps"][0]["action"], "search[table]");
    assert_eq!(played["steps"][2]["action"], "click[buy now]");
}

/// The bare `gigscope RUN` takes the TUI's options: here an empty run opened with the real WebShop catalog,
/// whose goals the play dialog then offers (the embedded demo catalog has 95 goals, not thousands).
#[test]
fn the_bare_command_opens_an_empty_run_with_a_real_catalog() {
    if !tmux_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/webshop");
    let s = Session::launch("bare", &format!("{} --catalog {}", tmp.path().display(), shared.display()), (120, 40));
    s.wait_for(&["No episodes in", "p plays episodes by hand"]);
    s.keys(&["p"]);
    let screen = s.wait_for(&["Pick a goal", "group size N = 4"]);
    let goals: usize = screen
        .split(" goals ·")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the goal count is on screen:\n{screen}"));
    assert!(goals > 1000, "goals of the real catalog, not the demo's: {goals}\n{screen}");
}

/// The burst dialog trains into the open run (no checkpoint: a fresh policy after its last iteration), the
/// gauge reports the end, and the new episodes are in the run.
#[cfg(feature = "train")]
#[test]
fn a_burst_from_the_dialog_trains_into_the_run() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    let before = episode_lines(&dir).len();
    let s = Session::start("burst", &dir, "");
    s.set_up_small_burst();
    s.keys(&["Enter"]);
    s.wait_for(&["burst finished 1 iteration(s)", "fresh policy"]);
    let episodes = episode_lines(&dir);
    assert_eq!(episodes.len(), before + 2 * 2);
    assert!(episodes[before..].iter().all(|e| e["iteration"] == 2), "numbered after the run's last iteration");
    assert!(dir.join("checkpoint.ot").exists());
}

#[test]
fn a_similarity_grouping_made_in_the_background_reaches_the_screen() {
    if !tmux_available() {
        return;
    }
    let (tmp, dir) = copy_fixture("basic");
    // Every run counts as large here, so the grouping goes through the background thread.
    let config = tmp.path().join("config.toml");
    std::fs::write(&config, "[advantages]\nbackground_grouping_steps = 0\n").unwrap();
    let s = Session::start("grouping", &dir, &format!("--config {}", config.display()));
    let exact = s.open_socks_episode();
    assert!(!exact.contains("+7.000"), "{exact}");
    // θ field: the first step left selects similarity 0.85, seven more reach 0.50 (each replacing the last
    // request).
    s.keys(&["s"]);
    for _ in 0..7 {
        s.keys(&["j"]);
    }
    for _ in 0..8 {
        s.keys(&["h"]);
    }
    s.wait_for(&["θ similarity     0.50"]);
    s.keys(&["Escape"]);
    // Under θ 0.5 steps 1 and 2 share a step group of 3 (as `gigscope advantages --similarity 0.5` says):
    // A = 7.000 and 7.500 instead of 4.000.
    let screen = s.wait_for(&["+7.000", "+7.500"]);
    assert!(!screen.contains("grouping anchors"), "{screen}");
}

/// Workshop mode from the command line: the status line names the view and the highlighted number; the panel
/// explains RLOO after a settings change; in play, Esc keeps the group and `d` abandons it only when pressed
/// twice (issue 16, items 1, 13 and --present).
#[test]
fn present_mode_explains_and_play_asks_before_abandoning() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    let s = Session::start("present", &dir, "--present --theme high-contrast");
    s.open_socks_episode();
    s.wait_for(&["Episode · step 0: A = A_E + ω·A_S = +4.0000 + 1.00·(+4.5125) = +8.512"]);
    s.keys(&["a"]);
    s.wait_for(&["Anchor group · the selected member's A = A_E + ω·A_S"]);
    // estimator → rloo (two steps right), norm → mean_std_norm.
    s.keys(&["s", "l", "l", "j", "j", "j", "l", "Escape"]);
    s.wait_for(&["A = n/(n−1)·(s − mean_E) = 5/4·(10.0000 − 6.0000) = +5.000 (rloo)", "leave-one-out"]);
    s.keys(&["p"]);
    s.wait_for(&["Pick a goal"]);
    s.keys(&["Enter"]);
    s.wait_for(&["search[<your query>]", "episode 1/4"]);
    s.keys(&["Escape"]);
    s.wait_for(&["[Overview]"]);
    s.keys(&["p"]);
    s.wait_for(&["episode 1/4", "search[<your query>]"]);
    s.keys(&["d"]);
    s.wait_for(&["Press d again"]);
    s.keys(&["d"]);
    s.wait_for(&["group abandoned: nothing was written", "Pick a goal"]);
}

/// The estimators view on the bundled sample run (WebShop, trained by gigscope): a column per estimator for the
/// group's step rows, the truth column's reason while the run has no truth file, and its keys.
#[test]
fn the_estimators_view_lists_every_estimator_on_the_sample_run() {
    if !tmux_available() {
        return;
    }
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs/webshop-gigpo");
    let s = Session::start("estimators", &sample, "");
    // The first frame comes before the run is read (in the background): wait for its iterations.
    s.wait_for(&["[Overview]", "› iter"]);
    s.keys(&["Enter"]);
    s.wait_for(&["[Groups]", "group i1-goal-73"]);
    s.keys(&["E"]);
    let screen = s.wait_for(&["[Estimators]", "group i1-goal-73 · iteration 1", "h/l columns"]);
    for column in ["gigpo", "grpo", "rloo", "step", "hgpo", "graphgpo", "proxmo", "soft-page", "q-minus-v", "A*"] {
        assert!(screen.contains(column), "column {column}:\n{screen}");
    }
    // The sample run was trained before gigscope kept each iteration's policy: no truth can be measured.
    assert!(screen.contains("A* absent:") && screen.contains("no stored policy weights"), "{screen}");
    assert!(!screen.contains("soft-page absent"), "a WebShop run has page types:\n{screen}");
    // The next group's rows, then the selected row in the episode view.
    s.keys(&["]"]);
    // Wait for the key's effect: the header names another group of iteration 1.
    s.wait_until("the next group of iteration 1", |screen| {
        screen.contains("[Estimators]") && screen.contains("iteration 1") && !screen.contains("group i1-goal-73 ·")
    });
    s.keys(&["j", "Enter"]);
    s.wait_for(&["[Episode]", "step 1"]);
}

/// Sokoban (the second environment, through the port): the bundled sample opens, a step's grid shows in the
/// episode view without WebShop's page column, and live play plays a level by hand into the run.
#[test]
fn the_sokoban_sample_opens_and_a_level_is_played_into_it() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = support::runs::copy_sample("sokoban-gigpo");
    let before = episode_lines(&dir).len();
    let s = Session::start("sokoban", &dir, "");
    s.wait_for(&["[Overview]", "sokoban-gigpo", "Iterations (8)", "512 ep"]);
    s.keys(&["Enter"]);
    s.wait_for(&["[Groups]", "group i1-seed-"]);
    s.keys(&["Enter"]);
    let screen = s.wait_for(&["[Episode]", "Enter anchor grp", "######"]);
    assert!(!screen.contains(" page "), "no page column outside WebShop:\n{screen}");
    s.keys(&["Escape"]);
    s.wait_for(&["[Groups]"]);
    s.keys(&["p"]);
    s.wait_for(&["Pick a goal", "task       seed-0", "room       6×6"]);
    s.keys(&["h", "h", "h"]);
    s.wait_for(&["group size N = 1"]);
    s.keys(&["Enter"]);
    // Level 0 (seed 0): the player stands on the target with the box to its right; it walks round the box
    // (down, right, right, up) and pushes it left. The cursor stays on the action it was on.
    s.wait_for(&["episode 1/1", "Actions (4) · Enter acts", "#_SX_#"]);
    for (keys, step) in [(&["j", "Enter"][..], "step 1"), (&["j", "j", "Enter"], "step 2"), (&["Enter"], "step 3")] {
        s.keys(keys);
        s.wait_for(&[step]);
    }
    s.keys(&["k", "k", "k", "Enter"]);
    s.wait_for(&["step 4", "#_OXP#"]);
    s.keys(&["j", "j", "Enter"]);
    s.wait_for(&["Episode 1/1 ended", "reward 10.900", "#_√P_#"]);
    s.keys(&["Enter"]);
    s.wait_for(&["[Groups]", "play-goal-0-1"]);
    let episodes = episode_lines(&dir);
    assert_eq!(episodes.len(), before + 1);
    let played = episodes.last().unwrap();
    assert_eq!((played["group"].as_str(), played["source"].as_str()), (Some("play-goal-0-1"), Some("play")));
    assert_eq!(played["task"]["id"], "seed-0");
    let actions: Vec<&str> = played["steps"].as_array().unwrap().iter().filter_map(|s| s["action"].as_str()).collect();
    assert_eq!(actions, ["down", "right", "right", "up", "left"]);
    let step = &played["steps"][4];
    assert_eq!(step["reward"].as_f64(), Some(10.9), "a push onto the target that solves the level: -0.1 + 1 + 10");
    assert!(step.get("page").is_none(), "{step}");
    assert_eq!(step["anchor"], step["observation"]);
    assert_eq!(played["outcome"]["success"], true);
    assert_eq!(played["outcome"]["reward_info"]["solved"], true);
}

/// A second open of an unchanged run takes it from the load cache the first open wrote (and says so), shows
/// the same run, and the watcher reads on from the cached offset.
#[test]
fn a_second_open_is_taken_from_the_load_cache_and_reads_on_from_there() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    let cache = tempfile::tempdir().unwrap();
    let env = format!("GIGSCOPE_CACHE={}", cache.path().display());
    let command_line = format!("tui {} --rescan-ms 200", dir.display());
    let first = Session::launch_with_env("cache-1", &env, &command_line, (120, 40));
    first.wait_for(&["[Overview]", "12 ep"]);
    assert!(!first.screen().contains("load cache"), "nothing cached yet:\n{}", first.screen());
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(cache.path().join("load")).map_or(true, |mut d| d.next().is_none()) {
        assert!(Instant::now() < deadline, "the first open wrote no load cache under {}", cache.path().display());
        std::thread::sleep(Duration::from_millis(50));
    }
    first.keys(&["q"]);

    let second = Session::launch_with_env("cache-2", &env, &command_line, (120, 40));
    second.wait_for(&["12 episodes taken from the load cache"]);
    let screen = second.open_socks_episode();
    assert!(screen.contains("trainer A +8.512 · recomputed A +8.512"), "{screen}");
    append(&dir, format!("{LATE}\n").as_bytes());
    // One Escape at a time: two sent at once reach the TUI in one read, which crossterm takes as a single Esc
    // (its parser reads ESC ESC as one Esc key), and the second view change never happens.
    second.keys(&["Escape"]);
    second.wait_for(&["[Groups]"]);
    second.keys(&["Escape"]);
    second.wait_for(&["[Overview]", "13 ep"]);
}

/// How the TUI is told to end.
enum Ending {
    Key(&'static str),
    Signal(&'static str),
}

/// `gigscope tui DIR ARGS`, after which the shell says gigscope's exit status and the tty's modes, for
/// [`assert_terminal_given_back`].
pub(crate) fn tui_then_stty(dir: &Path, args: &str) -> String {
    format!("tui {} {args}; echo GIGSCOPE-EXIT:$?; stty -a", dir.display())
}

/// Send `signal` (a name: TERM, HUP, …) to the session's gigscope.
pub(crate) fn signal(s: &Session, signal: &str) {
    let status = Command::new("kill").args(["-s", signal, &s.gigscope_pid()]).status().expect("kill runs");
    assert!(status.success(), "kill -s {signal}");
}

/// Open the basic fixture, end the TUI as `ending` says, and check that the terminal is given back.
fn the_terminal_is_given_back(test: &str, ending: Ending) {
    if !tmux_available() {
        return;
    }
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tui/basic");
    let s = Session::launch(test, &tui_then_stty(&fixture, ""), (120, 40));
    s.wait_for(&["[Overview]", "12 ep"]);
    assert_eq!(s.pane("#{alternate_on} #{mouse_any_flag}"), "1 1", "the TUI holds the terminal");
    match ending {
        Ending::Key(key) => s.keys(&[key]),
        Ending::Signal(name) => signal(&s, name),
    }
    assert_terminal_given_back(&s);
}

/// Once gigscope, started by [`tui_then_stty`], has ended: the shell has its terminal back as it was. gigscope
/// exited 0 (as after `q`), the pane is off the alternate screen, mouse tracking is off, and the tty is in cooked
/// mode (`stty -a`, run by the shell afterwards, shows `icanon` and `echo`). The screen then.
pub(crate) fn assert_terminal_given_back(s: &Session) -> String {
    // A bound for failure only, never a timing assertion.
    let deadline = Instant::now() + Duration::from_secs(60);
    let screen = loop {
        let screen = s.screen();
        if screen.contains("EXITED:") {
            break screen;
        }
        assert!(Instant::now() < deadline, "the shell never got past gigscope and stty:\n{screen}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(screen.contains("GIGSCOPE-EXIT:0"), "gigscope ends as after q:\n{screen}");
    assert_eq!(s.pane("#{alternate_on}"), "0", "back on the shell's screen:\n{screen}");
    let mouse = s.pane("#{mouse_any_flag} #{mouse_standard_flag} #{mouse_button_flag} #{mouse_sgr_flag}");
    assert_eq!(mouse, "0 0 0 0", "mouse tracking off");
    let modes: Vec<&str> = screen.split(|c: char| c.is_whitespace() || c == ';').collect();
    for mode in ["icanon", "echo", "isig"] {
        assert!(modes.contains(&mode) && !modes.contains(&format!("-{mode}").as_str()), "{mode} on:\n{screen}");
    }
    screen
}

#[test]
fn q_gives_the_terminal_back() {
    the_terminal_is_given_back("end-q", Ending::Key("q"));
}

#[test]
fn sigterm_gives_the_terminal_back_as_q_does() {
    the_terminal_is_given_back("end-term", Ending::Signal("TERM"));
}

#[test]
fn sigint_gives_the_terminal_back_as_q_does() {
    the_terminal_is_given_back("end-int", Ending::Signal("INT"));
}

/// A closed SSH session hangs the terminal up.
#[test]
fn sighup_gives_the_terminal_back_as_q_does() {
    the_terminal_is_given_back("end-hup", Ending::Signal("HUP"));
}

#[test]
fn sigquit_gives_the_terminal_back_as_q_does() {
    the_terminal_is_given_back("end-quit", Ending::Signal("QUIT"));
}

/// The credit view grouped by the last search's query in the real binary: the query's matches come from the run's
/// index through the search job, and the view's figures are `gigscope audit --query`'s for the same iteration.
#[test]
fn the_credit_view_groups_by_the_last_search_as_the_audit_does() {
    if !tmux_available() {
        return;
    }
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs/webshop-gigpo");
    let s = Session::start("credit-query", &sample, "");
    s.wait_for(&["[Overview]", "› iter"]);
    s.keys(&["/"]);
    s.type_text("action:\"buy now\"");
    s.keys(&["Enter"]);
    s.wait_for(&["[Search]"]);
    s.keys(&["u"]);
    s.wait_for(&["[Credit]", "search[*]"]);
    s.keys(&["u"]);
    let screen = s.wait_for(&["[Credit]", "by action:\"buy now\"", "(unmatched)"]);
    let iteration: String = screen
        .split("Credit of iteration ")
        .nth(1)
        .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect())
        .unwrap_or_else(|| panic!("{screen}"));
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(["audit", sample.to_str().unwrap(), "--iteration", &iteration, "--format", "json"])
        .args(["--query", "action:\"buy now\"", "--cache", cache.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let audit: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for behaviour in audit["behaviours"].as_array().unwrap() {
        let name = behaviour["behaviour"].as_str().unwrap();
        let line = screen
            .lines()
            .find(|l| l.contains(name) && !l.contains("Credit of"))
            .unwrap_or_else(|| panic!("{name}:\n{screen}"));
        let mass = format!("{:+.3}", behaviour["mass"].as_f64().unwrap());
        let count = behaviour["count"].to_string();
        assert!(line.contains(&format!(" {count} ")) && line.contains(&mass), "{name} {count} {mass}: {line}");
    }
    // Once more: back by verb and target.
    s.keys(&["u"]);
    s.wait_until("grouped by verb again", |screen| screen.contains("search[*]") && !screen.contains("(unmatched)"));
}
