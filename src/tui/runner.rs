//! The job runner: every effect that can take longer than a frame (opening an environment, the policy playing a
//! group, a training burst, the truth of a group, an anchor grouping, the search index, a search, the
//! estimators over an iteration, writing a played group) runs on its own thread, and its progress, messages
//! and outcome come back to the main loop as [`JobNews`], which it turns into messages for `update`. The UI
//! thread only starts jobs and receives their news, so a key press is answered while they run, and the status
//! bar lists them all alike.
//!
//! What cancelling does depends on the job ([`JobKind::cancel`]): most are dropped (the thread runs to its end
//! unseen), a burst and the truth stop at their next boundary and report how they ended, a write always
//! finishes, and a grouping is only given up for a newer one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::msg::{JobError, Msg};
use super::play::TasksHandle;
use super::state::{Cancel, JobKind};
use crate::index::{IndexError, TrajectoryIndex};

/// What a job produced.
pub enum Outcome {
    /// An answer for `update` as it is.
    Msg(Msg),
    /// The run's environment (kept by the app for later jobs, then given to `update`).
    Env(Result<TasksHandle, JobError>),
    /// Nothing to report: the job stopped early because it was cancelled.
    Cancelled,
    /// The search index, given back by the job that updated it, and whether the update went through.
    Index(Box<TrajectoryIndex>, Result<(), IndexError>),
}

/// News of a job for the main loop: how far it is, or that it has ended.
pub struct JobNews {
    id: u64,
    event: JobEvent,
}

enum JobEvent {
    /// The job's new description (its progress) for the status bar.
    Progress(JobKind),
    /// A message for `update` while the job runs (a burst's iterations).
    Msg(Msg),
    Done(Outcome),
}

/// What a running job can do besides its work: say how far it is, and learn that it was cancelled (a job that
/// can stop early, such as an index build, checks between parts).
pub struct JobContext {
    id: u64,
    send: Arc<dyn Fn(JobNews) + Send + Sync>,
    cancelled: Arc<AtomicBool>,
}

impl JobContext {
    pub fn progress(&self, kind: JobKind) {
        (self.send)(JobNews { id: self.id, event: JobEvent::Progress(kind) });
    }

    /// Tell `update` something before the job ends.
    pub fn send(&self, msg: Msg) {
        (self.send)(JobNews { id: self.id, event: JobEvent::Msg(msg) });
    }

    pub fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// The flag [`Runner::cancel`] raises, for work that takes one.
    pub fn cancel_flag(&self) -> &AtomicBool {
        &self.cancelled
    }
}

struct Running {
    id: u64,
    kind: JobKind,
    cancelled: Arc<AtomicBool>,
    /// The thread of a job that stops at a boundary ([`Cancel::Stop`]), waited for by [`Runner::wind_down`].
    thread: Option<JoinHandle<()>>,
}

impl Running {
    /// Whether its news still counts: it was not cancelled, or it stops at a boundary and reports how it ended.
    fn heard(&self) -> bool {
        !self.cancelled.load(Ordering::Relaxed) || self.kind.cancel() == Cancel::Stop
    }
}

/// Starts jobs on threads and keeps the list of those under way.
pub struct Runner {
    send: Arc<dyn Fn(JobNews) + Send + Sync>,
    next_id: u64,
    running: Vec<Running>,
    /// The last write's thread: the next write waits for it, so groups are appended in the order played.
    last_write: Option<JoinHandle<()>>,
}

impl Runner {
    /// `send` delivers a job's news to the main loop (and wakes it).
    pub fn new(send: impl Fn(JobNews) + Send + Sync + 'static) -> Runner {
        Runner { send: Arc::new(send), next_id: 0, running: Vec::new(), last_write: None }
    }

    /// Run `work` on its own thread as a job of `kind`.
    pub fn spawn(&mut self, kind: JobKind, work: impl FnOnce(&JobContext) -> Outcome + Send + 'static) {
        let id = self.next_id;
        self.next_id += 1;
        let cancelled = Arc::new(AtomicBool::new(false));
        let context = JobContext { id, send: Arc::clone(&self.send), cancelled: Arc::clone(&cancelled) };
        let previous_write = if kind == JobKind::Write { self.last_write.take() } else { None };
        let handle = std::thread::spawn(move || {
            if let Some(previous) = previous_write {
                let _ = previous.join();
            }
            let outcome = work(&context);
            (context.send)(JobNews { id, event: JobEvent::Done(outcome) });
        });
        let mut thread = None;
        if kind == JobKind::Write {
            self.last_write = Some(handle);
        } else if kind.cancel() == Cancel::Stop {
            thread = Some(handle);
        }
        self.running.push(Running { id, kind, cancelled, thread });
    }

    /// News of a job: its messages and outcome, unless it was dropped by a cancel (progress updates the job's
    /// description in [`Self::kinds`]).
    pub fn news(&mut self, news: JobNews) -> Option<Outcome> {
        let at = self.running.iter().position(|r| r.id == news.id)?;
        match news.event {
            JobEvent::Progress(kind) => {
                self.running[at].kind = kind;
                None
            }
            JobEvent::Msg(msg) => self.running[at].heard().then_some(Outcome::Msg(msg)),
            JobEvent::Done(outcome) => {
                let running = self.running.remove(at);
                running.heard().then_some(outcome)
            }
        }
    }

    /// Whether a job of this kind (whatever its progress) is under way.
    pub fn has(&self, kind: impl Fn(JobKind) -> bool) -> bool {
        self.running.iter().any(|r| r.heard() && kind(r.kind))
    }

    /// `X`: cancel every job that can be ([`JobKind::cancel`]). What was cancelled.
    pub fn cancel(&mut self) -> Vec<JobKind> {
        self.cancel_where(|kind| kind.cancel() != Cancel::No)
    }

    /// Cancel the jobs `which` picks, whatever `X` would do (a superseded grouping). What was cancelled.
    pub fn cancel_where(&mut self, which: impl Fn(JobKind) -> bool) -> Vec<JobKind> {
        let mut cancelled = Vec::new();
        for r in self.running.iter().filter(|r| r.kind != JobKind::Write && which(r.kind)) {
            if !r.cancelled.swap(true, Ordering::Relaxed) {
                cancelled.push(r.kind);
            }
        }
        cancelled
    }

    /// The jobs under way that were not dropped by a cancel, oldest first (for the status bar).
    pub fn kinds(&self) -> Vec<JobKind> {
        self.running.iter().filter(|r| r.heard()).map(|r| r.kind).collect()
    }

    /// Before the app quits: cancel what can be, and wait for the jobs that stop at a boundary (a burst ends
    /// its iteration, so the run and its checkpoint stay valid) and for the last write.
    pub fn wind_down(&mut self) {
        self.cancel();
        let threads = self.running.iter_mut().filter_map(|r| r.thread.take()).chain(self.last_write.take());
        for thread in threads.collect::<Vec<_>>() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::tui::truth_job::TruthJobError;

    fn runner() -> (Runner, mpsc::Receiver<JobNews>) {
        let (tx, rx) = mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        (Runner::new(move |f| drop(tx.lock().map(|tx| tx.send(f)))), rx)
    }

    fn written(outcome: Option<Outcome>) -> Option<usize> {
        match outcome {
            Some(Outcome::Msg(Msg::Written(Ok(n)))) => Some(n),
            _ => None,
        }
    }

    const WAIT: Duration = Duration::from_secs(30);

    #[test]
    fn a_job_runs_off_the_calling_thread_and_its_outcome_comes_back() {
        let (mut runner, rx) = runner();
        let (release, gate) = mpsc::channel::<()>();
        runner.spawn(JobKind::Autoplay, move |_| {
            gate.recv().ok();
            Outcome::Msg(Msg::Written(Ok(7)))
        });
        assert_eq!(runner.kinds(), vec![JobKind::Autoplay], "spawn returns while the job waits");
        release.send(()).unwrap();
        let job = rx.recv_timeout(WAIT).unwrap();
        assert_eq!(written(runner.news(job)), Some(7));
        assert!(runner.kinds().is_empty());
    }

    #[test]
    fn a_cancelled_job_is_dropped_but_a_write_always_finishes() {
        let (mut runner, rx) = runner();
        let (release, gate) = mpsc::channel::<()>();
        runner.spawn(JobKind::OpenEnv, move |_| {
            gate.recv().ok();
            Outcome::Msg(Msg::Written(Ok(1)))
        });
        runner.spawn(JobKind::Write, |_| Outcome::Msg(Msg::Written(Ok(2))));
        assert_eq!(runner.cancel(), vec![JobKind::OpenEnv]);
        assert_eq!(runner.kinds(), vec![JobKind::Write], "the status no longer lists the cancelled job");
        release.send(()).unwrap();
        let mut outcomes: Vec<Option<usize>> =
            (0..2).map(|_| written(runner.news(rx.recv_timeout(WAIT).unwrap()))).collect();
        outcomes.sort();
        assert_eq!(outcomes, vec![None, Some(2)]);
    }

    #[test]
    fn writes_finish_in_the_order_they_were_started() {
        let (mut runner, rx) = runner();
        runner.spawn(JobKind::Write, |_| {
            std::thread::sleep(Duration::from_millis(50));
            Outcome::Msg(Msg::Written(Ok(1)))
        });
        runner.spawn(JobKind::Write, |_| Outcome::Msg(Msg::Written(Ok(2))));
        let order: Vec<Option<usize>> = (0..2).map(|_| written(runner.news(rx.recv_timeout(WAIT).unwrap()))).collect();
        assert_eq!(order, vec![Some(1), Some(2)]);
    }

    #[test]
    fn progress_updates_the_description_and_a_cancelled_job_learns_of_it() {
        let (mut runner, rx) = runner();
        let (release, gate) = mpsc::channel::<()>();
        let (saw, seen) = mpsc::channel::<bool>();
        runner.spawn(JobKind::Index { indexed: 0, total: 10 }, move |ctx| {
            ctx.progress(JobKind::Index { indexed: 5, total: 10 });
            gate.recv().ok();
            saw.send(ctx.cancelled()).ok();
            Outcome::Msg(Msg::Written(Ok(0)))
        });
        assert!(runner.news(rx.recv_timeout(WAIT).unwrap()).is_none(), "progress is not an outcome");
        assert_eq!(runner.kinds(), vec![JobKind::Index { indexed: 5, total: 10 }]);
        assert!(runner.has(|k| matches!(k, JobKind::Index { .. })));
        runner.cancel();
        release.send(()).unwrap();
        assert!(seen.recv_timeout(WAIT).unwrap(), "the job sees that it was cancelled");
        assert!(runner.news(rx.recv_timeout(WAIT).unwrap()).is_none(), "a cancelled job's outcome is dropped");
        assert!(runner.kinds().is_empty());
    }

    fn truth_ended(outcome: Option<Outcome>) -> Option<Result<String, String>> {
        match outcome {
            Some(Outcome::Msg(Msg::Truth(ended))) => Some(ended.map_err(|e| e.to_string())),
            _ => None,
        }
    }

    #[test]
    fn a_job_that_stops_at_a_boundary_stays_listed_after_a_cancel_and_reports_how_it_ended() {
        let (mut runner, rx) = runner();
        let (release, gate) = mpsc::channel::<()>();
        runner.spawn(JobKind::Truth { states: 0, continuations: 0 }, move |ctx| {
            ctx.progress(JobKind::Truth { states: 1, continuations: 32 });
            ctx.send(Msg::Written(Ok(3)));
            gate.recv().ok();
            let cancelled = || TruthJobError::Cancelled { group: "g".into() };
            Outcome::Msg(Msg::Truth(if ctx.cancelled() { Err(cancelled()) } else { Ok("written".into()) }))
        });
        assert!(runner.news(rx.recv_timeout(WAIT).unwrap()).is_none(), "progress is not an outcome");
        assert_eq!(written(runner.news(rx.recv_timeout(WAIT).unwrap())), Some(3), "a message while it runs");
        assert_eq!(runner.cancel(), vec![JobKind::Truth { states: 1, continuations: 32 }]);
        assert!(runner.cancel().is_empty(), "cancelled once");
        assert_eq!(runner.kinds(), vec![JobKind::Truth { states: 1, continuations: 32 }], "listed until it stops");
        release.send(()).unwrap();
        let ended = truth_ended(runner.news(rx.recv_timeout(WAIT).unwrap()));
        assert_eq!(ended, Some(Err("truth of group g: cancelled".into())));
        assert!(runner.kinds().is_empty());
    }

    #[test]
    fn a_superseded_grouping_is_dropped_but_x_leaves_groupings_alone() {
        let (mut runner, rx) = runner();
        let (release, gate) = mpsc::channel::<()>();
        runner.spawn(JobKind::Grouping, move |ctx| {
            gate.recv().ok();
            if ctx.cancel_flag().load(Ordering::Relaxed) {
                Outcome::Cancelled
            } else {
                Outcome::Msg(Msg::Written(Ok(1)))
            }
        });
        assert!(runner.cancel().is_empty(), "X does not cancel a grouping");
        assert_eq!(runner.kinds(), vec![JobKind::Grouping]);
        assert_eq!(runner.cancel_where(|k| k == JobKind::Grouping), vec![JobKind::Grouping]);
        assert!(runner.kinds().is_empty(), "a superseded grouping is no longer listed");
        release.send(()).unwrap();
        assert!(runner.news(rx.recv_timeout(WAIT).unwrap()).is_none(), "its outcome is dropped");
    }

    #[test]
    fn winding_down_waits_for_a_burst_to_end_its_iteration() {
        let (mut runner, _rx) = runner();
        let ended = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ended);
        runner.spawn(JobKind::Burst { done: 0, of: 5 }, move |ctx| {
            while !ctx.cancelled() {
                std::thread::sleep(Duration::from_millis(5));
            }
            // The iteration under way ends before the job does.
            std::thread::sleep(Duration::from_millis(50));
            flag.store(true, Ordering::SeqCst);
            Outcome::Cancelled
        });
        runner.wind_down();
        assert!(ended.load(Ordering::SeqCst));
    }
}
