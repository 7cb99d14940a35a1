//! Which thread frees what the readers made (issue 28 item 8). glibc gives each thread a cache of small free
//! blocks (up to 1,024 bytes) that serves that thread's next allocations of their size, whatever heap the
//! blocks came from, and a block grown in place of such a one stays in its heap (and leaves the old one in the
//! cache). So a block a reader's thread made and the viewer's thread freed seeds the viewer's cache with the
//! reader's heap, and what the viewer keeps (its groups' names and member lists) spreads over that heap's pages,
//! among the text the reader parsed and freed: those pages stay taken. On a verl dump of 100,000 rows this kept
//! about 10 MB (0.1 of the file) after open; the viewer now hands what it received to its release thread, and
//! readers keep what they share with the viewer (step files' names) for as long as they read.
//!
//! The test binary's allocator tags each block with the thread that made it, when the process is started with
//! `GIGSCOPE_TEST_FREES` set ([`open_counting_frees`]), and the viewer's thread counts the small blocks it frees
//! that another thread made. Without the variable the allocator is the system's, untagged.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering::Relaxed};

use gigscope::tui::Config;

use super::memory::{open_in_a_fresh_process, short_episodes, trl_rows, verl_rows};
use crate::support;

/// The environment variable that turns tagging on; read once, at the process's first allocation.
const TAGGING_VARIABLE: &std::ffi::CStr = c"GIGSCOPE_TEST_FREES";

/// The largest block glibc's per-thread cache takes (its 64 sizes of 16 bytes, on 64-bit Linux).
const CACHED_SIZE: usize = 1024;

const UNDECIDED: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

static TAGGING: AtomicU8 = AtomicU8::new(UNDECIDED);
static NEXT_TAG: AtomicU32 = AtomicU32::new(1);
static FOREIGN_FREES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's number, given at its first tagged allocation.
    static TAG: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread counts the blocks it frees that another thread made.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn tagging() -> bool {
    match TAGGING.load(Relaxed) {
        UNDECIDED => {
            // SAFETY: getenv reads the environment without allocating; the first allocation happens before any
            // thread that could change it starts.
            let on = unsafe { !libc::getenv(TAGGING_VARIABLE.as_ptr()).is_null() };
            TAGGING.store(if on { ON } else { OFF }, Relaxed);
            on
        }
        state => state == ON,
    }
}

/// This thread's number (`u32::MAX` while its thread-locals are being torn down).
fn this_thread() -> u32 {
    TAG.try_with(|tag| {
        if tag.get() == 0 {
            tag.set(NEXT_TAG.fetch_add(1, Relaxed));
        }
        tag.get()
    })
    .unwrap_or(u32::MAX)
}

/// The room before a block that holds its maker's number: at least 16 bytes, and the block's alignment.
fn header(layout: Layout) -> usize {
    layout.align().max(16)
}

/// The system's layout for `layout` with its header before it.
fn tagged(layout: Layout) -> Layout {
    let header = header(layout);
    // A layout the caller could make has room for this: sizes are far from `isize::MAX` here.
    Layout::from_size_align(layout.size() + header, header).expect("a tagged layout")
}

struct ThreadTagged;

// SAFETY: every block is the system's, offset by its header when tagging is on (decided once, before the
// first block, so each block is freed as it was made).
unsafe impl GlobalAlloc for ThreadTagged {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !tagging() {
            return unsafe { System.alloc(layout) };
        }
        let base = unsafe { System.alloc(tagged(layout)) };
        if base.is_null() {
            return base;
        }
        let block = unsafe { base.add(header(layout)) };
        unsafe { block.sub(4).cast::<u32>().write_unaligned(this_thread()) };
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if !tagging() {
            return unsafe { System.dealloc(block, layout) };
        }
        let maker = unsafe { block.sub(4).cast::<u32>().read_unaligned() };
        let counting = COUNTING.try_with(Cell::get).unwrap_or(false);
        if counting && layout.size() <= CACHED_SIZE && maker != this_thread() {
            FOREIGN_FREES.fetch_add(1, Relaxed);
        }
        unsafe { System.dealloc(block.sub(header(layout)), tagged(layout)) };
    }
}

#[global_allocator]
static ALLOCATOR: ThreadTagged = ThreadTagged;

/// Run again as a fresh process with `GIGSCOPE_TEST_FREES` set and `GIGSCOPE_TEST_OPEN=DIR`: open the run in
/// `DIR` the app's way on this thread, counting the small blocks this thread frees that another made, and print
/// the count and the episodes read. Does nothing otherwise.
#[test]
fn open_counting_frees() {
    let Some(dir) = std::env::var_os("GIGSCOPE_TEST_OPEN") else { return };
    if !tagging() {
        return;
    }
    COUNTING.with(|c| c.set(true));
    let (state, loading) = support::opening::open_the_apps_way(Path::new(&dir), Config::defaults(false).unwrap());
    gigscope::tui::domain::settle_freed_memory();
    let episodes = state.domain.episodes.len();
    COUNTING.with(|c| c.set(false));
    println!("episodes {episodes} foreign {} end", FOREIGN_FREES.load(Relaxed));
    drop((state, loading));
}

/// Run again as a fresh process with `GIGSCOPE_TEST_FREES` set and `GIGSCOPE_TEST_OPEN=DIR` (a gigscope run):
/// open the run in `DIR` the app's way and follow it while writing to it what the watcher reports in small
/// events (a broken line beside a good one, an episode whose id was met before, a metrics line, a damaged then a
/// good `run.json`), counting the
/// small blocks this thread frees that another made; print the count. Does nothing otherwise.
#[test]
fn follow_counting_frees() {
    let Some(dir) = std::env::var_os("GIGSCOPE_TEST_OPEN") else { return };
    if !tagging() {
        return;
    }
    let dir = Path::new(&dir);
    COUNTING.with(|c| c.set(true));
    let (mut state, mut loading, watcher) = support::opening::open_and_follow(dir, Config::defaults(false).unwrap());
    let opened = state.domain.episodes.len();
    let first = std::fs::read_to_string(dir.join("episodes.jsonl")).unwrap().lines().next().unwrap().to_string();
    let mut line: serde_json::Value = serde_json::from_str(&first).unwrap();
    line["id"] = "followed".into();
    let appended = format!("{line}\n{{\"id\": \"broken\"\n");
    let mut episodes = std::fs::OpenOptions::new().append(true).open(dir.join("episodes.jsonl")).unwrap();
    std::io::Write::write_all(&mut episodes, appended.as_bytes()).unwrap();
    follow_until(&mut state, &mut loading, &watcher, "the appended lines", |s| {
        s.domain.episodes.len() == opened + 1 && !s.domain.run.errors.is_empty()
    });
    // The same episode again: refused for its id, as the reader's thread made it.
    std::io::Write::write_all(&mut episodes, format!("{line}\n").as_bytes()).unwrap();
    follow_until(&mut state, &mut loading, &watcher, "the duplicate id refused", |s| {
        s.domain.run.errors.iter().any(|e| e.reason.contains("duplicate episode id"))
    });
    std::fs::write(dir.join("metrics.jsonl"), "{\"iteration\": 0, \"loss\": 1.0}\n").unwrap();
    follow_until(&mut state, &mut loading, &watcher, "the metrics line", |s| !s.domain.run.metrics.is_empty());
    std::fs::write(dir.join("run.json"), "{\"format\": ").unwrap();
    follow_until(&mut state, &mut loading, &watcher, "the damaged run.json's notice", |s| {
        s.domain.run.notices.iter().any(|n| n.contains("run.json"))
    });
    std::fs::write(dir.join("run.json"), r#"{"format": "gigscope-run/1", "name": "followed"}"#).unwrap();
    follow_until(&mut state, &mut loading, &watcher, "the good run.json", |s| {
        s.domain.run.meta.as_ref().and_then(|m| m.name.as_deref()) == Some("followed")
    });
    gigscope::tui::domain::settle_freed_memory();
    COUNTING.with(|c| c.set(false));
    println!("episodes {} foreign {} end", state.domain.episodes.len(), FOREIGN_FREES.load(Relaxed));
    drop((state, loading, watcher));
}

/// Merge what the watcher reports until `done` holds (a minute at most).
pub(crate) fn follow_until(
    state: &mut gigscope::tui::State,
    loading: &mut gigscope::tui::app::Loading,
    watcher: &std::sync::mpsc::Receiver<gigscope::tui::app::Reading>,
    what: &str,
    done: impl Fn(&gigscope::tui::State) -> bool,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done(state) {
        assert!(std::time::Instant::now() < deadline, "the viewer never showed {what}");
        if let Ok(reading) = watcher.recv_timeout(std::time::Duration::from_millis(50)) {
            loading.receive(state, reading).unwrap();
        }
        loading.merge_next(state);
    }
}

/// Writes a run of about the size given into a directory; its rows or steps.
type WriteRun = fn(&Path, usize) -> usize;

/// The small blocks the viewer's thread freed that another thread made, while it opened the run in `dir` in a
/// fresh process, and the episodes it read.
fn foreign_frees(dir: &Path) -> (usize, usize) {
    let field = open_in_a_fresh_process("thread_frees::open_counting_frees", dir, &[("GIGSCOPE_TEST_FREES", "1")]);
    (field("foreign"), field("episodes"))
}

#[test]
fn the_viewers_thread_frees_no_small_block_a_readers_thread_made() {
    let verl: (&str, WriteRun, usize) = ("verl dump", verl_rows, 4_000);
    let runs = [verl, ("TRL log", trl_rows, 16_000), ("gigscope run", short_episodes, 4_000)];
    for (layout, write, size) in runs {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), size);
        let (foreign, episodes) = foreign_frees(dir.path());
        assert!(episodes > 0, "{layout}: read");
        assert_eq!(foreign, 0, "{layout}: small blocks made on another thread and freed on the viewer's");
    }
}

/// What a watcher reports while the viewer follows a run (notices, broken lines, metrics, settings) is made on
/// its thread too: the viewer keeps copies of its own, and the events go to the release thread.
#[test]
fn following_a_run_the_viewers_thread_frees_no_small_block_a_readers_thread_made() {
    let dir = tempfile::tempdir().unwrap();
    short_episodes(dir.path(), 200);
    let field =
        open_in_a_fresh_process("thread_frees::follow_counting_frees", dir.path(), &[("GIGSCOPE_TEST_FREES", "1")]);
    assert_eq!(field("episodes"), 201, "the appended episode read");
    assert_eq!(field("foreign"), 0, "small blocks made on another thread and freed on the viewer's");
}
