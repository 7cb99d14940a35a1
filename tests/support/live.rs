//! Waiting for a run watcher's events, for the tests that follow a run live.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use gigscope::live::LiveEvent;

/// How long a test waits for an event before it fails (a bound for failure, not a timing assertion).
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Collect events until `done` holds for what was collected; panic (with the events) at the deadline.
pub fn wait_until(rx: &Receiver<LiveEvent>, mut done: impl FnMut(&[LiveEvent]) -> bool) -> Vec<LiveEvent> {
    let start = Instant::now();
    let mut seen = Vec::new();
    while !done(&seen) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(event) => seen.push(event),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => panic!("watcher stopped; events so far: {seen:?}"),
        }
        assert!(start.elapsed() < DEADLINE, "gave up waiting; events so far: {seen:?}");
    }
    seen
}
