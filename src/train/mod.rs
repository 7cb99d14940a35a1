//! TODO(owner): trainer
