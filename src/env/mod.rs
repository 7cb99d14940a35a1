//! Environments as a port: what the trainer, live play, autoplay and ground truth need from an environment,
//! and nothing about any one of them. Observations are plain text: the TUI shows them line by line (WebShop's
//! ` [SEP] ` segments one per line). An environment family ([`Tasks`]) holds a task list (ids, instructions,
//! train/test splits) and starts episodes; an episode ([`Environment`]) steps, offers actions, names the anchor
//! of its state (the exact text, and optionally an environment-specific anchor such as WebShop's page type,
//! as a plain string recorded in the step's `page`), and says how it was scored. Each task also comes with a
//! [`PolicyFeatures`]: how states and actions are described to the policy (hashed feature keys and a few
//! dense numbers), so the trainer's network has one shape whatever the environment.
//!
//! No libtorch here: the `gigscope` binary (TUI live play) uses the port, and so does the training plugin.
//! Implementations live in their own folders (`crate::webshop::port`, `crate::sokoban`); the [`registry`]
//! names them, one line each.

pub mod features;
pub mod page_anchor;
mod recorder;
pub mod registry;

use std::ops::Range;
use std::sync::Arc;

pub use features::{Decision, PolicyFeatures, StateView, Taken};
pub use page_anchor::{fill_page_anchors, PageAnchor};
pub use recorder::EpisodeRecorder;
pub use registry::{page_anchor, page_classifier, EnvOptions, Registered, ENVIRONMENTS};

use crate::run::Outcome;

/// What one step did.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    pub reward: f64,
    pub done: bool,
    /// The action was admissible in the state it was taken in (otherwise the environment's documented
    /// no-op).
    pub valid: bool,
}

/// One live episode. [`Environment::box_clone`] gives an independent copy in the same state: the N episodes
/// of a group start from clones of one reset environment.
pub trait Environment: Send {
    /// The current observation, as the run records it.
    fn observation(&self) -> &str;
    /// The exact anchor of the current state: steps with equal anchors form a step (anchor-state) group.
    fn anchor(&self) -> String;
    /// The environment-specific anchor of the current state, recorded as the step's `page` (WebShop's page
    /// type: `search`, `results`, `item`, `item_sub`, `done`); `None` where the environment has none.
    fn page(&self) -> Option<&str> {
        None
    }
    /// Actions offered in the current state; empty once the episode is over. An entry `name[<what>]` is a
    /// template ([`template_name`]): the player types the argument (WebShop's `search[<your query>]`).
    fn available_actions(&self) -> Vec<String>;
    /// A few words shown beside an offered action on the screen (WebShop: a product click's title).
    fn action_label(&self, _action: &str) -> Option<String> {
        None
    }
    fn step(&mut self, action: &str) -> Transition;
    /// How the episode was scored so far (final once it is over): success, score, and the environment's
    /// breakdown in `extra["reward_info"]` where it has one.
    fn outcome(&self) -> Outcome;
    /// The full state of the episode as a fingerprint, where the environment declares one: two episodes of one
    /// task with equal fingerprints behave alike from here on (the same observations, rewards and end for the
    /// same actions), whatever their observations hide (WebShop's selected options) and however they got
    /// there. It counts the steps taken, since the step limit ends an episode. Ground truth shares
    /// continuations between rows of equal fingerprints and counts the true states an anchor merges; `None`:
    /// every row is a state of its own.
    fn state_fingerprint(&self) -> Option<String> {
        None
    }
    fn box_clone(&self) -> Box<dyn Environment>;
}

/// `name` of an action template `name[<what>]`, whose argument the player types.
pub fn template_name(action: &str) -> Option<&str> {
    let (name, rest) = action.split_once("[<")?;
    rest.ends_with(">]").then_some(name)
}

impl Clone for Box<dyn Environment> {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}

/// Which part of the task list a task belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    Train,
    Test,
}

/// One task of the list, as a picker shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskInfo {
    /// The id episodes record in `task.id`; [`Tasks::start_task`] starts it again.
    pub id: String,
    pub instruction: String,
    /// Anything else worth showing beside it (WebShop: the goal's attributes, options and price cap).
    pub details: Vec<(String, String)>,
}

/// A started task: the environment right after reset, what identifies the task in the run, and how the
/// policy sees its states.
pub struct Started {
    pub env: Box<dyn Environment>,
    pub task_id: String,
    pub instruction: String,
    pub features: Arc<dyn PolicyFeatures>,
}

#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("no environment {name:?} (known: {known})")]
    Unknown { name: String, known: String },
    #[error("{env}: no task {task}")]
    NoSuchTask { env: String, task: String },
    #[error("{env}: option {key}: {why}")]
    BadOption { env: String, key: String, why: String },
    #[error("{env}: {why}")]
    Setup { env: String, why: String },
}

/// An environment family: its task list and how to start an episode of a task. Tasks are numbered
/// `0..len()` across the whole list; the splits are ranges of that numbering (disjoint).
pub trait Tasks: Send + Sync {
    /// The registry name, written as `env` in the run's `run.json`.
    fn env_name(&self) -> &str;
    /// Number of tasks in the whole list.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Task `index` of the whole list.
    fn task(&self, index: usize) -> Option<TaskInfo>;
    /// The indices of `split`.
    fn split(&self, split: Split) -> Range<usize>;
    /// A fresh episode of task `index` (numbered across the whole list).
    fn start(&self, index: usize) -> Result<Started, EnvError>;
    /// The index of the task an episode recorded as `task.id`.
    fn index_of(&self, task_id: &str) -> Option<usize>;
    /// A fresh episode of the task a recorded episode names in `task.id`: replaying its actions in the
    /// returned environment retraces it (ground truth, `gigscope truth`).
    fn start_task(&self, task_id: &str) -> Result<Started, EnvError> {
        let index = self.index_of(task_id).ok_or_else(|| self.no_such_task(task_id))?;
        self.start(index)
    }

    /// Task `i` of `split` (numbered within the split).
    fn start_in(&self, split: Split, i: usize) -> Result<Started, EnvError> {
        let range = self.split(split);
        if i >= range.len() {
            return Err(self.no_such_task(&format!("{i} of the {split:?} split")));
        }
        self.start(range.start + i)
    }

    /// Number of tasks in `split`.
    fn split_len(&self, split: Split) -> usize {
        self.split(split).len()
    }

    fn no_such_task(&self, task: &str) -> EnvError {
        EnvError::NoSuchTask { env: self.env_name().to_owned(), task: task.to_owned() }
    }
}

impl std::fmt::Debug for dyn Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").field("env", &self.env_name()).field("len", &self.len()).finish()
    }
}

impl<T: Tasks + ?Sized> Tasks for Arc<T> {
    fn env_name(&self) -> &str {
        (**self).env_name()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
    fn task(&self, index: usize) -> Option<TaskInfo> {
        (**self).task(index)
    }
    fn split(&self, split: Split) -> Range<usize> {
        (**self).split(split)
    }
    fn start(&self, index: usize) -> Result<Started, EnvError> {
        (**self).start(index)
    }
    fn index_of(&self, task_id: &str) -> Option<usize> {
        (**self).index_of(task_id)
    }
}
