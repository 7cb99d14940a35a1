//! Monte-Carlo ground truth at anchor states (`gigscope truth`, issue 12 §2): for each anchor-state group of a
//! recorded iteration, rebuild the state by replaying a member's recorded actions in a fresh environment on the
//! same task, then roll out K continuations with that iteration's policy from the state itself (V̂) and after
//! each distinct action the group's members took there (Q̂). Returns are the run's own (its γ, reward shaping and
//! invalid-action penalty, through the advantage engine), so A* = Q̂ − V̂ is on the scale GiGPO's step
//! advantage estimates.
//!
//! The state of an anchor group is rebuilt from its first member (file order) whose replay reproduces every
//! recorded observation up to the step; its history (the policy's input) is that member's. A member whose replay
//! diverges is reported with the episode, step and both texts; a state no member reproduces has no rows.
//!
//! Work is parallel over episode groups (each worker has its own copy of the policy; libtorch's own threads are
//! set to 1) and reproducible: each group's continuations draw from a generator seeded by the request's seed
//! and the group's position in the iteration, so the file does not depend on the number of workers.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use rand::seq::index;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use tch::Device;

use super::checkpoint;
use super::policy::Policy;
use super::rollout::{self, Chooser, Slot};
use super::trainer::TrainConfig;
use super::TrainError;
use crate::advantage::agreement;
use crate::advantage::estimators::{EnvInputs, EstimatorSettings};
use crate::advantage::{self, AdvantageSettings, RowRef};
use crate::env::{EnvError, EnvOptions, Tasks};
use crate::run::truth::{
    branchable, truth_run_name, NoTruth, TruthDivergence, TruthFile, TruthHeader, TruthRow, TRUTH_FORMAT,
};
use crate::run::{read_meta, Episode, Run, RunError, RunMeta, RunWriter};
use crate::training::protocol::{TaskSource, TruthGroups, TruthProgress, TruthRequest, TASKS_KEY};

#[derive(Debug, thiserror::Error)]
pub enum TruthError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Train(#[from] TrainError),
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error(transparent)]
    NoTruth(#[from] NoTruth),
    #[error("{run}: iteration {iteration} has no episode group {group:?}")]
    NoSuchGroup { run: String, iteration: i64, group: String },
    #[error("--rollouts must be at least 2 (a standard error needs two continuations), got {0}")]
    TooFewRollouts(usize),
    #[error("cannot start the worker threads: {0}")]
    Pool(#[from] rayon::ThreadPoolBuildError),
    #[error("cancelled")]
    Cancelled,
}

/// What every group's measurement shares.
struct Plan<'a> {
    run_name: String,
    episodes: &'a [Episode],
    settings: AdvantageSettings,
    tasks: Arc<dyn Tasks>,
    step_limit: usize,
    rollouts: usize,
}

/// One episode group to measure: its position in the iteration and its anchor groups (members as rows of
/// `Plan::episodes`).
struct GroupJob {
    position: usize,
    id: String,
    states: Vec<Vec<RowRef>>,
}

#[derive(Default)]
struct GroupResult {
    rows: Vec<TruthRow>,
    divergences: Vec<TruthDivergence>,
    states: usize,
    continuations: usize,
}

/// Measure the truth `request` asks for, reporting progress to `progress` on this thread; `stop` cancels
/// (checked between groups and between continuation batches).
pub fn measure(
    request: &TruthRequest,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&TruthProgress),
) -> Result<TruthFile, TruthError> {
    if request.rollouts < 2 {
        return Err(TruthError::TooFewRollouts(request.rollouts));
    }
    let run = Run::open(&request.run)?;
    let run_name = truth_run_name(&run.dir, run.meta.as_ref());
    let weights = branchable(&run, request.iteration)?;
    let meta = run.meta.clone().unwrap_or_default();
    let episodes: Vec<Episode> = run.episodes.iter().filter(|e| e.iteration == request.iteration).cloned().collect();
    let settings = meta.advantage.clone().unwrap_or_default().apply(AdvantageSettings::default());
    let config: TrainConfig = meta
        .extra
        .get("train")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(TrainError::from)?
        .unwrap_or_default();
    let source = recorded_tasks(&meta);
    let tasks = super::request::open_tasks(&source)?;
    let table = advantage::compute(&episodes, &settings);
    let jobs = plan_groups(request, &run_name, &table)?;
    let header = TruthHeader {
        format: TRUTH_FORMAT.into(),
        run: run_name.clone(),
        run_created: meta.created.clone(),
        iteration: request.iteration,
        rollouts: request.rollouts,
        seed: request.seed,
        groups: jobs.iter().map(|j| j.id.clone()).collect(),
        groups_in_iteration: table.episode_groups.len(),
        gamma: settings.gamma,
        success_reward: settings.success_reward,
        invalid_penalty: settings.invalid_penalty,
        efficiency_alpha1: settings.efficiency_alpha1,
        efficiency_alpha2: settings.efficiency_alpha2,
        env: source.env.clone(),
        env_options: source.options.0.clone(),
    };
    let plan = Plan {
        run_name,
        episodes: &episodes,
        settings,
        tasks,
        step_limit: config.step_limit,
        rollouts: request.rollouts,
    };
    let results = run_parallel(&plan, &jobs, &weights, request, stop, progress)?;

    let mut rows = Vec::new();
    let mut divergences = Vec::new();
    for result in results {
        rows.extend(result.rows);
        divergences.extend(result.divergences);
    }
    let position: HashMap<&str, usize> = plan.episodes.iter().enumerate().map(|(i, e)| (e.id.as_str(), i)).collect();
    rows.sort_by_key(|r| (position.get(r.episode.as_str()).copied(), r.step));
    let page_anchor = crate::env::page_anchor(&run);
    let env = EnvInputs { page_of: page_anchor.as_ref().map(crate::env::PageAnchor::as_fn) };
    let agreements = agreement::agreements(&episodes, &plan.settings, &EstimatorSettings::default(), &env, &rows);
    Ok(TruthFile { header, rows, divergences, agreements })
}

/// Record in `run_dir`'s `run.json` the task list a training run plays ([`TASKS_KEY`]), for
/// [`recorded_tasks`]. The first burst's is kept: a run's groups are numbered in one task list.
pub fn record_tasks(run_dir: &Path, tasks: &TaskSource) -> Result<(), TrainError> {
    let mut meta = read_meta(run_dir)?.unwrap_or_default();
    if !meta.extra.contains_key(TASKS_KEY) {
        meta.extra.insert(TASKS_KEY.to_owned(), serde_json::to_value(tasks)?);
        RunWriter::create(run_dir)?.write_meta(&meta)?;
    }
    Ok(())
}

/// The task list the run was trained on, as `run.json` records it (`tasks`: environment and options); a run that
/// records none was trained on its `env` with default options (WebShop: the embedded demo catalog).
pub fn recorded_tasks(meta: &RunMeta) -> TaskSource {
    meta.extra
        .get(TASKS_KEY)
        .and_then(|v| serde_json::from_value::<TaskSource>(v.clone()).ok())
        .unwrap_or_else(|| TaskSource::new(meta.env.as_deref().unwrap_or("webshop"), EnvOptions::default()))
}

/// The episode groups to measure, in file order, each with its anchor groups.
fn plan_groups(
    request: &TruthRequest,
    run_name: &str,
    table: &advantage::AdvantageTable,
) -> Result<Vec<GroupJob>, TruthError> {
    let ids: Vec<&str> = table.episode_groups.iter().map(|g| g.name.as_str()).collect();
    let chosen: Vec<usize> = match &request.groups {
        TruthGroups::All => (0..ids.len()).collect(),
        TruthGroups::Sample { n } => {
            let mut rng = ChaCha8Rng::seed_from_u64(request.seed);
            let mut picked = index::sample(&mut rng, ids.len(), (*n).min(ids.len())).into_vec();
            picked.sort_unstable();
            picked
        }
        TruthGroups::Named { ids: wanted } => wanted
            .iter()
            .map(|w| {
                ids.iter().position(|id| id == w).ok_or_else(|| TruthError::NoSuchGroup {
                    run: run_name.to_owned(),
                    iteration: request.iteration,
                    group: w.clone(),
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let mut states: BTreeMap<usize, Vec<Vec<RowRef>>> = chosen.iter().map(|&g| (g, Vec::new())).collect();
    for anchor in &table.anchor_groups {
        if let Some(list) = states.get_mut(&(anchor.episode_group as usize)) {
            list.push(anchor.members.to_vec());
        }
    }
    Ok(states
        .into_iter()
        .map(|(position, states)| GroupJob { position, id: ids[position].to_owned(), states })
        .collect())
}

/// Every job on a pool of `request.threads` workers, progress relayed to this thread.
fn run_parallel(
    plan: &Plan<'_>,
    jobs: &[GroupJob],
    weights: &Path,
    request: &TruthRequest,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&TruthProgress),
) -> Result<Vec<GroupResult>, TruthError> {
    // The network is small: libtorch's own threads would only contend with the workers.
    tch::set_num_threads(1);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(request.threads).build()?;
    let total_groups = jobs.len();
    let (tx, rx) = mpsc::channel::<TruthProgress>();
    let done = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let tx = tx;
            pool.install(|| {
                jobs.par_iter()
                    .map_init(
                        || checkpoint::load_weights(weights, Device::Cpu),
                        |policy, job| {
                            if stop.load(Ordering::SeqCst) {
                                return Err(TruthError::Cancelled);
                            }
                            let policy = match policy {
                                Ok((_, policy)) => policy,
                                Err(e) => {
                                    return Err(TruthError::Train(TrainError::BadCheckpoint {
                                        path: weights.to_path_buf(),
                                        why: e.to_string(),
                                    }))
                                }
                            };
                            let result = measure_group(plan, job, policy, request.seed, stop)?;
                            let report = TruthProgress {
                                groups_done: done.0.fetch_add(1, Ordering::SeqCst) + 1,
                                groups: total_groups,
                                states_done: done.1.fetch_add(result.states, Ordering::SeqCst) + result.states,
                                continuations: done.2.fetch_add(result.continuations, Ordering::SeqCst)
                                    + result.continuations,
                            };
                            let _ = tx.send(report);
                            Ok(result)
                        },
                    )
                    .collect::<Result<Vec<GroupResult>, TruthError>>()
            })
        });
        for report in rx {
            progress(&report);
        }
        worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The generator of the group at `position` of the iteration.
fn group_rng(seed: u64, position: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(position as u64 + 1);
    rng
}

/// One state to branch from: the replayed slot, the step it stands at, its members and the distinct actions
/// they took (in order of first appearance).
struct State {
    slot: Slot,
    step: usize,
    members: Vec<RowRef>,
    actions: Vec<String>,
}

fn measure_group(
    plan: &Plan<'_>,
    job: &GroupJob,
    policy: &Policy,
    seed: u64,
    stop: &AtomicBool,
) -> Result<GroupResult, TruthError> {
    let mut result = GroupResult::default();
    // The first step at which an episode's replay diverged: replays of it to later steps diverge too.
    let mut diverged: HashMap<usize, usize> = HashMap::new();
    let mut states = Vec::new();
    for members in &job.states {
        let mut rebuilt = None;
        for member in members {
            let (episode, step) = (member.episode as usize, member.step as usize);
            if diverged.get(&episode).is_some_and(|&at| at <= step) {
                continue;
            }
            match replay(plan, episode, step)? {
                Ok(slot) => {
                    rebuilt = Some((slot, step));
                    break;
                }
                Err(divergence) => {
                    diverged.insert(episode, divergence.step);
                    result.divergences.push(divergence);
                }
            }
        }
        let Some((slot, step)) = rebuilt else { continue };
        let mut actions: Vec<String> = Vec::new();
        for m in members {
            let action = &plan.episodes[m.episode as usize].steps[m.step as usize].action;
            if !actions.contains(action) {
                actions.push(action.clone());
            }
        }
        states.push(State { slot, step, members: members.clone(), actions });
    }
    if stop.load(Ordering::SeqCst) {
        return Err(TruthError::Cancelled);
    }

    // Every continuation of the group in one lockstep batch: K from each state, then K after each action.
    let k = plan.rollouts;
    let mut slots: Vec<Slot> = Vec::new();
    for state in &states {
        slots.extend(std::iter::repeat_n(state.slot.clone(), k));
        for action in &state.actions {
            let mut branch = state.slot.clone();
            branch.act(action);
            slots.extend(std::iter::repeat_n(branch, k));
        }
    }
    let mut rng = group_rng(seed, job.position);
    rollout::play(&mut slots, &mut Chooser::Sample(policy, &mut rng), plan.step_limit, Device::Cpu)?;
    result.continuations = slots.len();

    let mut next = slots.iter();
    for state in &states {
        let mut batch = |n: usize| -> (f64, f64) {
            let returns: Vec<f64> = next.by_ref().take(n).map(|s| continuation_return(plan, s, state.step)).collect();
            mean_se(&returns)
        };
        let (v, v_se) = batch(k);
        let q: Vec<(f64, f64)> = state.actions.iter().map(|_| batch(k)).collect();
        for member in &state.members {
            let episode = &plan.episodes[member.episode as usize];
            let step = member.step as usize;
            let action = &episode.steps[step].action;
            let Some(a) = state.actions.iter().position(|x| x == action) else { continue };
            result.rows.push(TruthRow {
                run: plan.run_name.clone(),
                episode: episode.id.clone(),
                step,
                group: episode.group.clone(),
                q: q[a].0,
                v,
                a_star: q[a].0 - v,
                q_se: q[a].1,
                v_se,
                k,
            });
        }
        result.states += 1;
    }
    Ok(result)
}

/// A fresh environment on `episode`'s task with its first `step` recorded actions replayed, every recorded
/// observation up to and including step `step` checked. `Ok(Err(..))`: the environment diverged.
fn replay(plan: &Plan<'_>, episode: usize, step: usize) -> Result<Result<Slot, TruthDivergence>, TruthError> {
    let recorded = &plan.episodes[episode];
    let task = recorded.task.as_ref().map(|t| t.id.as_str()).unwrap_or("");
    let mut slot = Slot::new(plan.tasks.start_task(task)?);
    for (j, s) in recorded.steps[..=step].iter().enumerate() {
        let replayed = slot.env.observation();
        if replayed != &*s.observation {
            return Ok(Err(TruthDivergence {
                episode: recorded.id.clone(),
                step: j,
                recorded: s.observation.to_string(),
                replayed: replayed.to_owned(),
            }));
        }
        if j < step {
            slot.act(&s.action);
        }
    }
    Ok(Ok(slot))
}

/// The run's return R_t at step `t` of the episode `slot` played (its recorded prefix and its continuation),
/// as the advantage engine computes it under the run's settings.
fn continuation_return(plan: &Plan<'_>, slot: &Slot, t: usize) -> f64 {
    let episode = slot.to_episode(String::new(), String::new(), 0);
    let table = advantage::compute(std::slice::from_ref(&episode), &plan.settings);
    table.episode_rows(0).get(t).map_or(0.0, |r| r.ret)
}

/// Mean and standard error (sample standard deviation / √n) of at least two values.
fn mean_se(values: &[f64]) -> (f64, f64) {
    let (mean, std, n) = advantage::mean_std(values.iter().copied());
    (mean, std / (n.max(1) as f64).sqrt())
}
