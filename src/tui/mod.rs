//! The interactive terminal UI: episodes beside their advantages, anchor-state groups, live runs.
//!
//! Elm-style: [`state::State`] holds everything in parts (the run and its groupings in [`domain`], background
//! jobs, and each view's UI state), [`update::update`] is the only thing that changes it (pure, unit-tested; it
//! reaches the world only through [`update::Effects`]), one component per view ([`views`]) owns that view's
//! keys, hints, drawing and mouse regions, `ui` draws the frame around it (`impl Widget for &State`), and `app`
//! connects a terminal, the keymap, and the run directory to those.

pub mod action;
pub mod app;
pub mod burst_dialog;
pub mod config;
pub mod config_error;
pub mod domain;
pub mod fields;
pub mod keymap;
pub mod play;
mod runner;
pub mod state;
pub mod theme;
pub mod truth_job;
pub mod ui;
pub mod update;
pub mod views;

pub use action::Action;
pub use app::{open, run, AppError, Options};
pub use config::Config;
pub use state::{State, View};
pub use update::{update, Effects, Msg};
