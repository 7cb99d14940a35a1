//! Reading runs: the gigscope run format, the verl and TRL layouts, the load cache and the live watcher.

#[path = "../support/mod.rs"]
mod support;

mod disk_full;
mod kill_writers;
mod layouts;
mod live;
mod load_cache;
mod problems;
mod reader;
mod stream_memory;
mod tokens;
mod trl;
mod verifiers;
mod verl;
