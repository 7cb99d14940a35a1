//! The GiGPO advantage engine: episode-level relative advantages within episode groups and step-level
//! relative advantages within anchor-state groups, reproducing the reference trainer's computation.
//!
//! For episode τ of group g with (shaped) rewards r_0..r_{T-1} and invalid-action penalty c:
//!
//! - row score s = Σ_k r_k − c·[step invalid]; return R_t = Σ_{k≥t} γ^{k−t} r_k − c·[step invalid]
//!   (the penalty lowers only the invalid row's own score and return, it is not discounted into earlier rows);
//! - A_E = (s − mean) / F over the episode group's pool: every row (pooling `steps`, what the reference trainer
//!   does) or each trajectory's first row (pooling `trajectories`, the paper's equation). With pooling
//!   `trajectories` only the baseline comes from first rows: every row's A_E uses its own score, as the
//!   reference trainer does. A pool of one sample has mean 0 and F 1, so its advantage is the raw score;
//! - A_S = (R_t − mean_S) / F_S over the row's anchor-state group; a singleton step group gives 0;
//! - F = 1 (`mean_norm`) or the sample standard deviation (N−1) + 1e-6 (`mean_std_norm`).
//!
//! [`RowAdvantage::episode_advantage`] and [`RowAdvantage::step_advantage`] are always these two GiGPO
//! components, whatever the estimator, so that views can show them side by side; the estimator only decides
//! [`RowAdvantage::advantage`]: A_E + ω·A_S (`gigpo`), A_E (`grpo`), A_S (`step`), or
//! n/(n−1)·(s − mean) over the same pool (`rloo`, 0 for a pool of one: no other sample to leave in).

use foldhash::{HashMap, HashMapExt};

use super::settings::{AdvantageSettings, AnchorMode, Estimator, Norm, Pooling};
use crate::run::{Episode, Step};
use crate::text::difflib::{Matcher, Reference};
use crate::webshop::page::classify_observation;

/// Added to the standard deviation by `mean_std_norm`, as in the reference trainer.
pub const STD_EPSILON: f64 = 1e-6;

/// Reward given to the last step of a successful episode by the binary success shaping (WebShop training
/// convention); every other step gets 0.
pub const SUCCESS_REWARD: f64 = 10.0;

/// Everything computed for one step row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowAdvantage {
    /// Reward after shaping.
    pub reward: f64,
    /// Row score s = Σ_k r_k − c·[step invalid].
    pub score: f64,
    /// Discounted return R_t = Σ_{k≥t} γ^{k−t} r_k − c·[step invalid].
    pub ret: f64,
    /// GiGPO's episode component A_E (whatever the estimator).
    pub episode_advantage: f64,
    /// GiGPO's step component A_S (whatever the estimator).
    pub step_advantage: f64,
    /// The estimator's final advantage.
    pub advantage: f64,
    /// Index into [`AdvantageTable::anchor_groups`].
    pub step_group: u32,
}

/// A row is addressed by its episode's index in the input and its step index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct RowRef {
    pub episode: u32,
    pub step: u32,
}

/// Steps of one episode group that share an anchor state (GiGPO's step group).
#[derive(Clone, Debug, PartialEq)]
pub struct AnchorGroup {
    pub episode_group: u32,
    /// Members in file order; the first one is the cluster representative in similarity mode.
    pub members: Vec<RowRef>,
    /// Mean and sample std (N−1; 0 for a singleton) of the members' returns.
    pub mean: f64,
    pub std: f64,
    /// The divisor F_S used for A_S (1 under `mean_norm`, std + 1e-6 under `mean_std_norm`).
    pub factor: f64,
}

/// One episode group (same task, same start state).
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeGroup {
    pub name: String,
    /// Indices of its episodes, in file order.
    pub episodes: Vec<u32>,
    /// Mean and sample std of the pool the episode baseline was taken over (std 0 for one sample).
    pub mean: f64,
    pub std: f64,
    pub pool_size: usize,
    /// The baseline and divisor actually used for A_E: (mean, F), or (0, 1) for a pool of one sample.
    pub baseline: f64,
    pub factor: f64,
    /// All trajectories have the same total (shaped) reward: A_E carries no learning signal.
    /// Trivially true for a group of one trajectory.
    pub zero_variance: bool,
}

/// The engine's output for a list of episodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdvantageTable {
    /// `rows[row_offsets[e]..row_offsets[e + 1]]` are episode `e`'s steps.
    pub row_offsets: Vec<usize>,
    pub rows: Vec<RowAdvantage>,
    /// Anchor groups, episode group by episode group, each in order of first appearance.
    pub anchor_groups: Vec<AnchorGroup>,
    /// Episode groups in order of first appearance in the file.
    pub episode_groups: Vec<EpisodeGroup>,
    /// Episode index → index into `episode_groups`.
    pub episode_group_of: Vec<u32>,
}

impl AdvantageTable {
    pub fn episode_rows(&self, episode: usize) -> &[RowAdvantage] {
        &self.rows[self.row_offsets[episode]..self.row_offsets[episode + 1]]
    }

    pub fn row(&self, at: RowRef) -> &RowAdvantage {
        &self.rows[self.row_offsets[at.episode as usize] + at.step as usize]
    }

    pub fn anchor_group_of(&self, at: RowRef) -> &AnchorGroup {
        &self.anchor_groups[self.row(at).step_group as usize]
    }

    pub fn episode_group_of(&self, episode: usize) -> &EpisodeGroup {
        &self.episode_groups[self.episode_group_of[episode] as usize]
    }
}

/// Compute advantages for `episodes` (in file order) under `settings`.
pub fn compute(episodes: &[Episode], settings: &AdvantageSettings) -> AdvantageTable {
    let total_steps = episodes.iter().map(|e| e.steps.len()).sum();
    let mut table = AdvantageTable {
        row_offsets: Vec::with_capacity(episodes.len() + 1),
        rows: Vec::with_capacity(total_steps),
        anchor_groups: Vec::new(),
        episode_groups: Vec::new(),
        episode_group_of: Vec::with_capacity(episodes.len()),
    };
    table.row_offsets.push(0);

    let mut group_index: HashMap<&str, u32> = HashMap::new();
    for (e, episode) in episodes.iter().enumerate() {
        let g = *group_index.entry(episode.group.as_str()).or_insert_with(|| {
            table.episode_groups.push(EpisodeGroup {
                name: episode.group.clone(),
                episodes: Vec::new(),
                mean: 0.0,
                std: 0.0,
                pool_size: 0,
                baseline: 0.0,
                factor: 1.0,
                zero_variance: true,
            });
            (table.episode_groups.len() - 1) as u32
        });
        table.episode_groups[g as usize].episodes.push(e as u32);
        table.episode_group_of.push(g);
        push_rows(&mut table.rows, episode, settings);
        table.row_offsets.push(table.rows.len());
    }

    let mut clusterer = Clusterer::new(settings.anchor);
    for g in 0..table.episode_groups.len() {
        episode_level(&mut table, g, settings);
        step_level(&mut table, episodes, g, settings, &mut clusterer);
    }
    table
}

/// Shaped rewards, row scores and discounted returns of one episode.
fn push_rows(rows: &mut Vec<RowAdvantage>, episode: &Episode, settings: &AdvantageSettings) {
    let n = episode.steps.len();
    let start = rows.len();
    let success = episode.success();
    let bonus = if success { efficiency_bonus(episode, settings) } else { 0.0 };
    let mut total = 0.0;
    for (t, step) in episode.steps.iter().enumerate() {
        let last = t + 1 == n;
        let mut reward = match settings.success_reward {
            true if success && last => SUCCESS_REWARD,
            true => 0.0,
            false => step.reward,
        };
        if last {
            reward += bonus;
        }
        total += reward;
        rows.push(RowAdvantage {
            reward,
            score: 0.0,
            ret: 0.0,
            episode_advantage: 0.0,
            step_advantage: 0.0,
            advantage: 0.0,
            step_group: 0,
        });
    }
    let mut running = 0.0;
    for (row, step) in rows[start..].iter_mut().zip(&episode.steps).rev() {
        running = row.reward + settings.gamma * running;
        let penalty = if step.valid { 0.0 } else { settings.invalid_penalty };
        row.ret = running - penalty;
        row.score = total - penalty;
    }
}

/// α₁/(mean tokens per step) + α₂/(number of steps), added to the last reward of a successful episode.
/// Steps without a token count count as zero tokens; with no tokens at all the α₁ term is left out rather
/// than made infinite.
fn efficiency_bonus(episode: &Episode, settings: &AdvantageSettings) -> f64 {
    let n = episode.steps.len() as f64;
    let mut bonus = 0.0;
    if settings.efficiency_alpha1 != 0.0 {
        let tokens: u64 = episode.steps.iter().map(|s| s.tokens.unwrap_or(0)).sum();
        let mean_tokens = tokens as f64 / n;
        if mean_tokens > 0.0 {
            bonus += settings.efficiency_alpha1 / mean_tokens;
        }
    }
    if settings.efficiency_alpha2 != 0.0 && n > 0.0 {
        bonus += settings.efficiency_alpha2 / n;
    }
    bonus
}

/// Mean and sample standard deviation (N−1) of `values`; one sample has std 0, none has mean 0.
pub fn mean_std(values: impl Iterator<Item = f64> + Clone) -> (f64, f64, usize) {
    let (n, sum) = values.clone().fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
    if n == 0 {
        return (0.0, 0.0, 0);
    }
    let mean = sum / n as f64;
    if n == 1 {
        return (mean, 0.0, 1);
    }
    let ss: f64 = values.map(|v| (v - mean) * (v - mean)).sum();
    (mean, (ss / (n - 1) as f64).sqrt(), n)
}

/// The divisor F for a standard deviation under `norm`.
pub fn norm_factor(norm: Norm, std: f64) -> f64 {
    match norm {
        Norm::MeanNorm => 1.0,
        Norm::MeanStdNorm => std + STD_EPSILON,
    }
}

fn episode_level(table: &mut AdvantageTable, g: usize, settings: &AdvantageSettings) {
    let AdvantageTable { row_offsets, rows, episode_groups, .. } = table;
    let group = &mut episode_groups[g];
    let range = |e: u32| row_offsets[e as usize]..row_offsets[e as usize + 1];
    let (mean, std, pool) = match settings.pooling {
        Pooling::Steps => {
            mean_std(group.episodes.iter().flat_map(|&e| rows[range(e)].iter().map(|row| row.score)))
        }
        Pooling::Trajectories => {
            mean_std(group.episodes.iter().filter_map(|&e| rows[range(e)].first()).map(|row| row.score))
        }
    };
    let total = |e: u32| rows[range(e)].iter().map(|row| row.reward).sum::<f64>();
    let first_total = group.episodes.first().map(|&e| total(e));
    group.zero_variance = group.episodes.iter().all(|&e| Some(total(e)) == first_total);
    let (baseline, factor) = if pool <= 1 { (0.0, 1.0) } else { (mean, norm_factor(settings.norm, std)) };
    (group.mean, group.std, group.pool_size, group.baseline, group.factor) = (mean, std, pool, baseline, factor);
    for &e in &group.episodes {
        for row in &mut rows[range(e)] {
            row.episode_advantage = (row.score - baseline) / factor;
        }
    }
}

fn step_level<'a>(
    table: &mut AdvantageTable,
    episodes: &'a [Episode],
    g: usize,
    settings: &AdvantageSettings,
    clusterer: &mut Clusterer<'a>,
) {
    let AdvantageTable { row_offsets, rows, episode_groups, anchor_groups, .. } = table;
    let group = &episode_groups[g];
    let first_id = anchor_groups.len();

    // Cluster the group's rows in file order; `anchor_groups` grows with each new cluster.
    clusterer.reset();
    for &e in &group.episodes {
        let base = row_offsets[e as usize];
        for (t, step) in episodes[e as usize].steps.iter().enumerate() {
            let local = clusterer.assign(step);
            if local as usize + first_id == anchor_groups.len() {
                anchor_groups.push(AnchorGroup {
                    episode_group: g as u32,
                    members: Vec::new(),
                    mean: 0.0,
                    std: 0.0,
                    factor: 1.0,
                });
            }
            let id = first_id + local as usize;
            anchor_groups[id].members.push(RowRef { episode: e, step: t as u32 });
            rows[base + t].step_group = id as u32;
        }
    }

    let at = |m: &RowRef| row_offsets[m.episode as usize] + m.step as usize;
    let pool = group.pool_size;
    let rloo_scale = if pool > 1 { pool as f64 / (pool - 1) as f64 } else { 0.0 };
    for anchor in &mut anchor_groups[first_id..] {
        let (mean, std, n) = mean_std(anchor.members.iter().map(|m| rows[at(m)].ret));
        let factor = norm_factor(settings.norm, std);
        (anchor.mean, anchor.std, anchor.factor) = (mean, std, factor);
        for m in &anchor.members {
            let row = &mut rows[at(m)];
            row.step_advantage = if n <= 1 { 0.0 } else { (row.ret - mean) / factor };
            row.advantage = match settings.estimator {
                Estimator::Gigpo => row.episode_advantage + settings.omega * row.step_advantage,
                Estimator::Grpo => row.episode_advantage,
                Estimator::Step => row.step_advantage,
                Estimator::Rloo => rloo_scale * (row.score - group.mean),
            };
        }
    }
}

/// Assigns the rows of one episode group to anchor-state clusters, numbered from 0 in order of opening.
struct Clusterer<'a> {
    mode: AnchorMode,
    /// Exact and page modes: key → cluster. Similarity mode: every distinct string seen → the cluster it
    /// joined. Clustering is deterministic and clusters are only ever appended, so a repeated string joins
    /// the same cluster again (the clusters before it still fail, and that one — or the one it opened, whose
    /// first member is the string itself, ratio 1 — still matches): the memo cannot change the result.
    by_key: HashMap<&'a str, u32>,
    clusters: u32,
    /// Similarity mode: each cluster's first member, prepared as difflib's `b`.
    references: Vec<Reference>,
    matcher: Matcher,
    chars: Vec<char>,
}

impl<'a> Clusterer<'a> {
    fn new(mode: AnchorMode) -> Self {
        Clusterer {
            mode,
            by_key: HashMap::new(),
            clusters: 0,
            references: Vec::new(),
            matcher: Matcher::default(),
            chars: Vec::new(),
        }
    }

    fn reset(&mut self) {
        self.by_key.clear();
        self.clusters = 0;
        self.references.clear();
    }

    fn assign(&mut self, step: &'a Step) -> u32 {
        let key = match self.mode {
            AnchorMode::Page => step.page.as_deref().unwrap_or_else(|| classify_observation(&step.observation).as_str()),
            AnchorMode::Exact | AnchorMode::Similarity(_) => step.anchor_key(),
        };
        if let Some(&c) = self.by_key.get(key) {
            return c;
        }
        let joined = match self.mode {
            // SequenceMatcher(None, row, first_member): the row is difflib's `a`, the representative its `b`.
            AnchorMode::Similarity(theta) => {
                self.chars.clear();
                self.chars.extend(key.chars());
                let (matcher, chars) = (&mut self.matcher, &self.chars);
                self.references.iter().position(|r| matcher.similar(chars, r, theta))
            }
            AnchorMode::Exact | AnchorMode::Page => None,
        };
        let c = match joined {
            Some(c) => c as u32,
            None => {
                if let AnchorMode::Similarity(_) = self.mode {
                    self.references.push(Reference::new(key));
                }
                self.clusters += 1;
                self.clusters - 1
            }
        };
        self.by_key.insert(key, c);
        c
    }
}
