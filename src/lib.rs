//! gigscope: step through WebShop episodes beside the advantages GiGPO computes for them.
//!
//! The core (run format, advantage engine, WebShop environment, trajectory index, trainer) has no terminal
//! code; `tui` only reads state and sends actions. `ARCHITECTURE.md` maps the layers and each folder's job.
//!
//! # The doors
//! What other crates need is public; the rest is `pub(crate)` (a module is public only where something outside
//! the crate names it, and `tests/architecture` keeps it so):
//! - the binary: [`cli::main`];
//! - the training plugin (`gigscope-train`): [`plugin_host`] (the protocol both sides speak and the loader) and
//!   `trainer::service::serve` (with the `train` feature);
//! - the Python extension (`gigscope-python`): [`cli::api`] (the commands' computations as values),
//!   [`cli::main_with`] (the `gigscope` command inside Python), [`run`] and [`run::truth`];
//! - the project's integration tests (`tests/<area>/`), which hold each layer to its contract from outside: the
//!   run format and its readers ([`run`], [`live`]), the engine ([`advantage`]), the environments ([`env`],
//!   [`env_registry`], [`webshop`], [`sokoban`], [`toy_shop`]), [`text`], [`index`], the Ray job client
//!   ([`ray_job`]), and the TUI's pure `update(state, action)` with its state ([`tui`]). The views, the keymap and theme, the TUI's messages and
//!   the engine's helpers behind `advantage::compute` are the crate's own.

pub mod advantage;
pub mod cli;
pub mod env;
pub mod env_registry;
pub mod index;
pub mod live;
pub mod plugin_host;
pub mod ray_job;
pub mod run;
pub mod sokoban;
pub mod text;
pub mod toy_shop;
#[cfg(feature = "train")]
pub mod trainer;
pub mod tui;
pub mod webshop;
