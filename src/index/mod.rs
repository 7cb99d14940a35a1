//! TODO(owner): module index
