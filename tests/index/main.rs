//! The full-text index of a run: searching it from the library and through `gigscope search`.

mod cli;
mod search;
