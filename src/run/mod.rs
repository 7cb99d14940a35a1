//! Run directories: the on-disk format, a streaming reader that never loses or invents data, and writers.

pub mod cache;
mod error;
mod format;
pub mod lean;
mod lean_line;
mod reader;
pub mod settings;
pub mod source;
pub mod synth;
pub mod tokens;
pub mod truth;
mod writer;

pub use error::RunError;
pub use format::*;
pub use lean::anchor_hash;
pub(crate) use reader::parse_json;
pub use reader::{check_run_dir, read_meta, JsonlTail, LineError, Run, TailBatch, TailPosition};
pub use source::{Layout, SourceOptions};
pub use writer::{write_atomic, RunWriter};
