//! The interactive terminal UI: episodes beside their advantages, anchor-state groups, live runs.
//!
//! The Elm architecture, in layers (a file imports only files below it):
//! - plain data: [`action`], [`config`] (with [`keymap`], [`theme`] and [`config_error`]), [`settings_fields`],
//!   [`burst_dialog`], [`play`], [`truth_job`], [`reconcile_offer`];
//! - the state, [`state::State`]: the run and its groupings ([`domain`]), the estimators' numbers and the truth
//!   files the views show ([`estimates`], computed and read before a frame), the jobs, and each view's UI state;
//! - [`msg`]: what reaches `update` ([`Msg`]) and what one update asks of the world ([`Effect`], a list of them);
//! - drawing, which only reads the state: the pieces in `ui::widgets`, `ui::layout` and `ui::text`, one
//!   component per view ([`views`], owning the view's keys, hints, drawing and mouse regions), and `ui`, which
//!   draws the frame and the popups around it (`impl Widget for &State`);
//! - [`update::update`] (with [`truth_update`] and [`reconcile_update`]): the only thing that changes the state; no terminal, no clock;
//! - `app`: the terminal, the main loop, and the effect runner, which carries effects out (slow ones as jobs)
//!   and feeds their outcomes back to `update` as messages.

pub(crate) mod action;
pub mod app;
pub mod burst_dialog;
pub(crate) mod config;
pub(crate) mod config_error;
pub mod domain;
pub mod estimates;
pub(crate) mod keymap;
pub(crate) mod msg;
pub mod picture;
pub mod play;
pub(crate) mod reconcile_offer;
pub(crate) mod reconcile_update;
mod runner;
pub mod settings_fields;
pub mod state;
pub(crate) mod theme;
pub(crate) mod token_jump;
pub(crate) mod tokens;
pub mod truth_job;
pub(crate) mod truth_update;
pub mod ui;
pub mod update;
pub(crate) mod views;

pub use action::Action;
pub use app::{open, open_as, run, AppError, Options};
pub use config::Config;
pub use msg::{Effect, Effects, Msg};
pub use state::{State, View};
pub use update::update;
