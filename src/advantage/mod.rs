//! The advantage engine (GiGPO and the estimators it is compared with), its settings and group statistics.

pub mod agreement;
pub mod aliasing;
mod engine;
pub mod estimators;
pub mod explain;
mod grouping;
mod input;
mod settings;
pub mod stats;
pub mod trl;

pub use engine::{
    compute, compute_grouped, mean_std, norm_factor, recompute, AdvantageTable, AnchorGroup, EpisodeGroup, Members,
    RowAdvantage, RowRef, STD_EPSILON, SUCCESS_REWARD,
};
pub use grouping::{group_anchors, group_keyed, group_lean, regroup, AnchorGrouping, SimilarityJob};
pub use input::{EngineInput, KeyedAnchor};
pub use settings::{
    AdvantageOverrides, AdvantageSettings, Aggregation, AnchorKind, AnchorMode, Estimator, Norm, Pooling,
    RewardWeights, ScaleRewards, SettingsError, DEFAULT_SIMILARITY, MAX_REWARD_WEIGHTS,
};
pub use stats::{run_stats, RunStats};
