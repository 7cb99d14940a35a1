//! The estimator family: every step-level advantage estimator gigscope computes from a recorded run, behind one
//! interface, so that a view can show them side by side.
//!
//! Each estimator ([`EstimatorKind`]) says what it needs from the run ([`EstimatorKind::needs`]), takes its
//! settings from [`EstimatorSettings`] (defaults: the authors' scripts, as gigscope's GiGPO defaults are) and the
//! shared [`AdvantageSettings`] (γ, ω, the invalid-action penalty c, norm and pooling of GiGPO's episode level,
//! reward shaping), and gives per row an advantage and the terms that explain it ([`EstimatorOutput`]).
//!
//! - `gigpo`, `grpo`, `rloo`, `step`: the engine's own estimators ([`super::compute`]), wrapped (anchors as the
//!   shared settings say: exact, similarity or page).
//! - `hgpo`, `graphgpo`, `proxmo`, `soft-page`, `q-minus-v`: computed here from the engine's rows (shaped rewards,
//!   row scores s and returns R_t with their penalties), each in its own file.
//!
//! Rows are in gigscope's order: episodes in file order, steps in time order (trajectory-major); `uid` is the
//! episode group, and a group's rows are its episodes' rows in file order. verl-agent's batches are in another
//! order (and `adjust_batch` adds duplicate rows): the order-dependent parts (HGPO's histories need none,
//! similarity canonicalisation and sklearn's `max_features` ties do) follow gigscope's order.
//!
//! GiGPO's episode component, where an estimator uses it ("A_ep"), is computed with the engine's rules under the
//! estimator's norm: the pool is every row's score (or each trajectory's first, under pooling `trajectories`),
//! and a pool of one sample has baseline 0 and divisor 1.

mod graphgpo;
mod hgpo;
mod proxmo;
mod q_minus_v;
mod soft_page;
pub mod tfidf;

use std::borrow::Cow;
use std::ops::Range;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::engine::{self, mean_std, norm_factor, AdvantageTable, RowAdvantage};
use super::settings::{AdvantageSettings, AnchorMode, Estimator, Norm, Pooling};
use crate::run::{Episode, Step};

pub use soft_page::{page_category, PageCategory, PAGE_SIMILARITY};

/// One estimator of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum EstimatorKind {
    /// GiGPO: A = A_E + ω·A_S (the engine's).
    Gigpo,
    /// GRPO: A = A_E (the engine's).
    Grpo,
    /// RLOO: A = n/(n−1)·(s − mean) over the episode pool (the engine's).
    Rloo,
    /// GiGPO's step component alone, A = A_S (the engine's).
    Step,
    /// HGPO: hierarchical groups of equal anchor histories of length k = 1..K+1, length-weighted.
    Hgpo,
    /// GraphGPO: returns 10·γ^d from hop distances to success in a per-group state graph.
    Graphgpo,
    /// ProxMO: soft proximity baseline over TF-IDF cosine similarity, optional success-rate modulation.
    Proxmo,
    /// The soft proximity baseline with REMEMBERER's WebShop page-similarity table as the kernel.
    #[serde(alias = "soft_page")]
    SoftPage,
    /// Within exact anchor groups: mean return of the members with the same action minus the group's mean.
    #[serde(alias = "q_minus_v")]
    QMinusV,
}

impl EstimatorKind {
    pub const ALL: [EstimatorKind; 9] = [
        EstimatorKind::Gigpo,
        EstimatorKind::Grpo,
        EstimatorKind::Rloo,
        EstimatorKind::Step,
        EstimatorKind::Hgpo,
        EstimatorKind::Graphgpo,
        EstimatorKind::Proxmo,
        EstimatorKind::SoftPage,
        EstimatorKind::QMinusV,
    ];

    /// The name on the command line and in `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            EstimatorKind::Gigpo => "gigpo",
            EstimatorKind::Grpo => "grpo",
            EstimatorKind::Rloo => "rloo",
            EstimatorKind::Step => "step",
            EstimatorKind::Hgpo => "hgpo",
            EstimatorKind::Graphgpo => "graphgpo",
            EstimatorKind::Proxmo => "proxmo",
            EstimatorKind::SoftPage => "soft-page",
            EstimatorKind::QMinusV => "q-minus-v",
        }
    }

    /// Inverse of [`EstimatorKind::name`] (also accepts `_` for `-`).
    pub fn parse(name: &str) -> Option<EstimatorKind> {
        let name = name.replace('_', "-");
        EstimatorKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// One line: what the advantage is.
    pub fn formula(self) -> &'static str {
        match self {
            EstimatorKind::Gigpo => "A = A_E + ω·A_S",
            EstimatorKind::Grpo => "A = A_E",
            EstimatorKind::Rloo => "A = n/(n−1)·(s − mean)",
            EstimatorKind::Step => "A = A_S",
            EstimatorKind::Hgpo => "A = Σ_k w_k·a_k, w_k ∝ (k+1)^α over history depths k with a non-zero a_k",
            EstimatorKind::Graphgpo => "A = ω·norm(10·γ^d − c) + w_ep·A_ep, d = hops to success",
            EstimatorKind::Proxmo => "A = A_ep·w_psc + ω·(R_t − Σ_j softmax(cos_ij/0.1)·R_j)",
            EstimatorKind::SoftPage => "A = A_ep·w_psc + ω·(R_t − Σ_j softmax(page_sim_ij/0.1)·R_j)",
            EstimatorKind::QMinusV => "A = Q(s,a) − V(s) over exact anchor groups",
        }
    }

    /// What the estimator reads from the run.
    pub fn needs(self) -> &'static [Need] {
        match self {
            EstimatorKind::Gigpo | EstimatorKind::Step | EstimatorKind::Hgpo | EstimatorKind::Proxmo => {
                &[Need::Rewards, Need::Anchors]
            }
            EstimatorKind::Grpo | EstimatorKind::Rloo => &[Need::Rewards],
            EstimatorKind::Graphgpo => &[Need::Rewards, Need::Anchors, Need::Success],
            EstimatorKind::SoftPage => &[Need::Rewards, Need::PageTypes],
            EstimatorKind::QMinusV => &[Need::Rewards, Need::Anchors, Need::Actions],
        }
    }

    /// The engine's estimator, for the four the engine computes itself.
    pub fn engine(self) -> Option<Estimator> {
        match self {
            EstimatorKind::Gigpo => Some(Estimator::Gigpo),
            EstimatorKind::Grpo => Some(Estimator::Grpo),
            EstimatorKind::Rloo => Some(Estimator::Rloo),
            EstimatorKind::Step => Some(Estimator::Step),
            _ => None,
        }
    }
}

impl From<Estimator> for EstimatorKind {
    fn from(estimator: Estimator) -> Self {
        match estimator {
            Estimator::Gigpo => EstimatorKind::Gigpo,
            Estimator::Grpo => EstimatorKind::Grpo,
            Estimator::Rloo => EstimatorKind::Rloo,
            Estimator::Step => EstimatorKind::Step,
        }
    }
}

impl std::fmt::Display for EstimatorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A piece of the run an estimator reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Need {
    /// Step rewards and validity (every run has them).
    Rewards,
    /// Anchor observations (`anchor`, else `observation`; every run has them).
    Anchors,
    /// The action string of every step (every run has it).
    Actions,
    /// Whether each episode succeeded: read as the episode return R > 0 (GraphGPO's rollout loop), so every run
    /// has it.
    Success,
    /// The WebShop page type of every step: `page`, else classified from the observation by the environment
    /// ([`EnvInputs::page_of`]). WebShop runs only.
    PageTypes,
}

impl Need {
    pub fn describe(self) -> &'static str {
        match self {
            Need::Rewards => "step rewards",
            Need::Anchors => "anchor observations",
            Need::Actions => "actions",
            Need::Success => "success flags (episode return R > 0)",
            Need::PageTypes => "WebShop page types (a `page` on every step, or WebShop observations to classify)",
        }
    }
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

/// What the environment knows about a run's steps that the format may not record. The estimators know no
/// environment: the caller passes these in.
#[derive(Clone, Copy, Default)]
pub struct EnvInputs<'a> {
    /// The WebShop page type (`search`, `results`, `item`, `item_sub` or `done`) of an observation, for steps
    /// that record no `page`. `None` for runs of other environments: `soft-page` then needs a `page` on every
    /// step. Callers pass the run's environment's page anchor (`env::page_anchor(run)`, as a closure).
    pub page_of: Option<&'a (dyn Fn(&str) -> &'static str + Sync)>,
}

impl std::fmt::Debug for EnvInputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvInputs").field("page_of", &self.page_of.map(|_| "fn")).finish()
    }
}

/// The settings of the family's own estimators (the engine's use [`AdvantageSettings`] alone). Every key has a
/// default, so a partial object reads; keys are the `run.json` names (and, with `-` for `_`, the CLI flags').
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EstimatorSettings {
    /// HGPO: K, the history length (`env.history_length`); depths k = 1..K+1 are grouped.
    pub hgpo_history: u32,
    /// HGPO: α of the length weights (k+1)^α (`length_weight_alpha`); 0 gives uniform weights.
    pub hgpo_alpha: f64,
    /// HGPO: `mean_norm` or `mean_std_norm` (population std + 1e-6) of each level's group.
    pub hgpo_norm: Norm,
    /// HGPO: add GiGPO's episode advantage as a level k = 0 item (`base_group`).
    pub hgpo_base_group: bool,
    /// GraphGPO: γ of the graph return 10·γ^d (its own; not the shared γ).
    pub graph_gamma: f64,
    /// GraphGPO: 10·γ^(d(next) − d(obs) + 1) instead of 10·γ^d(next).
    pub graph_normalize_distance: bool,
    /// GraphGPO: weight of GiGPO's episode advantage (the step weight is the shared ω).
    pub graph_episode_weight: f64,
    /// GraphGPO: norm of the step groups and of the episode advantage.
    pub graph_norm: Norm,
    /// GraphGPO: canonicalise graph nodes by difflib ratio ≥ θ (None: exact anchors).
    pub graph_similarity: Option<f64>,
    /// ProxMO and soft-page: success-rate-aware modulation of the episode advantage (`enable_psc`).
    pub proxmo_psc: bool,
    /// ProxMO and soft-page: `psc_alpha`.
    pub psc_alpha: f64,
    /// ProxMO and soft-page: `psc_target_range` (β = range / (σ(1) − 0.5)).
    pub psc_target_range: f64,
    /// q-minus-v: A = A_ep + ω·(Q − V) instead of Q − V alone.
    pub q_minus_v_episode: bool,
}

impl Default for EstimatorSettings {
    fn default() -> Self {
        EstimatorSettings {
            hgpo_history: 2,
            hgpo_alpha: 1.0,
            hgpo_norm: Norm::MeanStdNorm,
            hgpo_base_group: false,
            graph_gamma: 0.2,
            graph_normalize_distance: false,
            graph_episode_weight: 1.0,
            graph_norm: Norm::MeanStdNorm,
            graph_similarity: None,
            proxmo_psc: true,
            psc_alpha: 4.0,
            psc_target_range: 0.05,
            q_minus_v_episode: false,
        }
    }
}

/// The deepest HGPO history accepted (K); each depth adds three explanation terms.
pub const MAX_HGPO_HISTORY: u32 = 32;

impl EstimatorSettings {
    /// The settings `kind` reads, checked against their domains.
    pub fn validate(&self, kind: EstimatorKind) -> Result<(), EstimatorError> {
        let bad = |name: &'static str, problem: String| Err(EstimatorError::Setting { estimator: kind, name, problem });
        let finite = |name: &'static str, v: f64| {
            if v.is_finite() {
                Ok(())
            } else {
                bad(name, format!("must be a finite number, got {v}"))
            }
        };
        match kind {
            EstimatorKind::Hgpo => {
                if self.hgpo_history > MAX_HGPO_HISTORY {
                    return bad(
                        "hgpo_history",
                        format!("must be at most {MAX_HGPO_HISTORY}, got {}", self.hgpo_history),
                    );
                }
                finite("hgpo_alpha", self.hgpo_alpha)
            }
            EstimatorKind::Graphgpo => {
                if !(0.0..=1.0).contains(&self.graph_gamma) {
                    return bad("graph_gamma", format!("must be in [0, 1], got {}", self.graph_gamma));
                }
                if let Some(theta) = self.graph_similarity {
                    if !(theta > 0.0 && theta < 1.0) {
                        return bad("graph_similarity", format!("must be in (0, 1), got {theta}"));
                    }
                }
                finite("graph_episode_weight", self.graph_episode_weight)
            }
            EstimatorKind::Proxmo | EstimatorKind::SoftPage => {
                finite("psc_alpha", self.psc_alpha)?;
                finite("psc_target_range", self.psc_target_range)
            }
            _ => Ok(()),
        }
    }
}

/// Why an estimator gives no column.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EstimatorError {
    /// The run lacks something the estimator reads.
    #[error("{estimator} needs {need}, which this run lacks: {detail}")]
    Missing { estimator: EstimatorKind, need: Need, detail: String },
    #[error("{estimator}: {name} {problem}")]
    Setting { estimator: EstimatorKind, name: &'static str, problem: String },
    /// `compute_with_table` was given a table made from other episodes.
    #[error("{0}: the advantage table was computed from other episodes")]
    TableMismatch(EstimatorKind),
}

/// One explanation term of a row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term<'a> {
    pub label: &'a str,
    pub value: f64,
}

/// One estimator's column: an advantage per row and the terms that explain it.
#[derive(Clone, Debug, PartialEq)]
pub struct EstimatorOutput {
    pub kind: EstimatorKind,
    /// `advantages[row_offsets[e] + t]` is step `t` of episode `e` (the engine's row order).
    pub row_offsets: Vec<usize>,
    pub advantages: Vec<f64>,
    /// The terms' names: `terms[row * term_names.len() + j]` is term `j` of `row`, NaN where it does not apply.
    pub term_names: Vec<Cow<'static, str>>,
    pub terms: Vec<f64>,
}

impl EstimatorOutput {
    /// Row `row`'s terms that apply to it, in column order.
    pub fn row_terms(&self, row: usize) -> impl Iterator<Item = Term<'_>> + '_ {
        let width = self.term_names.len();
        self.term_names
            .iter()
            .zip(&self.terms[row * width..(row + 1) * width])
            .filter(|(_, v)| !v.is_nan())
            .map(|(label, &value)| Term { label, value })
    }

    /// Term `name` of every row (NaN where it does not apply), if the estimator has it.
    pub fn term_column(&self, name: &str) -> Option<Vec<f64>> {
        let j = self.term_names.iter().position(|n| n == name)?;
        let width = self.term_names.len();
        Some(self.terms.chunks(width.max(1)).map(|row| row[j]).take(self.advantages.len()).collect())
    }

    /// Episode `episode`'s advantages.
    pub fn episode_advantages(&self, episode: usize) -> &[f64] {
        &self.advantages[self.row_offsets[episode]..self.row_offsets[episode + 1]]
    }
}

/// `kind`'s column for `episodes` (file order) under the shared settings `base` and the family's `settings`.
pub fn compute(
    kind: EstimatorKind,
    episodes: &[Episode],
    base: &AdvantageSettings,
    settings: &EstimatorSettings,
    env: &EnvInputs<'_>,
) -> Result<EstimatorOutput, EstimatorError> {
    let base = AdvantageSettings { estimator: kind.engine().unwrap_or(base.estimator), ..*base };
    let table = engine::compute(episodes, &base);
    compute_with_table(kind, episodes, &table, &base, settings, env)
}

/// `kind`'s column from `table`, which [`super::compute`] made from these `episodes` under `base` (a viewer
/// has one already): its rewards, scores and returns are read, its groups reused.
pub fn compute_with_table(
    kind: EstimatorKind,
    episodes: &[Episode],
    table: &AdvantageTable,
    base: &AdvantageSettings,
    settings: &EstimatorSettings,
    env: &EnvInputs<'_>,
) -> Result<EstimatorOutput, EstimatorError> {
    let same_shape = table.row_offsets.len() == episodes.len() + 1
        && episodes.iter().zip(table.row_offsets.windows(2)).all(|(e, o)| e.steps.len() == o[1] - o[0])
        && table.episode_group_of.len() == episodes.len();
    if !same_shape {
        return Err(EstimatorError::TableMismatch(kind));
    }
    settings.validate(kind)?;
    let ctx = Ctx { episodes, table, base, settings, env };
    match kind {
        EstimatorKind::Gigpo | EstimatorKind::Grpo | EstimatorKind::Rloo | EstimatorKind::Step => {
            Ok(engine_column(kind, &ctx))
        }
        EstimatorKind::Hgpo => Ok(hgpo::compute(&ctx)),
        EstimatorKind::Graphgpo => Ok(graphgpo::compute(&ctx)),
        EstimatorKind::Proxmo => Ok(proxmo::compute(&ctx)),
        EstimatorKind::SoftPage => soft_page::compute(&ctx),
        EstimatorKind::QMinusV => Ok(q_minus_v::compute(&ctx)),
    }
}

/// Every estimator's column, in [`EstimatorKind::ALL`]'s order: one that cannot be computed on this run gives
/// its error and the others their columns.
pub fn compute_all(
    episodes: &[Episode],
    base: &AdvantageSettings,
    settings: &EstimatorSettings,
    env: &EnvInputs<'_>,
) -> Vec<(EstimatorKind, Result<EstimatorOutput, EstimatorError>)> {
    let table = engine::compute(episodes, base);
    EstimatorKind::ALL
        .into_iter()
        .map(|kind| (kind, compute_with_table(kind, episodes, &table, base, settings, env)))
        .collect()
}

/// Everything an estimator reads.
pub(crate) struct Ctx<'a> {
    pub episodes: &'a [Episode],
    pub table: &'a AdvantageTable,
    pub base: &'a AdvantageSettings,
    pub settings: &'a EstimatorSettings,
    pub env: &'a EnvInputs<'a>,
}

/// The rows of one episode group (`uid`), in gigscope's order: its episodes in file order, each in time order.
pub(crate) struct GroupView<'a> {
    /// Table-wide row index of each of the group's rows.
    pub rows: Vec<usize>,
    /// Each episode of the group (its index in the input) and the range of its rows in `rows`.
    pub spans: Vec<(usize, Range<usize>)>,
    pub steps: Vec<&'a Step>,
    /// The engine's values of each of the group's rows.
    pub values: Vec<RowAdvantage>,
}

impl Ctx<'_> {
    pub fn group(&self, g: usize) -> GroupView<'_> {
        let group = &self.table.episode_groups[g];
        let mut view = GroupView {
            rows: Vec::new(),
            spans: Vec::with_capacity(group.episodes.len()),
            steps: Vec::new(),
            values: Vec::new(),
        };
        for &e in &group.episodes {
            let e = e as usize;
            let start = view.rows.len();
            view.rows.extend(self.table.row_offsets[e]..self.table.row_offsets[e + 1]);
            view.steps.extend(&self.episodes[e].steps);
            view.values.extend(self.table.episode_rows(e));
            view.spans.push((e, start..view.rows.len()));
        }
        view
    }

    /// c·[step invalid].
    pub fn penalty(&self, step: &Step) -> f64 {
        if step.valid {
            0.0
        } else {
            self.base.invalid_penalty
        }
    }

    /// An empty output for `kind` with these term columns.
    pub fn output(&self, kind: EstimatorKind, term_names: Vec<Cow<'static, str>>) -> EstimatorOutput {
        let n = self.table.row_count();
        let width = term_names.len();
        EstimatorOutput {
            kind,
            row_offsets: self.table.row_offsets.clone(),
            advantages: vec![0.0; n],
            term_names,
            terms: vec![f64::NAN; n * width],
        }
    }

    /// Run `f` on every episode group (in parallel) and put its rows' advantages and terms in place: `f` fills
    /// `adv[i]` and `terms[i * width..]` for the group's `i`-th row (terms start as NaN, advantages as 0).
    pub fn per_group<F>(&self, kind: EstimatorKind, term_names: Vec<Cow<'static, str>>, f: F) -> EstimatorOutput
    where
        F: Fn(usize, &GroupView<'_>, &mut [f64], &mut [f64]) + Sync,
    {
        let mut out = self.output(kind, term_names);
        let all: Vec<usize> = (0..self.table.episode_groups.len()).collect();
        self.fill_groups(&mut out, &all, f);
        out
    }

    /// [`Ctx::per_group`] on the episode groups `groups` only, into `out`.
    pub fn fill_groups<F>(&self, out: &mut EstimatorOutput, groups: &[usize], f: F)
    where
        F: Fn(usize, &GroupView<'_>, &mut [f64], &mut [f64]) + Sync,
    {
        let width = out.term_names.len();
        let parts: Vec<(Vec<usize>, Vec<f64>, Vec<f64>)> = groups
            .par_iter()
            .map(|&g| {
                let view = self.group(g);
                let mut adv = vec![0.0; view.rows.len()];
                let mut terms = vec![f64::NAN; view.rows.len() * width];
                f(g, &view, &mut adv, &mut terms);
                (view.rows, adv, terms)
            })
            .collect();
        for (rows, adv, terms) in parts {
            for (i, &row) in rows.iter().enumerate() {
                out.advantages[row] = adv[i];
                out.terms[row * width..(row + 1) * width].copy_from_slice(&terms[i * width..(i + 1) * width]);
            }
        }
    }

    /// GiGPO's episode advantage of each of the group's rows under `norm`, with the engine's pooling and
    /// single-sample rule, and the pool's mean.
    pub fn episode_level(&self, view: &GroupView<'_>, norm: Norm) -> (Vec<f64>, f64) {
        let (mean, std, pool) = match self.base.pooling {
            Pooling::Steps => mean_std(view.values.iter().map(|v| v.score)),
            Pooling::Trajectories => {
                mean_std(view.spans.iter().filter(|(_, s)| !s.is_empty()).map(|(_, s)| view.values[s.start].score))
            }
        };
        let (baseline, factor) = if pool <= 1 { (0.0, 1.0) } else { (mean, norm_factor(norm, std)) };
        (view.values.iter().map(|v| (v.score - baseline) / factor).collect(), mean)
    }
}

/// Exact anchor groups of a group's rows: the group number of each row (numbered from 0 in order of first
/// appearance) and each group's size.
pub(crate) fn exact_groups(steps: &[&Step]) -> (Vec<u32>, Vec<usize>) {
    let mut clusterer = engine::Clusterer::new(AnchorMode::Exact);
    let mut sizes = Vec::new();
    let ids = steps
        .iter()
        .map(|step| {
            let c = clusterer.assign(step);
            if c as usize == sizes.len() {
                sizes.push(0);
            }
            sizes[c as usize] += 1;
            c
        })
        .collect();
    (ids, sizes)
}

/// GiGPO's step-level normalisation of `values` within groups `ids` (sizes `sizes`): (x − mean)/F, F = 1 or
/// sample std + 1e-6; a group of one gives 0.
pub(crate) fn step_norm(values: &[f64], ids: &[u32], sizes: &[usize], norm: Norm) -> Vec<f64> {
    let mut members: Vec<Vec<usize>> = sizes.iter().map(|&n| Vec::with_capacity(n)).collect();
    for (i, &c) in ids.iter().enumerate() {
        members[c as usize].push(i);
    }
    let mut out = vec![0.0; values.len()];
    for m in &members {
        if m.len() <= 1 {
            continue;
        }
        let (mean, std, _) = mean_std(m.iter().map(|&i| values[i]));
        let factor = norm_factor(norm, std);
        for &i in m {
            out[i] = (values[i] - mean) / factor;
        }
    }
    out
}

/// The engine's estimators, read from (a recomputation of) the engine's table.
fn engine_column(kind: EstimatorKind, ctx: &Ctx<'_>) -> EstimatorOutput {
    let estimator = kind.engine().unwrap_or(Estimator::Gigpo);
    let recomputed;
    let table = if ctx.base.estimator == estimator {
        ctx.table
    } else {
        let mut t = ctx.table.clone();
        engine::recompute(&mut t, ctx.episodes, &AdvantageSettings { estimator, ..*ctx.base });
        recomputed = t;
        &recomputed
    };
    let names: &[&'static str] = match kind {
        EstimatorKind::Grpo => &["A_E", "baseline", "F"],
        EstimatorKind::Rloo => &["score", "mean", "pool"],
        _ => &["A_E", "A_S", "n_step_group"],
    };
    let mut out = ctx.output(kind, names.iter().map(|&n| Cow::Borrowed(n)).collect());
    let width = names.len();
    for (e, &g) in table.episode_group_of.iter().enumerate() {
        let group = &table.episode_groups[g as usize];
        for (row, r) in (table.row_offsets[e]..).zip(table.episode_rows(e)) {
            out.advantages[row] = r.advantage;
            let terms = &mut out.terms[row * width..(row + 1) * width];
            match kind {
                EstimatorKind::Grpo => terms.copy_from_slice(&[r.episode_advantage, group.baseline, group.factor]),
                EstimatorKind::Rloo => terms.copy_from_slice(&[r.score, group.mean, group.pool_size as f64]),
                _ => {
                    let n = table.anchor_groups.get(r.step_group as usize).map_or(f64::NAN, |a| a.members.len() as f64);
                    terms.copy_from_slice(&[r.episode_advantage, r.step_advantage, n]);
                }
            }
        }
    }
    out
}
