//! What an estimator computes with: the run, the engine's table and the settings ([`Ctx`]), one episode group's
//! rows at a time ([`GroupView`]), and the grouping and normalisation helpers several estimators share.

use std::borrow::Cow;
use std::ops::Range;

use rayon::prelude::*;

use super::family::{EnvInputs, EstimatorKind, EstimatorOutput, EstimatorSettings};
use crate::advantage::engine::mean_std;
use crate::advantage::grouping::Clusterer;
use crate::advantage::settings::{AdvantageSettings, Norm, Pooling};
use crate::advantage::table::{AdvantageTable, RowAdvantage};
use crate::run::{Episode, Step};

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
        let members = self.table.group_episodes(g);
        let mut view = GroupView {
            rows: Vec::new(),
            spans: Vec::with_capacity(members.len()),
            steps: Vec::new(),
            values: Vec::new(),
        };
        for e in members.iter() {
            let e = e as usize;
            let start = view.rows.len();
            view.rows.extend(self.table.rows_of(e));
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
            row_offsets: self.table.row_offsets.iter().map(|o| o as usize).collect(),
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
        let (baseline, factor) = if pool <= 1 { (0.0, 1.0) } else { (mean, norm.factor(std)) };
        (view.values.iter().map(|v| (v.score - baseline) / factor).collect(), mean)
    }
}

/// Exact anchor groups of a group's rows: the group number of each row (numbered from 0 in order of first
/// appearance) and each group's size.
pub(crate) fn exact_groups(steps: &[&Step]) -> (Vec<u32>, Vec<usize>) {
    let mut clusterer = Clusterer::new();
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
        let factor = norm.factor(std);
        for &i in m {
            out[i] = (values[i] - mean) / factor;
        }
    }
    out
}
