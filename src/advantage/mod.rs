//! The advantage engine (GiGPO and the estimators it is compared with) and its settings.

mod engine;
mod settings;

pub use engine::{compute, AdvantageTable, AnchorGroup, EpisodeGroup, RowAdvantage, RowRef};
pub use settings::{
    AdvantageOverrides, AdvantageSettings, AnchorKind, AnchorMode, Estimator, Norm, Pooling, DEFAULT_SIMILARITY,
};
