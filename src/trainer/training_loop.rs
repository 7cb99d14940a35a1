//! The training loop: rollouts → advantages (gigscope's own engine) → episodes to the run → PPO update →
//! evaluation → metrics → checkpoint, one iteration at a time so that a stop request is honoured between
//! iterations and always leaves a valid run and checkpoint; an iteration that fails (a full disk) takes back
//! the lines it wrote, so the run is left as its checkpoint covers it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rand::seq::index;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};
use tch::nn::VarStore;
use tch::Device;

use super::checkpoint::{self, TrainerState};
use super::error::TrainError;
use super::output::RunOutput;
use super::policy::{initial_policy, Policy};
use super::ppo::{self, Adam, Sample, UpdateStats};
use super::rollout::{self, Chooser, Slot};
use crate::advantage::estimators::{self, EnvInputs, EstimatorError, Need};
use crate::advantage::{self, AdvantageSettings, AdvantageTable};
use crate::env::{Split, Tasks};
use crate::plugin_host::protocol::FamilyEstimator;
pub use crate::plugin_host::protocol::{DeviceChoice, EvalResult, TrainConfig};
use crate::run::{Episode, MetricsRecord};

/// libtorch's device for `choice`.
pub fn resolve_device(choice: DeviceChoice) -> Result<Device, TrainError> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Cuda if tch::Cuda::is_available() => Ok(Device::Cuda(0)),
        DeviceChoice::Cuda => Err(TrainError::NoCuda),
        DeviceChoice::Auto => Ok(Device::cuda_if_available()),
    }
}

/// What one iteration did (also one line of `metrics.jsonl`).
#[derive(Clone, Debug, PartialEq)]
pub struct IterationReport {
    pub iteration: u64,
    pub success: f64,
    pub score: f64,
    pub update: UpdateStats,
    pub env_steps: usize,
    pub env_steps_per_s: f64,
    pub rollout_s: f64,
    pub update_s: f64,
    pub eval: Option<EvalResult>,
    /// The full `metrics.jsonl` record.
    pub metrics: MetricsRecord,
}

/// Progress of a burst, in order: `Evaluated` (iteration 0, before training, fresh runs only), then
/// `Iteration` per iteration.
#[derive(Clone, Debug, PartialEq)]
pub enum Progress {
    Evaluated { iteration: u64, policy: EvalResult, baseline: EvalResult },
    Iteration(Box<IterationReport>),
}

pub struct Trainer<T: Tasks> {
    tasks: T,
    config: TrainConfig,
    run_dir: PathBuf,
    device: Device,
    settings: AdvantageSettings,
    /// Owns the policy's variables (the policy and Adam hold handles to them).
    vs: VarStore,
    policy: Policy,
    /// Frozen copy of the initial policy, present when the KL term is on.
    reference: Option<(VarStore, Policy)>,
    adam: Adam,
    output: RunOutput,
    state: TrainerState,
    clock: Instant,
    baseline: Option<EvalResult>,
}

fn iteration_rng(seed: u64, iteration: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(iteration);
    rng
}

impl<T: Tasks> Trainer<T> {
    /// A trainer writing to `run_dir`: a new run (the directory must hold no episodes yet), or with
    /// `config.resume` the run's checkpoint continued.
    pub fn new(tasks: T, mut config: TrainConfig, run_dir: &Path) -> Result<Trainer<T>, TrainError> {
        let device = resolve_device(config.device)?;
        // Before the run directory is touched: a refused estimator leaves nothing behind.
        if let Some(family) = &config.estimator {
            check_family_estimator(&tasks, family)?;
        }
        tch::set_num_threads(config.threads);
        let ckpt = checkpoint::path_in(run_dir);
        if config.resume {
            // The network and the seed define the run; a resumed burst keeps them.
            let saved: TrainConfig = serde_json::from_value(checkpoint::read_state(&ckpt)?.config)?;
            config.shape = saved.shape;
            config.seed = saved.seed;
        }
        let mut output = RunOutput::open(run_dir, config.resume || config.append, tasks.env_name())?;
        let settings = config.advantage.apply(output.recorded_settings()?.apply(AdvantageSettings::default()));
        settings.validate()?;
        let (vs, policy) = initial_policy(config.seed, config.shape, device);
        let reference = (config.ppo.kl_coef > 0.0).then(|| initial_policy(config.seed, config.shape, device));
        let mut adam = Adam::new(&vs);
        let state = if config.resume {
            let state = checkpoint::load(&ckpt, &mut adam, device)?;
            output.cut_unfinished_iteration(&state)?;
            state
        } else {
            TrainerState {
                iteration: if config.append { output.last_iteration()? } else { 0 },
                env_steps: 0,
                elapsed_s: 0.0,
                episodes_bytes: 0,
                metrics_bytes: 0,
                config: serde_json::to_value(&config)?,
            }
        };
        let mut trainer = Trainer {
            tasks,
            config,
            run_dir: run_dir.to_path_buf(),
            device,
            settings,
            vs,
            policy,
            reference,
            adam,
            output,
            state,
            clock: Instant::now(),
            baseline: None,
        };
        trainer.output.write_meta(&trainer.settings, &trainer.config)?;
        Ok(trainer)
    }

    pub fn device(&self) -> Device {
        self.device
    }

    pub fn settings(&self) -> &AdvantageSettings {
        &self.settings
    }

    /// Iterations completed so far (over all bursts of the run).
    pub fn iteration(&self) -> u64 {
        self.state.iteration
    }

    fn elapsed(&self) -> f64 {
        self.state.elapsed_s + self.clock.elapsed().as_secs_f64()
    }

    /// Run the configured number of iterations, or fewer if `stop` is raised (checked between iterations).
    /// A run's first burst evaluates the initial policy first (iteration 0's metrics line); when its first
    /// iteration fails, that line is taken back with the iteration's, so that the same command again (what the
    /// error says to do) leaves one iteration-0 line, not one per try.
    pub fn run(&mut self, stop: &AtomicBool, mut progress: impl FnMut(&Progress)) -> Result<(), TrainError> {
        let mut before_evaluation = None;
        if self.state.iteration == 0 && self.config.eval_every > 0 {
            let (episodes_bytes, metrics_bytes) = self.output.lengths()?;
            before_evaluation = Some(TrainerState { episodes_bytes, metrics_bytes, ..self.state.clone() });
            let policy = self.evaluate()?;
            let baseline = self.baseline()?;
            let mut record = MetricsRecord { iteration: 0, time: Some(json!(self.elapsed())), values: Map::new() };
            insert_eval(&mut record.values, &policy, &baseline);
            self.output.append_metrics(&record)?;
            progress(&Progress::Evaluated { iteration: 0, policy, baseline });
        }
        for _ in 0..self.config.iterations {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let report = match self.iterate() {
                Ok(report) => report,
                Err(error) => {
                    if let Some(before) = before_evaluation.filter(|_| self.state.iteration == 0) {
                        // As `iterate` cuts its own lines: without needing space, or left to `--resume`.
                        let _ = self.output.cut_unfinished_iteration(&before);
                    }
                    return Err(error);
                }
            };
            progress(&Progress::Iteration(Box::new(report)));
        }
        self.output.record_burst_end()
    }

    /// The rule baseline on the evaluation goals (deterministic, so computed once).
    pub fn baseline(&mut self) -> Result<EvalResult, TrainError> {
        if let Some(b) = self.baseline {
            return Ok(b);
        }
        let mut slots = self.eval_slots()?;
        rollout::play::<ChaCha8Rng>(&mut slots, &mut Chooser::Rule, self.config.step_limit, self.device)?;
        let result = summarize(&slots);
        self.baseline = Some(result);
        Ok(result)
    }

    /// Greedy actions on the evaluation goals.
    pub fn evaluate(&self) -> Result<EvalResult, TrainError> {
        let mut slots = self.eval_slots()?;
        rollout::play::<ChaCha8Rng>(
            &mut slots,
            &mut Chooser::Greedy(&self.policy),
            self.config.step_limit,
            self.device,
        )?;
        Ok(summarize(&slots))
    }

    fn eval_slots(&self) -> Result<Vec<Slot>, TrainError> {
        let n = self.config.eval_goals.min(self.tasks.split_len(Split::Test));
        (0..n).map(|i| Ok(Slot::new(self.tasks.start_in(Split::Test, i)?))).collect()
    }

    /// One iteration. One that fails (a full disk) takes back the lines it wrote, as `--resume` would cut them:
    /// the run then ends with the iterations its checkpoint covers, with no group cut short (so `--append`
    /// before the first checkpoint adds no iteration to a half-written one), and the trainer's state is that of
    /// the checkpoint again. Its policy is not: a trainer whose iteration failed is dropped, and the run goes on
    /// from its checkpoint.
    pub fn iterate(&mut self) -> Result<IterationReport, TrainError> {
        let before = self.state.clone();
        let (episodes_bytes, metrics_bytes) = self.output.lengths()?;
        let result = self.play_and_write();
        if result.is_err() {
            // The lines are cut (or the file is shortened) without needing space; a cut that fails (a line of
            // another writer's to keep, and no room to rewrite the file) leaves them to `--resume`.
            let _ =
                self.output.cut_unfinished_iteration(&TrainerState { episodes_bytes, metrics_bytes, ..before.clone() });
            self.state = before;
        }
        result
    }

    /// One iteration's play, update and writes.
    fn play_and_write(&mut self) -> Result<IterationReport, TrainError> {
        let iteration = self.state.iteration + 1;
        let mut rng = iteration_rng(self.config.seed, iteration);
        let n_train = self.tasks.split_len(Split::Train);
        if n_train == 0 {
            return Err(TrainError::NoGoals);
        }
        let goals = index::sample(&mut rng, n_train, self.config.goals_per_iteration.min(n_train)).into_vec();
        // The behaviour policy of this iteration, kept so that `gigscope truth` can branch with it later.
        let weights = crate::run::truth::weights_path(&self.run_dir, iteration as i64);
        checkpoint::save_weights(&weights, &self.vs, self.config.shape)?;

        let rollout_clock = Instant::now();
        let mut slots = Vec::with_capacity(goals.len() * self.config.episodes_per_goal);
        for &g in &goals {
            let first = Slot::new(self.tasks.start_in(Split::Train, g)?);
            // Clones of one reset environment: the group's episodes share their start state.
            slots.extend(std::iter::repeat_n(first.clone(), self.config.episodes_per_goal.saturating_sub(1)));
            slots.push(first);
        }
        let env_steps = rollout::play(
            &mut slots,
            &mut Chooser::Sample(&self.policy, &mut rng),
            self.config.step_limit,
            self.device,
        )?;
        let rollout_s = rollout_clock.elapsed().as_secs_f64();

        let mut episodes: Vec<Episode> = slots
            .iter()
            .enumerate()
            .map(|(i, slot)| {
                let n = i % self.config.episodes_per_goal;
                let group = format!("i{iteration}-{}", slot.task_id);
                slot.to_episode(format!("{group}-{n}"), group, iteration as i64)
            })
            .collect();
        let table = advantage::compute(&episodes, &self.settings);
        let row_advantages = match &self.config.estimator {
            // The family's unit on the engine's table, as `gigscope advantages --estimator` computes it. The
            // trainer's steps carry the environment's page, so no classifier is needed (checked in `new`).
            Some(family) => {
                estimators::compute_with_table(
                    family.kind,
                    &episodes,
                    &table,
                    &self.settings,
                    &family.settings,
                    &EnvInputs::default(),
                )?
                .advantages
            }
            None => table.rows().map(|r| r.advantage).collect(),
        };
        let mut samples = Vec::with_capacity(table.row_count());
        for (e, (episode, slot)) in episodes.iter_mut().zip(slots).enumerate() {
            let advantages = row_advantages[table.rows_of(e)].to_vec();
            for ((decision, chosen), (step, a)) in slot.decisions.into_iter().zip(episode.steps.iter().zip(&advantages))
            {
                samples.push(Sample {
                    decision,
                    chosen,
                    old_logprob: step.logprob.unwrap_or(0.0) as f32,
                    advantage: *a as f32,
                });
            }
            episode.advantages = Some(advantages);
        }
        for episode in &episodes {
            self.output.append_episode(episode)?;
        }

        let update_clock = Instant::now();
        let reference = self.reference.as_ref().map(|(_, p)| p);
        let update =
            ppo::update(&self.policy, reference, &mut self.adam, &samples, &self.config.ppo, &mut rng, self.device);
        let update_s = update_clock.elapsed().as_secs_f64();

        let eval = if self.config.eval_every > 0 && iteration.is_multiple_of(self.config.eval_every) {
            Some((self.evaluate()?, self.baseline()?))
        } else {
            None
        };

        self.state.iteration = iteration;
        self.state.env_steps += env_steps as u64;
        let n = episodes.len().max(1) as f64;
        let success = episodes.iter().filter(|e| e.success()).count() as f64 / n;
        let score = episodes.iter().map(Episode::total_reward).sum::<f64>() / n;
        let env_steps_per_s = env_steps as f64 / rollout_s.max(1e-9);
        let mut record =
            MetricsRecord { iteration: iteration as i64, time: Some(json!(self.elapsed())), values: Map::new() };
        for (k, v) in [
            ("success", success),
            ("score", score),
            ("loss", update.loss),
            ("policy_loss", update.policy_loss),
            ("entropy", update.entropy),
            ("kl", update.kl),
            ("clip_frac", update.clip_frac),
            ("grad_norm", update.grad_norm),
            ("episodes", episodes.len() as f64),
            ("env_steps", env_steps as f64),
            ("env_steps_per_s", env_steps_per_s),
            ("rollout_s", rollout_s),
            ("update_s", update_s),
        ] {
            record.values.insert(k.into(), json!(v));
        }
        group_statistics(&table, &row_advantages, &mut record.values);
        if let Some((policy, baseline)) = &eval {
            insert_eval(&mut record.values, policy, baseline);
        }
        self.output.append_metrics(&record)?;
        self.save_checkpoint()?;
        Ok(IterationReport {
            iteration,
            success,
            score,
            update,
            env_steps,
            env_steps_per_s,
            rollout_s,
            update_s,
            eval: eval.map(|(p, _)| p),
            metrics: record,
        })
    }

    /// Write the checkpoint (atomically) for the iterations completed so far.
    pub fn save_checkpoint(&mut self) -> Result<(), TrainError> {
        let (episodes_bytes, metrics_bytes) = self.output.lengths()?;
        self.state.episodes_bytes = episodes_bytes;
        self.state.metrics_bytes = metrics_bytes;
        let mut state = self.state.clone();
        state.elapsed_s = self.elapsed();
        checkpoint::save(&checkpoint::path_in(&self.run_dir), &self.adam, &state)
    }
}

fn summarize(slots: &[Slot]) -> EvalResult {
    let n = slots.len();
    let outcomes: Vec<_> = slots.iter().map(Slot::outcome).collect();
    let d = n.max(1) as f64;
    EvalResult {
        success: outcomes.iter().filter(|o| o.success).count() as f64 / d,
        score: outcomes.iter().map(|o| o.score).sum::<f64>() / d,
        episodes: n,
    }
}

fn insert_eval(record: &mut Map<String, Value>, policy: &EvalResult, baseline: &EvalResult) {
    record.insert("eval_success".into(), json!(policy.success));
    record.insert("eval_score".into(), json!(policy.score));
    record.insert("baseline_success".into(), json!(baseline.success));
    record.insert("baseline_score".into(), json!(baseline.score));
}

/// Check before training that `family` can be computed on this environment's batches: its settings, and what it
/// reads. Every batch has rewards, anchors, actions and returns; page types only where the environment records
/// them on its steps.
fn check_family_estimator(tasks: &impl Tasks, family: &FamilyEstimator) -> Result<(), TrainError> {
    family.settings.validate(family.kind)?;
    if family.kind.needs().contains(&Need::PageTypes) && tasks.start_in(Split::Train, 0)?.env.page().is_none() {
        return Err(EstimatorError::Missing {
            estimator: family.kind,
            need: Need::PageTypes,
            detail: format!("environment {} records no page type on its steps", tasks.env_name()),
        }
        .into());
    }
    Ok(())
}

/// The step-group statistics GiGPO's signal depends on: how many anchor groups, how many are singletons
/// (A_S = 0), and how many episode groups have no variance at all (A_E = 0); and the mean |advantage| that
/// trained (`advantages`, one per row).
fn group_statistics(table: &AdvantageTable, advantages: &[f64], record: &mut Map<String, Value>) {
    let groups = table.anchor_groups.len().max(1) as f64;
    let singletons = table.anchor_groups.sizes().filter(|&size| size == 1).count() as f64;
    let rows = table.row_count() as f64;
    let episode_groups = table.episode_groups.len().max(1) as f64;
    let zero_variance = table.episode_groups.iter().filter(|g| g.zero_variance.is_some()).count() as f64;
    let mean_abs = advantages.iter().map(|a| a.abs()).sum::<f64>() / rows.max(1.0);
    record.insert("step_groups".into(), json!(table.anchor_groups.len()));
    record.insert("step_group_size".into(), json!(rows / groups));
    record.insert("singleton_step_groups".into(), json!(singletons / groups));
    record.insert("zero_variance_groups".into(), json!(zero_variance / episode_groups));
    record.insert("mean_abs_advantage".into(), json!(mean_abs));
}
