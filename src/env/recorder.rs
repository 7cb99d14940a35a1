//! Recording an episode played by hand (or replayed) in the run format, through the port.

use super::episode::{Environment, Transition};
use crate::run::{Episode, Step, Task};

/// Records an episode step by step: each step carries the observation, anchor, available actions and
/// environment-specific anchor (`page`) of the state the action was taken in.
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
        let mut step = Step::new(env.observation(), action, 0.0);
        step.anchor = Some(env.anchor().into());
        step.available_actions = Some(env.available_actions());
        step.page = env.page().map(str::to_owned);
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
