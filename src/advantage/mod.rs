//! The advantage engine (GiGPO and the estimators it is compared with), its settings and group statistics.

pub mod agreement;
pub(crate) mod aliasing;
pub(crate) mod audit;
mod engine;
pub mod estimators;
pub mod explain;
mod grouping;
mod input;
pub(crate) mod reconcile;
mod settings;
pub mod stats;
mod table;
pub(crate) mod timeline;
pub(crate) mod trl;

pub use engine::{compute, compute_grouped, mean_std, recompute, regroup, STD_EPSILON, SUCCESS_REWARD};
pub use grouping::{group_anchors, group_keyed, group_lean, unrecorded_states, AnchorGrouping, SimilarityJob};
pub use input::{EngineInput, KeyedAnchor, LeanInput};
pub use settings::{
    ActionRule, AdvantageOverrides, AdvantageSettings, Aggregation, AnchorKind, AnchorMode, Estimator, Norm, Pooling,
    RewardWeights, ScaleRewards, SettingsError, DEFAULT_SIMILARITY, MAX_REWARD_WEIGHTS,
};
pub use stats::{run_stats, RunStats};
pub use table::{
    AdvantageTable, AnchorGroup, AnchorGroups, EpisodeGroup, GroupEpisodes, Members, MembersIter, RowAdvantage, RowRef,
    TableData, ZeroVariance,
};
