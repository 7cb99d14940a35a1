//! An environment family as the port sees it ([`Tasks`]): its task list, its splits, and how an episode of a
//! task starts ([`Started`]).

use std::ops::Range;
use std::sync::Arc;

use super::episode::Environment;
use super::features::PolicyFeatures;

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
