//! GraphGPO (`recipe/GraphGPO/core_graph.py` of verl-agent, arXiv 2605.26684): returns from hop distances to
//! success in a state graph per episode group.
//!
//! Each row is an edge anchor_t → next_t. next_t is the next step's anchor in the same episode; for the last
//! step it is the success node when the episode's return R = Σ r (shaped rewards, no penalty) is > 0 (the
//! rollout loop's literal `"success"`, so any positive WebShop score counts), else a terminal node. gigscope
//! records no post-action observation of the last step: verl-agent uses that observation for failed episodes,
//! gigscope one terminal node per group, which never reaches success (the distances are the same unless that
//! observation also appears as an anchor of a path to success). The success and terminal nodes are never
//! merged with an observation (verl-agent's would merge an observation that reads exactly `success`).
//!
//! Nodes are anchors, exact or (with `graph_similarity` θ) canonicalised greedily: compared in order of
//! creation with each representative, the first with difflib ratio ≥ θ wins, else the anchor becomes one;
//! anchors are visited in the group's row order. d(n) = hops from n to success along edge direction (breadth
//! first from success over reversed edges); a node that cannot reach it gets (max finite d, success's 0
//! included) + 1, so a group without success gets d = 1 everywhere and constant returns.
//!
//! S_t = 10·γ^d(next_t) (or 10·γ^(d(next_t) − d(obs_t) + 1) with `graph_normalize_distance`) − c·[invalid];
//! A_step = GiGPO's step normalisation of S over exact anchor groups (never similarity groups, whatever
//! `graph_similarity` says); A_ep = GiGPO's episode advantage; both under `graph_norm`;
//! A = ω·A_step + `graph_episode_weight`·A_ep. Environment rewards enter only through the R > 0 flag.

use std::collections::VecDeque;

use foldhash::{HashMap, HashMapExt};

use super::context::{exact_groups, step_norm, Ctx};
use super::family::{EstimatorKind, EstimatorOutput};
use crate::advantage::grouping::SimilarClusters;

/// GraphGPO's hard-coded return scale.
pub const GRAPH_RETURN_SCALE: f64 = 10.0;

pub(super) fn compute(ctx: &Ctx<'_>) -> EstimatorOutput {
    let s = ctx.settings;
    let names = ["A_step", "A_ep", "S", "d_obs", "d_next", "n_step_group"].into_iter().map(Into::into).collect();
    ctx.per_group(EstimatorKind::Graphgpo, names, |_, view, adv, terms| {
        let n = view.rows.len();
        // Node numbers: anchors from 0 in order of canonicalisation, then success and terminal.
        let mut canon = Canon::new(s.graph_similarity);
        let obs: Vec<usize> = view.steps.iter().map(|step| canon.node(step.anchor_key())).collect();
        let success = canon.count();
        let terminal = success + 1;
        let mut next = vec![terminal; n];
        for (_, span) in &view.spans {
            for i in span.clone() {
                next[i] = if i + 1 < span.end {
                    obs[i + 1]
                } else {
                    let total: f64 = span.clone().map(|j| view.values[j].reward).sum();
                    if total > 0.0 {
                        success
                    } else {
                        terminal
                    }
                };
            }
        }
        let d = distances(terminal + 1, &obs, &next, success);
        let (ids, sizes) = exact_groups(&view.steps);
        let gamma = s.graph_gamma;
        let returns: Vec<f64> = (0..n)
            .map(|i| {
                let exponent = if s.graph_normalize_distance { d[next[i]] - d[obs[i]] + 1 } else { d[next[i]] };
                GRAPH_RETURN_SCALE * gamma.powi(exponent as i32) - ctx.penalty(view.steps[i])
            })
            .collect();
        let step = step_norm(&returns, &ids, &sizes, s.graph_norm);
        let (episode, _) = ctx.episode_level(view, s.graph_norm);
        for i in 0..n {
            adv[i] = ctx.base.omega * step[i] + s.graph_episode_weight * episode[i];
            terms[i * 6..(i + 1) * 6].copy_from_slice(&[
                step[i],
                episode[i],
                returns[i],
                d[obs[i]] as f64,
                d[next[i]] as f64,
                sizes[ids[i] as usize] as f64,
            ]);
        }
    })
}

/// Hop distance of every node to `target` along the edges `from[i] → to[i]`; nodes that cannot reach it get
/// (max finite distance, the target's 0 included) + 1.
fn distances(nodes: usize, from: &[usize], to: &[usize], target: usize) -> Vec<i64> {
    let mut reverse: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for (&a, &b) in from.iter().zip(to) {
        reverse[b].push(a);
    }
    let mut d = vec![-1i64; nodes];
    let mut queue = VecDeque::new();
    d[target] = 0;
    queue.push_back(target);
    while let Some(n) = queue.pop_front() {
        for &m in &reverse[n] {
            if d[m] < 0 {
                d[m] = d[n] + 1;
                queue.push_back(m);
            }
        }
    }
    let unreachable = d.iter().copied().max().unwrap_or(0).max(0) + 1;
    for x in &mut d {
        if *x < 0 {
            *x = unreachable;
        }
    }
    d
}

/// Graph nodes of a group's anchors: exact, or greedy difflib canonicalisation (GiGPO's clusterer, with a memo
/// of the strings seen: a repeated string lands on the same node again).
struct Canon<'a> {
    seen: HashMap<&'a str, usize>,
    similar: Option<(f64, SimilarClusters)>,
    count: usize,
}

impl<'a> Canon<'a> {
    fn new(theta: Option<f64>) -> Self {
        Canon { seen: HashMap::new(), similar: theta.map(|t| (t, SimilarClusters::default())), count: 0 }
    }

    fn node(&mut self, anchor: &'a str) -> usize {
        if let Some(&n) = self.seen.get(anchor) {
            return n;
        }
        let n = match &mut self.similar {
            Some((theta, clusters)) => clusters.assign(anchor, *theta) as usize,
            None => self.count,
        };
        self.count = self.count.max(n + 1);
        self.seen.insert(anchor, n);
        n
    }

    /// Nodes made so far.
    fn count(&self) -> usize {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_follow_edges_to_the_target() {
        // 0 → 1 → 3 (target), 2 → 2 (a loop that never reaches it), 4 isolated.
        let d = distances(5, &[0, 1, 2], &[1, 3, 2], 3);
        assert_eq!(d, vec![2, 1, 3, 0, 3]);
        // No edge into the target: every other node gets 0 + 1.
        assert_eq!(distances(3, &[0], &[1], 2), vec![1, 1, 0]);
    }
}
