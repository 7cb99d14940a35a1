//! The TUI: opening a run, `update` on messages, the views (insta snapshots in `snapshots/`), play, ground truth,
//! the text kept on disk, and the real binary driven in tmux.

#[path = "../support/mod.rs"]
mod support;

mod app_open;
mod burst_kill;
mod burst_marks;
mod burst_ray;
mod credit;
mod e2e;
mod e2e_layouts;
mod estimators;
mod explain;
mod large_observation;
mod live_load;
mod memory;
mod other_trainers;
mod overview_spread;
mod picture;
mod play;
mod ray_e2e;
mod settings_recompute;
mod small_screens;
mod snapshots;
mod text_on_disk;
mod thread_frees;
mod tokens;
mod trl_settings;
mod truth;
mod update;
