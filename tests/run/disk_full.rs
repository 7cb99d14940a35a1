//! Disk-full at every fill level for the writers besides the trainer: `convert` (its staging directory), the
//! load cache and the search index (both under the cache root). Each writes onto a small file system of its own
//! (a tmpfs, `support::small_fs`) left with `k` free pages, for every `k` from none to more than the writer
//! needs (tmpfs counts space in pages, so every write that allocates fails at some level).
//!
//! After each: the command exited with an error naming a file on that file system, or succeeded (a cache is
//! optional: a viewer whose cache could not be written opens the run all the same); no panic or abort; no
//! temporary file or staging directory left; what was written is whole. Then the space is freed and the writer
//! run again: it succeeds and its output equals one written with room.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gigscope::run::EPISODES_FILE;

use crate::load_cache::{open_cached, open_fresh};
use crate::support::screen::assert_same_run;
use crate::support::small_fs::{crashed, temporaries, SmallFs};

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");

/// A run of the sample's run.json, metrics and first `lines` episodes (about 6 KB each, Sokoban's 3 KB).
pub fn sample_prefix(name: &str, lines: usize) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = crate::support::runs::copy_sample(name);
    let text = std::fs::read_to_string(dir.join(EPISODES_FILE)).unwrap();
    let kept: String = text.split_inclusive('\n').take(lines).collect();
    std::fs::write(dir.join(EPISODES_FILE), kept).unwrap();
    (tmp, dir)
}

fn gigscope(args: &[&std::ffi::OsStr], cache: &Path) -> Output {
    Command::new(BIN).args(args).env("GIGSCOPE_CACHE", cache).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every file under `dir` with its bytes, by path relative to `dir`.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files(&path).into_iter().map(|(p, b)| (Path::new(&entry.file_name()).join(p), b)));
        } else {
            found.push((PathBuf::from(entry.file_name()), std::fs::read(&path).unwrap()));
        }
    }
    found.sort();
    found
}

/// A failed write's error names a file on the full file system and nothing crashed.
fn assert_failed_naming_a_file(fs: &SmallFs, out: &Output, what: &str) {
    let text = stderr(out);
    assert!(!crashed(out.status, &text), "{what}: crashed ({}): {text}", out.status);
    assert!(text.contains(&*fs.path().to_string_lossy()), "{what}: the error names no file on the full disk: {text}");
}

#[test]
fn convert_on_a_full_disk_fails_naming_the_file_and_leaves_no_staging_at_every_fill_level() {
    let (_tmp, source) = sample_prefix("sokoban-gigpo", 40);
    let room = tempfile::tempdir().unwrap();
    let convert = |out: &Path| {
        gigscope(&["convert".as_ref(), source.as_os_str(), "--out".as_ref(), out.as_os_str()], room.path())
    };
    let reference = room.path().join("reference");
    assert!(convert(&reference).status.success());
    let reference = files(&reference);
    let fs = SmallFs::mount(4 << 20);
    let out = fs.path().join("out");
    assert!(convert(&out).status.success());
    let need = fs.used_pages();
    let mut failed = 0;
    for free in 0..=need + 1 {
        fs.clear();
        fs.leave_free(free);
        let result = convert(&out);
        failed += u64::from(!result.status.success());
        let what = format!("{free} of {need} pages free");
        if result.status.success() {
            assert_eq!(files(&out), reference, "{what}: the copy differs from one written with room");
        } else {
            assert_failed_naming_a_file(&fs, &result, &what);
            assert!(!out.exists(), "{what}: a failed conversion left its output");
        }
        assert!(temporaries(fs.path()).is_empty(), "{what}: staging left: {:?}", temporaries(fs.path()));
        fs.free_all();
        if !result.status.success() {
            let again = convert(&out);
            assert!(again.status.success(), "{what}, then freed: {}", stderr(&again));
            assert_eq!(files(&out), reference, "{what}, then freed");
        }
    }
    assert!(failed > need / 2, "{failed} of {} fill levels failed: the disk was not full", need + 2);
    eprintln!("convert: {} fill levels, {failed} failed", need + 2);
}

#[test]
fn the_load_cache_on_a_full_disk_is_not_written_and_the_run_opens_the_same_at_every_fill_level() {
    let (_tmp, dir) = sample_prefix("sokoban-gigpo", 60);
    let fresh = open_fresh(&dir);
    let fs = SmallFs::mount(4 << 20);
    let root = fs.path().join("cache");
    let (_, hit) = open_cached(&dir, &root);
    assert!(!hit);
    let need = fs.used_pages();
    let mut failed = 0;
    for free in 0..=need + 1 {
        fs.clear();
        fs.leave_free(free);
        let what = format!("{free} of {need} pages free");
        let (state, hit) = open_cached(&dir, &root);
        assert!(!hit, "{what}: nothing was cached");
        failed += u64::from(cache_files(&root).is_empty());
        assert_same_run(&state, &fresh);
        assert!(temporaries(fs.path()).is_empty(), "{what}: left {:?}", temporaries(fs.path()));
        // Whatever the failed save left (nothing, or a whole cache file) opens the same.
        let (state, _) = open_cached(&dir, &root);
        assert_same_run(&state, &fresh);
        fs.free_all();
        let (state, _) = open_cached(&dir, &root);
        assert_same_run(&state, &fresh);
        let (state, hit) = open_cached(&dir, &root);
        assert!(hit, "{what}, then freed: the cache is written again");
        assert_same_run(&state, &fresh);
    }
    assert!(failed > need / 2, "{failed} of {} fill levels failed: the disk was not full", need + 2);
    eprintln!("load cache: {} fill levels, {failed} failed", need + 2);
}

/// The cache files under `root`.
fn cache_files(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    if root.exists() {
        files(root)
    } else {
        Vec::new()
    }
}

/// The search index's error names the file it was writing in the index directory (a segment's file, a delete
/// file, `meta.json` or `.managed.json`), not the directory alone, and says why.
fn assert_names_a_file_of_the_index(fs: &SmallFs, out: &Output, what: &str) {
    let text = stderr(out);
    // `<cache>/index/<run>/<settings>`: the one index of the run.
    let runs = std::fs::read_dir(fs.path().join("index")).unwrap().flatten().next().unwrap().path();
    let index = std::fs::read_dir(runs).unwrap().flatten().next().unwrap().path();
    let files = format!("{}/", index.display());
    let named = text
        .match_indices(&files)
        .any(|(at, _)| text[at + files.len()..].chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '.'));
    assert!(named, "{what}: the error names no file of the index {}: {text}", index.display());
    assert!(text.contains("No space left on device"), "{what}: the error does not say why: {text}");
}

#[test]
fn the_search_index_on_a_full_disk_fails_naming_the_file_and_is_built_once_freed_at_every_fill_level() {
    let (_tmp, dir) = sample_prefix("sokoban-gigpo", 20);
    let fs = SmallFs::mount(8 << 20);
    let search =
        || gigscope(&["search".as_ref(), dir.as_os_str(), "action:down".as_ref(), "--json".as_ref()], fs.path());
    let reference = search();
    assert!(reference.status.success(), "{}", stderr(&reference));
    // Building takes more than the index keeps (segments written, then merged): levels up to two successes.
    let (mut failed, mut succeeded, mut free) = (0, 0, 0);
    while succeeded < 2 {
        fs.clear();
        fs.leave_free(free);
        let what = format!("{free} pages free");
        let result = search();
        if result.status.success() {
            succeeded += 1;
            assert_eq!(result.stdout, reference.stdout, "{what}");
        } else {
            failed += 1;
            assert_failed_naming_a_file(&fs, &result, &what);
            assert_names_a_file_of_the_index(&fs, &result, &what);
        }
        fs.free_all();
        let again = search();
        assert!(again.status.success(), "{what}, then freed: {}", stderr(&again));
        assert_eq!(again.stdout, reference.stdout, "{what}, then freed");
        free += 1;
    }
    assert!(failed > 0, "no fill level failed: the disk was not full");
    eprintln!("search index: {free} fill levels, {failed} failed");
}
