//! `gigscope train`: a training run from the command line, with a progress bar; Ctrl-C stops it after the
//! current iteration.
//!
//! The flags live here, in the binary, which never links libtorch: they become a [`TrainRequest`] that the
//! training plugin runs in this process ([`Training`], loaded now; a clear error if it cannot be).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

use clap::builder::{PossibleValue, PossibleValuesParser};

use super::flags::{FamilyFlags, SettingsFlags};
use super::train_ray;
use crate::env::EnvOptions;
use crate::env_registry::ENVIRONMENTS;
use crate::plugin_host::{
    DeviceChoice, FamilyEstimator, PolicyShape, PpoConfig, RunMode, TaskSource, TrainConfig, TrainEvent, TrainRequest,
    Training,
};
use crate::ray_job::Backend;
use crate::webshop::goals::GoalSource;

/// `--env`: the registry's environments.
fn env_names() -> PossibleValuesParser {
    PossibleValuesParser::new(ENVIRONMENTS.iter().map(|r| PossibleValue::new(r.name).help(r.about)))
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory (created if missing; must hold no episodes unless --resume or --append).
    #[arg(long)]
    pub run: PathBuf,
    /// Iterations to run now (a resumed run continues its numbering).
    #[arg(long, default_value_t = 20)]
    pub iterations: u64,
    /// Continue from the run's checkpoint.
    #[arg(long, conflicts_with = "append")]
    pub resume: bool,
    /// Train a fresh policy into a run that already holds episodes but no checkpoint (recorded by another
    /// trainer, or played by hand); its iterations are numbered after the run's last one.
    #[arg(long)]
    pub append: bool,
    /// The environment.
    #[arg(long, default_value = "webshop", value_parser = env_names())]
    pub env: String,
    /// WebShop catalog directory (default: the embedded demo catalog); `--env-option catalog=DIR`.
    #[arg(long)]
    pub catalog: Option<PathBuf>,
    /// WebShop goals (default: human when the catalog has human instructions, else synthetic).
    #[arg(long, value_enum)]
    pub goal_source: Option<GoalSource>,
    /// An option of the environment, KEY=VALUE (repeatable), e.g. Sokoban's `size=6`, `boxes=2`,
    /// `max_steps=20`.
    #[arg(long = "env-option", value_name = "KEY=VALUE")]
    pub env_options: Vec<String>,
    /// E: goals per iteration.
    #[arg(long, default_value_t = 16)]
    pub goals: usize,
    /// N: episodes per goal (the episode group).
    #[arg(long, default_value_t = 8)]
    pub group_size: usize,
    #[arg(long, default_value_t = 15)]
    pub step_limit: usize,
    /// Evaluate greedily every k iterations (0: never).
    #[arg(long, default_value_t = 5)]
    pub eval_every: u64,
    /// Number of fixed test goals for evaluation.
    #[arg(long, default_value_t = 100)]
    pub eval_goals: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// Torch CPU threads.
    #[arg(long, default_value_t = TrainConfig::default().threads)]
    pub threads: i32,
    #[arg(long, default_value_t = PpoConfig::default().learning_rate)]
    pub lr: f64,
    #[arg(long, default_value_t = PpoConfig::default().clip)]
    pub clip: f64,
    #[arg(long, default_value_t = PpoConfig::default().entropy_coef)]
    pub entropy_coef: f64,
    /// KL penalty to the initial policy (0: off).
    #[arg(long, default_value_t = PpoConfig::default().kl_coef)]
    pub kl_coef: f64,
    #[arg(long, default_value_t = PpoConfig::default().epochs)]
    pub epochs: usize,
    /// Steps per mini-batch.
    #[arg(long, default_value_t = PpoConfig::default().minibatch)]
    pub minibatch: usize,
    #[arg(long, default_value_t = PpoConfig::default().max_grad_norm)]
    pub max_grad_norm: f64,
    #[arg(long, default_value_t = PolicyShape::default().hidden)]
    pub hidden: i64,
    /// Name recorded in run.json.
    #[arg(long)]
    pub name: Option<String>,
    /// Estimator and reward shaping: the flags of `gigscope advantages`, same names and precedence.
    #[command(flatten)]
    pub advantage: SettingsFlags,
    /// The settings of a successor estimator (`--estimator hgpo|graphgpo|proxmo|soft-page|q-minus-v`).
    #[command(flatten)]
    pub family: FamilyFlags,
    /// Where the burst runs: in this process (the training plugin) or as a job on a Ray cluster [default: the
    /// profile's, else in-process].
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,
    /// The Ray dashboard, `http://HOST:8265` (default: the profile's `address`).
    #[arg(long, value_name = "URL")]
    pub address: Option<String>,
    /// A burst profile of the config file (`[burst.profiles.NAME]`): the trainer the job runs and how the
    /// settings map onto its keys. Without one, a Ray job runs this gigscope's own `train` with these arguments.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// The config file holding the profiles (default: `$XDG_CONFIG_HOME/gigscope/config.toml`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl Args {
    pub fn config(&self) -> anyhow::Result<TrainConfig> {
        Ok(TrainConfig {
            iterations: self.iterations,
            goals_per_iteration: self.goals,
            episodes_per_goal: self.group_size,
            step_limit: self.step_limit,
            eval_every: self.eval_every,
            eval_goals: self.eval_goals,
            seed: self.seed,
            device: self.device,
            threads: self.threads,
            ppo: PpoConfig {
                learning_rate: self.lr,
                clip: self.clip,
                entropy_coef: self.entropy_coef,
                kl_coef: self.kl_coef,
                epochs: self.epochs,
                minibatch: self.minibatch,
                max_grad_norm: self.max_grad_norm,
            },
            shape: PolicyShape { hidden: self.hidden, ..PolicyShape::default() },
            advantage: self.advantage.overrides()?,
            estimator: self
                .advantage
                .estimator
                .filter(|k| k.engine().is_none())
                .map(|kind| FamilyEstimator { kind, settings: self.family.settings() }),
            resume: self.resume,
            append: self.append,
            name: self.name.clone(),
        })
    }
}

impl Args {
    /// `--env-option`s, with `--catalog` and `--goal-source` as the options they stand for.
    fn env_options(&self) -> anyhow::Result<EnvOptions> {
        let mut options = EnvOptions::parse(&self.env_options).map_err(|e| anyhow::anyhow!("--env-option {e}"))?;
        if let Some(catalog) = &self.catalog {
            options.set("catalog", catalog.display().to_string());
        }
        if let Some(name) = self.goal_source.and_then(|g| clap::ValueEnum::to_possible_value(&g)) {
            options.set("goal_source", name.get_name());
        }
        Ok(options)
    }

    /// The environment and its options, checked against the registry before the plugin is loaded.
    fn tasks(&self) -> anyhow::Result<TaskSource> {
        let options = self.env_options()?;
        crate::env_registry::check(&self.env, &options)?;
        Ok(TaskSource::new(&self.env, options))
    }

    /// What the plugin is asked to run.
    pub fn request(&self) -> anyhow::Result<TrainRequest> {
        Ok(TrainRequest {
            run: self.run.clone(),
            tasks: self.tasks()?,
            config: self.config()?,
            mode: RunMode::AsConfigured,
        })
    }
}

/// `words`: the command line as given, which a Ray job's own `gigscope train` receives (less the backend's
/// flags).
pub fn run(args: Args, words: &[std::ffi::OsString]) -> anyhow::Result<ExitCode> {
    let target = train_ray::Target {
        backend: args.backend,
        address: args.address.as_deref(),
        profile: args.profile.as_deref(),
        config: args.config.as_deref(),
    };
    let (backend, profile) = train_ray::backend(&target)?;
    if backend == Backend::Ray {
        let flags = train_ray::BurstFlags {
            run: &args.run,
            iterations: args.iterations,
            advantage: args.advantage.overrides()?,
        };
        return train_ray::run(&target, profile, flags, words);
    }
    if profile.is_some_and(|(_, p)| p.entrypoint.is_some()) {
        anyhow::bail!(
            "profile {:?} names an entrypoint, which only a Ray job runs: add --backend ray",
            args.profile.unwrap_or_default()
        );
    }
    let request = args.request()?;
    let training = Training::load()?;
    let handle = training.start(&request);
    let stop = handle.stop_flag();
    ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst)).context("cannot install the Ctrl-C handler")?;

    let progress = Progress::new(args.iterations)?;
    let mut last_eval = String::new();
    while let Some(event) = handle.next_event() {
        match event {
            TrainEvent::Started { device, train_goals, test_goals, .. } => {
                progress.line(format!("{train_goals} training goals, {test_goals} test goals, on {device}"));
                progress.started(&device);
            }
            TrainEvent::Evaluated { policy, baseline } => {
                last_eval = format!("eval {:.2} (rule {:.2})", policy.success, baseline.success);
                progress.line(format!(
                    "before training: greedy success {:.3} score {:.3}; rule baseline success {:.3} score {:.3}",
                    policy.success, policy.score, baseline.success, baseline.score
                ));
            }
            TrainEvent::Iteration(r) => {
                if let Some(e) = &r.eval {
                    last_eval = format!("eval {:.2}", e.success);
                }
                progress.iteration(
                    r.iteration,
                    format!(
                        "success {:.2} score {:.2} {last_eval} {:.0} steps/s{}",
                        r.success,
                        r.score,
                        r.env_steps_per_s,
                        if handle.cancelled() { " (stopping)" } else { "" }
                    ),
                );
            }
            TrainEvent::Finished { last_iteration, .. } => {
                progress.finish();
                if handle.cancelled() {
                    eprintln!("stopped after iteration {last_iteration}; resume with --resume");
                }
                println!("{last_iteration} iterations in {}; checkpoint saved", args.run.display());
                return Ok(ExitCode::SUCCESS);
            }
            TrainEvent::Failed { error } => {
                progress.finish();
                anyhow::bail!("{error}");
            }
        }
    }
    anyhow::bail!("the training run ended without a result")
}

/// How training reports its progress: a bar on a terminal; elsewhere (a pipe, `nohup`, a log file) one line per
/// iteration and per evaluation, as a log reads.
enum Progress {
    Bar(ProgressBar),
    Log { iterations: u64 },
}

impl Progress {
    fn new(iterations: u64) -> anyhow::Result<Self> {
        if !std::io::stderr().is_terminal() {
            return Ok(Progress::Log { iterations });
        }
        let bar = ProgressBar::new(iterations);
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed_precise} {msg}")
                .context("progress bar template")?
                .progress_chars("=> "),
        );
        Ok(Progress::Bar(bar))
    }

    fn started(&self, device: &str) {
        if let Progress::Bar(bar) = self {
            bar.set_prefix(format!("train on {device}"));
        }
    }

    fn line(&self, text: String) {
        match self {
            Progress::Bar(bar) => bar.suspend(|| eprintln!("{text}")),
            Progress::Log { .. } => eprintln!("{text}"),
        }
    }

    fn iteration(&self, iteration: u64, text: String) {
        match self {
            Progress::Bar(bar) => {
                bar.set_message(format!("it {iteration} {text}"));
                bar.inc(1);
            }
            Progress::Log { iterations } => eprintln!("iteration {iteration} ({iterations} this run): {text}"),
        }
    }

    fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish();
        }
    }
}
