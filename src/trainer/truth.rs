//! Monte-Carlo ground truth of every step row (`gigscope truth`, issue 12 §2, issue 26): each row's own state is
//! rebuilt by replaying *its* episode's recorded actions in a fresh environment on the same task (every recorded
//! observation checked), so it has its own hidden state (WebShop's selected options) and its own steps left;
//! then K continuations are rolled out with that iteration's policy from the state (V̂) and K after the row's
//! action (Q̂). Returns are the run's own (its γ, reward shaping and invalid-action penalty, through the
//! advantage engine), so A* = Q̂ − V̂ is on the scale GiGPO's step advantage estimates, and a step that ends its
//! episode has Q̂ equal to its own return (standard error 0 in a deterministic environment).
//!
//! Rows whose environments report the same state fingerprint
//! ([`crate::env::Environment::state_fingerprint`]) share one state and its continuations, so the cost grows
//! with the number of distinct states, not rows; the policy's input there (its recent actions) is that of the
//! first row (file order) that reached it. An environment without fingerprints makes every row a state of its
//! own. Each row records its state's fingerprint, so readers count the true states an anchor group merges.
//! An episode whose replay diverges is reported with the step and both texts; its rows from that step on have
//! no truth.
//!
//! Work is parallel over episode groups (each worker has its own copy of the policy; libtorch's own threads are
//! set to 1) and reproducible: each group's continuations draw from a generator seeded by the request's seed
//! and the group's position in the iteration, so the file does not depend on the number of workers.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use rand::seq::index;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use tch::Device;

use super::checkpoint;
use super::error::TrainError;
use super::policy::Policy;
use super::rollout::{self, Chooser, Slot};
use super::tasks::{open_tasks, recorded_tasks};
use crate::advantage::agreement;
use crate::advantage::estimators::{EnvInputs, EstimatorSettings};
use crate::advantage::{self, AdvantageSettings, RowRef};
use crate::env::{EnvError, Tasks};
use crate::plugin_host::protocol::{TrainConfig, TruthGroups, TruthProgress, TruthRequest};
use crate::run::truth::{
    branchable, truth_run_name, NoTruth, TruthDivergence, TruthFile, TruthHeader, TruthRow, TRUTH_FORMAT,
};
use crate::run::{Episode, Run, RunError};

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

/// One episode group to measure: its position in the iteration and its episodes (rows of `Plan::episodes`, in
/// file order).
struct GroupJob {
    position: usize,
    id: String,
    episodes: Vec<usize>,
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
    let tasks = open_tasks(&source)?;
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
    let page_anchor = crate::env_registry::page_anchor(&run);
    let env = EnvInputs { page_of: page_anchor.as_ref().map(crate::env::PageAnchor::as_fn) };
    let agreements = agreement::agreements(&episodes, &plan.settings, &EstimatorSettings::default(), &env, &rows);
    Ok(TruthFile { header, rows, divergences, agreements })
}

/// The episode groups to measure, in file order, each with its episodes.
fn plan_groups(
    request: &TruthRequest,
    run_name: &str,
    table: &advantage::AdvantageTable,
) -> Result<Vec<GroupJob>, TruthError> {
    let ids: Vec<&str> = table.episode_groups.iter().map(|g| &*g.name).collect();
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
    Ok(chosen
        .into_iter()
        .map(|position| GroupJob {
            position,
            id: ids[position].to_owned(),
            episodes: table.group_episodes(position).iter().map(|e| e as usize).collect(),
        })
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

/// One state to branch from: the replayed slot, the step it stands at, its fingerprint, the rows that reached
/// it and the distinct actions they took there (in order of first appearance).
struct State {
    slot: Slot,
    step: usize,
    fingerprint: Option<String>,
    members: Vec<RowRef>,
    actions: Vec<String>,
}

/// What makes two rows one state: the environment's fingerprint, or the row itself where it declares none.
#[derive(Clone, PartialEq, Eq, Hash)]
enum StateKey {
    Fingerprint(String),
    Row(usize, usize),
}

fn measure_group(
    plan: &Plan<'_>,
    job: &GroupJob,
    policy: &Policy,
    seed: u64,
    stop: &AtomicBool,
) -> Result<GroupResult, TruthError> {
    let mut result = GroupResult::default();
    let mut states: Vec<State> = Vec::new();
    let mut by_key: HashMap<StateKey, usize> = HashMap::new();
    for &episode in &job.episodes {
        let recorded = &plan.episodes[episode];
        let task = recorded.task.as_ref().map(|t| t.id.as_str()).unwrap_or("");
        let mut slot = Slot::new(plan.tasks.start_task(task)?);
        for (t, step) in recorded.steps.iter().enumerate() {
            let replayed = slot.env.observation();
            if replayed != &*step.observation {
                result.divergences.push(TruthDivergence {
                    episode: recorded.id.clone(),
                    step: t,
                    recorded: step.observation.to_string(),
                    replayed: replayed.to_owned(),
                });
                break;
            }
            let fingerprint = slot.env.state_fingerprint();
            let key = fingerprint.clone().map_or(StateKey::Row(episode, t), StateKey::Fingerprint);
            let index = *by_key.entry(key).or_insert_with(|| {
                states.push(State {
                    slot: slot.clone(),
                    step: t,
                    fingerprint,
                    members: Vec::new(),
                    actions: Vec::new(),
                });
                states.len() - 1
            });
            let state = &mut states[index];
            state.members.push(RowRef { episode: episode as u32, step: t as u32 });
            if !state.actions.contains(&step.action) {
                state.actions.push(step.action.clone());
            }
            slot.act(&step.action);
        }
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
                state: state.fingerprint.clone(),
            });
        }
        result.states += 1;
    }
    Ok(result)
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
