//! The job runner: effects that can take longer than a frame (opening an environment, the policy playing a
//! group, loading the training plugin to start a burst, writing a played group) run on their own threads, and
//! their progress and outcomes come back to the main loop as [`JobNews`], which it turns into messages for `update`.
//! The UI thread only starts jobs and receives their results, so a key press is answered while they run.
//!
//! Every job can be cancelled except a write (a played group is appended whole or not at all): a cancelled
//! job's thread runs to its end, and its outcome is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::play::TasksHandle;
use super::state::JobKind;
use super::update::Msg;
use crate::index::TrajectoryIndex;
use crate::training::BurstHandle;

/// What a job produced.
pub enum Outcome {
    /// An answer for `update` as it is.
    Msg(Msg),
    /// The run's environment (kept by the app for later jobs, then given to `update`).
    Env(Result<TasksHandle, String>),
    /// A started training burst (kept by the app, which polls its progress), or why it could not start.
    Burst(Result<BurstHandle, String>),
    /// The search index, given back by the job that updated it, and whether the update went through.
    Index(Box<TrajectoryIndex>, Result<(), String>),
}

/// News of a job for the main loop: how far it is, or that it has ended.
pub struct JobNews {
    id: u64,
    event: JobEvent,
}

enum JobEvent {
    /// The job's new description (its progress) for the status bar.
    Progress(JobKind),
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

    pub fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
}

struct Running {
    id: u64,
    kind: JobKind,
    cancelled: Arc<AtomicBool>,
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
        if kind == JobKind::Write {
            self.last_write = Some(handle);
        }
        self.running.push(Running { id, kind, cancelled });
    }

    /// News of a job: its outcome when it has ended and was not cancelled (progress updates the job's
    /// description in [`Self::kinds`]).
    pub fn news(&mut self, news: JobNews) -> Option<Outcome> {
        let at = self.running.iter().position(|r| r.id == news.id)?;
        match news.event {
            JobEvent::Progress(kind) => {
                self.running[at].kind = kind;
                None
            }
            JobEvent::Done(outcome) => {
                let running = self.running.remove(at);
                (!running.cancelled.load(Ordering::Relaxed)).then_some(outcome)
            }
        }
    }

    /// Whether a job of this kind (whatever its progress) is under way.
    pub fn has(&self, kind: impl Fn(JobKind) -> bool) -> bool {
        self.running.iter().any(|r| !r.cancelled.load(Ordering::Relaxed) && kind(r.kind))
    }

    /// Cancel every job that can be (all but writes): their outcomes will be dropped. What was cancelled.
    pub fn cancel(&mut self) -> Vec<JobKind> {
        let mut cancelled = Vec::new();
        for r in self.running.iter().filter(|r| r.kind != JobKind::Write) {
            if !r.cancelled.swap(true, Ordering::Relaxed) {
                cancelled.push(r.kind);
            }
        }
        cancelled
    }

    /// The jobs under way that were not cancelled, oldest first (for the status bar).
    pub fn kinds(&self) -> Vec<JobKind> {
        self.running.iter().filter(|r| !r.cancelled.load(Ordering::Relaxed)).map(|r| r.kind).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

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
}
