//! TODO(owner): module tui
