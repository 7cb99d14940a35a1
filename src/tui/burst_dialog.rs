//! The training-burst dialog's side of the state: the form (what to start) and the status of the burst that
//! runs (fed by [`BurstUpdate`]s translated from the trainer's [`TrainEvent`]s). Nothing here needs libtorch:
//! the form becomes a [`TrainRequest`] for [`crate::plugin_host`], which runs it in the training plugin and says
//! clearly when the plugin cannot be loaded.

use std::path::Path;

use clap::ValueEnum;

use crate::advantage::estimators::{EstimatorKind, EstimatorSettings};
use crate::advantage::AdvantageOverrides;
use crate::plugin_host::{
    DeviceChoice, FamilyEstimator, PpoConfig, RunMode, TaskSource, TrainConfig, TrainEvent, TrainRequest,
};

/// Where the burst's network runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BurstDevice {
    Auto,
    Cpu,
    Cuda,
}

/// What the dialog starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BurstRequest {
    pub iterations: u64,
    /// E: goals per iteration.
    pub goals: usize,
    /// N: episodes per goal.
    pub group_size: usize,
    pub learning_rate: f64,
    pub estimator: EstimatorKind,
    pub device: BurstDevice,
}

impl Default for BurstRequest {
    fn default() -> Self {
        // The trainer's defaults, with a burst short enough to watch.
        BurstRequest {
            iterations: 5,
            goals: 16,
            group_size: 8,
            learning_rate: 1e-3,
            estimator: EstimatorKind::Gigpo,
            device: BurstDevice::Auto,
        }
    }
}

/// The dialog's fields, in screen order: one table gives each its label, its value text and its choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BurstField {
    Iterations,
    Goals,
    GroupSize,
    LearningRate,
    Estimator,
    Device,
}

impl BurstField {
    pub const ALL: [BurstField; 6] = [
        BurstField::Iterations,
        BurstField::Goals,
        BurstField::GroupSize,
        BurstField::LearningRate,
        BurstField::Estimator,
        BurstField::Device,
    ];

    pub fn label(self) -> &'static str {
        match self {
            BurstField::Iterations => "iterations",
            BurstField::Goals => "goals / iteration",
            BurstField::GroupSize => "group size N",
            BurstField::LearningRate => "learning rate",
            BurstField::Estimator => "estimator",
            BurstField::Device => "device",
        }
    }

    /// The field `by` places further down the list, wrapping around.
    pub fn moved(self, by: isize) -> BurstField {
        let n = Self::ALL.len() as isize;
        let i = Self::ALL.iter().position(|f| *f == self).unwrap_or(0) as isize;
        Self::ALL[(i + by).rem_euclid(n) as usize]
    }
}

const ITERATIONS: &[u64] = &[1, 2, 3, 5, 10, 20, 50, 100, 200];
const GOALS: &[usize] = &[2, 4, 8, 16, 32, 64];
const GROUP_SIZES: &[usize] = &[2, 4, 8, 16];
const LEARNING_RATES: &[f64] = &[1e-4, 3e-4, 1e-3, 3e-3, 1e-2];
const DEVICES: &[BurstDevice] = &[BurstDevice::Auto, BurstDevice::Cpu, BurstDevice::Cuda];

/// The neighbouring value of `v` in `values` (clamped at the ends; a value not in the list moves to the start).
fn step<T: Copy + PartialEq>(values: &[T], v: T, up: bool) -> T {
    let i = values.iter().position(|x| *x == v).unwrap_or(0);
    let j = if up { (i + 1).min(values.len() - 1) } else { i.saturating_sub(1) };
    values[j]
}

impl BurstRequest {
    /// `field` moved one value up or down.
    pub fn adjust(mut self, field: BurstField, up: bool) -> BurstRequest {
        match field {
            BurstField::Iterations => self.iterations = step(ITERATIONS, self.iterations, up),
            BurstField::Goals => self.goals = step(GOALS, self.goals, up),
            BurstField::GroupSize => self.group_size = step(GROUP_SIZES, self.group_size, up),
            BurstField::LearningRate => self.learning_rate = step(LEARNING_RATES, self.learning_rate, up),
            // Every estimator of the family trains (the successors at their authors' defaults).
            BurstField::Estimator => self.estimator = step(EstimatorKind::value_variants(), self.estimator, up),
            BurstField::Device => self.device = step(DEVICES, self.device, up),
        }
        self
    }

    /// The burst into the open run `run` on `tasks` (the run's environment). The training side decides how it
    /// continues the run (its checkpoint, else a fresh policy after its episodes).
    pub fn train_request(&self, run: &Path, tasks: TaskSource) -> TrainRequest {
        TrainRequest {
            run: run.to_path_buf(),
            tasks,
            config: TrainConfig {
                iterations: self.iterations,
                goals_per_iteration: self.goals,
                episodes_per_goal: self.group_size,
                device: match self.device {
                    BurstDevice::Auto => DeviceChoice::Auto,
                    BurstDevice::Cpu => DeviceChoice::Cpu,
                    BurstDevice::Cuda => DeviceChoice::Cuda,
                },
                ppo: PpoConfig { learning_rate: self.learning_rate, ..PpoConfig::default() },
                advantage: AdvantageOverrides { estimator: self.estimator.engine(), ..AdvantageOverrides::default() },
                estimator: self
                    .estimator
                    .engine()
                    .is_none()
                    .then_some(FamilyEstimator { kind: self.estimator, settings: EstimatorSettings::default() }),
                ..TrainConfig::default()
            },
            mode: RunMode::Continue,
        }
    }

    pub fn value(&self, field: BurstField) -> String {
        match field {
            BurstField::Iterations => self.iterations.to_string(),
            BurstField::Goals => self.goals.to_string(),
            BurstField::GroupSize => self.group_size.to_string(),
            BurstField::LearningRate => format!("{:e}", self.learning_rate),
            BurstField::Estimator => super::settings_fields::name(self.estimator),
            BurstField::Device => format!("{:?}", self.device).to_lowercase(),
        }
    }
}

/// What the app tells the state about the running burst.
#[derive(Clone, Debug, PartialEq)]
pub enum BurstUpdate {
    Started {
        first_iteration: u64,
        iterations: u64,
        device: String,
        how: String,
    },
    /// Greedy evaluation before training (fresh runs): the policy's and the rule baseline's success.
    Evaluated {
        success: f64,
        baseline: f64,
    },
    Iteration(BurstPoint),
    Finished {
        completed: u64,
        cancelled: bool,
    },
    Failed(String),
}

impl From<TrainEvent> for BurstUpdate {
    fn from(event: TrainEvent) -> BurstUpdate {
        match event {
            TrainEvent::Started { first_iteration, iterations, device, how, .. } => {
                BurstUpdate::Started { first_iteration, iterations, device, how }
            }
            TrainEvent::Evaluated { policy, baseline } => {
                BurstUpdate::Evaluated { success: policy.success, baseline: baseline.success }
            }
            TrainEvent::Iteration(r) => BurstUpdate::Iteration(BurstPoint {
                iteration: r.iteration,
                success: r.success,
                score: r.score,
                eval_success: r.eval.map(|e| e.success),
                env_steps_per_s: r.env_steps_per_s,
                seconds: r.rollout_s + r.update_s,
            }),
            TrainEvent::Finished { completed, cancelled, .. } => BurstUpdate::Finished { completed, cancelled },
            TrainEvent::Failed { error } => BurstUpdate::Failed(error),
        }
    }
}

/// One finished iteration, for the progress gauge and the live chart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BurstPoint {
    pub iteration: u64,
    /// Training rollouts' success rate and mean score.
    pub success: f64,
    pub score: f64,
    /// Greedy success on the test goals, on evaluation iterations.
    pub eval_success: Option<f64>,
    pub env_steps_per_s: f64,
    pub seconds: f64,
}

/// The burst as the dialog and the status bar show it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BurstStatus {
    pub first_iteration: u64,
    pub iterations: u64,
    pub device: String,
    /// How the burst relates to the run ("new run", "resumed from iteration 7", ...).
    pub how: String,
    pub points: Vec<BurstPoint>,
    pub baseline: Option<f64>,
    pub initial_success: Option<f64>,
    /// Set once the burst ended: how.
    pub ended: Option<String>,
    /// A cancel was asked for and the current iteration is finishing.
    pub cancelling: bool,
}

impl BurstStatus {
    pub fn running(&self) -> bool {
        self.ended.is_none()
    }

    pub fn completed(&self) -> u64 {
        self.points.len() as u64
    }

    /// Share of the burst done, 0..=1.
    pub fn progress(&self) -> f64 {
        if self.iterations == 0 {
            return 1.0;
        }
        (self.completed() as f64 / self.iterations as f64).min(1.0)
    }

    pub fn apply(&mut self, update: BurstUpdate) {
        match update {
            BurstUpdate::Started { first_iteration, iterations, device, how } => {
                *self = BurstStatus { first_iteration, iterations, device, how, ..BurstStatus::default() };
            }
            BurstUpdate::Evaluated { success, baseline } => {
                self.initial_success = Some(success);
                self.baseline = Some(baseline);
            }
            BurstUpdate::Iteration(point) => self.points.push(point),
            BurstUpdate::Finished { completed, cancelled } => {
                self.ended = Some(if cancelled {
                    format!("cancelled after {completed} iteration(s)")
                } else {
                    format!("finished {completed} iteration(s)")
                });
            }
            BurstUpdate::Failed(e) => self.ended = Some(format!("failed: {e}")),
        }
    }
}
