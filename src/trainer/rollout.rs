//! Rollouts: many episodes stepped in lockstep so that each step is one batched policy forward pass, recorded
//! both as run-format episodes (what the TUI shows) and as training decisions (what the update consumes).

use std::sync::Arc;

use rand::Rng;
use serde_json::Map;
use tch::Device;

use super::error::TrainError;
use super::policy::{Batch, Policy};
use crate::env::features::{words, Decision, PolicyFeatures, StateView, Taken};
use crate::env::{step_taken_in, Environment, Started, Transition};
use crate::run::{Episode, Outcome, Step, Task};

/// How actions are picked.
pub enum Chooser<'a, R: Rng> {
    /// Sample from the policy (training rollouts).
    Sample(&'a Policy, &'a mut R),
    /// The policy's most likely action (evaluation).
    Greedy(&'a Policy),
    /// The environment's rule baseline ([`PolicyFeatures::rule_choice`]).
    Rule,
}

/// One episode being played.
#[derive(Clone)]
pub struct Slot {
    pub env: Box<dyn Environment>,
    pub task_id: String,
    pub instruction_text: String,
    features: Arc<dyn PolicyFeatures>,
    history: Vec<Taken>,
    pub steps: Vec<Step>,
    /// The decision at each step and the index of the chosen action in it.
    pub decisions: Vec<(Decision, i64)>,
    done: bool,
}

impl Slot {
    pub fn new(started: Started) -> Slot {
        Slot {
            features: started.features,
            env: started.env,
            task_id: started.task_id,
            instruction_text: started.instruction,
            history: Vec::new(),
            steps: Vec::new(),
            decisions: Vec::new(),
            done: false,
        }
    }

    /// Episode outcome, as the environment scores it.
    pub fn outcome(&self) -> Outcome {
        self.env.outcome()
    }

    /// Take `action` in the current state and record the step: its observation, anchor, page, state, the
    /// `candidates` chosen among, the policy's log-probability (when a policy chose it), reward and validity.
    fn record(&mut self, action: &str, anchor: String, candidates: Vec<String>, logprob: Option<f32>) -> Transition {
        let mut step = step_taken_in(&*self.env, action);
        step.anchor = Some(anchor.into());
        // The compact policy reads an action as words, one token each.
        step.tokens = Some(words(action).count() as u64);
        step.logprob = logprob.map(f64::from);
        self.history.push(Taken { action: action.to_owned(), page: step.page.clone() });
        let transition = self.env.step(action);
        step.reward = transition.reward;
        step.valid = transition.valid;
        step.available_actions = Some(candidates);
        self.steps.push(step);
        self.done = transition.done;
        transition
    }

    /// Take `action`, which no policy chose (a recorded action replayed, the first action of a branch), and
    /// record the step as a rollout does. `decisions` keeps only the policy's choices.
    pub fn act(&mut self, action: &str) -> Transition {
        let candidates = self.features.candidates(&self.env.available_actions());
        let anchor = self.env.anchor();
        self.record(action, anchor, candidates, None)
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
pub fn play<R: Rng>(
    slots: &mut [Slot],
    chooser: &mut Chooser<'_, R>,
    step_limit: usize,
    device: Device,
) -> Result<usize, TrainError> {
    let mut env_steps = 0;
    loop {
        let mut live: Vec<usize> = Vec::new();
        let mut candidates: Vec<Vec<String>> = Vec::new();
        let mut anchors: Vec<String> = Vec::new();
        let mut decisions: Vec<Decision> = Vec::new();
        let mut rule_choices: Vec<usize> = Vec::new();
        for (i, slot) in slots.iter_mut().enumerate() {
            // A slot may start part-way (a state rebuilt from a recorded episode): its own step count is where
            // it is, and the limit counts from its first step.
            if slot.done || slot.steps.len() >= step_limit {
                continue;
            }
            let actions = slot.features.candidates(&slot.env.available_actions());
            if actions.is_empty() {
                // Nothing to do in this state (WebShop's done page): the episode is over.
                slot.done = true;
                continue;
            }
            let anchor = slot.env.anchor();
            let view = StateView {
                observation: slot.env.observation(),
                anchor: &anchor,
                page: slot.env.page(),
                step: slot.steps.len(),
                step_limit,
            };
            if matches!(chooser, Chooser::Rule) {
                rule_choices.push(slot.features.rule_choice(view, &actions));
            }
            decisions.push(slot.features.describe(view, &slot.history, &actions));
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
                _ => (rule_choices[j], None),
            };
            let action = actions[choice].clone();
            slot.record(&action, anchor, actions, logprob);
            env_steps += 1;
            slot.decisions.push((decision, choice as i64));
        }
    }
    Ok(env_steps)
}
