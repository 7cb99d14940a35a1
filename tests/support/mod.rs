//! Helpers shared by the integration tests (`mod support;` in each file that uses them).

#![allow(dead_code)] // each test file uses only part of it

pub mod live;
pub mod opening;
pub mod plugin;
pub mod runs;
pub mod screen;
pub mod tmux;
