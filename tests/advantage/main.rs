//! The advantage engine and the `gigscope advantages` command: formulas against hand-worked and oracle values,
//! grouping, lean episodes, parallel and streamed computation, statistics, and the binary's output and errors.
//! One test binary per area (as ripgrep does); each module is one former test file.

#[path = "../support/depo.rs"]
mod depo_run;
#[path = "../support/peak.rs"]
mod peak;
#[path = "../support/python.rs"]
mod python;

mod agreement;
mod anchors;
mod audit;
mod cli;
mod depo;
mod difflib;
mod engine;
mod estimators;
mod grouping;
mod lean;
mod parallel;
mod state;
mod stats;
mod stream;
mod stream_memory;
