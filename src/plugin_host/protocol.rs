//! What the host (the `gigscope` binary, which never links libtorch) and the training plugin
//! (`libgigscope_train.so`, tch/libtorch) say to each other: requests, events and results, all plain serde types
//! sent as JSON over the plugin's C ABI. The trainer's configuration lives here too, so that `gigscope train`'s
//! flags and the TUI's burst form can be turned into a request without the trainer being compiled in.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::advantage::estimators::{EstimatorKind, EstimatorSettings};
use crate::advantage::AdvantageOverrides;
use crate::env::EnvOptions;
use crate::run::Episode;

/// Where the network runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum DeviceChoice {
    Cpu,
    Cuda,
    /// CUDA when libtorch finds a GPU, else the CPU.
    Auto,
}

/// Hyper-parameters of the PPO update.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PpoConfig {
    pub learning_rate: f64,
    /// ε of the clipped ratio.
    pub clip: f64,
    pub entropy_coef: f64,
    /// Weight of KL(π ‖ π_ref); 0 turns the reference policy off.
    pub kl_coef: f64,
    /// Passes over the iteration's samples.
    pub epochs: usize,
    /// Samples (steps) per mini-batch.
    pub minibatch: usize,
    pub max_grad_norm: f64,
}

impl Default for PpoConfig {
    fn default() -> Self {
        PpoConfig {
            learning_rate: 1e-3,
            clip: 0.2,
            entropy_coef: 0.01,
            kl_coef: 0.0,
            epochs: 2,
            minibatch: 128,
            max_grad_norm: 1.0,
        }
    }
}

/// Network sizes; part of a checkpoint's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyShape {
    pub embed: i64,
    pub hidden: i64,
}

impl Default for PolicyShape {
    fn default() -> Self {
        PolicyShape { embed: 32, hidden: 128 }
    }
}

/// Everything a burst is configured by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// Iterations to run in this burst (a resumed run continues its numbering).
    pub iterations: u64,
    /// E: goals per iteration.
    pub goals_per_iteration: usize,
    /// N: episodes per goal, all from the same start state (one episode group).
    pub episodes_per_goal: usize,
    pub step_limit: usize,
    /// Evaluate every k iterations (0: never).
    pub eval_every: u64,
    /// The first this-many test goals are the fixed evaluation set.
    pub eval_goals: usize,
    pub seed: u64,
    pub device: DeviceChoice,
    /// Torch CPU threads (process-wide). The network is small: beyond one thread, synchronisation costs more
    /// than it saves, and the machines this runs on are shared.
    pub threads: i32,
    pub ppo: PpoConfig,
    pub shape: PolicyShape,
    /// Advantage settings given for this burst; layered over the run's `run.json`, then the defaults.
    pub advantage: AdvantageOverrides,
    /// An estimator of the family whose advantages train the policy instead of the engine's
    /// (`advantage.estimator`), computed under the run's settings from each iteration's batch. Not layered: a
    /// burst without one trains with the engine's estimator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimator: Option<FamilyEstimator>,
    /// Continue from the run's checkpoint.
    pub resume: bool,
    /// The run already holds episodes but no checkpoint (recorded elsewhere, or played by hand): start a fresh
    /// policy and number this burst's iterations after the run's last one.
    #[serde(default)]
    pub append: bool,
    /// Name recorded in a new run's `run.json`.
    pub name: Option<String>,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            iterations: 20,
            goals_per_iteration: 16,
            episodes_per_goal: 8,
            step_limit: 15,
            eval_every: 5,
            eval_goals: 100,
            seed: 0,
            device: DeviceChoice::Auto,
            threads: 1,
            ppo: PpoConfig::default(),
            shape: PolicyShape::default(),
            advantage: AdvantageOverrides::default(),
            estimator: None,
            resume: false,
            append: false,
            name: None,
        }
    }
}

/// An estimator of the family ([`crate::advantage::estimators`]) and its own settings, as a burst trains with it
/// and `run.json` records it (key [`ESTIMATOR_KEY`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FamilyEstimator {
    pub kind: EstimatorKind,
    #[serde(default)]
    pub settings: EstimatorSettings,
}

/// Key of `run.json` where a run trained with a [`FamilyEstimator`] records it: the estimator whose advantages
/// the latest burst wrote into its episodes (absent when the engine's estimator, `advantage.estimator`, did).
pub const ESTIMATOR_KEY: &str = "estimator";

/// Greedy success rate and mean score on the evaluation goals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalResult {
    pub success: f64,
    pub score: f64,
    pub episodes: usize,
}

/// Which tasks a training run (or the policy's play) takes: an environment of the registry
/// ([`crate::env_registry`]) set up with its options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskSource {
    pub env: String,
    #[serde(default)]
    pub options: EnvOptions,
}

impl TaskSource {
    pub fn new(env: &str, options: EnvOptions) -> TaskSource {
        TaskSource { env: env.to_owned(), options }
    }
}

/// How a training run treats what the run directory already holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    /// As the configuration says (`resume`, `append`, else a new run that must hold no episodes):
    /// `gigscope train`.
    AsConfigured,
    /// Whatever continues the run: its checkpoint when it has one, else a fresh policy after the episodes it
    /// holds, else a new run. A TUI burst into the open run.
    Continue,
}

/// Train a policy into a run directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainRequest {
    pub run: PathBuf,
    pub tasks: TaskSource,
    pub config: TrainConfig,
    pub mode: RunMode,
}

/// Episodes `{group}-{first}` … `{group}-{first+n-1}` (iteration 0) of task `task` (numbered across the
/// environment's whole task list), played by the run's policy: its checkpoint when it has one, else an
/// untrained policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoplayRequest {
    pub run: PathBuf,
    pub tasks: TaskSource,
    pub task: usize,
    pub group: String,
    pub first: usize,
    pub n: usize,
    pub step_limit: usize,
    pub seed: u64,
}

/// What [`AutoplayRequest`] played, and which policy played it ("the policy (checkpoint after iteration 3)").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoplayResult {
    pub episodes: Vec<Episode>,
    pub policy: String,
}

/// Which episode groups of the iteration `gigscope truth` measures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TruthGroups {
    All,
    /// A sample of this many, drawn with the request's seed (every group when the iteration has fewer).
    Sample {
        n: usize,
    },
    /// These groups, by id (the TUI's open group).
    Named {
        ids: Vec<String>,
    },
}

/// Monte-Carlo ground truth at the anchor states of one iteration of a run gigscope trained: K continuations
/// per state and per action taken there, with that iteration's policy. Answered with progress events
/// ([`TruthProgress`]) and a [`TruthFile`](crate::run::truth::TruthFile).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TruthRequest {
    pub run: PathBuf,
    pub iteration: i64,
    /// K, continuations per state and per action (at least 2, for a standard error).
    pub rollouts: usize,
    pub groups: TruthGroups,
    pub seed: u64,
    /// Worker threads, one episode group each at a time; 0: every core.
    pub threads: usize,
}

/// Progress of a [`TruthRequest`]: episode groups and states measured so far, of how many.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TruthProgress {
    pub groups_done: usize,
    pub groups: usize,
    pub states_done: usize,
    /// Continuations played so far (environment episodes).
    pub continuations: usize,
}

/// One call into the plugin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Request {
    /// Answered with [`TrainEvent`]s, the last one `Finished` or `Failed`. Boxed: far larger than the other.
    Train(Box<TrainRequest>),
    /// Answered with an [`AutoplayResult`].
    Autoplay(AutoplayRequest),
    /// Answered with [`TruthProgress`] events and a [`TruthFile`](crate::run::truth::TruthFile).
    Truth(TruthRequest),
}

/// One finished iteration, as progress reports need it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterationSummary {
    pub iteration: u64,
    /// Training rollouts' success rate and mean score.
    pub success: f64,
    pub score: f64,
    /// Greedy evaluation on the test goals, on evaluation iterations.
    pub eval: Option<EvalResult>,
    pub env_steps: usize,
    pub env_steps_per_s: f64,
    pub rollout_s: f64,
    pub update_s: f64,
}

/// What a training run reports, in order: `Started` (or `Failed`), `Evaluated` (fresh runs), one `Iteration`
/// per iteration, then `Finished` or `Failed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TrainEvent {
    /// The trainer is set up; `first_iteration` is the number the run's first iteration will get.
    Started {
        first_iteration: u64,
        iterations: u64,
        /// libtorch's device, e.g. `Cpu` or `Cuda(0)`.
        device: String,
        /// How the run relates to what the directory held ("new run", "resumes the checkpoint", ...).
        how: String,
        train_goals: usize,
        test_goals: usize,
    },
    /// Greedy evaluation before training (fresh runs): the policy and the rule baseline.
    Evaluated {
        policy: EvalResult,
        baseline: EvalResult,
    },
    Iteration(IterationSummary),
    /// All iterations ran, or a cancel stopped the run after `completed` of them; `last_iteration` is the run's
    /// iteration count now (over all bursts).
    Finished {
        completed: u64,
        cancelled: bool,
        last_iteration: u64,
    },
    /// Set-up or an iteration failed; the run keeps every iteration completed before.
    Failed {
        error: String,
    },
}

impl TrainEvent {
    /// `Finished` or `Failed`: nothing follows.
    pub fn is_last(&self) -> bool {
        matches!(self, TrainEvent::Finished { .. } | TrainEvent::Failed { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_events_round_trip_through_json() {
        let request = Request::Train(Box::new(TrainRequest {
            run: "/tmp/run".into(),
            tasks: TaskSource::new(
                "webshop",
                EnvOptions::parse(&["catalog=/data/shop".into(), "goal_source=synthetic".into()]).unwrap(),
            ),
            config: TrainConfig { iterations: 3, ..TrainConfig::default() },
            mode: RunMode::Continue,
        }));
        let json = serde_json::to_string(&request).unwrap();
        assert!(json.contains(r#""call":"train""#) && json.contains(r#""goal_source":"synthetic""#), "{json}");
        assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), request);
        for event in [
            TrainEvent::Iteration(IterationSummary {
                iteration: 2,
                success: 0.5,
                score: 0.25,
                eval: Some(EvalResult { success: 0.1, score: 0.2, episodes: 3 }),
                env_steps: 10,
                env_steps_per_s: 1e3,
                rollout_s: 0.1,
                update_s: 0.2,
            }),
            TrainEvent::Failed { error: "no".into() },
        ] {
            let json = serde_json::to_string(&event).unwrap();
            assert_eq!(serde_json::from_str::<TrainEvent>(&json).unwrap(), event);
        }
    }
}
