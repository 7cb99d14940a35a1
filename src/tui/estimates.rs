//! The estimators view's numbers and the truth files the views show, kept beside the state ([`Estimates`])
//! and filled before a frame is drawn, so that drawing only reads them: by `update` after every message (the
//! selected group's columns, and the truth file of the iteration on screen, read again when it changed), and
//! by a job for what takes long (an iteration's batch columns, see below).
//!
//! The columns are computed per episode group (a group is small), the first time a group is shown under given
//! settings, and memoised per (group, settings, episodes); ProxMO's IDF is fitted over the whole iteration as
//! its authors fit it, and TRL's batch statistics span the iteration, so those columns are computed once per
//! iteration and memoised with it: at once for a small iteration, and as a job ([`BatchRequest`]) on an
//! iteration of at least `background_rows` step rows, their cells waiting meanwhile ([`PENDING`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::domain::Domain;
use crate::advantage::estimators::{self, EnvInputs, EstimatorError, EstimatorKind, EstimatorSettings};
use crate::advantage::{compute, AdvantageSettings, GroupEpisodes, RowRef};
use crate::env::{fill_page_anchors, PageAnchor};
use crate::run::text_on_disk::EpisodeText;
use crate::run::truth::{branchable_among, read_truth, truth_path, NoTruth, RunIdentity, TruthFile, TruthRow};
use crate::run::{Episode, Run};

/// Iterations of at least this many step rows have their batch columns computed as a job rather than on the
/// UI thread, where ProxMO over them would hold a key's frame back (the README's performance table has the
/// figure).
pub const BACKGROUND_BATCH_ROWS: usize = 2_000;

/// What a column shows while its iteration is computed in the background.
pub const PENDING: &str = "being computed over the whole iteration in the background";

/// The estimators' numbers and the truth files, as last computed and read.
#[derive(Debug, Default)]
pub struct Estimates {
    /// Most recent first.
    groups: Vec<Arc<GroupColumns>>,
    batches: Vec<Arc<BatchColumns>>,
    /// Iterations whose batch columns a job is computing.
    pending: Vec<BatchKey>,
    truths: Vec<TruthEntry>,
}

/// How many groups' columns, iterations' batch columns and truth files are kept.
const KEPT_GROUPS: usize = 32;
const KEPT_BATCHES: usize = 2;
const KEPT_TRUTHS: usize = 4;

fn keep<T>(list: &mut Vec<T>, entry: T, kept: usize) {
    list.insert(0, entry);
    list.truncate(kept);
}

/// The episodes of episode group `group`, in order (none when there is no such group).
pub fn group_episodes(domain: &Domain, group: u32) -> GroupEpisodes<'_> {
    domain.derived.table.get_group_episodes(group as usize).unwrap_or_default()
}

/// Every step row of episode group `group`: its trajectories in order, each step by step.
pub fn group_rows(domain: &Domain, group: u32) -> Vec<RowRef> {
    group_episodes(domain, group)
        .iter()
        .flat_map(|e| {
            (0..domain.episodes.at(e as usize).steps.len() as u32).map(move |step| RowRef { episode: e, step })
        })
        .collect()
}

/// The episode `e` of the run, read back from the run's file. One that can no longer be read (the file
/// changed; the watcher reads the run again) stands in without steps.
pub fn episode(domain: &Domain, e: u32) -> Arc<Episode> {
    domain.read_episode(e as usize).unwrap_or_else(|_| {
        let lean = &domain.episodes.at(e as usize);
        Arc::new(Episode::new(lean.id.to_string(), lean.group, Vec::new()))
    })
}

/// The iteration episode group `group` belongs to (its first episode's).
pub fn group_iteration(domain: &Domain, group: u32) -> Option<i64> {
    group_episodes(domain, group).first().map(|e| domain.episodes.at(e as usize).iteration)
}

// ---- The group's columns ----

/// One estimator's advantages for a group's rows (in [`group_rows`] order), or why it has none.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub kind: EstimatorKind,
    pub values: ColumnValues,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ColumnValues {
    Computed(Vec<f64>),
    /// Its iteration's batch columns are being computed in the background ([`PENDING`]).
    Pending,
    /// Why the estimator has no advantages for the group.
    Absent(ColumnAbsent),
}

/// Why an estimator's column has no advantages for a group.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ColumnAbsent {
    /// The estimator itself gives none (it needs what the run lacks, or the batch is of another shape).
    #[error(transparent)]
    Estimator(#[from] EstimatorError),
    /// An episode of the iteration could not be read back for its batch-scoped columns.
    #[error("reading the iteration back: {0}")]
    ReadBack(String),
    /// The batch-scoped columns of the iteration were neither computed nor asked for.
    #[error("{0}: not computed")]
    NotComputed(EstimatorKind),
    /// The batch-scoped column has no value for this row (the group changed since the batch was computed).
    #[error("{kind}: step {step} of episode {episode} not computed")]
    RowNotComputed { kind: EstimatorKind, step: u32, episode: u32 },
}

/// What a group's columns were computed from: the group, the settings, and the episodes as they were.
#[derive(Clone, Copy, Debug, PartialEq)]
struct GroupKey {
    episodes_version: u64,
    group: u32,
    settings: AdvantageSettings,
    family: EstimatorSettings,
}

impl GroupKey {
    fn of(domain: &Domain, group: u32) -> GroupKey {
        GroupKey {
            episodes_version: domain.episodes_version,
            group,
            settings: domain.table_settings(),
            family: family_settings(),
        }
    }
}

#[derive(Debug)]
pub struct GroupColumns {
    key: GroupKey,
    pub columns: Vec<Column>,
}

impl GroupColumns {
    fn waits(&self) -> bool {
        self.columns.iter().any(|c| c.values == ColumnValues::Pending)
    }
}

/// One estimator's advantages over a batch: per episode index, its rows' advantages.
type ByEpisode = std::collections::HashMap<u32, Vec<f64>>;

/// One estimator's advantages over an iteration, as kept for a group's columns.
enum BatchColumn {
    Computed(ByEpisode),
    Pending,
    Absent(ColumnAbsent),
}

/// The batch-scoped estimators' advantages over one iteration.
#[derive(Debug)]
pub struct BatchColumns {
    key: BatchKey,
    columns: Vec<(EstimatorKind, Result<ByEpisode, ColumnAbsent>)>,
}

/// The settings of the family's own estimators: their authors' defaults (the CLI's flags left out).
fn family_settings() -> EstimatorSettings {
    EstimatorSettings::default()
}

/// Whether `kind`'s advantages for a group depend on the other groups of its iteration: ProxMO's TF-IDF is
/// fitted over the whole batch, and TRL's `scale_rewards` takes statistics over it.
fn batch_scoped(kind: EstimatorKind, settings: &AdvantageSettings) -> bool {
    kind == EstimatorKind::Proxmo || settings.scale_rewards.is_some()
}

impl Estimates {
    /// Group `group`'s columns as last computed under the present settings and episodes.
    pub fn group_columns(&self, domain: &Domain, group: u32) -> Option<Arc<GroupColumns>> {
        let key = GroupKey::of(domain, group);
        self.groups.iter().find(|g| g.key == key).cloned()
    }

    /// Compute group `group`'s columns unless they are kept already: whether they were computed, and the job
    /// to ask for when its iteration has at least `background_rows` step rows and its batch columns are neither
    /// kept nor asked for yet (the batch-scoped columns wait meanwhile).
    pub fn refresh_group(
        &mut self,
        domain: &Domain,
        group: u32,
        background_rows: usize,
    ) -> (bool, Option<Box<BatchRequest>>) {
        let key = GroupKey::of(domain, group);
        let Some(iteration) = group_iteration(domain, group) else { return (false, None) };
        if self.groups.iter().any(|g| g.key == key) {
            return (false, None);
        }
        let batch_key = batch_key(domain, iteration);
        let uses_batch = EstimatorKind::ALL.into_iter().any(|k| batch_scoped(k, &key.settings));
        let mut job = None;
        if uses_batch && !self.batches.iter().any(|b| b.key == batch_key) && !self.pending.contains(&batch_key) {
            let (request, rows) = batch_request(domain, iteration);
            if rows < background_rows {
                keep(&mut self.batches, request.compute(), KEPT_BATCHES);
            } else {
                self.pending.push(batch_key);
                job = Some(Box::new(request));
            }
        }
        let columns = self.compute_group(domain, key, iteration);
        keep(&mut self.groups, Arc::new(columns), KEPT_GROUPS);
        (true, job)
    }

    fn compute_group(&self, domain: &Domain, key: GroupKey, iteration: i64) -> GroupColumns {
        let mut group_eps: Vec<Episode> =
            group_episodes(domain, key.group).iter().map(|e| Episode::clone(&episode(domain, e))).collect();
        let env = env_inputs(&domain.run);
        fill_page_anchors(&mut group_eps, env.page_anchor);
        let table = compute(&group_eps, &key.settings);
        let rows = group_rows(domain, key.group);
        let columns = EstimatorKind::ALL
            .into_iter()
            .map(|kind| {
                let values = if batch_scoped(kind, &key.settings) {
                    match self.batch_column(domain, iteration, kind) {
                        BatchColumn::Pending => Err(None),
                        BatchColumn::Absent(why) => Err(Some(why)),
                        BatchColumn::Computed(by_episode) => rows
                            .iter()
                            .map(|r| {
                                by_episode.get(&r.episode).and_then(|v| v.get(r.step as usize).copied()).ok_or(Some(
                                    ColumnAbsent::RowNotComputed { kind, step: r.step, episode: r.episode },
                                ))
                            })
                            .collect(),
                    }
                } else {
                    estimators::compute_with_table(kind, &group_eps, &table, &key.settings, &key.family, &env.inputs())
                        .map(|out| out.advantages)
                        .map_err(|e| Some(e.into()))
                };
                let values = match values {
                    Ok(values) => ColumnValues::Computed(values),
                    Err(None) => ColumnValues::Pending,
                    Err(Some(why)) => ColumnValues::Absent(why),
                };
                Column { kind, values }
            })
            .collect();
        GroupColumns { key, columns }
    }

    /// `kind`'s advantages over iteration `iteration`, per episode, as kept.
    fn batch_column(&self, domain: &Domain, iteration: i64, kind: EstimatorKind) -> BatchColumn {
        let key = batch_key(domain, iteration);
        let Some(batch) = self.batches.iter().find(|b| b.key == key) else {
            return match self.pending.contains(&key) {
                true => BatchColumn::Pending,
                false => BatchColumn::Absent(ColumnAbsent::NotComputed(kind)),
            };
        };
        match batch.columns.iter().find(|(k, _)| *k == kind) {
            Some((_, Ok(by_episode))) => BatchColumn::Computed(by_episode.clone()),
            Some((_, Err(why))) => BatchColumn::Absent(why.clone()),
            None => BatchColumn::Absent(ColumnAbsent::NotComputed(kind)),
        }
    }

    /// An iteration's batch columns computed in the background arrived: kept, and the groups that waited for
    /// them are computed again.
    pub fn batch_arrived(&mut self, batch: Arc<BatchColumns>) {
        self.pending.retain(|k| *k != batch.key);
        keep(&mut self.batches, batch, KEPT_BATCHES);
        self.groups.retain(|g| !g.waits());
    }
}

/// What an iteration's batch columns are computed from: the episodes, the iteration, the settings.
type BatchKey = (u64, i64, AdvantageSettings, EstimatorSettings);

/// An iteration's batch-scoped columns to compute, on the UI thread for a small iteration or as a job.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchRequest {
    key: BatchKey,
    /// The iteration's episodes (indices in the run, in file order) and where their text is.
    members: Vec<u32>,
    texts: Vec<EpisodeText>,
    page_anchor: Option<PageAnchor>,
}

impl BatchRequest {
    /// Read the iteration's episodes back and compute its batch-scoped columns (a job does this off the UI
    /// thread). An episode that cannot be read back makes every column an error naming it.
    pub fn compute(self) -> Arc<BatchColumns> {
        let (_, _, settings, family) = self.key;
        let eps: Result<Vec<Episode>, ColumnAbsent> = self
            .texts
            .iter()
            .map(|t| t.read().map(|e| Episode::clone(&e)).map_err(|e| ColumnAbsent::ReadBack(e.to_string())))
            .collect();
        let kinds = EstimatorKind::ALL.into_iter().filter(|&k| batch_scoped(k, &settings));
        let columns = match eps {
            Err(e) => kinds.map(|k| (k, Err(e.clone()))).collect(),
            Ok(mut eps) => {
                fill_page_anchors(&mut eps, self.page_anchor);
                let table = compute(&eps, &settings);
                let env = Env { page_anchor: self.page_anchor };
                kinds
                    .map(|k| {
                        let out = estimators::compute_with_table(k, &eps, &table, &settings, &family, &env.inputs())
                            .map_err(ColumnAbsent::from)
                            .map(|out| {
                                let rows = |i: usize| out.episode_advantages(i).to_vec();
                                self.members.iter().enumerate().map(|(i, &e)| (e, rows(i))).collect()
                            });
                        (k, out)
                    })
                    .collect()
            }
        };
        Arc::new(BatchColumns { key: self.key, columns })
    }
}

/// The batch key of iteration `iteration` under the present settings and episodes.
fn batch_key(domain: &Domain, iteration: i64) -> BatchKey {
    (domain.episodes_version, iteration, domain.table_settings(), family_settings())
}

/// The request for iteration `iteration`'s batch columns (the groups whose first episode is in it), and how
/// many step rows it spans.
fn batch_request(domain: &Domain, iteration: i64) -> (BatchRequest, usize) {
    let lean = &domain.episodes;
    let table = &domain.derived.table;
    let mut members: Vec<u32> = (0..table.episode_groups.len())
        .map(|g| table.group_episodes(g))
        .filter(|members| members.first().is_some_and(|e| lean.at(e as usize).iteration == iteration))
        .flat_map(GroupEpisodes::iter)
        .collect();
    members.sort_unstable();
    let rows = members.iter().map(|&e| lean.at(e as usize).steps.len()).sum();
    let texts = members.iter().map(|&e| lean.at(e as usize).text.to_owned()).collect();
    let page_anchor = crate::env_registry::page_anchor(&domain.run);
    let request = BatchRequest { key: batch_key(domain, iteration), members, texts, page_anchor };
    (request, rows)
}

/// What the environment tells the estimators: its page anchor of an observation (WebShop's page type).
struct Env {
    page_anchor: Option<PageAnchor>,
}

fn env_inputs(run: &Run) -> Env {
    Env { page_anchor: crate::env_registry::page_anchor(run) }
}

impl Env {
    fn inputs(&self) -> EnvInputs<'_> {
        EnvInputs { page_of: self.page_anchor.as_ref().map(PageAnchor::as_fn) }
    }
}

// ---- The truth ----

/// The truth of an iteration: a truth file, or why there is none.
#[derive(Clone, Debug)]
pub enum Truth {
    Present {
        file: Arc<TruthFile>,
        path: PathBuf,
    },
    /// The iteration can be measured, and has not been.
    NotMeasured,
    Absent(String),
}

impl Truth {
    /// The truth of episode `id`'s step `step`, if it was measured.
    pub fn row(&self, id: &str, step: usize) -> Option<&TruthRow> {
        match self {
            Truth::Present { file, .. } => file.row(id, step),
            Truth::NotMeasured | Truth::Absent(_) => None,
        }
    }
}

/// An iteration's truth as last looked at, and the file's modification time then (a newer file is read again).
#[derive(Debug)]
struct TruthEntry {
    path: PathBuf,
    modified: Option<SystemTime>,
    truth: Truth,
}

impl Estimates {
    /// Look at iteration `iteration`'s truth file again: read it when it is new or changed, else say why there
    /// is none; whether what the views show of it changed.
    pub fn refresh_truth(&mut self, domain: &Domain, iteration: i64) -> bool {
        let run = &domain.run;
        let path = truth_path(&run.dir, iteration);
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let kept = self.truths.iter().position(|t| t.path == path);
        if let (Some(at), Some(_)) = (kept, modified) {
            if self.truths[at].modified == modified {
                return false;
            }
        }
        let truth = match modified {
            Some(_) => match read_truth(&path, RunIdentity::of(&run.dir, run.meta.as_ref()), iteration) {
                Ok(file) => Truth::Present { file: Arc::new(file), path: path.clone() },
                Err(e) => Truth::Absent(e.to_string()),
            },
            None => match branchable_among(run, domain.episodes.iter().map(|e| e.iteration), iteration) {
                Err(NoTruth::NoPolicy { why, .. }) => Truth::Absent(format!("no policy to branch with ({why})")),
                Err(other) => Truth::Absent(other.to_string()),
                Ok(_) => Truth::NotMeasured,
            },
        };
        let changed = kept.is_none_or(|at| {
            let old = &self.truths[at];
            old.modified != modified || !same_absence(&old.truth, &truth)
        });
        self.truths.retain(|t| t.path != path);
        keep(&mut self.truths, TruthEntry { path, modified, truth }, KEPT_TRUTHS);
        changed
    }

    /// Iteration `iteration`'s truth as last looked at (`None`: not looked at yet).
    pub fn truth(&self, run_dir: &Path, iteration: i64) -> Option<&Truth> {
        let path = truth_path(run_dir, iteration);
        self.truths.iter().find(|t| t.path == path).map(|t| &t.truth)
    }
}

/// Whether two truths without a file say the same (with a file, the modification time tells).
fn same_absence(a: &Truth, b: &Truth) -> bool {
    match (a, b) {
        (Truth::NotMeasured, Truth::NotMeasured) => true,
        (Truth::Absent(x), Truth::Absent(y)) => x == y,
        _ => false,
    }
}

pub use crate::advantage::aliasing::a_star_se;

/// A* ± its standard error, as a cell.
pub fn a_star_text(row: &TruthRow) -> String {
    format!("{:+.3}±{:.3}", row.a_star, a_star_se(row))
}
