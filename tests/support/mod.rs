//! Helpers shared by the integration test binaries: `#[path = "../support/mod.rs"] mod support;` in the
//! `main.rs` of each binary whose modules use them, `use crate::support;` in those modules.

#![allow(dead_code)] // each test binary uses only part of it

pub mod depo;
pub mod kill;
pub mod live;
pub mod opening;
pub mod peak;
pub mod plugin;
pub mod ray;
pub mod runs;
pub mod screen;
pub mod small_fs;
pub mod tmux;
