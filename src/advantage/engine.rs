//! The GiGPO advantage engine: episode-level relative advantages within episode groups and step-level
//! relative advantages within anchor-state groups, reproducing the reference trainer's computation.

use std::collections::HashMap;

use super::settings::{AdvantageSettings, AnchorMode, Estimator, Norm, Pooling};
use crate::run::Episode;

/// Everything computed for one step row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowAdvantage {
    /// Reward after shaping.
    pub reward: f64,
    /// Row score s = Σ_k r_k − c·[step invalid].
    pub score: f64,
    /// Discounted return R_t = Σ_{k≥t} γ^{k−t} r_k − c·[step invalid].
    pub ret: f64,
    pub episode_advantage: f64,
    pub step_advantage: f64,
    /// The estimator's final advantage.
    pub advantage: f64,
    /// Index into [`AdvantageTable::anchor_groups`].
    pub step_group: u32,
}

/// A row is addressed by its episode's index in the input and its step index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowRef {
    pub episode: u32,
    pub step: u32,
}

/// Steps of one episode group that share an anchor state (GiGPO's step group).
#[derive(Clone, Debug, PartialEq)]
pub struct AnchorGroup {
    pub episode_group: u32,
    /// Members in file order.
    pub members: Vec<RowRef>,
    /// Mean and sample std (N−1; 0 for a singleton) of the members' returns.
    pub mean: f64,
    pub std: f64,
}

/// One episode group (same task, same start state).
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeGroup {
    pub name: String,
    /// Indices of its episodes, in file order.
    pub episodes: Vec<u32>,
    /// Mean and sample std of the pool the episode baseline was taken over.
    pub mean: f64,
    pub std: f64,
    pub pool_size: usize,
    /// All trajectories have the same total reward: no learning signal from A_E.
    pub zero_variance: bool,
}

/// The engine's output for a list of episodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdvantageTable {
    /// `rows[row_offsets[e]..row_offsets[e + 1]]` are episode `e`'s steps.
    pub row_offsets: Vec<usize>,
    pub rows: Vec<RowAdvantage>,
    pub anchor_groups: Vec<AnchorGroup>,
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
    let mut table = AdvantageTable::default();
    table.row_offsets.reserve(episodes.len() + 1);
    table.row_offsets.push(0);

    // Episode groups in order of first appearance.
    let mut group_index: HashMap<&str, u32> = HashMap::new();
    for (e, episode) in episodes.iter().enumerate() {
        let g = *group_index.entry(episode.group.as_str()).or_insert_with(|| {
            table.episode_groups.push(EpisodeGroup {
                name: episode.group.clone(),
                episodes: Vec::new(),
                mean: 0.0,
                std: 0.0,
                pool_size: 0,
                zero_variance: false,
            });
            (table.episode_groups.len() - 1) as u32
        });
        table.episode_groups[g as usize].episodes.push(e as u32);
        table.episode_group_of.push(g);
        push_rows(&mut table.rows, episode, settings);
        table.row_offsets.push(table.rows.len());
    }

    for g in 0..table.episode_groups.len() {
        episode_level(&mut table, g, settings);
        step_level(&mut table, episodes, g, settings);
    }
    for row in &mut table.rows {
        row.advantage = match settings.estimator {
            Estimator::Gigpo => row.episode_advantage + settings.omega * row.step_advantage,
            Estimator::Grpo | Estimator::Rloo => row.episode_advantage,
            Estimator::Step => row.step_advantage,
        };
    }
    table
}

/// Shaped rewards, row scores and discounted returns of one episode.
fn push_rows(rows: &mut Vec<RowAdvantage>, episode: &Episode, settings: &AdvantageSettings) {
    let n = episode.steps.len();
    let start = rows.len();
    let success = episode.success();
    for (t, step) in episode.steps.iter().enumerate() {
        let mut reward = if settings.success_reward {
            if success && t + 1 == n { 10.0 } else { 0.0 }
        } else {
            step.reward
        };
        if success && t + 1 == n {
            reward += efficiency_bonus(episode, settings);
        }
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
    let total: f64 = rows[start..].iter().map(|r| r.reward).sum();
    let mut running = 0.0;
    for t in (0..n).rev() {
        running = rows[start + t].reward + settings.gamma * running;
        let penalty = if episode.steps[t].valid { 0.0 } else { settings.invalid_penalty };
        rows[start + t].ret = running - penalty;
        rows[start + t].score = total - penalty;
    }
}

/// α₁/(mean tokens per step) + α₂/(number of steps); steps without a token count count as zero tokens.
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
    if settings.efficiency_alpha2 != 0.0 {
        bonus += settings.efficiency_alpha2 / n;
    }
    bonus
}

/// Mean and sample standard deviation (N−1); a single sample has std 0.
fn mean_std(values: impl Iterator<Item = f64> + Clone) -> (f64, f64, usize) {
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

fn scale(norm: Norm, std: f64) -> f64 {
    match norm {
        Norm::MeanNorm => 1.0,
        Norm::MeanStdNorm => std + 1e-6,
    }
}

fn episode_level(table: &mut AdvantageTable, g: usize, settings: &AdvantageSettings) {
    let AdvantageTable { row_offsets, rows, episode_groups, .. } = table;
    let group = &mut episode_groups[g];
    let ranges: Vec<std::ops::Range<usize>> = group
        .episodes
        .iter()
        .map(|&e| row_offsets[e as usize]..row_offsets[e as usize + 1])
        .collect();
    let (mean, std, pool) = match settings.pooling {
        Pooling::Steps => mean_std(ranges.iter().flat_map(|r| rows[r.clone()].iter().map(|row| row.score))),
        Pooling::Trajectories => {
            mean_std(ranges.iter().filter(|r| !r.is_empty()).map(|r| rows[r.start].score))
        }
    };
    let totals = ranges.iter().map(|r| rows[r.clone()].iter().map(|row| row.reward).sum::<f64>());
    let first_total = totals.clone().next();
    group.zero_variance = totals.into_iter().all(|t| Some(t) == first_total);
    group.mean = mean;
    group.std = std;
    group.pool_size = pool;
    let (base, factor) = if pool <= 1 { (0.0, 1.0) } else { (mean, scale(settings.norm, std)) };
    for r in ranges {
        for row in &mut rows[r] {
            row.episode_advantage = match settings.estimator {
                Estimator::Rloo if pool > 1 => pool as f64 / (pool - 1) as f64 * (row.score - mean),
                Estimator::Rloo => 0.0,
                _ => (row.score - base) / factor,
            };
        }
    }
}

fn step_level(table: &mut AdvantageTable, episodes: &[Episode], g: usize, settings: &AdvantageSettings) {
    let members = anchor_clusters(table, episodes, g, settings.anchor);
    for members in members {
        let id = table.anchor_groups.len() as u32;
        let (mean, std, n) = mean_std(members.iter().map(|&m| table.row(m).ret));
        let factor = scale(settings.norm, std);
        for &m in &members {
            let idx = table.row_offsets[m.episode as usize] + m.step as usize;
            let row = &mut table.rows[idx];
            row.step_group = id;
            row.step_advantage = if n <= 1 { 0.0 } else { (row.ret - mean) / factor };
        }
        table.anchor_groups.push(AnchorGroup { episode_group: g as u32, members, mean, std });
    }
}

/// The anchor-state groups of episode group `g`, each a list of rows in file order.
fn anchor_clusters(
    table: &AdvantageTable,
    episodes: &[Episode],
    g: usize,
    mode: AnchorMode,
) -> Vec<Vec<RowRef>> {
    let group = &table.episode_groups[g];
    let rows = group.episodes.iter().flat_map(|&e| {
        (0..episodes[e as usize].steps.len()).map(move |t| RowRef { episode: e, step: t as u32 })
    });
    let mut clusters: Vec<Vec<RowRef>> = Vec::new();
    match mode {
        AnchorMode::Exact | AnchorMode::Page => {
            let mut index: HashMap<&str, usize> = HashMap::new();
            for r in rows {
                let step = &episodes[r.episode as usize].steps[r.step as usize];
                let key = match mode {
                    AnchorMode::Page => step.page.as_deref().unwrap_or_else(|| step.anchor_key()),
                    _ => step.anchor_key(),
                };
                let c = *index.entry(key).or_insert_with(|| {
                    clusters.push(Vec::new());
                    clusters.len() - 1
                });
                clusters[c].push(r);
            }
        }
        AnchorMode::Similarity(_theta) => todo!("similarity anchors"),
    }
    clusters
}
