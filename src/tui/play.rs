//! Live play: WebShop episodes played by hand inside the TUI, as episode groups ("group play": N episodes of
//! one goal from the same start state). A finished group is handed back whole, to be written to the run like a
//! trainer's group, so its anchor groups and advantages appear the moment the group is complete. The policy
//! can play the rest of a group (see `Effects::autoplay`).

use std::sync::Arc;

use crate::run::Episode;
use crate::webshop::actions::SEARCH_ACTION;
use crate::webshop::env::{EpisodeRecorder, WebShopEnv};
use crate::webshop::shop::Shop;

/// The shop play takes its goals and environments from, shared with the app that opened it.
pub type ShopHandle = Arc<Shop>;

pub const DEFAULT_GROUP_SIZE: usize = 4;
pub const MAX_GROUP_SIZE: usize = 16;
/// Played episodes are written with this iteration: they belong to no training iteration.
pub const PLAY_ITERATION: i64 = 0;

/// The play view's state: the shop, the goal picker, and the group being played.
pub struct Play {
    pub shop: Arc<Shop>,
    pub goal_cursor: usize,
    pub group_size: usize,
    pub session: Option<GroupPlay>,
}

impl std::fmt::Debug for Play {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Play").field("goals", &self.shop.goals.len()).field("goal_cursor", &self.goal_cursor).finish()
    }
}

/// One episode group being played.
pub struct GroupPlay {
    pub goal: usize,
    pub group: String,
    pub size: usize,
    /// The episode in progress.
    pub env: WebShopEnv,
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
    pub fn new(shop: Arc<Shop>) -> Play {
        Play { shop, goal_cursor: 0, group_size: DEFAULT_GROUP_SIZE, session: None }
    }

    /// Start a group of the selected goal under the (unused) group name `group`.
    pub fn start(&mut self, group: String) {
        let goal = self.goal_cursor;
        if let Some(env) = self.shop.start(goal) {
            let size = self.group_size;
            self.session =
                Some(GroupPlay { goal, group, size, env, recorder: EpisodeRecorder::new(), finished: Vec::new(), cursor: 0 });
        }
    }

    /// Take `action` in the episode in progress.
    pub fn act(&mut self, action: &str) -> Option<Played> {
        let session = self.session.as_mut()?;
        let out = session.recorder.step(&mut session.env, action);
        session.cursor = 0;
        if !out.done {
            return Some(Played::Step { reward: out.reward });
        }
        let recorder = std::mem::take(&mut session.recorder);
        let id = format!("{}-{}", session.group, session.finished.len());
        let mut episode = recorder.finish(&session.env, id, session.group.clone(), Shop::task_id(session.goal));
        episode.iteration = PLAY_ITERATION;
        session.finished.push(episode);
        Some(self.after_episodes(out.reward))
    }

    /// Episodes the policy played for the rest of the group (the unfinished episode in progress is dropped).
    pub fn add_generated(&mut self, episodes: Vec<Episode>) -> Option<Played> {
        let session = self.session.as_mut()?;
        let reward = episodes.last().map_or(0.0, Episode::total_reward);
        session.finished.extend(episodes);
        Some(self.after_episodes(reward))
    }

    fn after_episodes(&mut self, reward: f64) -> Played {
        let session = self.session.as_mut().expect("called with a session");
        if session.finished.len() >= session.size {
            let done = self.session.take().expect("checked above");
            return Played::GroupDone(done.finished);
        }
        session.recorder = EpisodeRecorder::new();
        if let Some(env) = self.shop.start(session.goal) {
            session.env = env;
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

    /// The selected action, or `None` when it is the search bar (a query must be typed first).
    pub fn selected_action(&self) -> Option<String> {
        self.actions().get(self.cursor).filter(|a| *a != SEARCH_ACTION).cloned()
    }

    pub fn search_selected(&self) -> bool {
        self.actions().get(self.cursor).is_some_and(|a| a == SEARCH_ACTION)
    }
}

/// A group name for goal `goal` not used by any of `taken`.
pub fn fresh_group_name<'a>(goal: usize, taken: impl Iterator<Item = &'a str> + Clone) -> String {
    (1..)
        .map(|k| format!("play-goal-{goal}-{k}"))
        .find(|name| !taken.clone().any(|t| t == name))
        .expect("an unbounded range has a free name")
}
