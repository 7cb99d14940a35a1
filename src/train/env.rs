//! The environment interface the trainer drives, so that rollouts, updates and tests do not depend on one
//! concrete environment: the in-process WebShop env implements it, and so does the tiny shop used by tests.

use super::TrainError;

/// What one step did.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    pub reward: f64,
    pub done: bool,
    /// The action was admissible on the page it was taken on (a no-op otherwise).
    pub valid: bool,
}

/// One live episode. Cloning gives an independent copy in the same state: the N episodes of a group start
/// from clones of one reset environment.
pub trait Environment: Clone + Send {
    /// The current observation (WebShop text mode).
    fn observation(&self) -> &str;
    /// The current observation as the GiGPO trainer formats it; steps with equal anchors form a step group.
    fn anchor(&self) -> String;
    /// Page type of the current observation: `search`, `results`, `item`, `item_sub` or `done`.
    fn page(&self) -> &str;
    /// Actions offered on the current page. A `search[...]` entry means "the page has a search bar": the
    /// policy replaces it by its own query candidates.
    fn available_actions(&self) -> Vec<String>;
    fn step(&mut self, action: &str) -> Transition;
    /// How the finished episode was scored, as the environment records it in `outcome.reward_info` (WebShop's
    /// reward breakdown), so episodes the policy plays carry what hand-played ones do; `None` before the end.
    fn reward_info(&self) -> Option<serde_json::Value> {
        None
    }
}

/// Which goal list a task comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    Train,
    Test,
}

/// A started task: the environment right after reset, and what identifies the task in the run.
pub struct Started<E> {
    pub env: E,
    pub task_id: String,
    pub instruction: String,
}

/// A set of tasks that can be started by index.
pub trait Tasks: Send + Sync {
    type Env: Environment;
    /// `env` of the run's `run.json`.
    const ENV: &'static str;
    fn len(&self, split: Split) -> usize;
    fn start(&self, split: Split, index: usize) -> Result<Started<Self::Env>, TrainError>;
}
