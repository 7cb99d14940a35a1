//! The tch trainer linked in (`--all-features`): bursts, the training service, advantages in training and
//! ground truth, and bursts as Ray jobs. Each module compiles to nothing without the `train` feature.

#[path = "../support/mod.rs"]
mod support;

mod advantages;
mod burst;
mod disk_full;
mod golden;
mod kill;
mod ray;
mod service;
mod truth;
