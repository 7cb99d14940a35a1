//! Recording an episode played by hand (or replayed) in the run format, through the port.

use super::episode::{Environment, Transition};
use crate::run::{state_hash, Episode, Step, Task};

/// The step of `action` about to be taken in `env`, with what the state it is taken in shows: its observation,
/// the environment's anchor (`page`) and the compact form of its state fingerprint (`state`, [`state_hash`] of
/// [`Environment::state_fingerprint`], where the environment declares one). Reward and validity are the
/// caller's to fill in once the action is taken.
pub fn step_taken_in(env: &dyn Environment, action: &str) -> Step {
    let mut step = Step::new(env.observation(), action, 0.0);
    step.page = env.page().map(str::to_owned);
    step.state = env.state_fingerprint().as_deref().map(state_hash);
    step
}

/// Records an episode step by step: each step carries the observation, anchor, available actions,
/// environment-specific anchor (`page`) and state fingerprint (`state`) of the state the action was taken in.
#[derive(Clone, Debug, Default)]
pub struct EpisodeRecorder {
    steps: Vec<Step>,
}

impl EpisodeRecorder {
    pub fn new() -> EpisodeRecorder {
        EpisodeRecorder::default()
    }

    /// Steps `env` with `action` and records the step.
    pub fn step(&mut self, env: &mut dyn Environment, action: &str) -> Transition {
        let mut step = step_taken_in(env, action);
        step.anchor = Some(env.anchor().into());
        step.available_actions = Some(env.available_actions());
        let out = env.step(action);
        step.reward = out.reward;
        step.valid = out.valid;
        self.steps.push(step);
        out
    }

    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The finished episode of `task`, scored as the environment scores it ([`Environment::outcome`]).
    pub fn finish(self, env: &dyn Environment, id: impl Into<String>, group: impl Into<String>, task: Task) -> Episode {
        let mut episode = Episode::new(id, group, self.steps);
        episode.task = Some(task);
        episode.outcome = Some(env.outcome());
        episode
    }
}
