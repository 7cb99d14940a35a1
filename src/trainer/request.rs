//! A training run as the host asks for it ([`TrainRequest`]), on the calling thread: set up the tasks and the
//! trainer, decide how the run continues what its directory holds, train, and report [`TrainEvent`]s. The
//! plugin runs this for a TUI burst (on the TUI's background thread) and for `gigscope train`; a raised stop
//! flag ends it after the current iteration, leaving a valid run and checkpoint.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::checkpoint;
use super::tasks::{open_tasks, record_tasks};
use super::training_loop::{Progress, Trainer};
use crate::env::{Split, Tasks};
use crate::plugin_host::protocol::{IterationSummary, RunMode, TrainConfig, TrainEvent, TrainRequest};

/// Run `request` to its end, reporting every event to `emit` (the last one `Finished` or `Failed`).
pub fn run(request: &TrainRequest, stop: &AtomicBool, emit: &mut dyn FnMut(TrainEvent)) {
    match open_tasks(&request.tasks) {
        Ok(tasks) => run_with(tasks, request, stop, emit),
        Err(e) => emit(TrainEvent::Failed { error: format!("cannot set up the environment: {e}") }),
    }
}

/// How a burst continues `run_dir`: its checkpoint when it has one, else a fresh policy numbered after the
/// episodes it holds (recorded elsewhere or played by hand), else a new run. Sets `config.resume` and
/// `config.append` and says which in words.
pub fn continue_run(run_dir: &Path, config: &mut TrainConfig) -> String {
    config.resume = checkpoint::path_in(run_dir).exists();
    let has_episodes = std::fs::metadata(run_dir.join(crate::run::EPISODES_FILE)).is_ok_and(|m| m.len() > 0);
    config.append = !config.resume && has_episodes;
    describe(config)
}

fn describe(config: &TrainConfig) -> String {
    if config.resume {
        "resumes the checkpoint".into()
    } else if config.append {
        "fresh policy (no checkpoint)".into()
    } else {
        "new run".into()
    }
}

fn run_with(tasks: Arc<dyn Tasks>, request: &TrainRequest, stop: &AtomicBool, emit: &mut dyn FnMut(TrainEvent)) {
    let mut config = request.config.clone();
    let how = match request.mode {
        RunMode::Continue => continue_run(&request.run, &mut config),
        RunMode::AsConfigured => describe(&config),
    };
    let (train_goals, test_goals) = (tasks.split_len(Split::Train), tasks.split_len(Split::Test));
    let trainer = Trainer::new(tasks, config.clone(), &request.run);
    let recorded = trainer.and_then(|t| record_tasks(&request.run, &request.tasks).map(|()| t));
    let mut trainer = match recorded {
        Ok(t) => t,
        Err(e) => {
            let error = format!("cannot start training in {}: {e}", request.run.display());
            return emit(TrainEvent::Failed { error });
        }
    };
    let first = trainer.iteration() + 1;
    emit(TrainEvent::Started {
        first_iteration: first,
        iterations: config.iterations,
        device: format!("{:?}", trainer.device()),
        how,
        train_goals,
        test_goals,
    });
    let result = trainer.run(stop, |p| {
        emit(match p {
            Progress::Evaluated { policy, baseline, .. } => {
                TrainEvent::Evaluated { policy: *policy, baseline: *baseline }
            }
            Progress::Iteration(r) => TrainEvent::Iteration(IterationSummary {
                iteration: r.iteration,
                success: r.success,
                score: r.score,
                eval: r.eval,
                env_steps: r.env_steps,
                env_steps_per_s: r.env_steps_per_s,
                rollout_s: r.rollout_s,
                update_s: r.update_s,
            }),
        })
    });
    emit(match result {
        Ok(()) => TrainEvent::Finished {
            completed: trainer.iteration() + 1 - first,
            cancelled: stop.load(Ordering::SeqCst),
            last_iteration: trainer.iteration(),
        },
        Err(e) => TrainEvent::Failed { error: format!("training failed: {e}{}", how_to_go_on(request)) },
    });
}

/// How `gigscope train` goes on after a burst that failed once started (its cause mended: a full disk freed),
/// from what the run holds now: `--resume` where there is a checkpoint, `--append` where there are episodes but
/// no checkpoint, else the same command again (a failed iteration takes back what it wrote, so the run holds
/// its finished iterations alone). A TUI burst needs no advice: the next one continues the run.
fn how_to_go_on(request: &TrainRequest) -> String {
    if request.mode == RunMode::Continue {
        return String::new();
    }
    let mut config = request.config.clone();
    continue_run(&request.run, &mut config);
    match (config.resume, config.append) {
        (true, _) => "; the run keeps its finished iterations: go on with --resume".into(),
        (false, true) => "; the run keeps its episodes: go on with --append".into(),
        (false, false) => "; no iteration was kept: run the same command again".into(),
    }
}
