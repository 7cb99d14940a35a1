//! Opening a run the app's way (`tui::app::start`: the watcher reads it in parts in the background and takes
//! each episode in lean as it parses it; the viewer merges part by part) gives the same state as reading it
//! whole (`tui::open`): the same lean episodes, page names, broken lines (duplicate ids too), advantages and
//! statistics, for WebShop (page anchors from the environment), Sokoban and a damaged run.

use crate::support;

use std::path::Path;

use gigscope::tui::{open, Config, State};
use support::runs::{copy_fixture, copy_sample};
use support::screen::assert_same_run;

/// The run in `dir` opened the app's way, read to the end of its first scan.
fn open_the_apps_way(dir: &Path) -> State {
    support::opening::open_the_apps_way(dir, Config::defaults(false).unwrap()).0
}

fn read_whole(dir: &Path) -> State {
    open(dir, Config::defaults(false).unwrap(), (80, 24)).unwrap().0
}

#[test]
fn the_webshop_and_sokoban_samples_open_the_same_either_way() {
    for sample in ["webshop-gigpo", "sokoban-gigpo"] {
        let (_tmp, dir) = copy_sample(sample);
        let apps = open_the_apps_way(&dir);
        assert!(!apps.domain.episodes.is_empty(), "{sample}");
        assert_same_run(&apps, &read_whole(&dir));
    }
}

#[test]
fn a_damaged_run_with_a_repeated_id_opens_the_same_either_way() {
    let (_tmp, dir) = copy_fixture("broken");
    let episodes = dir.join(gigscope::run::EPISODES_FILE);
    // Its bytes as they are (it holds invalid UTF-8 and ends in a torn line), its first line twice.
    let bytes = std::fs::read(&episodes).unwrap();
    let first_end = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let doubled = [&bytes[..first_end], &bytes[..first_end], &bytes[first_end..]].concat();
    std::fs::write(&episodes, doubled).unwrap();
    let apps = open_the_apps_way(&dir);
    assert!(
        apps.domain.run.errors.iter().any(|e| e.reason.contains("duplicate episode id")),
        "{:?}",
        apps.domain.run.errors
    );
    assert_same_run(&apps, &read_whole(&dir));
}

/// A run large enough to be parsed on several threads, its steps recording no page (so that each thread
/// classifies observations into its own page table, met in another order): the same either way.
#[test]
fn a_run_parsed_on_several_threads_opens_the_same_as_read_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let observations = [
        "Back to Search [SEP] < Prev [SEP] Cotton socks [SEP] Price: $12.99 [SEP] Buy Now",
        "WebShop [SEP] Instruction: [SEP] i need cotton socks [SEP] Search",
        "Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] B0001 [SEP] Cotton socks",
        "Thank you for shopping with us! [SEP] Your code: [SEP] None [SEP] Your score (min 0.0, max 1.0) [SEP] 1.0",
    ];
    let mut text = String::new();
    for i in 0..6_000usize {
        // Later episodes meet the page types in another order than the first ones.
        let steps: Vec<_> = (0..8)
            .map(|t| {
                let o = observations[(t + i / 1_500) % observations.len()];
                gigscope::run::Step::new(format!("{o} [SEP] {}", t * (i % 3)), "click[buy now]", (t % 2) as f64)
            })
            .collect();
        let episode = gigscope::run::Episode::new(format!("e{i}"), format!("g{}", i / 8), steps);
        text.push_str(&serde_json::to_string(&episode).unwrap());
        text.push('\n');
    }
    assert!(text.len() > 2 << 20, "large enough for several threads: {} bytes", text.len());
    std::fs::write(dir.join(gigscope::run::EPISODES_FILE), text).unwrap();
    let apps = open_the_apps_way(dir);
    assert!(apps.domain.pages.names().count() >= 3, "{:?}", apps.domain.pages);
    assert_same_run(&apps, &read_whole(dir));
}

/// A run whose last group was cut short and whose writer stopped mid-line: either way of opening it notes the
/// partial group and the torn tail (the overview shows the reader's notes), rather than a smaller group alone.
#[test]
fn a_partial_group_and_a_torn_tail_are_reader_notes_either_way() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut text = String::new();
    for (group, size) in [("i1-a", 4), ("i1-b", 4), ("i1-c", 2)] {
        for k in 0..size {
            let mut episode = gigscope::run::Episode::new(
                format!("{group}-{k}"),
                group,
                vec![gigscope::run::Step::new("o", "a", k as f64)],
            );
            episode.iteration = 1;
            text.push_str(&serde_json::to_string(&episode).unwrap());
            text.push('\n');
        }
    }
    text.push_str(r#"{"id":"i1-c-2","gro"#);
    let episodes = dir.join(gigscope::run::EPISODES_FILE);
    std::fs::write(&episodes, text).unwrap();
    std::fs::write(dir.join("run.json"), r#"{"train": {"episodes_per_goal": 4}}"#).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options().write(true).open(&episodes).unwrap().set_modified(old).unwrap();
    for state in [open_the_apps_way(dir), read_whole(dir)] {
        let notes = &state.domain.run.notices;
        assert!(notes.iter().any(|n| n.contains("group i1-c (iteration 1) has 2 of the 4 episodes")), "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("line 11 is unfinished")), "{notes:?}");
        assert!(state.domain.run.torn_tail.is_some());
    }
}

/// Following a run, the viewer holds back the last episode group of what the watcher read while its writer may
/// still be adding to it (a batch read half-written): the complete groups before it are merged at once, the
/// rest of the group joins it when it arrives and the group is merged whole, and a group nothing follows is
/// merged once its time is up.
#[test]
fn a_group_read_half_written_waits_for_its_rest_and_is_merged_whole() {
    use gigscope::live::LiveEvent;
    use gigscope::run::{Episode, Step};
    use gigscope::tui::app::{Loading, Reading};
    let mut s = read_whole(Path::new("tests/fixtures/tui/basic"));
    let before = s.domain.episodes.len();
    let episode = |id: &str, group: &str, line: u64| {
        let steps = vec![Step::new("Search", "search[x]", 0.0), Step::new("Item", "click[buy now]", line as f64 % 2.0)];
        (line, Episode::new(id, group, steps))
    };
    fn loading_receive(loading: &mut Loading, s: &mut State, episodes: Vec<(u64, Episode)>) {
        loading.receive(s, Reading::Live(LiveEvent::Episodes(episodes))).unwrap();
    }
    // Held long enough that a slow machine does not let it go early.
    let mut loading = Loading::holding_back_for(std::time::Duration::from_secs(600));
    let line = before as u64;
    loading_receive(
        &mut loading,
        &mut s,
        vec![
            episode("f0", "new-f", line + 1),
            episode("f1", "new-f", line + 2),
            episode("g0", "new-g", line + 3),
            episode("g1", "new-g", line + 4),
        ],
    );
    loading.merge_next(&mut s);
    assert_eq!(s.domain.episodes.len(), before + 2, "the complete group merged, the last one held back");
    assert!(!loading.merging(&s), "nothing else to merge for now");
    // Its rest arrives, and the next group begins: the group is merged whole, the next one held back in turn.
    let rest =
        vec![episode("g2", "new-g", line + 5), episode("g3", "new-g", line + 6), episode("h0", "new-h", line + 7)];
    loading_receive(&mut loading, &mut s, rest);
    assert!(loading.merging(&s));
    while loading.merging(&s) {
        loading.merge_next(&mut s);
    }
    assert_eq!(s.domain.episodes.len(), before + 6);
    let table = &s.domain.derived.table;
    let (last, members) = (table.episode_groups.last().unwrap(), table.group_episodes(table.episode_groups.len() - 1));
    assert_eq!((&*last.name, members.len()), ("new-g", 4), "the group merged whole");
    assert!(!loading.merging(&s), "the last group held back");
    // Nothing follows a last group: it is merged once its time is up, when the main loop wakes for it.
    let mut loading = Loading::holding_back_for(std::time::Duration::from_millis(100));
    loading_receive(&mut loading, &mut s, vec![episode("i0", "new-i", line + 8)]);
    let wake = loading.wake_at(&s).expect("a time to wake for the group held back");
    std::thread::sleep(wake.saturating_duration_since(std::time::Instant::now()));
    assert!(loading.merging(&s));
    loading.merge_next(&mut s);
    assert_eq!(s.domain.episodes.len(), before + 7);
    assert!(!loading.merging(&s));
}

/// The viewer admits the episodes' ids against its own columns (it keeps no map of the ids beside them): while
/// it follows a run opened from the load cache, an id met before (among the episodes taken from the cache, in
/// the same append, in an earlier one) is refused as the one-shot reader refuses it, with the same broken line,
/// and the first episode with the id is kept.
#[test]
fn following_a_run_the_viewer_refuses_an_id_met_before_as_the_reader_does() {
    let (_tmp, dir) = copy_sample("sokoban-gigpo");
    let cache = tempfile::tempdir().unwrap();
    let config = || Config::defaults(false).unwrap();
    let first = support::opening::open_and_follow_cached(&dir, config(), Some(cache.path().to_path_buf()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_dir(cache.path().join("load")).map_or(true, |mut d| d.next().is_none()) {
        assert!(std::time::Instant::now() < deadline, "the first open wrote no load cache");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(first);
    let (mut state, mut loading, watcher, cached) =
        support::opening::open_and_follow_cached(&dir, config(), Some(cache.path().to_path_buf()));
    let opened = state.domain.episodes.len();
    assert!(cached > 0 && cached == opened, "{cached} of {opened} episodes taken from the load cache");
    assert!(!state.domain.run.episode_ids.kept(), "the viewer keeps no map of the ids met");

    let text = std::fs::read_to_string(dir.join(gigscope::run::EPISODES_FILE)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut fresh: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    fresh["id"] = "fresh".into();
    let append = |text: String| {
        let mut file = std::fs::OpenOptions::new().append(true).open(dir.join(gigscope::run::EPISODES_FILE)).unwrap();
        std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
    };
    // A new id, an id taken from the cache, the new id again: one append.
    append(format!("{fresh}\n{}\n{fresh}\n", lines[2]));
    super::thread_frees::follow_until(&mut state, &mut loading, &watcher, "two ids refused", |s| {
        s.domain.episodes.len() == opened + 1 && s.domain.run.errors.len() == 2
    });
    append(format!("{}\n{fresh}\n", lines[0]));
    super::thread_frees::follow_until(&mut state, &mut loading, &watcher, "four ids refused", |s| {
        s.domain.run.errors.len() == 4
    });

    let read = gigscope::run::Run::open(&dir).unwrap();
    assert_eq!(state.domain.run.errors, read.errors, "the same broken lines as the reader's");
    assert!(read.errors.iter().all(|e| e.reason.starts_with("duplicate episode id")), "{:?}", read.errors);
    let ids: Vec<String> = state.domain.episodes.iter().map(|e| e.id.to_string()).collect();
    assert_eq!(ids, read.episodes.iter().map(|e| e.id.clone()).collect::<Vec<_>>());
    assert_eq!(state.domain.episodes.len(), opened + 1);
}

/// Episodes whose text is not on the run's lines (made in memory here, as a source without lines of its own
/// gives them) are admitted by the viewer as the reader admits them: an id met again names the line the reader
/// said the first was on.
#[test]
fn the_viewer_names_the_first_line_of_an_id_whose_text_is_in_memory() {
    use gigscope::live::LiveEvent;
    use gigscope::run::{Episode, Layout, Run, Step};
    let tmp = tempfile::tempdir().unwrap();
    let episode = |id: &str| Episode::new(id, "g", vec![Step::new("o", "a", 1.0)]);
    let parts = || {
        [vec![(7, episode("a")), (8, episode("b"))], vec![(9, episode("c")), (10, episode("a")), (11, episode("c"))]]
    };
    let mut domain = gigscope::tui::domain::Domain::new(Run::empty(tmp.path(), Layout::Gigscope));
    let mut read = Run::empty(tmp.path(), Layout::Gigscope);
    for part in parts() {
        domain.apply_live(vec![LiveEvent::Episodes(part)]);
    }
    for part in parts() {
        gigscope::run::apply(&mut read, LiveEvent::Episodes(part));
    }
    let reasons: Vec<_> = domain.run.errors.iter().map(|e| (e.line, e.reason.as_str())).collect();
    assert_eq!(
        reasons,
        [(10, "duplicate episode id \"a\" (first on line 7)"), (11, "duplicate episode id \"c\" (first on line 9)")]
    );
    assert_eq!(domain.run.errors, read.errors);
    assert_eq!(domain.episodes.iter().map(|e| e.id.to_string()).collect::<Vec<_>>(), ["a", "b", "c"]);
}
