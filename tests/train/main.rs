//! The tch trainer linked in (`--all-features`): bursts, the training service, advantages in training and
//! ground truth. Each module compiles to nothing without the `train` feature.

mod advantages;
mod burst;
mod service;
mod truth;
