//! HGPO (`recipe/hgpo/core_hgpo.py` of verl-agent, arXiv 2602.22817): hierarchical step groups by history depth.
//!
//! In each episode group, the row at time t of a trajectory joins, for every depth k = 1..min(K+1, t+1), the
//! group of rows whose last k anchors (obs_{t−k+1}, …, obs_t; anchors only, no actions) are equal: k = 1 is
//! GiGPO's exact step group, and the groups nest. A group of at least two members gives each member
//! a_k = R_t − mean (`mean_norm`) or (R_t − mean)/(population std + 1e-6) (`mean_std_norm`: ddof 0, unlike
//! GiGPO); a singleton gives nothing. With `hgpo_base_group`, GiGPO's episode advantage (same norm) is a k = 0
//! item. Items equal to 0 exactly are dropped; the rest are weighted w_k = (k+1)^α / (Σ_kept (k+1)^α + 1e-6) and
//! summed (0 when none is left). Without `hgpo_base_group` there is no episode-level term at all.
//!
//! R_t is the engine's discounted return with its invalid-action penalty (GiGPO's S_t). Histories are taken in
//! time order within each trajectory, as HGPO computes them before verl-agent reorders its batch.

use std::borrow::Cow;

use foldhash::{HashMap, HashMapExt};

use super::context::{exact_groups, Ctx};
use super::family::{EstimatorKind, EstimatorOutput};
use crate::advantage::engine::STD_EPSILON;
use crate::advantage::settings::Norm;

pub(super) fn compute(ctx: &Ctx<'_>) -> EstimatorOutput {
    let s = ctx.settings;
    let depths = s.hgpo_history as usize + 1;
    // Columns: per depth k, a_k, w_k and the size of the row's depth-k group; then the episode item.
    let mut names: Vec<Cow<'static, str>> = Vec::with_capacity(3 * depths + 2);
    for k in 1..=depths {
        names.push(format!("a_k{k}").into());
        names.push(format!("w_k{k}").into());
        names.push(format!("n_k{k}").into());
    }
    let base_group = s.hgpo_base_group;
    if base_group {
        names.push("A_ep".into());
        names.push("w_k0".into());
    }
    let width = names.len();
    ctx.per_group(EstimatorKind::Hgpo, names, |_, view, adv, terms| {
        let n = view.rows.len();
        // Anchors as numbers (exact groups), so that a history is a slice of numbers.
        let (ids, _) = exact_groups(&view.steps);
        // a[i * depths + (k − 1)]: the row's item at depth k (NaN: its group is a singleton or too deep).
        let mut a = vec![f64::NAN; n * depths];
        for k in 1..=depths {
            let mut groups: HashMap<&[u32], usize> = HashMap::new();
            let mut members: Vec<Vec<usize>> = Vec::new();
            for (_, span) in &view.spans {
                for i in span.clone() {
                    let t = i - span.start;
                    if t + 1 < k {
                        continue;
                    }
                    let key = &ids[i + 1 - k..=i];
                    let c = *groups.entry(key).or_insert_with(|| {
                        members.push(Vec::new());
                        members.len() - 1
                    });
                    members[c].push(i);
                }
            }
            for m in &members {
                for &i in m {
                    terms[i * width + 3 * (k - 1) + 2] = m.len() as f64;
                }
                if m.len() < 2 {
                    continue;
                }
                let returns = || m.iter().map(|&i| view.values[i].ret);
                let mean = returns().sum::<f64>() / m.len() as f64;
                let factor = match s.hgpo_norm {
                    Norm::MeanNorm => 1.0,
                    Norm::MeanStdNorm => {
                        let var = returns().map(|x| (x - mean) * (x - mean)).sum::<f64>() / m.len() as f64;
                        var.sqrt() + STD_EPSILON
                    }
                };
                for &i in m {
                    a[i * depths + k - 1] = (view.values[i].ret - mean) / factor;
                }
            }
        }
        let episode = if base_group { Some(ctx.episode_level(view, s.hgpo_norm).0) } else { None };
        let weight = |k: usize| ((k + 1) as f64).powf(s.hgpo_alpha);
        for i in 0..n {
            let row_terms = &mut terms[i * width..(i + 1) * width];
            // Items (k, a_k): the episode item first, as HGPO prepends it.
            let mut items: Vec<(usize, f64)> = Vec::with_capacity(depths + 1);
            if let Some(episode) = &episode {
                items.push((0, episode[i]));
                row_terms[3 * depths] = episode[i];
            }
            for k in 1..=depths {
                let ak = a[i * depths + k - 1];
                if !ak.is_nan() {
                    items.push((k, ak));
                    row_terms[3 * (k - 1)] = ak;
                }
            }
            items.retain(|&(_, ak)| ak != 0.0);
            let total: f64 = items.iter().map(|&(k, _)| weight(k)).sum::<f64>() + STD_EPSILON;
            let mut sum = 0.0;
            for &(k, ak) in &items {
                let w = weight(k) / total;
                sum += w * ak;
                let column = if k == 0 { 3 * depths + 1 } else { 3 * (k - 1) + 1 };
                row_terms[column] = w;
            }
            adv[i] = sum;
        }
    })
}
