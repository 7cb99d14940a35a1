//! Run directories: the on-disk format, a streaming reader that never loses or invents data, and writers.

mod format;

pub use format::*;
