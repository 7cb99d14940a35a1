//! TODO(owner): module text
