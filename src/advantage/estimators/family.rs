//! The estimator family's shared vocabulary: which estimators there are ([`EstimatorKind`]), what each reads
//! from a run ([`Need`], [`EnvInputs`]), their settings ([`EstimatorSettings`]), and what one gives
//! ([`EstimatorOutput`]) or why it gives nothing ([`EstimatorError`]).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::advantage::settings::{Estimator, Norm};

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

/// The settings of the family's own estimators (the engine's use [`crate::advantage::AdvantageSettings`]
/// alone). Every key has a default, so a partial object reads; keys are the `run.json` names (and, with `-` for
/// `_`, the CLI flags').
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
