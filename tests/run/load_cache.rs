//! The load cache (issue 13): a second open of a gigscope run takes the episodes a previous read made from the
//! cache beside the index cache and reads on from where that read stopped. It equals a read from the files,
//! picks up what was appended since, is never taken for a file truncated or edited since (even one of the same
//! size and modification time), ignores (and replaces) a damaged cache file, and never writes into the run.

use crate::support;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use gigscope::live::{self, Tails};
use gigscope::run::cache::{self, CacheError};
use gigscope::run::{Episode, EPISODES_FILE};
use gigscope::tui::{update, Config, Msg, State};
use support::runs::copy_sample;
use support::screen::assert_same_run;

/// A run opened as the app opens it with a cache under `root`, read to the end; whether the cache was taken.
pub(crate) fn open_cached(dir: &Path, root: &Path) -> (State, bool) {
    let (run, mut tails) = live::start_as(dir, None, &Default::default()).unwrap();
    let mut state = State::new(run, Config::defaults(false).unwrap(), (120, 40));
    let cached = state.domain.keep_load_cache(root.to_path_buf()).load();
    let hit = cached.is_some();
    if let Some(mut cached) = cached {
        state.domain.adopt_load_cache(cached.head.clone());
        state.domain.take_cached(cached.all_episodes().unwrap());
        tails = Tails::resumed(dir, cached.head.position);
        // In parts, as the app merges them.
        while state.domain.cached_pending() {
            update(&mut state, Msg::CachedPart);
        }
    }
    state.domain.read_all(&mut tails);
    state.rebuild();
    state.domain.finish_load_cache();
    (state, hit)
}

/// The run read from its files alone.
pub(crate) fn open_fresh(dir: &Path) -> State {
    gigscope::tui::open(dir, Config::defaults(false).unwrap(), (120, 40)).unwrap().0
}

/// The sample run with a broken line, a blank line and a repeated episode id at its end, and a cache root.
fn run_with_quirks() -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
    let (tmp, dir) = copy_sample("webshop-gigpo");
    let first = std::fs::read_to_string(dir.join(EPISODES_FILE)).unwrap().lines().next().unwrap().to_string();
    append(&dir, &format!("{{\"id\": broken\n\n{first}\n"));
    (tmp, dir, tempfile::tempdir().unwrap())
}

fn append(dir: &Path, text: &str) {
    let mut file = OpenOptions::new().append(true).open(dir.join(EPISODES_FILE)).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// Episodes of a new group, as lines.
fn new_group(dir: &Path, group: &str, n: usize) -> String {
    let text = std::fs::read_to_string(dir.join(EPISODES_FILE)).unwrap();
    let template: Episode = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    (0..n)
        .map(|k| {
            let mut e = template.clone();
            e.id = format!("{group}-{k}");
            e.group = group.to_string();
            e.steps[0].reward = k as f64;
            serde_json::to_string(&e).unwrap() + "\n"
        })
        .collect()
}

fn cache_path(root: &Path, dir: &Path) -> PathBuf {
    cache::cache_file(root, dir).unwrap().0
}

#[test]
fn a_second_open_takes_the_cache_and_equals_the_first() {
    let (_tmp, dir, root) = run_with_quirks();
    let (first, hit) = open_cached(&dir, root.path());
    assert!(!hit, "nothing cached yet");
    assert!(cache_path(root.path(), &dir).is_file(), "the full read wrote the cache");
    let (second, hit) = open_cached(&dir, root.path());
    assert!(hit, "the unchanged run is taken from the cache");
    assert_same_run(&second, &first);
    assert_same_run(&second, &open_fresh(&dir));
    assert_eq!(
        second.domain.run.errors.len(),
        2,
        "the broken line and the repeated id: {:?}",
        second.domain.run.errors
    );
    // The text of a cached episode is read back from the file.
    let last = second.domain.episodes.len() - 1;
    assert_eq!(second.domain.read_episode(last).unwrap().id, second.domain.episodes.at(last).id.to_string());
}

#[test]
fn cached_episodes_decoded_and_merged_a_few_at_a_time_end_parts_where_groups_end_and_equal_a_read_of_the_files() {
    let (_tmp, dir, root) = run_with_quirks();
    open_cached(&dir, root.path());
    let (run, _) = live::start_as(&dir, None, &Default::default()).unwrap();
    let mut state = State::new(run, Config::defaults(false).unwrap(), (120, 40));
    let mut cached = state.domain.keep_load_cache(root.path().to_path_buf()).load().expect("the cache holds the run");
    state.domain.adopt_load_cache(cached.head.clone());
    state.rebuild();
    // Decoded in parts of 10 and merged in parts of 3 (groups of 8 here), each part merged before the next is decoded (as the app
    // does while the reading thread decodes).
    let (mut decoded, mut merged) = (Vec::new(), Vec::new());
    loop {
        let part = cached.next_episodes(10).unwrap();
        if part.is_empty() {
            break;
        }
        decoded.push(part.len());
        state.domain.take_cached(part);
        loop {
            let added = state.domain.merge_cached(3);
            if added.is_empty() {
                break;
            }
            merged.push(added.end);
            state.extend(added.start);
        }
    }
    assert_eq!(decoded.iter().sum::<usize>(), cached.head.episodes);
    assert!(decoded[..decoded.len() - 1].iter().all(|&n| n >= 10), "only the last part is short: {decoded:?}");
    let episodes = &state.domain.episodes;
    assert!(merged.len() > decoded.len(), "merged in smaller parts: {merged:?}");
    for &end in &merged[..merged.len() - 1] {
        assert_ne!(episodes.at(end - 1).group, episodes.at(end).group, "a part ends where a group ends: {end}");
    }
    // Then the watcher's read from where the cached one stopped (the metrics, nothing new in the episodes).
    let mut tails = Tails::resumed(&dir, cached.head.position.clone());
    state.domain.read_all(&mut tails);
    assert_eq!(state.domain.episodes.len(), *merged.last().unwrap());
    assert_same_run(&state, &open_fresh(&dir));
}

#[test]
fn a_cache_whose_episodes_turn_out_damaged_midway_is_voided_and_the_run_read_from_its_files() {
    let (_tmp, dir, root) = run_with_quirks();
    open_cached(&dir, root.path());
    // The body one byte short, with its length and checksum made right: the header passes, the last episode
    // does not decode.
    let path = cache_path(root.path(), &dir);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.pop();
    const HEADER: usize = 8 + 4 + 8 + 8;
    let body_len = (bytes.len() - HEADER) as u64;
    bytes[12..20].copy_from_slice(&body_len.to_le_bytes());
    let checksum = gigscope::run::content_checksum(&bytes[HEADER..]);
    bytes[20..28].copy_from_slice(&checksum.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();

    let (run, mut tails) = live::start_as(&dir, None, &Default::default()).unwrap();
    let mut state = State::new(run, Config::defaults(false).unwrap(), (120, 40));
    let mut cached = state.domain.keep_load_cache(root.path().to_path_buf()).load().expect("the header is right");
    state.domain.adopt_load_cache(cached.head.clone());
    state.domain.take_cached(cached.next_episodes(10).unwrap());
    while state.domain.cached_pending() {
        update(&mut state, Msg::CachedPart);
    }
    assert!(!state.domain.episodes.is_empty(), "the first part was merged before the damage showed");
    let err = loop {
        match cached.next_episodes(10) {
            Ok(part) => assert!(!part.is_empty(), "the damage shows before the end"),
            Err(err) => break err,
        }
    };
    assert!(matches!(err, CacheError::Damaged(_)), "{err}");
    state.domain.void_load_cache();
    state.rebuild();
    state.domain.read_all(&mut tails);
    state.rebuild();
    assert_same_run(&state, &open_fresh(&dir));
}

#[test]
fn a_large_runs_cache_is_copied_a_part_per_turn_and_written_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("large");
    std::fs::create_dir(&dir).unwrap();
    let lines: String = (0..12_000)
        .map(|i| {
            let step = gigscope::run::Step::new(format!("page {}", i % 7), "click[next]", (i % 3) as f64);
            let episode = Episode::new(format!("e{i}"), format!("g{}", i / 8), vec![step]);
            serde_json::to_string(&episode).unwrap() + "\n"
        })
        .collect();
    std::fs::write(dir.join(EPISODES_FILE), lines).unwrap();
    let root = tempfile::tempdir().unwrap();

    let (run, mut tails) = live::start_as(&dir, None, &Default::default()).unwrap();
    let mut state = State::new(run, Config::defaults(false).unwrap(), (120, 40));
    assert!(state.domain.keep_load_cache(root.path().to_path_buf()).load().is_none());
    state.domain.read_all(&mut tails);
    assert!(state.domain.load_cache_copying(), "more than a part's worth is left to copy after the catch-up");
    let mut turns = 1;
    while state.domain.copy_load_cache() {
        turns += 1;
    }
    assert_eq!(turns, 2, "12,000 episodes: the part copied at the catch-up, then one more turn");
    state.domain.finish_load_cache();
    state.rebuild();
    let (second, hit) = open_cached(&dir, root.path());
    assert!(hit);
    assert_same_run(&second, &state);
}

#[test]
fn lines_appended_after_caching_are_read_on_from_the_cached_offset() {
    let (_tmp, dir, root) = run_with_quirks();
    open_cached(&dir, root.path());
    let before = std::fs::metadata(cache_path(root.path(), &dir)).unwrap().len();
    append(&dir, &format!("{}not json\n", new_group(&dir, "appended", 3)));
    let (cached, hit) = open_cached(&dir, root.path());
    assert!(hit, "a run that only grew reuses the cache");
    let fresh = open_fresh(&dir);
    assert_same_run(&cached, &fresh);
    assert_eq!(cached.domain.episodes.last().unwrap().id, "appended-2");
    assert_eq!(cached.domain.run.errors.last().unwrap().line, fresh.domain.run.errors.last().unwrap().line);
    // The cache was written again with the appended episodes, and is taken as it is by the next open.
    assert!(std::fs::metadata(cache_path(root.path(), &dir)).unwrap().len() > before);
    let (third, hit) = open_cached(&dir, root.path());
    assert!(hit);
    assert_same_run(&third, &fresh);
}

#[test]
fn a_file_edited_to_the_same_size_and_time_is_read_again() {
    let (_tmp, dir, root) = run_with_quirks();
    open_cached(&dir, root.path());
    let path = dir.join(EPISODES_FILE);
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    // One digit of the last episode's line changed in place, the modification time put back.
    let mut text = std::fs::read_to_string(&path).unwrap();
    let at = text.trim_end().rfind("\"reward\":").unwrap() + "\"reward\":".len();
    let digit = text[at..].find(|c: char| c.is_ascii_digit()).unwrap() + at;
    let changed = if &text[digit..=digit] == "7" { "8" } else { "7" };
    text.replace_range(digit..=digit, changed);
    std::fs::write(&path, &text).unwrap();
    support::runs::set_modified(&path, modified);
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), modified);

    let store = gigscope::run::text_on_disk::TextStore::new(&path);
    let miss = cache::load(root.path(), &dir, &store).unwrap_err();
    assert!(matches!(miss, CacheError::Changed { .. }), "{miss}");
    let (state, hit) = open_cached(&dir, root.path());
    assert!(!hit);
    assert_same_run(&state, &open_fresh(&dir));
}

#[test]
fn a_file_rewritten_or_truncated_since_is_read_again() {
    let (_tmp, dir, root) = run_with_quirks();
    let path = dir.join(EPISODES_FILE);
    let original = std::fs::read_to_string(&path).unwrap();
    open_cached(&dir, root.path());
    // Truncated to its first half (whole lines).
    let half: String = original.lines().take(100).map(|l| l.to_string() + "\n").collect();
    std::fs::write(&path, &half).unwrap();
    let (state, hit) = open_cached(&dir, root.path());
    assert!(!hit, "a truncated file is never taken from the cache");
    assert_eq!(state.domain.episodes.len(), 100);
    assert_same_run(&state, &open_fresh(&dir));
    // Rewritten with other content of the same size (another time): read again too.
    let cached_half = open_cached(&dir, root.path());
    assert!(cached_half.1, "the truncated run was cached in turn");
    std::fs::write(&path, half.replace("click", "CLICK")).unwrap();
    let (state, hit) = open_cached(&dir, root.path());
    assert!(!hit);
    assert_same_run(&state, &open_fresh(&dir));
}

#[test]
fn a_damaged_or_foreign_cache_file_is_ignored_and_replaced() {
    let (_tmp, dir, root) = run_with_quirks();
    let (first, _) = open_cached(&dir, root.path());
    let path = cache_path(root.path(), &dir);
    let good = std::fs::read(&path).unwrap();
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    let damages: [(&str, Vec<u8>); 4] = [
        ("a flipped byte", flipped),
        ("cut short", good[..good.len() / 3].to_vec()),
        ("empty", Vec::new()),
        ("another program's file", b"{\"not\": \"a gigscope cache\"}".repeat(100)),
    ];
    let store = gigscope::run::text_on_disk::TextStore::new(&dir.join(EPISODES_FILE));
    for (what, bytes) in damages {
        std::fs::write(&path, &bytes).unwrap();
        let miss = cache::load(root.path(), &dir, &store).unwrap_err();
        assert!(matches!(miss, CacheError::Damaged(_) | CacheError::Foreign(_)), "{what}: {miss}");
        let (state, hit) = open_cached(&dir, root.path());
        assert!(!hit, "{what}");
        assert_same_run(&state, &first);
        assert!(cache::load(root.path(), &dir, &store).is_ok(), "{what}: the cache was written anew");
    }
}

#[test]
fn the_cache_is_never_written_inside_the_run_directory() {
    let (_tmp, dir, root) = run_with_quirks();
    let listing = |dir: &Path| {
        let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        names
    };
    let before = listing(&dir);
    open_cached(&dir, root.path());
    open_cached(&dir, root.path());
    assert_eq!(listing(&dir), before);
    assert!(!cache_path(root.path(), &dir).starts_with(&dir));
    // A cache root inside the run is refused: nothing is written there, and the run still opens.
    let inside = dir.join("cache");
    assert!(matches!(cache::cache_file(&inside, &dir), Err(CacheError::InsideRun { .. })));
    let (state, hit) = open_cached(&dir, &inside);
    assert!(!hit);
    assert_same_run(&state, &open_fresh(&dir));
    assert_eq!(listing(&dir), before);
}

#[test]
fn another_runs_cache_file_is_not_taken() {
    let (_tmp, dir, root) = run_with_quirks();
    let (_tmp2, other) = copy_sample("webshop-gigpo");
    open_cached(&other, root.path());
    std::fs::create_dir_all(cache_path(root.path(), &dir).parent().unwrap()).unwrap();
    std::fs::copy(cache_path(root.path(), &other), cache_path(root.path(), &dir)).unwrap();
    let store = gigscope::run::text_on_disk::TextStore::new(&dir.join(EPISODES_FILE));
    let miss = cache::load(root.path(), &dir, &store).unwrap_err();
    assert!(matches!(miss, CacheError::OtherRun(_)), "{miss}");
}
