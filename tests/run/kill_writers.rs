//! Kill-anywhere for the writers besides the trainer (`tests/train/kill.rs` and `tests/tui/burst_kill.rs` kill it):
//! play, `convert`, the load cache and the search index, each killed with SIGKILL again and again at
//! pseudo-random moments (a fixed seed). After every kill: no complete line written before is lost or changed;
//! `validate` reports nothing but what a kill may leave (an unfinished last line, a group cut short); the run
//! opens as a read of its files does; the next writer goes on and leaves no temporary file or staging behind.
//!
//! Play and the load cache are written by the TUI's own code in a process of their own: this test binary started
//! again on [`child_writer`] (the TUI's play state and writer, the viewer's open with its cache), so that the
//! kill falls wherever those writers happen to be.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gigscope::env::EnvOptions;
use gigscope::run::{RunWriter, EPISODES_FILE};
use gigscope::tui::play::{Play, Played};

use crate::disk_full::sample_prefix;
use crate::load_cache::{open_cached, open_fresh};
use crate::support::kill::{complete, unexplained_problems, Schedule};
use crate::support::screen::assert_same_run;
use crate::support::small_fs::temporaries;

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");
/// Which writer [`child_writer`] is, and on what: `play RUN GROUPS` or `cache RUN ROOT`.
const CHILD_VAR: &str = "GIGSCOPE_TEST_KILL_CHILD";

/// This test binary again, running only [`child_writer`] as `args`.
fn child(args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["kill_writers::child_writer", "--exact", "--ignored", "--quiet", "--test-threads=1"])
        .env(CHILD_VAR, args.join("\u{1f}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// The writer a kill test starts and kills: play (`play RUN GROUPS`: groups of Sokoban played with actions
/// drawn from a seed and written as the TUI writes a played group) or the viewer's open with its load cache
/// (`cache RUN ROOT`: the run opened and cached again and again, an episode appended before each open so that
/// each open writes the cache anew).
#[test]
#[ignore = "the writer that the kill tests start as a child process and kill"]
fn child_writer() {
    let Ok(args) = std::env::var(CHILD_VAR) else { return };
    let args: Vec<&str> = args.split('\u{1f}').collect();
    match args[..] {
        ["play", run, groups] => play_groups(Path::new(run), groups.parse().unwrap()),
        ["cache", run, root] => loop {
            append_copy_of_first_episode(Path::new(run));
            open_cached(Path::new(run), Path::new(root));
        },
        _ => panic!("unknown child writer {args:?}"),
    }
}

/// Play `groups` groups of Sokoban and write each as the TUI does when its last episode ends.
fn play_groups(run: &Path, groups: u64) {
    let tasks = gigscope::env_registry::open("sokoban", &EnvOptions::default()).unwrap();
    let mut play = Play::new(tasks);
    play.group_size = 2;
    let mut draw = Schedule(u64::from(std::process::id()));
    for g in 0..groups {
        play.goal_cursor = draw.next(8) as usize;
        play.start(format!("play-{}-{g}", std::process::id()));
        for _ in 0..10_000 {
            let actions = play.session.as_ref().unwrap().actions();
            let action = &actions[draw.next(actions.len() as u64) as usize];
            if let Some(Played::GroupDone(episodes)) = play.act(action) {
                let mut writer = RunWriter::create(run).unwrap();
                for episode in &episodes {
                    writer.append_episode(episode).unwrap();
                }
                break;
            }
        }
    }
}

fn append_copy_of_first_episode(run: &Path) {
    let text = std::fs::read_to_string(run.join(EPISODES_FILE)).unwrap();
    let mut episode: gigscope::run::Episode = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    episode.id = format!("copy-{}-{}", std::process::id(), text.len());
    episode.group = format!("copies-{}", std::process::id());
    RunWriter::create(run).unwrap().append_episode(&episode).unwrap();
}

fn episodes(run: &Path) -> Vec<u8> {
    std::fs::read(run.join(EPISODES_FILE)).unwrap_or_default()
}

/// Wait until `run`'s episodes file grows past `len` (or the child ends), then `extra_ms` more at random.
fn kill_after_a_write(mut child: Child, run: &Path, len: usize, schedule: &mut Schedule, extra_ms: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while episodes(run).len() <= len && Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(schedule.next(extra_ms)));
    child.kill().unwrap();
    child.wait().unwrap();
}

/// After each kill the run keeps every complete line and validates but for a kill's leftovers.
fn assert_kept(run: &Path, kept: &[u8], kill: u64) -> Vec<u8> {
    let now = episodes(run);
    assert!(now.starts_with(complete(kept)), "kill {kill}: complete lines were lost or changed");
    let problems = unexplained_problems(BIN, run);
    assert!(problems.is_empty(), "kill {kill}: validate found more than a kill leaves: {problems:?}");
    now
}

const PLAY_KILLS: u64 = 40;

#[test]
fn play_killed_anywhere_again_and_again_loses_no_played_line_and_goes_on() {
    let (_tmp, run) = sample_prefix("sokoban-gigpo", 20);
    let run_arg = run.to_str().unwrap();
    let mut schedule = Schedule(0x9e37_79b9_7f4a_7c15);
    let mut kept = episodes(&run);
    for kill in 0..PLAY_KILLS {
        let written = complete(&kept).len();
        let player = child(&["play", run_arg, "1000"]).spawn().unwrap();
        // Every other kill at once (while the process starts, the environment loads), the others while groups
        // are written.
        if kill % 2 == 0 {
            std::thread::sleep(Duration::from_millis(schedule.next(60)));
            let mut player = player;
            player.kill().unwrap();
            player.wait().unwrap();
        } else {
            kill_after_a_write(player, &run, written, &mut schedule, 40);
        }
        kept = assert_kept(&run, &kept, kill);
        assert!(temporaries(&run).is_empty(), "kill {kill}: {:?}", temporaries(&run));
    }
    let status = child(&["play", run_arg, "2"]).status().unwrap();
    assert!(status.success(), "playing on after {PLAY_KILLS} kills failed");
    let now = assert_kept(&run, &kept, PLAY_KILLS);
    assert!(now.len() > kept.len() && now.ends_with(b"\n"), "the last play wrote its groups");
    let lines = complete(&kept).iter().filter(|b| **b == b'\n').count();
    assert!(lines > 20 + 2 * 8, "too few kills came after a group was written: {lines} lines");
}

const CACHE_KILLS: u64 = 24;

#[test]
fn the_load_cache_killed_anywhere_again_and_again_opens_the_run_as_its_files_and_leaves_nothing_behind() {
    let (_tmp, run) = sample_prefix("sokoban-gigpo", 40);
    let root = tempfile::tempdir().unwrap();
    let root_arg = root.path().join("cache");
    let mut schedule = Schedule(0x2545_f491_4f6c_dd1d);
    let mut kept = episodes(&run);
    for kill in 0..CACHE_KILLS {
        let opener = child(&["cache", run.to_str().unwrap(), root_arg.to_str().unwrap()]).spawn().unwrap();
        kill_after_a_write(opener, &run, complete(&kept).len(), &mut schedule, 80);
        kept = assert_kept(&run, &kept, kill);
        let fresh = open_fresh(&run);
        let (state, _) = open_cached(&run, &root_arg);
        assert_same_run(&state, &fresh);
        let left = temporaries(root.path());
        assert!(left.is_empty(), "kill {kill}: the cache's temporary files left behind: {left:?}");
    }
    let (state, hit) = open_cached(&run, &root_arg);
    assert!(hit, "the cache written after the last kill is taken");
    assert_same_run(&state, &open_fresh(&run));
}

const CONVERT_KILLS: u64 = 60;

/// Staging directories (`.OUT.converting<pid>`) in `dir`.
fn staging(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("converting"))
        .map(|e| e.path())
        .collect()
}

#[test]
fn convert_killed_anywhere_leaves_either_nothing_or_the_whole_copy_and_no_staging_once_run_again() {
    let (_tmp, source) = sample_prefix("webshop-gigpo", 256);
    let work = tempfile::tempdir().unwrap();
    let convert = |out: &Path| {
        let mut cmd = Command::new(BIN);
        cmd.arg("convert").arg(&source).arg("--out").arg(out).stdout(Stdio::null()).stderr(Stdio::piped());
        cmd
    };
    let reference = work.path().join("reference");
    let started = Instant::now();
    assert!(convert(&reference).status().unwrap().success());
    let span = (started.elapsed().as_millis() as u64).max(20);
    let reference = std::fs::read(reference.join(EPISODES_FILE)).unwrap();
    let out = work.path().join("out");
    let mut schedule = Schedule(0x853c_49e6_748f_ea9b);
    for kill in 0..CONVERT_KILLS {
        let mut converting = convert(&out).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(schedule.next(span + 20)));
        converting.kill().unwrap();
        converting.wait().unwrap();
        if out.exists() {
            assert_eq!(std::fs::read(out.join(EPISODES_FILE)).unwrap(), reference, "kill {kill}: a partial copy");
            std::fs::remove_dir_all(&out).unwrap();
        }
        assert!(staging(work.path()).len() <= 1, "kill {kill}: staging of earlier kills: {:?}", staging(work.path()));
    }
    let last = convert(&out).output().unwrap();
    assert!(last.status.success(), "{}", String::from_utf8_lossy(&last.stderr));
    assert_eq!(std::fs::read(out.join(EPISODES_FILE)).unwrap(), reference);
    assert!(staging(work.path()).is_empty(), "staging left: {:?}", staging(work.path()));
}

const SEARCH_KILLS: u64 = 12;
/// Kill points of the search-index test, counted in names that appear in the index directory while it is
/// written (segment files, delete files, `meta.json` and `.managed.json` and their temporaries): an update of
/// one appended episode makes about this many.
const SEARCH_KILL_POINTS: u64 = 16;

/// The hits of `search --json`'s output without their relevance scores (BM25 counts the documents of every
/// segment, so an index grown in steps scores a little differently from one built at once).
fn hits(json: &[u8]) -> serde_json::Value {
    let mut value: serde_json::Value = serde_json::from_slice(json).unwrap();
    for hit in value["hits"].as_array_mut().unwrap() {
        hit.as_object_mut().unwrap().remove("score");
    }
    value
}

/// The names of the files in `dir`.
fn names(dir: &Path) -> BTreeSet<OsString> {
    std::fs::read_dir(dir).map(|entries| entries.flatten().map(|e| e.file_name()).collect()).unwrap_or_default()
}

/// Where a kill of the index's writer falls: at a point of its work on disk rather than at a time, so that the
/// points spread over every stage of an update (segments written, the commit's delete files, `meta.json`)
/// however fast the machine is.
#[derive(Clone, Copy, Debug)]
enum KillPoint {
    /// Once this many names new to the directory have appeared in it.
    NewNames(u64),
    /// As soon as the commit's first delete file (`<segment>.<opstamp>.del`) appears, before `meta.json` names it.
    FirstDeleteFile,
}

/// Let `child` write until `point` is reached in `dir` (or it ends), then kill it.
fn kill_at(mut child: Child, dir: &Path, point: KillPoint) {
    let mut seen = names(dir);
    let mut new = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        let mut delete_file = false;
        for name in names(dir) {
            delete_file |= !seen.contains(&name) && name.as_encoded_bytes().ends_with(b".del");
            new += u64::from(seen.insert(name));
        }
        let reached = match point {
            KillPoint::NewNames(n) => new >= n,
            KillPoint::FirstDeleteFile => delete_file,
        };
        if reached {
            break;
        }
        std::thread::yield_now();
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn the_search_index_killed_anywhere_while_built_answers_as_a_fresh_one_once_run_again() {
    let (_tmp, run) = sample_prefix("sokoban-gigpo", 40);
    let cache = tempfile::tempdir().unwrap();
    let search = |cache: &Path| {
        let mut cmd = Command::new(BIN);
        cmd.arg("search").arg(&run).args(["action:down", "--json", "--limit", "1000"]).env("GIGSCOPE_CACHE", cache);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    };
    assert!(search(cache.path()).output().unwrap().status.success());
    // `<cache>/index/<run>/<settings>`: the one index of the run.
    let runs = std::fs::read_dir(cache.path().join("index")).unwrap().flatten().next().unwrap().path();
    let dir = std::fs::read_dir(runs).unwrap().flatten().next().unwrap().path();
    let mut schedule = Schedule(0xda94_2042_e4dd_58b5);
    for kill in 0..SEARCH_KILLS {
        // One more episode of a growing group each time: the update writes a segment and deletes the group's
        // earlier documents (a delete file for each segment that holds them).
        append_copy_of_first_episode(&run);
        let point = match kill % 3 {
            0 => KillPoint::FirstDeleteFile,
            _ => KillPoint::NewNames(1 + schedule.next(SEARCH_KILL_POINTS)),
        };
        kill_at(search(cache.path()).spawn().unwrap(), &dir, point);
        let again = search(cache.path()).output().unwrap();
        assert!(again.status.success(), "kill {kill} ({point:?}): {}", String::from_utf8_lossy(&again.stderr));
        let left = temporaries(cache.path());
        assert!(left.is_empty(), "kill {kill} ({point:?}): temporary files left: {left:?}");
    }
    let fresh = tempfile::tempdir().unwrap();
    let reference = search(fresh.path()).output().unwrap();
    assert!(reference.status.success());
    let again = search(cache.path()).output().unwrap();
    assert_eq!(hits(&again.stdout), hits(&reference.stdout), "the index answers unlike a fresh one");
}
