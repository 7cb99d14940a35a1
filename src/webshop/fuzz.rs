//! TODO(owner)
