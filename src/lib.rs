//! gigscope: step through WebShop episodes beside the advantages GiGPO computes for them.
//!
//! The core (run format, advantage engine, WebShop environment, trajectory index, trainer) has no terminal
//! code; `tui` only reads state and sends actions.

pub mod advantage;
pub mod cli;
pub mod env;
pub mod env_registry;
pub mod index;
pub mod live;
pub mod plugin_host;
pub mod run;
pub mod sokoban;
pub mod text;
pub mod toy_shop;
#[cfg(feature = "train")]
pub mod trainer;
pub mod tui;
pub mod webshop;
