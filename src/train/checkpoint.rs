//! Checkpoints: policy weights, Adam's moments and the trainer's state in one file, replaced atomically.
//!
//! One file (libtorch's named-tensor format) holds `w/<var>`, `m/<var>`, `v/<var>` and `state`, the trainer
//! state as JSON bytes; writing a temporary file and renaming it over the old one means a crash leaves either
//! the old checkpoint or the new one, never a mix.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use super::ppo::Adam;
use super::TrainError;

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
    let tmp = path.with_extension("ot.tmp");
    Tensor::save_multi(&named, &tmp)?;
    File::open(&tmp).and_then(|f| f.sync_all()).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))?;
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
