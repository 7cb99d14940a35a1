//! Rollouts: many episodes stepped in lockstep so that each step is one batched policy forward pass, recorded
//! both as run-format episodes (what the TUI shows) and as training decisions (what the update consumes).

use rand::Rng;
use serde_json::Map;
use tch::Device;

use super::env::{Environment, Started};
use super::features::{self, ActionKind, Decision, History, Instruction, PageView};
use super::policy::{Batch, Policy};
use super::TrainError;
use crate::run::{Episode, Outcome, Step, Task, REWARD_INFO_KEY};

/// How actions are picked.
pub enum Chooser<'a, R: Rng> {
    /// Sample from the policy (training rollouts).
    Sample(&'a Policy, &'a mut R),
    /// The policy's most likely action (evaluation).
    Greedy(&'a Policy),
    /// The rule baseline: search the full instruction, click the first result, buy.
    Rule,
}

/// One episode being played.
#[derive(Clone)]
pub struct Slot<E> {
    pub env: E,
    pub task_id: String,
    pub instruction_text: String,
    instruction: Instruction,
    history: History,
    pub steps: Vec<Step>,
    /// The decision at each step and the index of the chosen action in it.
    pub decisions: Vec<(Decision, i64)>,
    done: bool,
}

impl<E: Environment> Slot<E> {
    pub fn new(started: Started<E>) -> Slot<E> {
        Slot {
            instruction: Instruction::new(&started.instruction),
            env: started.env,
            task_id: started.task_id,
            instruction_text: started.instruction,
            history: History::default(),
            steps: Vec::new(),
            decisions: Vec::new(),
            done: false,
        }
    }

    /// Episode outcome: WebShop scores an episode by the reward of its purchase; success is a perfect one.
    pub fn outcome(&self) -> Outcome {
        let score: f64 = self.steps.iter().map(|s| s.reward).sum();
        let mut extra = Map::new();
        if let Some(info) = self.env.reward_info() {
            extra.insert(REWARD_INFO_KEY.to_owned(), info);
        }
        Outcome { success: (score - 1.0).abs() < 1e-9, score, extra }
    }

    /// The run-format episode.
    pub fn to_episode(&self, id: String, group: String, iteration: i64) -> Episode {
        Episode {
            id,
            group,
            iteration,
            task: Some(Task {
                id: self.task_id.clone(),
                instruction: self.instruction_text.clone(),
                extra: Map::new(),
            }),
            steps: self.steps.clone(),
            outcome: Some(self.outcome()),
            advantages: None,
            extra: Map::new(),
            read_from: Default::default(),
        }
    }
}

/// The rule baseline's choice among `actions` on a page of type `page`.
fn rule_choice(actions: &[String], page: &str) -> usize {
    let first_of = |kind: ActionKind| actions.iter().position(|a| ActionKind::of(a, page) == kind);
    // Search candidates start with the full instruction, so the first search action is "search the instruction".
    first_of(ActionKind::Search)
        .or_else(|| first_of(ActionKind::Product))
        .or_else(|| first_of(ActionKind::Buy))
        .unwrap_or(0)
}

/// Index of a draw from the categorical distribution with log-probabilities `logp` (length ≥ n).
fn sample_index(logp: &[f32], n: usize, rng: &mut impl Rng) -> usize {
    let u: f64 = rng.random();
    let mut acc = 0.0;
    for (i, lp) in logp[..n].iter().enumerate() {
        acc += f64::from(lp.exp());
        if u < acc {
            return i;
        }
    }
    // Rounding can leave the total just under u: the last action is the one whose mass was cut.
    n - 1
}

fn argmax(values: &[f32]) -> usize {
    values.iter().enumerate().fold(0, |best, (i, v)| if *v > values[best] { i } else { best })
}

/// Play every slot to the end (or `step_limit` steps). Returns the number of environment steps taken.
pub fn play<E: Environment, R: Rng>(
    slots: &mut [Slot<E>],
    chooser: &mut Chooser<'_, R>,
    step_limit: usize,
    device: Device,
) -> Result<usize, TrainError> {
    let mut env_steps = 0;
    for t in 0..step_limit {
        let mut live: Vec<usize> = Vec::new();
        let mut candidates: Vec<Vec<String>> = Vec::new();
        let mut anchors: Vec<String> = Vec::new();
        let mut decisions: Vec<Decision> = Vec::new();
        for (i, slot) in slots.iter_mut().enumerate() {
            if slot.done {
                continue;
            }
            let actions = features::candidate_actions(&slot.env.available_actions(), &slot.instruction);
            if actions.is_empty() {
                // Nothing to do on this page (WebShop's done page): the episode is over.
                slot.done = true;
                continue;
            }
            let anchor = slot.env.anchor();
            let view = PageView {
                observation: slot.env.observation(),
                anchor: &anchor,
                page: slot.env.page(),
                step: t,
                step_limit,
            };
            decisions.push(features::featurize(&slot.instruction, view, &slot.history, &actions));
            live.push(i);
            candidates.push(actions);
            anchors.push(anchor);
        }
        if live.is_empty() {
            break;
        }
        let log_probs: Option<(Vec<f32>, usize)> = match chooser {
            Chooser::Sample(policy, _) | Chooser::Greedy(policy) => {
                let refs: Vec<&Decision> = decisions.iter().collect();
                let batch = Batch::new(&refs, device);
                let logp = tch::no_grad(|| policy.log_probs(&batch));
                let flat: Vec<f32> = Vec::try_from(logp.view([-1]).to_device(Device::Cpu))?;
                Some((flat, batch.width as usize))
            }
            Chooser::Rule => None,
        };
        let pending = live.iter().zip(candidates).zip(anchors).zip(decisions);
        for (j, (((&i, actions), anchor), decision)) in pending.enumerate() {
            let slot = &mut slots[i];
            let (choice, logprob) = match (&mut *chooser, &log_probs) {
                (Chooser::Sample(_, rng), Some((flat, width))) => {
                    let row = &flat[j * width..(j + 1) * width];
                    let k = sample_index(row, actions.len(), *rng);
                    (k, Some(row[k]))
                }
                (Chooser::Greedy(_), Some((flat, width))) => {
                    let row = &flat[j * width..j * width + actions.len()];
                    let k = argmax(row);
                    (k, Some(row[k]))
                }
                _ => (rule_choice(&actions, slot.env.page()), None),
            };
            let action = &actions[choice];
            let mut step = Step::new(slot.env.observation(), action.clone(), 0.0);
            step.anchor = Some(anchor.into());
            step.page = Some(slot.env.page().to_string());
            step.tokens = Some(features::token_count(action));
            step.logprob = logprob.map(f64::from);
            slot.history.push(action, slot.env.page());
            let transition = slot.env.step(action);
            env_steps += 1;
            step.reward = transition.reward;
            step.valid = transition.valid;
            step.available_actions = Some(actions.clone());
            slot.steps.push(step);
            slot.decisions.push((decision, choice as i64));
            slot.done = transition.done;
        }
    }
    Ok(env_steps)
}
