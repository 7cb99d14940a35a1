//! The binary as users build it, without the `train` feature, training and measuring ground truth through the
//! plugin `libgigscope_train.so`. Each module compiles to nothing with `--all-features`, so `./scripts/dev test`
//! runs this binary in its own invocation (`cargo test --release --test plugin`) after the plugin is built.

#[path = "../support/mod.rs"]
mod support;

mod training;
mod truth;
