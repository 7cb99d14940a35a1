//! The index schema: one document per step, carrying its episode's instruction, outcome and ids so that a
//! single query can mix step text, episode facts and advantages.

use tantivy::schema::{Field, JsonObjectOptions, NumericOptions, Schema, FAST, INDEXED, STORED, STRING, TEXT};

/// Field names as users type them in queries.
/// `action` is the step's action as the environment parsed it from the response (the run's action rule,
/// [`crate::text::action`]): two responses with the same action and different thoughts have the same `action`;
/// `response` is the response as recorded, whole.
pub const TEXT_FIELDS: [&str; 5] = ["instruction", "observation", "action", "response", "thought"];
pub const STRING_FIELDS: [&str; 3] = ["id", "group", "page"];
pub const NUMERIC_FIELDS: [&str; 13] = [
    "success",
    "valid",
    "reward",
    "return",
    "adv",
    "adv_e",
    "adv_s",
    "stored_adv",
    "delta",
    "iteration",
    "step",
    "step_group_size",
    "episode",
];

#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields {
    pub instruction: Field,
    pub observation: Field,
    /// The action extracted from the response by the run's action rule.
    pub action: Field,
    /// The response as recorded.
    pub response: Field,
    pub thought: Field,
    /// Episode id (stored: hits report it so a caller can check it against its own episode list).
    pub id: Field,
    /// Episode group; also the unit of re-indexing (see `TrajectoryIndex::update`).
    pub group: Field,
    pub page: Field,
    pub success: Field,
    pub valid: Field,
    pub reward: Field,
    pub ret: Field,
    pub adv: Field,
    pub adv_e: Field,
    pub adv_s: Field,
    /// The trainer's own advantage of the step, and it minus the recomputed one (steps that record one).
    pub stored_adv: Field,
    pub delta: Field,
    /// A TRL completion's reward per function, `rewards.NAME` (functions that returned None left out).
    pub rewards: Field,
    pub iteration: Field,
    /// 0-based, as in `gigscope advantages`.
    pub step: Field,
    pub step_group_size: Field,
    /// Index of the episode among the run's good episodes (file order): hits point back into the run.
    pub episode: Field,
}

/// Numbers are indexed (terms and range queries) and fast (sorting, reading hits without the doc store).
fn numeric() -> NumericOptions {
    NumericOptions::from(INDEXED | FAST)
}

/// The computed numbers (return and advantages) are nearly all distinct, so indexing them would put about
/// one term per step and field into the term dictionary, a large part of the build's cost. They are fast
/// fields only: ranges and comparisons scan the column, and an exact value (`adv_e:4`) is searched as the
/// range `[4 TO 4]` (see `TrajectoryIndex::parse`).
pub const COLUMN_ONLY_FIELDS: [&str; 6] = ["return", "adv", "adv_e", "adv_s", "stored_adv", "delta"];

/// The object field of the per-function rewards: `rewards.NAME` in a query. A column too (see above).
pub const REWARDS_FIELD: &str = "rewards";

fn column_only() -> NumericOptions {
    NumericOptions::from(FAST)
}

pub(crate) fn build() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let fields = Fields {
        instruction: b.add_text_field("instruction", TEXT),
        observation: b.add_text_field("observation", TEXT),
        action: b.add_text_field("action", TEXT),
        response: b.add_text_field("response", TEXT),
        thought: b.add_text_field("thought", TEXT),
        id: b.add_text_field("id", STRING | STORED),
        group: b.add_text_field("group", STRING),
        page: b.add_text_field("page", STRING),
        success: b.add_bool_field("success", numeric()),
        valid: b.add_bool_field("valid", numeric()),
        reward: b.add_f64_field("reward", numeric()),
        ret: b.add_f64_field("return", column_only()),
        adv: b.add_f64_field("adv", column_only()),
        adv_e: b.add_f64_field("adv_e", column_only()),
        adv_s: b.add_f64_field("adv_s", column_only()),
        stored_adv: b.add_f64_field("stored_adv", column_only()),
        delta: b.add_f64_field("delta", column_only()),
        rewards: b.add_json_field(REWARDS_FIELD, JsonObjectOptions::from(FAST)),
        iteration: b.add_i64_field("iteration", numeric()),
        step: b.add_u64_field("step", numeric()),
        step_group_size: b.add_u64_field("step_group_size", numeric()),
        episode: b.add_u64_field("episode", numeric()),
    };
    (b.build(), fields)
}
