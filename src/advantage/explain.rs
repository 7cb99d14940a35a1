//! The explanation of one row's advantage, as data: every term the engine used for it (R_t, the step group's
//! mean/std/F and A_S, the episode pool's mean/std/F and A_E, and A as the estimator combines them), each with
//! its label, its definition in symbols, the definition with this row's numbers filled in, and its value.
//!
//! Values are the engine's own (read from the [`AdvantageTable`]), so a view that lays an explanation out shows
//! the numbers the computation produced. Each term also carries `recomputed`: the value obtained by evaluating
//! the definition it states from the inputs it lists. A test checks that the two agree for every estimator,
//! norm and pooling, which is what keeps the written formulas honest (RLOO's leave-one-out scale, the pool,
//! the ε added to the standard deviation, TRL's normalisation).

use super::engine::{mean_std, STD_EPSILON, SUCCESS_REWARD};
use super::input::EngineInput;
use super::settings::{AdvantageSettings, Aggregation, Estimator, Norm, Pooling, ScaleRewards};
use super::table::{AdvantageTable, EpisodeGroup, GroupEpisodes, RowAdvantage, RowRef};
use super::trl::{self, TRL_STD_EPSILON};
use crate::run::tokens::Lengths;

/// Values listed in a filled-in mean before the rest is elided.
pub const MAX_LISTED: usize = 8;

/// Which quantity a term is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Symbol {
    /// R_t, the discounted return of the row.
    Return,
    StepMean,
    StepStd,
    /// F_S, the divisor of A_S.
    StepFactor,
    /// A_S, GiGPO's step component.
    StepAdvantage,
    /// s, the row's score (or TRL's reward R of the episode).
    Score,
    EpisodeMean,
    EpisodeStd,
    /// F_E, the divisor of A_E.
    EpisodeFactor,
    /// A_E, GiGPO's episode component (or TRL's advantage).
    EpisodeAdvantage,
    /// A, the estimator's final advantage.
    Advantage,
}

impl Symbol {
    /// Whether the value is an advantage (shown signed, three decimals) rather than a plain quantity.
    pub fn is_advantage(self) -> bool {
        matches!(self, Symbol::StepAdvantage | Symbol::EpisodeAdvantage | Symbol::Advantage)
    }
}

/// One term of an explanation.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    pub symbol: Symbol,
    /// How the term is written: `R_t`, `mean_S`, `A`.
    pub label: String,
    /// Its definition in symbols: `(R_t − mean_S) / F_S`.
    pub formula: String,
    /// The definition with this row's numbers: `(9.0250 − 4.5125) / 1`; empty when it would only repeat the
    /// value.
    pub filled: String,
    /// The engine's value.
    pub value: f64,
    /// The definition evaluated from the inputs it lists (equals `value` up to rounding).
    pub recomputed: f64,
    /// Whether the estimator's A depends on this term.
    pub used: bool,
    /// A remark in words: why a term is 0, what the estimator does instead.
    pub note: Option<String>,
}

/// A heading and its terms.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub title: String,
    pub terms: Vec<Term>,
}

/// Everything that explains one row's advantage.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    pub row: RowRef,
    pub estimator: Estimator,
    /// A, the headline: how the estimator combines the components.
    pub advantage: Term,
    /// The step component, then the episode component.
    pub sections: Vec<Section>,
    /// Facts that hold for the whole computation (shaping, penalties, which settings the estimator ignores).
    pub notes: Vec<String>,
}

impl Explanation {
    /// Every term, the headline first.
    pub fn terms(&self) -> impl Iterator<Item = &Term> {
        std::iter::once(&self.advantage).chain(self.sections.iter().flat_map(|s| s.terms.iter()))
    }

    pub fn term(&self, symbol: Symbol) -> Option<&Term> {
        self.terms().find(|t| t.symbol == symbol)
    }
}

/// ε written as the engine's constant is: `1e-6`.
pub fn epsilon_text(eps: f64) -> String {
    format!("{eps:e}")
}

/// A quantity as the explanation writes it (four decimals).
pub fn num(v: f64) -> String {
    num_at(v, NUM_DECIMALS)
}

/// An advantage as the explanation writes it: always signed, three decimals.
pub fn signed(v: f64) -> String {
    signed_at(v, SIGNED_DECIMALS)
}

/// `v` rounded to `decimals` as it is written.
fn as_written(v: f64, decimals: usize) -> f64 {
    format!("{v:.decimals$}").parse().unwrap_or(v)
}

/// The fewest decimals, from `min`, at which a filled-in formula's numbers give its value as written
/// (`value_decimals`): `eval` works the formula out from its numbers rounded by the function it is passed. A
/// reader who works out the numbers shown then gets the result shown: where `+0.244 + 1.00·(+0.204)` would
/// give +0.448 beside a value of +0.447, the terms get a fourth decimal. None found below
/// [`MAX_FILLED_DECIMALS`], the formula is written at that precision.
fn fitting_decimals(min: usize, value: f64, value_decimals: usize, eval: impl Fn(&dyn Fn(f64) -> f64) -> f64) -> usize {
    let shown = as_written(value, value_decimals);
    let half_unit = 0.5 * 10f64.powi(-(value_decimals as i32)) + 1e-12;
    (min..MAX_FILLED_DECIMALS)
        .find(|&d| (eval(&|v| as_written(v, d)) - shown).abs() <= half_unit)
        .unwrap_or(MAX_FILLED_DECIMALS)
}

/// The most decimals a filled-in formula's numbers are written with.
pub const MAX_FILLED_DECIMALS: usize = 9;

/// Decimals of a value as [`num`] writes it.
const NUM_DECIMALS: usize = 4;
/// Decimals of an advantage as [`signed`] writes it.
const SIGNED_DECIMALS: usize = 3;

/// A quantity at `decimals` (four in [`num`]).
fn num_at(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$}")
}

/// An advantage at `decimals` (three in [`signed`]), always signed.
fn signed_at(v: f64, decimals: usize) -> String {
    if v == 0.0 {
        format!("{v:.decimals$}")
    } else {
        format!("{v:+.decimals$}")
    }
}

/// `(x − baseline) / factor` filled in so that it gives `value`, an advantage, as written.
fn difference_over(x: f64, baseline: f64, factor: Option<f64>, value: f64) -> String {
    let d = fitting_decimals(NUM_DECIMALS, value, SIGNED_DECIMALS, |r| (r(x) - r(baseline)) / factor.map_or(1.0, r));
    let f = factor.map_or("1".to_string(), |f| num_at(f, d));
    format!("({} − {}) / {f}", num_at(x, d), num_at(baseline, d))
}

/// Decimals of a setting (γ, ω, c) in a filled-in formula: two, or as many as it has.
fn setting_decimals(v: f64) -> usize {
    (2..MAX_FILLED_DECIMALS).find(|&d| as_written(v, d) == v).unwrap_or(MAX_FILLED_DECIMALS)
}

/// A setting (γ, ω, c) as a filled-in formula writes it: `0.95`, `1.00`, `0.333`.
fn setting(v: f64) -> String {
    num_at(v, setting_decimals(v))
}

/// A value for a filled-in formula: negative numbers in parentheses.
fn paren(text: String) -> String {
    if text.starts_with('-') {
        format!("({text})")
    } else {
        text
    }
}

/// `(a + b + … (k more)) / n`, the values listed up to [`MAX_LISTED`] (with the decimals that give their mean
/// as written when all are listed).
fn listed_mean(values: &[f64]) -> String {
    let n = values.len().max(1) as f64;
    let d = if values.len() > MAX_LISTED {
        NUM_DECIMALS
    } else {
        let mean = values.iter().sum::<f64>() / n;
        fitting_decimals(NUM_DECIMALS, mean, NUM_DECIMALS, |r| values.iter().map(|&v| r(v)).sum::<f64>() / n)
    };
    let shown: Vec<String> = values.iter().take(MAX_LISTED).map(|&v| num_at(v, d)).collect();
    let more =
        if values.len() > MAX_LISTED { format!(" + … ({} more)", values.len() - MAX_LISTED) } else { String::new() };
    format!("({}{more}) / {}", shown.join(" + "), values.len())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs())) || (a.is_nan() && b.is_nan())
}

/// The explanation of row `at` of `table`, which [`super::compute`] made from `episodes` under `settings`;
/// `lengths` says whose token counts were counted from the token store (DEPO's term says so). `None` when `at`
/// is not a row of the table.
pub fn explain<I: EngineInput + ?Sized>(
    table: &AdvantageTable,
    episodes: &I,
    settings: &AdvantageSettings,
    lengths: &Lengths,
    at: RowRef,
) -> Option<Explanation> {
    let e = at.episode as usize;
    let t = at.step as usize;
    if e >= episodes.episode_count() || t >= episodes.step_count(e) {
        return None;
    }
    if e >= table.episode_count() || t >= table.episode_rows(e).len() {
        return None;
    }
    let rows = table.episode_rows(e);
    let row = rows[t];
    let penalty = if episodes.valid(e, t) { 0.0 } else { settings.invalid_penalty };
    let members = table.group_episodes(table.episode_group_index(e)? as usize);
    let x = Subject { table, episodes, settings, at, e, t, rows, row, members, penalty };
    let mut notes = Vec::new();

    let (step_terms, n_s) = x.step_terms();
    let eg = table.episode_group_of(e);
    let (episode_terms, sample) = match settings.scale_rewards {
        None => x.episode_terms(eg),
        Some(scale) => {
            let terms = x.trl_episode_terms(eg, scale);
            notes.push(format!(
                "A_E is TRL GRPOTrainer's advantage (scale_rewards {}, {}, ε {}); the episode's rows share it",
                scale.name(),
                settings.aggregation.name(),
                epsilon_text(TRL_STD_EPSILON)
            ));
            terms
        }
    };
    let (advantage, uses_step, uses_episode) = x.advantage_term(eg, &sample);
    let pool = eg.pool_size;
    let mut sections = vec![
        Section {
            title: format!("step component: anchor group #{} of {} member(s)", row.step_group, n_s),
            terms: step_terms,
        },
        Section { title: format!("episode component: group {}, pool of {pool}", eg.name), terms: episode_terms },
    ];
    mark_used(&mut sections, uses_step, uses_episode || settings.estimator == Estimator::Rloo, uses_episode);
    notes.extend(shaping_notes(settings, lengths));
    Some(Explanation { row: at, estimator: settings.estimator, advantage, sections, notes })
}

/// The row an explanation is about, with what every section reads.
struct Subject<'a, I: ?Sized> {
    table: &'a AdvantageTable,
    episodes: &'a I,
    settings: &'a AdvantageSettings,
    at: RowRef,
    /// The row's episode and step.
    e: usize,
    t: usize,
    /// The episode's rows, and the row.
    rows: Vec<RowAdvantage>,
    row: RowAdvantage,
    /// The episodes of the row's episode group.
    members: GroupEpisodes<'a>,
    /// c·[step invalid].
    penalty: f64,
}

/// The sample the episode component compares (s, or TRL's R or R′), which RLOO leaves out of its pool.
struct Sample {
    value: f64,
    label: &'static str,
}

/// A row's value `v` once for each time the trainer counted the row (`copies`), as the engine counts it.
fn counted(r: &RowAdvantage, v: f64) -> impl Iterator<Item = f64> {
    std::iter::repeat_n(v, r.copies as usize)
}

impl<I: EngineInput + ?Sized> Subject<'_, I> {
    /// R_t, the row's discounted return.
    fn return_term(&self) -> Term {
        let (s, penalty) = (self.settings, self.penalty);
        let rewards: Vec<(usize, f64)> =
            self.rows[self.t..].iter().enumerate().map(|(k, r)| (k, r.reward)).filter(|&(_, r)| r != 0.0).collect();
        let ret_recomputed = rewards.iter().map(|&(k, r)| s.gamma.powi(k as i32) * r).sum::<f64>() - penalty;
        let (gamma, c) =
            (as_written(s.gamma, setting_decimals(s.gamma)), as_written(penalty, setting_decimals(penalty)));
        let d = fitting_decimals(NUM_DECIMALS, self.row.ret, NUM_DECIMALS, |round| {
            rewards.iter().map(|&(k, r)| gamma.powi(k as i32) * round(r)).sum::<f64>() - c
        });
        let ret_terms: Vec<String> = rewards
            .iter()
            .map(
                |&(k, r)| {
                    if k == 0 {
                        num_at(r, d)
                    } else {
                        format!("{}^{k}·{}", setting(s.gamma), paren(num_at(r, d)))
                    }
                },
            )
            .collect();
        let mut ret_filled = ret_terms.join(" + ");
        if penalty != 0.0 {
            ret_filled = format!("{} − {}", if ret_filled.is_empty() { "0" } else { &ret_filled }, setting(penalty));
        }
        Term {
            symbol: Symbol::Return,
            label: "R_t".into(),
            formula: format!("Σ_k γ^k·r_(t+k){}", if penalty != 0.0 { " − c" } else { "" }),
            filled: ret_filled,
            value: self.row.ret,
            recomputed: ret_recomputed,
            used: false,
            note: (penalty != 0.0).then(|| format!("c = {:.2}: the step's action was invalid", penalty)),
        }
    }

    /// The step component: R_t, the anchor group's statistics and A_S; and the number of samples the group
    /// counted.
    fn step_terms(&self) -> (Vec<Term>, usize) {
        let (s, row, table) = (self.settings, self.row, self.table);
        let ag = table.anchor_group_of(self.at);
        let member_returns: Vec<f64> = ag
            .members
            .iter()
            .flat_map(|m| {
                let member = table.row(m);
                counted(&member, member.ret)
            })
            .collect();
        let n_s = member_returns.len();
        let (mean_s, std_s, _) = mean_std(member_returns.iter().copied());
        let (f_s_formula, f_s_filled, f_s) = factor_text(s.norm, ag.std, STD_EPSILON);
        let a_s_recomputed = if n_s <= 1 { 0.0 } else { (row.ret - mean_s) / f_s };
        let terms = vec![
            self.return_term(),
            Term {
                symbol: Symbol::StepMean,
                label: "mean_S".into(),
                formula: "mean of the members' R_t".into(),
                filled: listed_mean(&member_returns),
                value: ag.mean,
                recomputed: mean_s,
                used: false,
                note: None,
            },
            Term {
                symbol: Symbol::StepStd,
                label: "std_S".into(),
                formula: "sample standard deviation (N−1) of the members' R_t".into(),
                filled: String::new(),
                value: ag.std,
                recomputed: std_s,
                used: false,
                note: (n_s <= 1).then(|| "one member: std 0".to_string()),
            },
            Term {
                symbol: Symbol::StepFactor,
                label: "F_S".into(),
                formula: f_s_formula,
                filled: f_s_filled,
                value: ag.factor,
                recomputed: f_s,
                used: false,
                note: None,
            },
            Term {
                symbol: Symbol::StepAdvantage,
                label: "A_S".into(),
                formula: "(R_t − mean_S) / F_S".into(),
                filled: if n_s <= 1 {
                    String::new()
                } else {
                    difference_over(row.ret, ag.mean, divisor(s.norm, ag.factor), row.step_advantage)
                },
                value: row.step_advantage,
                recomputed: a_s_recomputed,
                used: false,
                note: (n_s <= 1).then(|| "A_S = 0: a step group of one has no baseline to compare with".to_string()),
            },
        ];
        (terms, n_s)
    }

    /// GiGPO's episode component: the row's score s, the pool's statistics and A_E.
    fn episode_terms(&self, eg: &EpisodeGroup) -> (Vec<Term>, Sample) {
        let (s, row, table, penalty) = (self.settings, self.row, self.table, self.penalty);
        let pool: Vec<f64> = match s.pooling {
            Pooling::Steps => self
                .members
                .iter()
                .flat_map(|x| table.episode_rows(x as usize).into_iter().flat_map(|r| counted(&r, r.score)))
                .collect(),
            Pooling::Trajectories => self
                .members
                .iter()
                .filter_map(|x| table.get_row(x as usize, 0))
                .flat_map(|r| counted(&r, r.score))
                .collect(),
        };
        let (mean_e, std_e, n_e) = mean_std(pool.iter().copied());
        let total: f64 = self.rows.iter().map(|r| r.reward).sum();
        let mut terms = vec![Term {
            symbol: Symbol::Score,
            label: "s".into(),
            formula: format!("Σ_k r_k{} (the episode's whole reward)", if penalty != 0.0 { " − c" } else { "" }),
            filled: if penalty != 0.0 {
                let c = as_written(penalty, setting_decimals(penalty));
                let d = fitting_decimals(NUM_DECIMALS, row.score, NUM_DECIMALS, |r| r(total) - c);
                format!("{} − {}", num_at(total, d), setting(penalty))
            } else {
                String::new()
            },
            value: row.score,
            recomputed: total - penalty,
            used: false,
            note: None,
        }];
        let pool_words = match s.pooling {
            Pooling::Steps => format!(
                "every row's s in the group: {} rows of {} trajectories (pooling steps)",
                pool.len(),
                self.members.len()
            ),
            Pooling::Trajectories => {
                format!("each trajectory's first-row s: {} trajectories (pooling trajectories)", pool.len())
            }
        };
        terms.push(Term {
            symbol: Symbol::EpisodeMean,
            label: "mean_E".into(),
            formula: format!("mean of the pool, {pool_words}"),
            filled: listed_mean(&pool),
            value: eg.mean,
            recomputed: mean_e,
            used: false,
            note: None,
        });
        terms.push(Term {
            symbol: Symbol::EpisodeStd,
            label: "std_E".into(),
            formula: "sample standard deviation (N−1) of the pool".into(),
            filled: String::new(),
            value: eg.std,
            recomputed: std_e,
            used: false,
            note: None,
        });
        let single = n_e <= 1;
        let (f_formula, f_filled, f_e) =
            if single { ("1".to_string(), String::new(), 1.0) } else { factor_text(s.norm, eg.std, STD_EPSILON) };
        terms.push(Term {
            symbol: Symbol::EpisodeFactor,
            label: "F_E".into(),
            formula: f_formula,
            filled: f_filled,
            value: eg.factor,
            recomputed: f_e,
            used: false,
            note: single.then(|| "a pool of one sample: baseline 0 and F_E 1, A_E is the raw score".to_string()),
        });
        let baseline = if single { 0.0 } else { mean_e };
        terms.push(Term {
            symbol: Symbol::EpisodeAdvantage,
            label: "A_E".into(),
            formula: if single { "s − 0".into() } else { "(s − mean_E) / F_E".into() },
            filled: difference_over(
                row.score,
                eg.baseline,
                if single { None } else { divisor(s.norm, eg.factor) },
                row.episode_advantage,
            ),
            value: row.episode_advantage,
            recomputed: (row.score - baseline) / f_e,
            used: false,
            note: None,
        });
        (terms, Sample { value: row.score, label: "s" })
    }

    /// TRL GRPOTrainer's episode component under `scale_rewards` `scale`, by the settings' aggregation.
    fn trl_episode_terms(&self, eg: &EpisodeGroup, scale: ScaleRewards) -> (Vec<Term>, Sample) {
        match self.settings.aggregation {
            Aggregation::SumThenNormalize => self.sum_then_normalize_terms(eg, scale),
            Aggregation::NormalizeThenSum => self.normalize_then_sum_terms(eg),
        }
    }

    /// Episode `x`'s reward as TRL weighs it: the weighted sum of its recorded rewards, else its total reward.
    fn trl_reward(&self, x: usize) -> f64 {
        let s = self.settings;
        let weights = |k: usize| s.reward_weights.and_then(|w| w.as_slice().get(k).copied()).unwrap_or(1.0);
        match self.episodes.recorded_rewards(x) {
            Some(r) => trl::weighted_nansum(&r, weights),
            None => self.table.episode_rows(x).iter().map(|r| r.reward).sum(),
        }
    }

    /// TRL's `sum_then_normalize`: the weighted reward R, its group's mean, the std `scale` asks for, F and A_E.
    fn sum_then_normalize_terms(&self, eg: &EpisodeGroup, scale: ScaleRewards) -> (Vec<Term>, Sample) {
        let (e, row, episodes) = (self.e, self.row, self.episodes);
        let eps = epsilon_text(TRL_STD_EPSILON);
        let members: Vec<usize> = self.members.iter().map(|x| x as usize).collect();
        let r = self.trl_reward(e);
        let rs: Vec<f64> = members.iter().map(|&x| self.trl_reward(x)).collect();
        let (mean_g, std_g, n_g) = trl::nan_mean_std(rs.iter().copied());
        let names = episodes.reward_names(e);
        let mut terms = vec![Term {
            symbol: Symbol::Score,
            label: "R".into(),
            formula: match &names {
                Some(n) if n.len() > 1 => format!("Σ_k w_k·r_k over the reward functions ({})", n.join(", ")),
                Some(_) => "w·r, the reward function's weighted reward".into(),
                None => "Σ_k r_k, the episode's total reward".into(),
            },
            filled: String::new(),
            value: r,
            recomputed: r,
            used: false,
            note: r.is_nan().then(|| "every reward is null: the row is unscorable, A_E = 0".to_string()),
        }];
        let scorable: Vec<f64> = rs.iter().copied().filter(|v| !v.is_nan()).collect();
        terms.push(Term {
            symbol: Symbol::EpisodeMean,
            label: "mean_g".into(),
            formula: format!("mean of R over the group's {n_g} scorable episodes (TRL)"),
            filled: listed_mean(&scorable),
            value: eg.mean,
            recomputed: if mean_g.is_nan() { 0.0 } else { mean_g },
            used: false,
            note: None,
        });
        let batch_std = || {
            let batch: Vec<f64> = (0..episodes.episode_count())
                .filter(|&x| episodes.iteration(x) == episodes.iteration(members[0]))
                .map(|x| self.trl_reward(x))
                .collect();
            trl::nan_mean_std(batch.into_iter()).1
        };
        let (std_label, std_value, f_formula, f) = match scale {
            ScaleRewards::Group => ("std_g", std_g, format!("std_g + {eps}"), std_g + TRL_STD_EPSILON),
            ScaleRewards::Batch => {
                let b = batch_std();
                ("std_batch", b, format!("std of R over the iteration's batch + {eps}"), b + TRL_STD_EPSILON)
            }
            ScaleRewards::None => ("std_g", std_g, "1 (scale_rewards none)".to_string(), 1.0),
        };
        terms.push(Term {
            symbol: Symbol::EpisodeStd,
            label: std_label.into(),
            formula: "sample standard deviation (N−1), TRL's nanstd".into(),
            filled: String::new(),
            value: if std_value.is_nan() { 0.0 } else { std_value },
            recomputed: if std_value.is_nan() { 0.0 } else { std_value },
            used: false,
            note: std_value.is_nan().then(|| "fewer than two scorable values: undefined".to_string()),
        });
        terms.push(Term {
            symbol: Symbol::EpisodeFactor,
            label: "F".into(),
            formula: f_formula,
            filled: String::new(),
            value: eg.factor,
            recomputed: if f.is_nan() { 1.0 } else { f },
            used: false,
            note: None,
        });
        let a = (r - mean_g) / f;
        terms.push(Term {
            symbol: Symbol::EpisodeAdvantage,
            label: "A_E".into(),
            formula: format!("(R − mean_g) / F (TRL scale_rewards {})", scale.name()),
            filled: difference_over(r, eg.baseline, Some(eg.factor), row.episode_advantage),
            value: row.episode_advantage,
            recomputed: if a.is_nan() { 0.0 } else { a },
            used: false,
            note: a.is_nan().then(|| "undefined (NaN): TRL's nan_to_num makes it 0".to_string()),
        });
        (terms, Sample { value: r, label: "R" })
    }

    /// TRL's `normalize_then_sum` (GDPO): R′, the batch's mean and F, and A_E.
    fn normalize_then_sum_terms(&self, eg: &EpisodeGroup) -> (Vec<Term>, Sample) {
        let row = self.row;
        let eps = epsilon_text(TRL_STD_EPSILON);
        // R′ = Σ_k w_k·z_k; recovered from the engine's A and the batch statistics.
        let r = row.episode_advantage * eg.factor + eg.baseline;
        let terms = vec![
            Term {
                symbol: Symbol::Score,
                label: "R′".into(),
                formula: format!("Σ_k w_k·z_k, z_k = (r_k − mean_g r_k) / (std_g r_k + {eps})"),
                filled: String::new(),
                value: r,
                recomputed: r,
                used: false,
                note: None,
            },
            Term {
                symbol: Symbol::EpisodeMean,
                label: "mean_batch".into(),
                formula: "mean of R′ over the iteration's batch".into(),
                filled: String::new(),
                value: eg.baseline,
                recomputed: eg.baseline,
                used: false,
                note: None,
            },
            Term {
                symbol: Symbol::EpisodeFactor,
                label: "F".into(),
                formula: format!("std of R′ over the batch + {eps}"),
                filled: String::new(),
                value: eg.factor,
                recomputed: eg.factor,
                used: false,
                note: None,
            },
            Term {
                symbol: Symbol::EpisodeAdvantage,
                label: "A_E".into(),
                formula: "(R′ − mean_batch) / F (TRL normalize_then_sum)".into(),
                filled: difference_over(r, eg.baseline, Some(eg.factor), row.episode_advantage),
                value: row.episode_advantage,
                recomputed: (r - eg.baseline) / eg.factor,
                used: false,
                note: None,
            },
        ];
        (terms, Sample { value: r, label: "R′" })
    }

    /// A, the headline: how the estimator combines the components; and whether it uses the step component and
    /// the episode component.
    fn advantage_term(&self, eg: &EpisodeGroup, sample: &Sample) -> (Term, bool, bool) {
        let (s, row) = (self.settings, self.row);
        let a_e = row.episode_advantage;
        let a_s = row.step_advantage;
        let (formula, filled, recomputed, note, uses_step, uses_episode) = match s.estimator {
            Estimator::Gigpo => (
                "A_E + ω·A_S".to_string(),
                {
                    let omega = as_written(s.omega, setting_decimals(s.omega));
                    let d =
                        fitting_decimals(SIGNED_DECIMALS, row.advantage, SIGNED_DECIMALS, |r| r(a_e) + omega * r(a_s));
                    format!("{} + {}·({})", signed_at(a_e, d), setting(s.omega), signed_at(a_s, d))
                },
                a_e + s.omega * a_s,
                None,
                true,
                true,
            ),
            Estimator::Grpo => (
                "A_E".to_string(),
                signed(a_e),
                a_e,
                Some("GRPO: the episode component alone (A_S is shown for comparison, not used)".to_string()),
                false,
                true,
            ),
            Estimator::Step => (
                "A_S".to_string(),
                signed(a_s),
                a_s,
                Some("the step component alone (A_E is shown for comparison, not used)".to_string()),
                true,
                false,
            ),
            Estimator::Rloo => {
                let (formula, filled, recomputed, note) = rloo_text(s, eg, sample);
                (formula, filled, recomputed, Some(note), false, false)
            }
        };
        let term = Term {
            symbol: Symbol::Advantage,
            label: "A".into(),
            formula,
            filled,
            value: row.advantage,
            recomputed,
            used: true,
            note,
        };
        (term, uses_step, uses_episode)
    }
}

/// RLOO's headline: its definition, filled in, its value and the note that says what it leaves out.
fn rloo_text(s: &AdvantageSettings, eg: &EpisodeGroup, sample: &Sample) -> (String, String, f64, String) {
    let pool = eg.pool_size;
    let mean = eg.mean;
    if pool <= 1 {
        return (
            "n/(n−1)·(s − mean_E)".to_string(),
            String::new(),
            0.0,
            "a pool of one sample leaves no other sample to compare with: A = 0".to_string(),
        );
    }
    let Sample { value: sample, label: sample_label } = *sample;
    let others = (pool as f64 * mean - sample) / (pool - 1) as f64;
    let scale = pool as f64 / (pool - 1) as f64;
    let rloo = scale * (sample - mean);
    let pooled = match (s.scale_rewards, s.pooling) {
        (Some(_), _) => "the group's scorable episodes".to_string(),
        (None, Pooling::Steps) => "every row of the group (pooling steps)".to_string(),
        (None, Pooling::Trajectories) => "each trajectory's first row (pooling trajectories)".to_string(),
    };
    let mean_label = if s.scale_rewards.is_some() { "mean_g" } else { "mean_E" };
    (
        format!("n/(n−1)·({sample_label} − {mean_label})"),
        {
            let d = fitting_decimals(NUM_DECIMALS, rloo, SIGNED_DECIMALS, |r| scale * (r(sample) - r(mean)));
            format!("{pool}/{}·({} − {})", pool - 1, num_at(sample, d), num_at(mean, d))
        },
        if rloo.is_nan() { 0.0 } else { rloo },
        format!(
            "leave-one-out: {sample_label} minus the mean of the other {} samples of the pool, {pooled}: \
             {} − {} (n = {pool}); the norm ({}) and F are not used, nor A_S",
            pool - 1,
            num(sample),
            num(others),
            s.norm.name()
        ),
    )
}

/// Mark the terms the estimator's A depends on: the step component's (`step`), the score and the pool's mean
/// (`sample`: RLOO reads them too), the rest of the episode component's (`episode`).
fn mark_used(sections: &mut [Section], step: bool, sample: bool, episode: bool) {
    for term in sections.iter_mut().flat_map(|s| s.terms.iter_mut()) {
        term.used = match term.symbol {
            Symbol::Return | Symbol::StepMean | Symbol::StepStd | Symbol::StepFactor | Symbol::StepAdvantage => step,
            Symbol::Score | Symbol::EpisodeMean => sample,
            Symbol::EpisodeStd | Symbol::EpisodeFactor | Symbol::EpisodeAdvantage => episode,
            Symbol::Advantage => true,
        };
    }
}

/// What the settings did to the rewards r before any of it: success shaping, the efficiency bonus (DEPO's), whose
/// tokens per step were counted or estimated (`lengths`).
fn shaping_notes(s: &AdvantageSettings, lengths: &Lengths) -> Vec<String> {
    let mut notes = Vec::new();
    if s.success_reward {
        notes.push(format!(
            "r: success shaping, {} on the last step of a successful episode, 0 elsewhere",
            num(SUCCESS_REWARD)
        ));
    }
    if s.efficiency_alpha1 != 0.0 || s.efficiency_alpha2 != 0.0 {
        notes.push(format!(
            "r: a successful episode's last reward includes α₁/(tokens per step) + α₂/steps (α₁ {:.2}, α₂ {:.2})",
            s.efficiency_alpha1, s.efficiency_alpha2
        ));
        if s.efficiency_alpha1 != 0.0 {
            notes.push(format!("tokens per step: {}", lengths.describe()));
        }
    }
    notes
}

/// F under `norm` for a standard deviation `std`: its definition, the definition filled in, and its value.
fn factor_text(norm: Norm, std: f64, eps: f64) -> (String, String, f64) {
    match norm {
        Norm::MeanNorm => ("1 (mean_norm)".into(), String::new(), 1.0),
        Norm::MeanStdNorm => (
            format!("std + {} (mean_std_norm)", epsilon_text(eps)),
            {
                let d = fitting_decimals(NUM_DECIMALS, std + eps, NUM_DECIMALS, |r| r(std) + eps);
                format!("{} + {}", num_at(std, d), epsilon_text(eps))
            },
            std + eps,
        ),
    }
}

/// F as a divisor of a filled-in formula: none (`1`, mean_norm) or its value.
fn divisor(norm: Norm, factor: f64) -> Option<f64> {
    match norm {
        Norm::MeanNorm => None,
        Norm::MeanStdNorm => Some(factor),
    }
}

/// Whether every term's stated definition gives the engine's value (for tests and debug checks).
pub fn consistent(x: &Explanation) -> Result<(), String> {
    for term in x.terms() {
        if !close(term.value, term.recomputed) {
            return Err(format!("{}: engine {} vs formula {}", term.label, term.value, term.recomputed));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advantage::compute;
    use crate::run::{Episode, Step};

    fn episodes() -> Vec<Episode> {
        let mk = |id: &str, rewards: &[f64], actions: &[&str]| {
            let steps = rewards
                .iter()
                .zip(actions)
                .enumerate()
                .map(|(i, (&r, a))| Step::new(format!("state {i}"), *a, r))
                .collect();
            Episode::new(id, "g", steps)
        };
        let mut v = vec![
            mk("a", &[0.0, 1.0], &["x", "y"]),
            mk("b", &[0.0, 0.0, 3.0], &["x", "z", "w"]),
            mk("c", &[2.0], &["q"]),
        ];
        v[1].steps[1].valid = false;
        v.push(mk("solo", &[5.0], &["x"]));
        v[3].group = "h".into();
        v
    }

    #[test]
    fn every_term_agrees_with_the_engine_for_every_estimator_norm_and_pooling() {
        let eps = episodes();
        for estimator in [Estimator::Gigpo, Estimator::Grpo, Estimator::Rloo, Estimator::Step] {
            for norm in [Norm::MeanNorm, Norm::MeanStdNorm] {
                for pooling in [Pooling::Steps, Pooling::Trajectories] {
                    let s = AdvantageSettings { estimator, norm, pooling, ..AdvantageSettings::default() };
                    let table = compute(&eps, &s);
                    for (e, ep) in eps.iter().enumerate() {
                        for t in 0..ep.steps.len() {
                            let at = RowRef { episode: e as u32, step: t as u32 };
                            let x = explain(&table, &eps, &s, &Lengths::default(), at).unwrap();
                            consistent(&x).unwrap_or_else(|m| panic!("{estimator:?} {norm:?} {pooling:?} {at:?}: {m}"));
                            assert_eq!(x.advantage.value, table.row(at).advantage);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_step_the_trainer_counted_twice_is_explained_as_the_engine_counts_it() {
        let mut eps = episodes();
        eps[0].steps[0].extra.insert(crate::run::COPIES_KEY.into(), 2.into());
        for estimator in [Estimator::Gigpo, Estimator::Rloo] {
            for pooling in [Pooling::Steps, Pooling::Trajectories] {
                let s =
                    AdvantageSettings { estimator, norm: Norm::MeanStdNorm, pooling, ..AdvantageSettings::default() };
                let table = compute(&eps, &s);
                for (e, ep) in eps.iter().enumerate() {
                    for t in 0..ep.steps.len() {
                        let at = RowRef { episode: e as u32, step: t as u32 };
                        let x = explain(&table, &eps, &s, &Lengths::default(), at).unwrap();
                        consistent(&x).unwrap_or_else(|m| panic!("{estimator:?} {pooling:?} {at:?}: {m}"));
                    }
                }
            }
        }
    }

    #[test]
    fn rloo_says_leave_one_out_and_that_the_norm_is_ignored() {
        let eps = episodes();
        let s =
            AdvantageSettings { estimator: Estimator::Rloo, norm: Norm::MeanStdNorm, ..AdvantageSettings::default() };
        let table = compute(&eps, &s);
        let x = explain(&table, &eps, &s, &Lengths::default(), RowRef { episode: 0, step: 1 }).unwrap();
        assert_eq!(x.advantage.formula, "n/(n−1)·(s − mean_E)");
        assert!(x.advantage.filled.starts_with("6/5·("), "{}", x.advantage.filled);
        let note = x.advantage.note.as_deref().unwrap();
        assert!(
            note.contains("leave-one-out") && note.contains("mean_std_norm") && note.contains("not used"),
            "{note}"
        );
        assert!(!x.term(Symbol::EpisodeFactor).unwrap().used);
        // A pool of one: 0, and said so.
        let solo = explain(&table, &eps, &s, &Lengths::default(), RowRef { episode: 3, step: 0 }).unwrap();
        assert_eq!(solo.advantage.value, 0.0);
        assert!(solo.advantage.note.as_deref().unwrap().contains("pool of one"));
    }

    #[test]
    fn epsilon_is_the_engines() {
        let eps = episodes();
        let s = AdvantageSettings { norm: Norm::MeanStdNorm, ..AdvantageSettings::default() };
        let table = compute(&eps, &s);
        let x = explain(&table, &eps, &s, &Lengths::default(), RowRef { episode: 0, step: 0 }).unwrap();
        assert!(x.term(Symbol::StepFactor).unwrap().formula.contains(&epsilon_text(STD_EPSILON)));
        assert_eq!(epsilon_text(1e-6), "1e-6");
    }
}
