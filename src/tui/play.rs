//! Live play: episodes of the run's environment (any of the registry's, through the port [`crate::env`])
//! played by hand inside the TUI, as episode groups ("group play": N episodes of one task from the same start
//! state). A finished group is handed back whole, to be written to the run like a
//! trainer's group, so its anchor groups and advantages appear the moment the group is complete. The policy
//! can play the rest of a group (see `Effects::autoplay`).

use std::sync::Arc;

use crate::env::{template_name, Environment, EpisodeRecorder, Tasks};
use crate::run::{Episode, Task};

/// The task list play takes its tasks and environments from, shared with the app that opened it.
pub type TasksHandle = Arc<dyn Tasks>;

pub const DEFAULT_GROUP_SIZE: usize = 4;
pub const MAX_GROUP_SIZE: usize = 16;
/// Played episodes are written with this iteration, and marked `"source": "play"`: they belong to no
/// training iteration, and the overview keeps them in a bucket of their own that the training charts leave out.
pub const PLAY_ITERATION: i64 = 0;

/// Mark `episode` as played in the TUI (by hand or by the policy).
pub fn mark_played(episode: &mut Episode) {
    episode.iteration = PLAY_ITERATION;
    episode
        .extra
        .insert(super::domain::SOURCE_KEY.into(), serde_json::Value::String(super::domain::PLAY_SOURCE.into()));
}

/// The last observation of an episode that ended (WebShop's "Thank you" page after a purchase), shown until a
/// key.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedPage {
    pub observation: String,
    pub reward: f64,
    /// The environment's explanation of the reward, line by line (WebShop: its parts and formula).
    pub explained: Vec<String>,
    /// Which episode of the group it was (from 1), of how many.
    pub episode: usize,
    pub size: usize,
    /// The group is complete (and being written).
    pub group_done: bool,
}

/// The policy's episodes, shown one step at a time before they join the group.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    pub episodes: Vec<Episode>,
    /// Which policy played them, in words.
    pub who: String,
    pub episode: usize,
    pub step: usize,
}

impl Replay {
    /// The step shown.
    pub fn current(&self) -> Option<&crate::run::Step> {
        self.episodes.get(self.episode)?.steps.get(self.step)
    }

    /// Show the next step; `false` when every step has been shown.
    pub fn advance(&mut self) -> bool {
        let Some(ep) = self.episodes.get(self.episode) else { return false };
        if self.step + 1 < ep.steps.len() {
            self.step += 1;
            return true;
        }
        if self.episode + 1 < self.episodes.len() {
            self.episode += 1;
            self.step = 0;
            return true;
        }
        false
    }
}

/// The play view's state: the task list, the task picker, and the group being played.
pub struct Play {
    pub tasks: TasksHandle,
    pub goal_cursor: usize,
    pub group_size: usize,
    pub session: Option<GroupPlay>,
    /// The page an episode ended on, until the next key.
    pub finished_page: Option<FinishedPage>,
    /// Abandoning the group was asked for once: the same key again abandons it.
    pub confirm_abandon: bool,
    /// The policy was asked to play step by step: its episodes arrive into `replay`.
    pub watching: bool,
    pub replay: Option<Replay>,
}

impl std::fmt::Debug for Play {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Play").field("tasks", &self.tasks.len()).field("goal_cursor", &self.goal_cursor).finish()
    }
}

/// One episode group being played.
pub struct GroupPlay {
    pub goal: usize,
    pub group: String,
    pub size: usize,
    /// The episode in progress.
    pub env: Box<dyn Environment>,
    pub recorder: EpisodeRecorder,
    /// Episodes of the group finished so far.
    pub finished: Vec<Episode>,
    /// Selected entry of the available actions.
    pub cursor: usize,
}

/// What an action in the play view led to.
#[derive(Debug, PartialEq)]
pub enum Played {
    /// The episode goes on.
    Step { reward: f64 },
    /// The episode ended; the next one of the group starts from the same state.
    EpisodeDone { reward: f64, finished: usize, size: usize },
    /// The last episode ended: the whole group, to be written to the run.
    GroupDone(Vec<Episode>),
}

impl Play {
    pub fn new(tasks: TasksHandle) -> Play {
        Play {
            tasks,
            goal_cursor: 0,
            group_size: DEFAULT_GROUP_SIZE,
            session: None,
            finished_page: None,
            confirm_abandon: false,
            watching: false,
            replay: None,
        }
    }

    /// Start a group of the selected goal under the (unused) group name `group`.
    pub fn start(&mut self, group: String) {
        let goal = self.goal_cursor;
        if let Ok(started) = self.tasks.start(goal) {
            let env = started.env;
            let size = self.group_size;
            self.session = Some(GroupPlay {
                goal,
                group,
                size,
                env,
                recorder: EpisodeRecorder::new(),
                finished: Vec::new(),
                cursor: 0,
            });
        }
    }

    /// Take `action` in the episode in progress.
    pub fn act(&mut self, action: &str) -> Option<Played> {
        let session = self.session.as_mut()?;
        let chosen = session.actions().get(session.cursor).cloned();
        let out = session.recorder.step(session.env.as_mut(), action);
        // The cursor stays on the action it was on when the page still offers it (options on an item page),
        // else it goes to the first.
        session.cursor = chosen.and_then(|c| session.actions().iter().position(|a| *a == c)).unwrap_or(0);
        if !out.done {
            return Some(Played::Step { reward: out.reward });
        }
        let recorder = std::mem::take(&mut session.recorder);
        let id = format!("{}-{}", session.group, session.finished.len());
        let task = match self.tasks.task(session.goal) {
            Some(info) => Task { id: info.id, instruction: info.instruction, extra: Default::default() },
            None => Task { id: session.goal.to_string(), instruction: String::new(), extra: Default::default() },
        };
        let mut episode = recorder.finish(session.env.as_ref(), id, session.group.clone(), task);
        mark_played(&mut episode);
        let page = FinishedPage {
            observation: session.env.observation().to_string(),
            reward: out.reward,
            explained: session.env.reward_explained(),
            episode: session.finished.len() + 1,
            size: session.size,
            group_done: session.finished.len() + 1 >= session.size,
        };
        session.finished.push(episode);
        self.finished_page = Some(page);
        Some(self.after_episodes(out.reward))
    }

    /// Episodes the policy played for the rest of the group (the unfinished episode in progress is dropped).
    pub fn add_generated(&mut self, episodes: Vec<Episode>) -> Option<Played> {
        let session = self.session.as_mut()?;
        let reward = episodes.last().map_or(0.0, Episode::total_reward);
        session.finished.extend(episodes.into_iter().map(|mut e| {
            mark_played(&mut e);
            e
        }));
        Some(self.after_episodes(reward))
    }

    fn after_episodes(&mut self, reward: f64) -> Played {
        let session = self.session.as_mut().expect("called with a session");
        if session.finished.len() >= session.size {
            let done = self.session.take().expect("checked above");
            return Played::GroupDone(done.finished);
        }
        session.recorder = EpisodeRecorder::new();
        if let Ok(started) = self.tasks.start(session.goal) {
            session.env = started.env;
        }
        Played::EpisodeDone { reward, finished: session.finished.len(), size: session.size }
    }
}

impl GroupPlay {
    pub fn actions(&self) -> Vec<String> {
        self.env.available_actions()
    }

    /// Episodes still to play, counting the one in progress.
    pub fn remaining(&self) -> usize {
        self.size.saturating_sub(self.finished.len())
    }

    /// The selected action, or `None` when it is a template (WebShop's search bar: a query must be typed
    /// first).
    pub fn selected_action(&self) -> Option<String> {
        self.actions().get(self.cursor).filter(|a| template_name(a).is_none()).cloned()
    }

    /// The name of the selected template (`search` for WebShop's search bar), when a template is selected.
    pub fn selected_template(&self) -> Option<String> {
        self.actions().get(self.cursor).and_then(|a| template_name(a)).map(str::to_owned)
    }

    /// The name of an action template offered in this episode so far (WebShop's `search`), if any: what the
    /// actions' title tells the user to type into.
    pub fn template_seen(&self) -> Option<String> {
        let recorded = self.recorder.steps().iter().filter_map(|s| s.available_actions.as_ref()).flatten();
        let current = self.actions();
        recorded.chain(current.iter()).find_map(|a| template_name(a)).map(str::to_owned)
    }

    /// Steps taken in the episode in progress.
    pub fn steps(&self) -> usize {
        self.recorder.steps().len()
    }
}

/// A group name for goal `goal` not used by any of `taken`.
pub fn fresh_group_name<'a>(goal: usize, taken: impl Iterator<Item = &'a str> + Clone) -> String {
    (1..)
        .map(|k| format!("play-goal-{goal}-{k}"))
        .find(|name| !taken.clone().any(|t| t == name))
        .expect("an unbounded range has a free name")
}
