//! A burst on a background thread, for the TUI: progress arrives over a channel, `cancel` stops it after the
//! current iteration (leaving a valid run and checkpoint).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::env::Tasks;
use super::trainer::{Progress, TrainConfig, Trainer};

#[derive(Clone, Debug, PartialEq)]
pub enum BurstEvent {
    /// The trainer is set up; `first_iteration` is the number the burst's first iteration will get.
    Started { first_iteration: u64, iterations: u64, device: String },
    Progress(Progress),
    /// The burst ended: all iterations ran, or it was cancelled after `completed` of them.
    Finished { completed: u64, cancelled: bool },
    /// Set-up or an iteration failed; the run keeps every iteration completed before.
    Failed(String),
}

pub struct Burst;

impl Burst {
    /// Start training on a new thread (the trainer and its tensors live on that thread).
    pub fn spawn<T: Tasks + 'static>(tasks: T, config: TrainConfig, run_dir: PathBuf) -> BurstHandle {
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            // A send fails only when the handle was dropped; training then just runs on to the stop flag.
            let mut trainer = match Trainer::new(tasks, config.clone(), &run_dir) {
                Ok(t) => t,
                Err(e) => {
                    let _ = tx.send(BurstEvent::Failed(e.to_string()));
                    return;
                }
            };
            let first = trainer.iteration() + 1;
            let _ = tx.send(BurstEvent::Started {
                first_iteration: first,
                iterations: config.iterations,
                device: format!("{:?}", trainer.device()),
            });
            let result = trainer.run(&thread_stop, |p| {
                let _ = tx.send(BurstEvent::Progress(p.clone()));
            });
            let _ = tx.send(match result {
                Ok(()) => BurstEvent::Finished {
                    completed: trainer.iteration() + 1 - first,
                    cancelled: thread_stop.load(Ordering::SeqCst),
                },
                Err(e) => BurstEvent::Failed(e.to_string()),
            });
        });
        BurstHandle { events: rx, stop, thread: Some(thread) }
    }
}

/// The running burst. Dropping it cancels the burst and waits for the current iteration to finish.
pub struct BurstHandle {
    events: Receiver<BurstEvent>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl BurstHandle {
    /// Ask the burst to stop after the current iteration.
    pub fn cancel(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Events that arrived since the last call, without blocking.
    pub fn poll(&self) -> Vec<BurstEvent> {
        let mut out = Vec::new();
        loop {
            match self.events.try_recv() {
                Ok(e) => out.push(e),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return out,
            }
        }
    }

    /// Block for the next event; `None` once the burst's thread has ended and every event was read.
    pub fn next_event(&self) -> Option<BurstEvent> {
        self.events.recv().ok()
    }

    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for BurstHandle {
    fn drop(&mut self) {
        self.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
