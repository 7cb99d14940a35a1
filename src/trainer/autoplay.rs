//! The run's policy playing a group of episodes of one goal, for the TUI's group play: the same sampling as
//! training rollouts, from the run's checkpoint when it has one.

use std::path::Path;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::Device;

use super::checkpoint;
use super::error::TrainError;
use super::policy::initial_policy;
use super::ppo::Adam;
use super::rollout::{self, Chooser, Slot};
use super::tasks::open_tasks;
use crate::env::Started;
use crate::plugin_host::protocol::{AutoplayRequest, AutoplayResult, TrainConfig};
use crate::run::Episode;

/// Which policy played.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicySource {
    /// The run's checkpoint, after this many iterations.
    Checkpoint { iteration: u64 },
    /// The run has no checkpoint: a freshly initialised policy (seed 0), i.e. what training starts from.
    Untrained,
}

/// Episodes `{group}-{first}`, `{group}-{first+1}`, … (`n` of them, iteration 0) of the task `started` was
/// reset to, sampled from the run's policy on the CPU and recorded as training rollouts record them.
pub fn play_group(
    run_dir: &Path,
    started: Started,
    group: &str,
    first: usize,
    n: usize,
    step_limit: usize,
    seed: u64,
) -> Result<(Vec<Episode>, PolicySource), TrainError> {
    let ckpt = checkpoint::path_in(run_dir);
    let (vs, policy, source) = if ckpt.exists() {
        let saved: TrainConfig = serde_json::from_value(checkpoint::read_state(&ckpt)?.config)?;
        let (vs, policy) = initial_policy(saved.seed, saved.shape, Device::Cpu);
        let mut adam = Adam::new(&vs);
        let state = checkpoint::load(&ckpt, &mut adam, Device::Cpu)?;
        (vs, policy, PolicySource::Checkpoint { iteration: state.iteration })
    } else {
        let config = TrainConfig::default();
        let (vs, policy) = initial_policy(config.seed, config.shape, Device::Cpu);
        (vs, policy, PolicySource::Untrained)
    };
    let mut slots = vec![Slot::new(started); n];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rollout::play(&mut slots, &mut Chooser::Sample(&policy, &mut rng), step_limit, Device::Cpu)?;
    drop(vs);
    let episodes =
        slots.iter().enumerate().map(|(i, s)| s.to_episode(format!("{group}-{}", first + i), group.to_owned(), 0));
    Ok((episodes.collect(), source))
}

/// [`play_group`] as the host asks for it: task `request.task` of the request's environment, and which policy
/// played, in words.
pub fn autoplay(request: &AutoplayRequest) -> Result<AutoplayResult, String> {
    let tasks = open_tasks(&request.tasks).map_err(|e| e.to_string())?;
    let started = tasks.start(request.task).map_err(|e| e.to_string())?;
    let (episodes, source) =
        play_group(&request.run, started, &request.group, request.first, request.n, request.step_limit, request.seed)
            .map_err(|e| format!("policy play: {e}"))?;
    let policy = match source {
        PolicySource::Checkpoint { iteration } => format!("the policy (checkpoint after iteration {iteration})"),
        PolicySource::Untrained => "an untrained policy (the run has no checkpoint yet)".to_string(),
    };
    Ok(AutoplayResult { episodes, policy })
}
