//! One Sokoban episode behind the environment port.
//!
//! Rules (Gym-Sokoban's rewards, verl-agent's text): actions `up`, `down`, `left`, `right`; every step costs
//! −0.1; pushing a box onto a target gives +1, pushing one off a target −1; solving (every box on a target)
//! gives +10 and ends the episode; so does the step limit. A move into a wall, or against a box that cannot
//! move, is a valid no-op (it still costs its −0.1 and a step, as in Gym-Sokoban); any other text is an invalid
//! action (`valid: false`), also a no-op that costs −0.1 and a step.

use serde_json::json;

use super::level::{Level, MoveEffect, MOVES};
use crate::env::{Environment, Transition};
use crate::run::{Outcome, REWARD_INFO_KEY};

pub const STEP_REWARD: f64 = -0.1;
pub const BOX_ON_TARGET_REWARD: f64 = 1.0;
pub const BOX_OFF_TARGET_REWARD: f64 = -1.0;
pub const SOLVED_REWARD: f64 = 10.0;

#[derive(Clone, Debug)]
pub struct SokobanEnv {
    level: Level,
    observation: String,
    max_steps: usize,
    steps: usize,
    score: f64,
    done: bool,
}

impl SokobanEnv {
    pub fn new(level: Level, max_steps: usize) -> SokobanEnv {
        let observation = level.render();
        SokobanEnv { level, observation, max_steps, steps: 0, score: 0.0, done: false }
    }
}

/// The move an action names.
pub fn direction(action: &str) -> Option<(i32, i32)> {
    MOVES.iter().find(|(name, ..)| *name == action).map(|&(_, dr, dc)| (dr, dc))
}

impl Environment for SokobanEnv {
    fn observation(&self) -> &str {
        &self.observation
    }

    /// The grid is the whole state: the exact anchor is the observation itself.
    fn anchor(&self) -> String {
        self.observation.clone()
    }

    fn available_actions(&self) -> Vec<String> {
        if self.done {
            return Vec::new();
        }
        MOVES.iter().map(|(name, ..)| (*name).to_owned()).collect()
    }

    fn step(&mut self, action: &str) -> Transition {
        if self.done {
            return Transition { reward: 0.0, done: true, valid: false };
        }
        self.steps += 1;
        let mut reward = STEP_REWARD;
        let valid = match direction(action) {
            None => false,
            Some(d) => {
                if let MoveEffect::Push { from, to } = self.level.apply(d) {
                    let targets = &self.level.targets;
                    reward += match (targets[from], targets[to]) {
                        (false, true) => BOX_ON_TARGET_REWARD,
                        (true, false) => BOX_OFF_TARGET_REWARD,
                        _ => 0.0,
                    };
                }
                true
            }
        };
        let solved = self.level.solved();
        if solved {
            reward += SOLVED_REWARD;
        }
        self.done = solved || self.steps >= self.max_steps;
        self.observation = self.level.render();
        self.score += reward;
        Transition { reward, done: self.done, valid }
    }

    /// Solved or not; the score is the sum of the step rewards.
    fn outcome(&self) -> Outcome {
        let mut outcome = Outcome { success: self.level.solved(), score: self.score, ..Outcome::default() };
        let info = json!({
            "solved": self.level.solved(),
            "boxes_on_targets": self.level.boxes_on_targets(),
            "boxes": self.level.box_count(),
            "steps": self.steps,
        });
        outcome.extra.insert(REWARD_INFO_KEY.to_owned(), info);
        outcome
    }

    /// The board (boxes, player, walls and targets: what the observation shows) and the steps taken. The
    /// score so far is left out: it does not change what follows.
    fn state_fingerprint(&self) -> Option<String> {
        Some(format!("step {}{}\n{}", self.steps, if self.done { " over" } else { "" }, self.observation))
    }

    fn box_clone(&self) -> Box<dyn Environment> {
        Box::new(self.clone())
    }
}
