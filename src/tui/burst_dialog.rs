//! The training-burst dialog's side of the state: the form (what to start) and the status of the burst that
//! runs (fed by [`BurstUpdate`]s translated from the trainer's [`TrainEvent`]s, or from a Ray job's log and
//! outcome). Nothing here needs libtorch: the form becomes a [`TrainRequest`] for [`crate::plugin_host`], which
//! runs it in the training plugin and says clearly when the plugin cannot be loaded, or, with a Ray backend
//! (a profile of the config's `[burst]` table), a [`RayPlan`] whose command is the profile's own rendering
//! ([`crate::ray_job::render_command`]): what the dialog shows is what is submitted.

use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::advantage::estimators::{EstimatorKind, EstimatorSettings};
use crate::advantage::AdvantageOverrides;
use crate::plugin_host::{
    DeviceChoice, FamilyEstimator, PpoConfig, RunMode, TaskSource, TrainConfig, TrainEvent, TrainRequest,
};
use crate::ray_job::profile::Setting;
use crate::ray_job::{render_command, Backend, BurstProfile, BurstTable};

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
    /// Where it runs: 0 in this process, `i` the `i`-th of [`ray_choices`].
    pub backend: usize,
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
            backend: 0,
        }
    }
}

/// The dialog's fields, in screen order: one table gives each its label, its value text and its choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BurstField {
    Backend,
    Iterations,
    Goals,
    GroupSize,
    LearningRate,
    Estimator,
    Device,
}

impl BurstField {
    pub const ALL: [BurstField; 7] = [
        BurstField::Backend,
        BurstField::Iterations,
        BurstField::Goals,
        BurstField::GroupSize,
        BurstField::LearningRate,
        BurstField::Estimator,
        BurstField::Device,
    ];

    pub fn label(self) -> &'static str {
        match self {
            BurstField::Backend => "backend",
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
    /// `field` moved one value up or down; the backend cycles through in-process and the `ray_backends`.
    pub fn adjust(mut self, field: BurstField, up: bool, ray_backends: usize) -> BurstRequest {
        match field {
            BurstField::Backend => {
                let n = ray_backends + 1;
                self.backend = (self.backend.min(n - 1) + if up { 1 } else { n - 1 }) % n;
            }
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

    /// The Ray backend chosen, if any.
    pub fn ray_choice<'a>(&self, choices: &'a [RayChoice]) -> Option<&'a RayChoice> {
        self.backend.checked_sub(1).and_then(|i| choices.get(i))
    }

    /// A field's value as the dialog shows it (`choices`: the Ray backends offered).
    pub fn value(&self, field: BurstField, choices: &[RayChoice]) -> String {
        match field {
            BurstField::Backend => match self.ray_choice(choices) {
                Some(choice) => format!("ray: {}", choice.name),
                None => "in-process".into(),
            },
            BurstField::Iterations => self.iterations.to_string(),
            BurstField::Goals => self.goals.to_string(),
            BurstField::GroupSize => self.group_size.to_string(),
            BurstField::LearningRate => format!("{:e}", self.learning_rate),
            BurstField::Estimator => super::settings_fields::name(self.estimator),
            BurstField::Device => format!("{:?}", self.device).to_lowercase(),
        }
    }
}

/// A Ray backend the dialog offers: a profile of the config's `[burst]` table.
#[derive(Clone, Debug, PartialEq)]
pub struct RayChoice {
    pub name: String,
    pub profile: BurstProfile,
}

/// The Ray backends of the config: gigscope's own `train` as `default` when `[burst]` names an address (unless
/// a profile has that name), then each profile whose backend is `ray`, in name order. A profile without an
/// address uses `[burst]`'s.
pub fn ray_choices(table: &BurstTable) -> Vec<RayChoice> {
    let own = table.address.is_some() && !table.profiles.contains_key(DEFAULT_PROFILE);
    let default = own.then(|| RayChoice {
        name: DEFAULT_PROFILE.into(),
        profile: BurstProfile { backend: Backend::Ray, ..BurstProfile::default() },
    });
    let profiles = table
        .profiles
        .iter()
        .filter(|(_, p)| p.backend == Backend::Ray)
        .map(|(name, profile)| RayChoice { name: name.clone(), profile: profile.clone() });
    default
        .into_iter()
        .chain(profiles)
        .map(|mut choice| {
            if choice.profile.address.is_none() {
                choice.profile.address = table.address.clone();
            }
            choice
        })
        .collect()
}

/// The name of gigscope's own `train` as a Ray backend (as `gigscope train --backend ray` records it).
pub const DEFAULT_PROFILE: &str = "default";

/// This process as a Ray job's gigscope `train` names it: the binary and the directory relative paths are
/// read from (read once, when the TUI starts: drawing does no I/O).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BurstHost {
    pub gigscope: PathBuf,
    pub cwd: PathBuf,
}

impl BurstHost {
    pub fn of_this_process() -> BurstHost {
        BurstHost {
            gigscope: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("gigscope")),
            cwd: std::env::current_dir().unwrap_or_default(),
        }
    }
}

/// A Ray burst ready to submit: what the dialog shows and the job runs.
#[derive(Clone, Debug, PartialEq)]
pub struct RayPlan {
    pub profile: String,
    pub address: String,
    /// The run directory, absolute.
    pub run: PathBuf,
    /// gigscope's settings by gigscope's names (recorded in the run's `bursts`).
    pub settings: Vec<Setting>,
    /// The exact shell command ([`render_command`]).
    pub command: String,
    /// Ray's runtime environment (the job adds this process's `GIGSCOPE_*` variables to gigscope's own
    /// `train`).
    pub runtime_env: serde_json::Map<String, serde_json::Value>,
    /// Whether the entrypoint is gigscope's own `train`.
    pub own_train: bool,
}

impl BurstRequest {
    /// The Ray burst of this form with `choice` into the run `run` of environment `env` (none: not one gigscope
    /// has, which only gigscope's own `train` needs). The settings are the
    /// form's estimator and run shape (iterations, goals, group size: every profile's trainer has keys for
    /// them); gigscope's own `train` also gets the learning rate and the device, its own flags. A profile with
    /// no address, or a setting its trainer has no key for, is an error naming it.
    pub fn ray_plan(
        &self,
        choice: &RayChoice,
        run: &Path,
        env: Option<&str>,
        host: &BurstHost,
    ) -> Result<RayPlan, String> {
        let name = &choice.name;
        let address = choice.profile.address.clone().ok_or_else(|| {
            format!("burst profile {name:?} names no Ray address: set `address` in [burst.profiles.{name}] or [burst]")
        })?;
        let run = if run.is_absolute() { run.to_path_buf() } else { host.cwd.join(run) };
        let estimator = self.value(BurstField::Estimator, &[]);
        let mut settings: Vec<Setting> = vec![
            ("estimator".into(), estimator.clone()),
            ("iterations".into(), self.iterations.to_string()),
            ("goals".into(), self.goals.to_string()),
            ("group_size".into(), self.group_size.to_string()),
        ];
        let own_train = choice.profile.entrypoint.is_none();
        let mut args: Vec<String> = Vec::new();
        if own_train {
            let env =
                env.ok_or("this run's environment is not one gigscope has: its own `train` cannot continue it")?;
            settings.push(("learning_rate".into(), self.value(BurstField::LearningRate, &[])));
            settings.push(("device".into(), self.value(BurstField::Device, &[])));
            let run_text = run.display().to_string();
            args = ["train", "--run", &run_text, "--env", env, "--append", "--estimator", &estimator]
                .map(String::from)
                .into();
            for (flag, setting) in [
                ("--iterations", "iterations"),
                ("--goals", "goals"),
                ("--group-size", "group_size"),
                ("--lr", "learning_rate"),
                ("--device", "device"),
            ] {
                let value = settings.iter().find(|(k, _)| k == setting).map(|(_, v)| v.clone()).unwrap_or_default();
                args.extend([flag.to_string(), value]);
            }
        }
        let command = render_command(name, &choice.profile, &settings, &run, &host.gigscope, &args, &host.cwd)
            .map_err(|e| e.to_string())?;
        Ok(RayPlan {
            profile: name.clone(),
            address,
            run,
            settings,
            command,
            runtime_env: choice.profile.runtime_env(),
            own_train,
        })
    }
}

/// Lines of a Ray job's log the dialog keeps (the last ones).
pub const LOG_LINES: usize = 6;

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
    /// The burst waits for the trainer (the plugin being built in the background): how far that is.
    Waiting(String),
    /// A Ray job was submitted.
    RaySubmitted {
        job_id: String,
        address: String,
    },
    /// A line of the Ray job's log.
    Log(String),
    /// The Ray job ended (succeeded or stopped): how.
    RayEnded(String),
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
    /// It ended in a failure (`ended` says which).
    pub failed: bool,
    /// A cancel was asked for and the current iteration is finishing.
    pub cancelling: bool,
    /// A Ray burst: its job id (none until it is submitted).
    pub ray_job: Option<String>,
    /// A Ray burst: the last [`LOG_LINES`] lines of its log.
    pub log: Vec<String>,
    /// Before it started: what it waits for (the trainer's background build).
    pub waiting: Option<String>,
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
            BurstUpdate::Failed(e) => {
                self.ended = Some(format!("failed: {e}"));
                self.failed = true;
            }
            BurstUpdate::Waiting(news) => self.waiting = Some(news),
            BurstUpdate::RaySubmitted { job_id, address } => {
                self.how = format!("Ray job {job_id} on {address}");
                self.ray_job = Some(job_id);
            }
            BurstUpdate::Log(line) => {
                self.log.push(line);
                let extra = self.log.len().saturating_sub(LOG_LINES);
                self.log.drain(..extra);
            }
            BurstUpdate::RayEnded(how) => self.ended = Some(how),
        }
    }
}
