//! A run opened the app's way, read to the end of the watcher's first scan (shared with the TUI bench, which
//! includes this file).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use gigscope::live::{LiveEvent, WatchOptions};
use gigscope::tui::app::{self, Loading, Reading};
use gigscope::tui::{Config, State};

/// The run in `dir` opened as the app opens it without a load cache (`tui::app::start`: the watcher reads it
/// in parts in the background, the viewer merges part by part), once the watcher's first scan is over and
/// merged; with the viewer's reading state, which keeps the watcher.
pub fn open_the_apps_way(dir: &Path, config: Config) -> (State, Loading) {
    let (state, loading, _watcher) = open_and_follow(dir, config);
    (state, loading)
}

/// [`open_the_apps_way`], and what the watcher reports from then on, while the receiver is kept.
pub fn open_and_follow(dir: &Path, config: Config) -> (State, Loading, mpsc::Receiver<Reading>) {
    let (state, loading, rx, _) = open_and_follow_cached(dir, config, None);
    (state, loading, rx)
}

/// [`open_and_follow`], keeping the run's load cache under `cache` as the app does when given one; with the
/// number of episodes taken from the load cache.
pub fn open_and_follow_cached(
    dir: &Path,
    config: Config,
    cache: Option<PathBuf>,
) -> (State, Loading, mpsc::Receiver<Reading>, usize) {
    let (mut state, opening) = app::start(dir, None, &Default::default(), config, cache).unwrap();
    let (tx, rx) = mpsc::channel();
    opening.spawn(WatchOptions::default(), move |reading| tx.send(reading).is_ok());
    let mut loading = Loading::default();
    let (mut scanned, mut cached) = (false, 0);
    while !scanned || loading.pending(&state) {
        // As the app's loop: what has arrived is taken, then one part merged; it waits only with nothing to merge.
        let wait = Duration::from_millis(if loading.pending(&state) { 0 } else { 50 });
        for reading in rx.recv_timeout(wait).into_iter().chain(rx.try_iter()) {
            // The watcher's first scan ends with `0 of 0` read.
            scanned |= matches!(reading, Reading::Live(LiveEvent::Progress { read: 0, total: 0 }));
            if let Reading::CachedEpisodes(episodes) = &reading {
                cached += episodes.len();
            }
            loading.receive(&mut state, reading).unwrap();
        }
        loading.merge_next(&mut state);
    }
    (state, loading, rx, cached)
}
