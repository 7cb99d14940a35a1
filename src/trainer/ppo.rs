//! The update: PPO's clipped policy-gradient objective on the estimator's advantages, an entropy bonus and an
//! optional KL penalty to a frozen reference policy, optimised by Adam on shuffled mini-batches with gradient
//! clipping.

use rand::seq::SliceRandom;
use rand::Rng;
use tch::{Device, Kind, Tensor};

use super::policy::{Batch, Policy};
use crate::env::features::Decision;
pub use crate::plugin_host::protocol::PpoConfig;

/// One training sample: a decision, the action taken, its log-probability when it was taken, and the
/// advantage the estimator gave that step.
#[derive(Clone, Debug)]
pub struct Sample {
    pub decision: Decision,
    pub chosen: i64,
    pub old_logprob: f32,
    pub advantage: f32,
}

/// Means over the mini-batches of one update.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UpdateStats {
    pub loss: f64,
    pub policy_loss: f64,
    pub entropy: f64,
    pub kl: f64,
    pub clip_frac: f64,
    /// Gradient norm before clipping.
    pub grad_norm: f64,
    pub minibatches: usize,
}

/// The loss terms of one mini-batch (scalars; `loss` keeps its graph).
pub struct Loss {
    pub loss: Tensor,
    pub policy_loss: f64,
    pub entropy: f64,
    pub kl: f64,
    pub clip_frac: f64,
}

/// The objective on `samples` under `policy`; `reference` only when the KL term is on.
pub fn loss(
    policy: &Policy,
    reference: Option<&Policy>,
    samples: &[&Sample],
    config: &PpoConfig,
    device: Device,
) -> Loss {
    let decisions: Vec<&Decision> = samples.iter().map(|s| &s.decision).collect();
    let batch = Batch::new(&decisions, device);
    let logp = policy.log_probs(&batch);
    let chosen: Vec<i64> = samples.iter().map(|s| s.chosen).collect();
    let chosen = Tensor::from_slice(&chosen).to(device).view([-1, 1]);
    let old: Vec<f32> = samples.iter().map(|s| s.old_logprob).collect();
    let old = Tensor::from_slice(&old).to(device);
    let advantage: Vec<f32> = samples.iter().map(|s| s.advantage).collect();
    let advantage = Tensor::from_slice(&advantage).to(device);

    let new = logp.gather(1, &chosen, false).squeeze_dim(1);
    let ratio = (&new - &old).exp();
    let unclipped = &ratio * &advantage;
    let clipped = ratio.clamp(1.0 - config.clip, 1.0 + config.clip) * &advantage;
    let policy_loss = -unclipped.minimum(&clipped).mean(Kind::Float);
    let clip_frac = (&ratio - 1.0).abs().gt(config.clip).to_kind(Kind::Float).mean(Kind::Float);

    let p = logp.exp();
    // Padding slots have p = 0 and a finite log-probability, so they add exactly 0.
    let entropy = -(&p * &logp).sum_dim_intlist(1, false, Kind::Float).mean(Kind::Float);
    let mut total = &policy_loss - config.entropy_coef * &entropy;

    let mut kl_value = 0.0;
    if let (Some(reference), true) = (reference, config.kl_coef > 0.0) {
        let ref_logp = tch::no_grad(|| reference.log_probs(&batch));
        // Exact KL over the candidate actions (the whole distribution is at hand, no estimator needed).
        let kl = (&p * (&logp - &ref_logp)).sum_dim_intlist(1, false, Kind::Float).mean(Kind::Float);
        kl_value = kl.double_value(&[]);
        total += config.kl_coef * kl;
    }
    Loss {
        policy_loss: policy_loss.double_value(&[]),
        entropy: entropy.double_value(&[]),
        kl: kl_value,
        clip_frac: clip_frac.double_value(&[]),
        loss: total,
    }
}

/// Adam over named variables. Written out rather than taken from `tch::nn::Optimizer` because a checkpoint
/// must carry the moment estimates for `--resume` to continue exactly, and tch's optimizer does not expose them.
pub struct Adam {
    /// (name, variable, first moment, second moment), sorted by name.
    pub(crate) slots: Vec<(String, Tensor, Tensor, Tensor)>,
    pub(crate) step: i64,
    beta1: f64,
    beta2: f64,
    eps: f64,
}

impl Adam {
    /// Over every trainable variable of `vs`.
    pub fn new(vs: &tch::nn::VarStore) -> Adam {
        let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().filter(|(_, t)| t.requires_grad()).collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        let slots = vars
            .into_iter()
            .map(|(name, var)| {
                let m = var.zeros_like();
                let v = var.zeros_like();
                (name, var, m, v)
            })
            .collect();
        Adam { slots, step: 0, beta1: 0.9, beta2: 0.999, eps: 1e-8 }
    }

    fn zero_grad(&mut self) {
        for (_, var, _, _) in &mut self.slots {
            let mut grad = var.grad();
            if grad.defined() {
                let _ = grad.zero_();
            }
        }
    }

    /// Clip the global gradient norm to `max_norm`, take one step; returns the norm before clipping.
    fn step(&mut self, lr: f64, max_norm: f64) -> f64 {
        let _guard = tch::no_grad_guard();
        let grads: Vec<Tensor> = self.slots.iter().map(|(_, var, _, _)| var.grad()).collect();
        let squared: f64 = grads
            .iter()
            .filter(|g| g.defined())
            .map(|g| g.pow_tensor_scalar(2).sum(Kind::Double).double_value(&[]))
            .sum();
        let norm = squared.sqrt();
        let scale = if norm > max_norm { max_norm / (norm + 1e-6) } else { 1.0 };
        self.step += 1;
        let bias1 = 1.0 - self.beta1.powi(self.step as i32);
        let bias2 = 1.0 - self.beta2.powi(self.step as i32);
        for ((_, var, m, v), grad) in self.slots.iter_mut().zip(grads) {
            if !grad.defined() {
                continue;
            }
            let g = grad * scale;
            m.copy_(&(&*m * self.beta1 + &g * (1.0 - self.beta1)));
            v.copy_(&(&*v * self.beta2 + g.square() * (1.0 - self.beta2)));
            let update = (&*m / bias1) / ((&*v / bias2).sqrt() + self.eps) * lr;
            let _ = var.f_sub_(&update);
        }
        norm
    }
}

/// One update over `samples`: `epochs` passes of shuffled mini-batches.
pub fn update(
    policy: &Policy,
    reference: Option<&Policy>,
    adam: &mut Adam,
    samples: &[Sample],
    config: &PpoConfig,
    rng: &mut impl Rng,
    device: Device,
) -> UpdateStats {
    let mut stats = UpdateStats::default();
    if samples.is_empty() {
        return stats;
    }
    let mut order: Vec<usize> = (0..samples.len()).collect();
    for _ in 0..config.epochs {
        order.shuffle(rng);
        for chunk in order.chunks(config.minibatch.max(1)) {
            let batch: Vec<&Sample> = chunk.iter().map(|&i| &samples[i]).collect();
            let l = loss(policy, reference, &batch, config, device);
            adam.zero_grad();
            l.loss.backward();
            stats.grad_norm += adam.step(config.learning_rate, config.max_grad_norm);
            stats.loss += l.loss.double_value(&[]);
            stats.policy_loss += l.policy_loss;
            stats.entropy += l.entropy;
            stats.kl += l.kl;
            stats.clip_frac += l.clip_frac;
            stats.minibatches += 1;
        }
    }
    let n = stats.minibatches as f64;
    stats.loss /= n;
    stats.policy_loss /= n;
    stats.entropy /= n;
    stats.kl /= n;
    stats.clip_frac /= n;
    stats.grad_norm /= n;
    stats
}
