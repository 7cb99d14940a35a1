//! The policy: a learned scorer over (state, action) pairs, softmax over the actions of each state.
//!
//! Text goes through one shared table of hashed-token embeddings, mean-pooled per bag (instruction, page,
//! recent actions, action text). The state is an MLP over those bags and the state's dense features; each
//! candidate action is scored by a second MLP over the state vector, the action bag, the element-wise product
//! of action and instruction bags (a learned "does this action say what the instruction asks" signal) and the
//! action's dense features. About half a million parameters: a CPU update takes milliseconds.

use tch::nn::{self, Module, VarStore};
use tch::{Device, Kind, Tensor};

use crate::env::features::{Decision, ACTION_DENSE, BUCKETS, STATE_DENSE};
pub use crate::plugin_host::protocol::PolicyShape;

/// Logit given to padding slots: far below any real logit, finite so that 0·logit stays 0 in the entropy.
const PAD_LOGIT: f64 = -1e9;

pub struct Policy {
    embedding: Tensor,
    state: nn::Linear,
    pair_hidden: nn::Linear,
    pair_out: nn::Linear,
}

impl Policy {
    /// Variables are created under `path` (initialised from torch's generator: seed it first).
    pub fn new(path: &nn::Path<'_>, shape: PolicyShape) -> Policy {
        let d = shape.embed;
        let h = shape.hidden;
        let embedding = path.var("embedding", &[BUCKETS, d], nn::Init::Randn { mean: 0.0, stdev: 0.3 });
        let state = nn::linear(path / "state", 3 * d + STATE_DENSE as i64, h, Default::default());
        let pair_hidden = nn::linear(path / "pair_hidden", h + 2 * d + ACTION_DENSE as i64, h, Default::default());
        let pair_out = nn::linear(path / "pair_out", h, 1, Default::default());
        Policy { embedding, state, pair_hidden, pair_out }
    }

    fn bags(&self, bags: &Bags) -> Tensor {
        // Mode 1 = mean; an empty bag gives a zero vector.
        let (pooled, _, _, _) = Tensor::embedding_bag::<Tensor>(
            &self.embedding,
            &bags.indices,
            &bags.offsets,
            false,
            1,
            false,
            None,
            false,
        );
        pooled
    }

    /// Log-probabilities of every candidate action, `[states, max actions]`; padding slots hold about −1e9.
    pub fn log_probs(&self, batch: &Batch) -> Tensor {
        let instruction = self.bags(&batch.instruction);
        let observation = self.bags(&batch.observation);
        let history = self.bags(&batch.history);
        let state =
            Tensor::cat(&[&instruction, &observation, &history, &batch.state_dense], 1).apply(&self.state).relu();

        let action = self.bags(&batch.action);
        let pair_state = state.index_select(0, &batch.pair_state);
        let pair_instruction = instruction.index_select(0, &batch.pair_state);
        let pair = Tensor::cat(&[&pair_state, &action, &(&action * &pair_instruction), &batch.action_dense], 1);
        let logits = self.pair_out.forward(&self.pair_hidden.forward(&pair).relu()).squeeze_dim(1);

        let padded = Tensor::full([batch.states * batch.width], PAD_LOGIT, (Kind::Float, logits.device()))
            .index_put(&[Some(&batch.pair_slot)], &logits, false)
            .view([batch.states, batch.width]);
        padded.log_softmax(1, Kind::Float)
    }
}

/// Bags of token ids in `embedding_bag`'s flat form.
pub struct Bags {
    indices: Tensor,
    offsets: Tensor,
}

impl Bags {
    fn new<'a>(bags: impl Iterator<Item = &'a [i64]>, device: Device) -> Bags {
        let mut indices = Vec::new();
        let mut offsets = Vec::new();
        for bag in bags {
            offsets.push(indices.len() as i64);
            indices.extend_from_slice(bag);
        }
        Bags { indices: Tensor::from_slice(&indices).to(device), offsets: Tensor::from_slice(&offsets).to(device) }
    }
}

/// A batch of decisions as tensors. Action `k` of state `s` sits in slot `s·width + k`.
pub struct Batch {
    pub states: i64,
    /// The largest number of candidate actions of any state in the batch.
    pub width: i64,
    instruction: Bags,
    observation: Bags,
    history: Bags,
    state_dense: Tensor,
    action: Bags,
    action_dense: Tensor,
    pair_state: Tensor,
    pair_slot: Tensor,
}

impl Batch {
    pub fn new(decisions: &[&Decision], device: Device) -> Batch {
        let states = decisions.len() as i64;
        let width = decisions.iter().map(|d| d.actions.len()).max().unwrap_or(1).max(1) as i64;
        let state_dense: Vec<f32> = decisions.iter().flat_map(|d| d.state.dense).collect();
        let mut action_dense = Vec::new();
        let mut pair_state = Vec::new();
        let mut pair_slot = Vec::new();
        for (s, d) in decisions.iter().enumerate() {
            for (k, a) in d.actions.iter().enumerate() {
                action_dense.extend_from_slice(&a.dense);
                pair_state.push(s as i64);
                pair_slot.push(s as i64 * width + k as i64);
            }
        }
        let pairs = pair_state.len() as i64;
        Batch {
            states,
            width,
            instruction: Bags::new(decisions.iter().map(|d| d.state.instruction.as_slice()), device),
            observation: Bags::new(decisions.iter().map(|d| d.state.observation.as_slice()), device),
            history: Bags::new(decisions.iter().map(|d| d.state.history.as_slice()), device),
            state_dense: Tensor::from_slice(&state_dense).view([states, STATE_DENSE as i64]).to(device),
            action: Bags::new(decisions.iter().flat_map(|d| d.actions.iter().map(|a| a.text.as_slice())), device),
            action_dense: Tensor::from_slice(&action_dense).view([pairs, ACTION_DENSE as i64]).to(device),
            pair_state: Tensor::from_slice(&pair_state).to(device),
            pair_slot: Tensor::from_slice(&pair_slot).to(device),
        }
    }
}

/// The policy's initial weights: a function of the seed and shape only, created on the CPU so that they do not
/// depend on the device either.
pub fn initial_policy(seed: u64, shape: PolicyShape, device: Device) -> (VarStore, Policy) {
    // torch's generator is process-wide: two trainers starting at once (parallel tests, a TUI burst next to a
    // CLI one) would interleave their draws and neither would get the weights its seed promises.
    static TORCH_GENERATOR: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let mut vs = VarStore::new(Device::Cpu);
    let policy = {
        let _seeded = TORCH_GENERATOR.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        tch::manual_seed(seed as i64);
        Policy::new(&vs.root(), shape)
    };
    vs.set_device(device);
    (vs, policy)
}
