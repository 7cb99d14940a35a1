//! Training, behind one interface for the TUI and the CLI: start a run (progress as events, cancel), let the
//! run's policy play a group. Always compiled, and free of tch: the trainer itself (`crate::trainer`, feature
//! `train`) lives in a separately built plugin, `libgigscope_train.so`, which this module loads the first time
//! training is asked for. So `gigscope --help`, `advantages`, `stats`, `search`, `webshop` and the TUI never
//! load libtorch; a burst loads it into the TUI's own process and trains there, on a background thread.
//!
//! When the plugin (or the libtorch it is linked against) cannot be loaded, [`Training::load`] says what was
//! looked for and how to get it ([`Unavailable`]); nothing else depends on it. While the plugin is being built in
//! the background ([`building`]), that is what it says, and a burst waits for the build.

pub(crate) mod building;
pub mod loader;
pub(crate) mod protocol;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::run::truth::TruthFile;
pub use protocol::{
    AutoplayRequest, AutoplayResult, DeviceChoice, EvalResult, FamilyEstimator, IterationSummary, PolicyShape,
    PpoConfig, Request, RunMode, TaskSource, TrainConfig, TrainEvent, TrainRequest, TruthGroups, TruthProgress,
    TruthRequest,
};

use loader::{Plugin, Reply};
pub use loader::{Unavailable, HANDSHAKE};

/// The training plugin, loaded.
#[derive(Clone, Copy)]
pub struct Training {
    plugin: &'static Plugin,
}

impl Training {
    /// The plugin, loaded on the first call in this process (this is when libtorch is loaded; it takes a
    /// moment). Later calls return it at once.
    pub fn load() -> Result<Training, Unavailable> {
        // A plugin that is missing or of another build while it is being built (or its build failed) is reported
        // as that build.
        loader::plugin().map(|plugin| Training { plugin }).map_err(|unavailable| match building::plugin_build() {
            Some(build) => Unavailable(format!("training is unavailable: {build}")),
            None => unavailable,
        })
    }

    /// Where the plugin was loaded from.
    pub fn path(&self) -> &std::path::Path {
        &self.plugin.path
    }

    /// Start training on a background thread of this process; its events arrive on the handle.
    pub fn start(&self, request: &TrainRequest) -> BurstHandle {
        let json = serde_json::to_vec(&Request::Train(Box::new(request.clone()))).expect("requests serialise");
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        let plugin = self.plugin;
        let thread = std::thread::spawn(move || {
            // A send fails only when the handle was dropped; training then runs on to the stop flag it raised.
            let mut ended = false;
            plugin.call(&json, &thread_stop, |reply| {
                let event = match reply {
                    Reply::Event(bytes) => serde_json::from_slice(bytes).unwrap_or_else(|e| TrainEvent::Failed {
                        error: format!("the training plugin sent an event this gigscope cannot read: {e}"),
                    }),
                    Reply::Result(_) => return,
                    Reply::Error(text) => TrainEvent::Failed { error: String::from_utf8_lossy(text).into_owned() },
                };
                if !ended {
                    ended = event.is_last();
                    let _ = tx.send(event);
                }
            });
            if !ended {
                let error = "the training plugin returned before the run finished".to_string();
                let _ = tx.send(TrainEvent::Failed { error });
            }
        });
        BurstHandle { events: rx, stop, thread: Some(thread) }
    }

    /// The run's policy plays a group of episodes (on this thread; it takes a moment).
    pub fn autoplay(&self, request: &AutoplayRequest) -> Result<AutoplayResult, String> {
        let json = serde_json::to_vec(&Request::Autoplay(request.clone())).expect("requests serialise");
        let mut out = Err("the training plugin sent no result".to_string());
        self.plugin.call(&json, &AtomicBool::new(false), |reply| match reply {
            Reply::Result(bytes) => {
                out = serde_json::from_slice(bytes)
                    .map_err(|e| format!("the training plugin sent a result this gigscope cannot read: {e}"))
            }
            Reply::Error(text) => out = Err(String::from_utf8_lossy(text).into_owned()),
            Reply::Event(_) => {}
        });
        out
    }
}

impl Training {
    /// Monte-Carlo ground truth ([`TruthRequest`]) on this thread, progress to `on_progress`; raising `cancel`
    /// stops it between episode groups (the error is then "cancelled").
    pub fn truth(
        &self,
        request: &TruthRequest,
        cancel: &AtomicBool,
        mut on_progress: impl FnMut(&TruthProgress),
    ) -> Result<TruthFile, String> {
        let json = serde_json::to_vec(&Request::Truth(request.clone())).expect("requests serialise");
        let mut out = Err("the training plugin sent no result".to_string());
        self.plugin.call(&json, cancel, |reply| match reply {
            Reply::Event(bytes) => {
                if let Ok(progress) = serde_json::from_slice(bytes) {
                    on_progress(&progress);
                }
            }
            Reply::Result(bytes) => {
                out = serde_json::from_slice(bytes)
                    .map_err(|e| format!("the training plugin sent a result this gigscope cannot read: {e}"))
            }
            Reply::Error(text) => out = Err(String::from_utf8_lossy(text).into_owned()),
        });
        out
    }

    /// The ground truth of one episode group of `iteration` (the group of the anchor group a view shows), K
    /// continuations per state and action, on this thread (run it on a background thread): its rows for every
    /// anchor group of that episode group, and the estimators' agreement over them.
    #[allow(clippy::too_many_arguments)]
    pub fn truth_of_group(
        &self,
        run: &std::path::Path,
        iteration: i64,
        group: &str,
        rollouts: usize,
        seed: u64,
        on_progress: impl FnMut(&TruthProgress),
        cancel: &AtomicBool,
    ) -> Result<TruthFile, String> {
        let request = TruthRequest {
            run: run.to_path_buf(),
            iteration,
            rollouts,
            groups: TruthGroups::Named { ids: vec![group.to_owned()] },
            seed,
            threads: 0,
        };
        self.truth(&request, cancel, on_progress)
    }
}

/// A running training run. Dropping it cancels the run and waits for the current iteration to finish (the run
/// and its checkpoint stay valid).
pub struct BurstHandle {
    events: Receiver<TrainEvent>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl BurstHandle {
    /// Ask the run to stop after the current iteration.
    pub fn cancel(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// The flag [`cancel`](Self::cancel) raises, for a signal handler.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    pub fn cancelled(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Events that arrived since the last call, without blocking.
    pub fn poll(&self) -> Vec<TrainEvent> {
        let mut out = Vec::new();
        loop {
            match self.events.try_recv() {
                Ok(e) => out.push(e),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return out,
            }
        }
    }

    /// Block for the next event; `None` once the run's thread has ended and every event was read.
    pub fn next_event(&self) -> Option<TrainEvent> {
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
