//! `q-minus-v`: the text-only form of a cluster Q − V (BiPACE's PACE-Q on exact anchor groups instead of
//! hidden-state clusters; also RTMC's Monte Carlo Q̂ − V̂ without its unpublished prior smoothing). Not an
//! author's code: BiPACE's code is unpublished.
//!
//! In each exact anchor group of an episode group (GiGPO's exact step group), V = mean R_t of its members and
//! Q = mean R_t of the members that took the same action (the action as the settings' action rule reads it from
//! the response, `crate::text::action`: the same action with different thoughts is one action); A = Q − V, or, with
//! `q_minus_v_episode`, A = A_ep + ω·(Q − V) (BiPACE's final form, whose weight is unstated), A_ep being GiGPO's
//! episode advantage under the shared norm. R_t is the engine's discounted return with its penalty. Q − V sums
//! to 0 over each anchor group's members.

use foldhash::{HashMap, HashMapExt};

use super::context::{exact_groups, Ctx};
use super::family::{EstimatorKind, EstimatorOutput};

pub(super) fn compute(ctx: &Ctx<'_>) -> EstimatorOutput {
    let with_episode = ctx.settings.q_minus_v_episode;
    let names = ["A_step", "Q", "V", "n_action", "n_state", "A_ep"].into_iter().map(Into::into).collect();
    ctx.per_group(EstimatorKind::QMinusV, names, |_, view, adv, terms| {
        let n = view.rows.len();
        let (ids, sizes) = exact_groups(&view.steps);
        // Sums and counts per state and per (state, action).
        let mut state = vec![(0.0, 0usize); sizes.len()];
        let mut action: HashMap<(u32, &str), (f64, usize)> = HashMap::new();
        let action_of = |i: usize| ctx.base.action.extract(&view.steps[i].action);
        for i in 0..n {
            let ret = view.values[i].ret;
            let s = &mut state[ids[i] as usize];
            *s = (s.0 + ret, s.1 + 1);
            let a = action.entry((ids[i], action_of(i))).or_insert((0.0, 0));
            *a = (a.0 + ret, a.1 + 1);
        }
        let episode = if with_episode { Some(ctx.episode_level(view, ctx.base.norm).0) } else { None };
        for i in 0..n {
            let (s_sum, s_n) = state[ids[i] as usize];
            let (a_sum, a_n) = action.get(&(ids[i], action_of(i))).copied().unwrap_or((0.0, 1));
            let v = s_sum / s_n as f64;
            let q = a_sum / a_n as f64;
            let a_step = q - v;
            let a_ep = episode.as_ref().map_or(f64::NAN, |e| e[i]);
            adv[i] = match &episode {
                Some(_) => a_ep + ctx.base.omega * a_step,
                None => a_step,
            };
            terms[i * 6..(i + 1) * 6].copy_from_slice(&[a_step, q, v, a_n as f64, s_n as f64, a_ep]);
        }
    })
}
