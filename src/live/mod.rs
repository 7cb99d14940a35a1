//! TODO(owner): module live
