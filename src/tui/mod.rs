//! The interactive terminal UI: episodes beside their advantages, anchor-state groups, live runs.
//!
//! Elm-style: [`state::State`] holds everything, [`update::update`] is the only thing that changes it (pure,
//! unit-tested), `ui` renders it (`impl Widget for &State`), and `app` connects a terminal, the keymap, and
//! the run directory to those two.

pub mod action;
pub mod app;
pub mod burst;
pub mod config;
pub mod fields;
pub mod keymap;
pub mod play;
pub mod state;
pub mod theme;
pub mod ui;
pub mod update;

pub use action::Action;
pub use app::{open, run, AppError, Options};
pub use config::Config;
pub use state::{State, View};
pub use update::{update, Effects, Msg};
