//! Checkpoints: policy weights, Adam's moments and the trainer's state in one file, replaced atomically; and
//! the policy weights alone of every iteration (`weights/iteration-<I>.ot`, [`save_weights`]), so the policy
//! that played any recorded iteration can be loaded again (`gigscope truth`).
//!
//! One file (libtorch's named-tensor format) holds `w/<var>`, `m/<var>`, `v/<var>` and `state`, the trainer
//! state as JSON bytes; writing a temporary file and renaming it over the old one means a crash leaves either
//! the old checkpoint or the new one, never a mix.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

use super::error::TrainError;
use super::policy::{initial_policy, Policy, PolicyShape};
use super::ppo::Adam;

pub const CHECKPOINT_FILE: &str = "checkpoint.ot";

/// Everything besides tensors that `--resume` needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainerState {
    /// Iterations completed.
    pub iteration: u64,
    pub env_steps: u64,
    /// Seconds of training before this checkpoint (so `time` in metrics keeps increasing across resumes).
    pub elapsed_s: f64,
    /// Lengths of `episodes.jsonl` and `metrics.jsonl` when the checkpoint was taken: anything after them was
    /// written by an iteration the checkpoint does not cover and is cut on resume.
    pub episodes_bytes: u64,
    pub metrics_bytes: u64,
    /// The configuration the run was started with (network shape, seed, ...), as JSON.
    pub config: serde_json::Value,
}

pub fn path_in(run_dir: &Path) -> PathBuf {
    run_dir.join(CHECKPOINT_FILE)
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TrainError + '_ {
    move |source| TrainError::Io { path: path.to_path_buf(), source }
}

/// Write the checkpoint of `adam`'s variables and moments and `state` to `path`, atomically.
pub fn save(path: &Path, adam: &Adam, state: &TrainerState) -> Result<(), TrainError> {
    let json = serde_json::to_vec(state)?;
    let mut named: Vec<(String, Tensor)> = Vec::with_capacity(3 * adam.slots.len() + 2);
    for (name, var, m, v) in &adam.slots {
        named.push((format!("w/{name}"), var.shallow_clone()));
        named.push((format!("m/{name}"), m.shallow_clone()));
        named.push((format!("v/{name}"), v.shallow_clone()));
    }
    named.push(("adam_step".to_string(), Tensor::from_slice(&[adam.step])));
    named.push(("state".to_string(), Tensor::from_slice(&json)));
    write_tensors(path, &named)
}

/// Write `named` to `path` atomically. libtorch serialises into memory only: writing the file itself, it
/// throws from a destructor when the disk fills, which aborts the process; here a failed write is an error
/// that names the file, and the temporary file is removed ([`crate::run::write_atomic`]).
fn write_tensors(path: &Path, named: &[(String, Tensor)]) -> Result<(), TrainError> {
    let mut bytes = Vec::new();
    Tensor::save_multi_to_stream(named, &mut bytes)?;
    crate::run::write_atomic(path, &bytes)?;
    Ok(())
}

/// The trainer state of the checkpoint at `path`, without its tensors.
pub fn read_state(path: &Path) -> Result<TrainerState, TrainError> {
    Ok(load_named(path, Device::Cpu)?.1)
}

/// The checkpoint's tensors by name (without `state`) and its trainer state.
fn load_named(path: &Path, device: Device) -> Result<(HashMap<String, Tensor>, TrainerState), TrainError> {
    if !path.exists() {
        return Err(TrainError::NoCheckpoint(path.to_path_buf()));
    }
    let mut named: HashMap<String, Tensor> = Tensor::load_multi_with_device(path, device)?.into_iter().collect();
    let state = named
        .remove("state")
        .ok_or_else(|| TrainError::BadCheckpoint { path: path.to_path_buf(), why: "no trainer state".into() })?;
    let bytes: Vec<u8> = Vec::try_from(state.to_device(Device::Cpu))?;
    Ok((named, serde_json::from_slice(&bytes)?))
}

/// Load `path` into `adam`'s variables and moments; returns the trainer state.
pub fn load(path: &Path, adam: &mut Adam, device: Device) -> Result<TrainerState, TrainError> {
    let bad = |why: String| TrainError::BadCheckpoint { path: path.to_path_buf(), why };
    let (mut named, state) = load_named(path, device)?;
    let step = named.remove("adam_step").ok_or_else(|| bad("no optimizer step".into()))?;
    let _guard = tch::no_grad_guard();
    for (name, var, m, v) in &mut adam.slots {
        for (prefix, target) in [("w", &mut *var), ("m", m), ("v", v)] {
            let key = format!("{prefix}/{name}");
            let value = named.remove(&key).ok_or_else(|| bad(format!("missing {key}")))?;
            if value.size() != target.size() {
                return Err(bad(format!("{key} has shape {:?}, the policy {:?}", value.size(), target.size())));
            }
            target.f_copy_(&value.to_kind(Kind::Float))?;
        }
    }
    if let Some(extra) = named.keys().next() {
        return Err(bad(format!("unexpected tensor {extra}")));
    }
    adam.step = step.int64_value(&[0]);
    Ok(state)
}

/// Key of the network shape `[embed, hidden]` in a weights file.
const SHAPE_KEY: &str = "shape";

/// Write the policy variables of `vs` (network `shape`) to `path` as CPU tensors, atomically (temporary file
/// beside it, synced, renamed), creating its directory.
pub fn save_weights(path: &Path, vs: &VarStore, shape: PolicyShape) -> Result<(), TrainError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    let mut named: Vec<(String, Tensor)> =
        vs.variables().into_iter().map(|(name, var)| (name, var.to_device(Device::Cpu))).collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    named.push((SHAPE_KEY.to_string(), Tensor::from_slice(&[shape.embed, shape.hidden])));
    write_tensors(path, &named)
}

/// The policy whose weights [`save_weights`] wrote to `path`, on `device`.
pub fn load_weights(path: &Path, device: Device) -> Result<(VarStore, Policy), TrainError> {
    let bad = |why: String| TrainError::BadCheckpoint { path: path.to_path_buf(), why };
    if !path.exists() {
        return Err(TrainError::NoCheckpoint(path.to_path_buf()));
    }
    let mut named: HashMap<String, Tensor> = Tensor::load_multi_with_device(path, Device::Cpu)?.into_iter().collect();
    let shape = named.remove(SHAPE_KEY).ok_or_else(|| bad("no network shape".into()))?;
    let shape = PolicyShape { embed: shape.int64_value(&[0]), hidden: shape.int64_value(&[1]) };
    // Initialised, then overwritten: the seed does not matter.
    let (vs, policy) = initial_policy(0, shape, Device::Cpu);
    {
        let _guard = tch::no_grad_guard();
        let mut variables = vs.variables();
        for (name, var) in &mut variables {
            let value = named.remove(name).ok_or_else(|| bad(format!("missing {name}")))?;
            if value.size() != var.size() {
                return Err(bad(format!("{name} has shape {:?}, the policy {:?}", value.size(), var.size())));
            }
            var.f_copy_(&value.to_kind(Kind::Float))?;
        }
    }
    if let Some(extra) = named.keys().next() {
        return Err(bad(format!("unexpected tensor {extra}")));
    }
    let mut vs = vs;
    vs.set_device(device);
    Ok((vs, policy))
}
