//! Sokoban, the box-pushing puzzle verl-agent trains GiGPO on, as text: small seeded levels generated
//! in-process by reverse play ([`level`]), Gym-Sokoban's rewards ([`env`]), and how the policy sees it
//! ([`features`]). Its states repeat across the rollouts of a group far more than WebShop's pages do, which
//! makes its anchor-state groups large: the classroom example of GiGPO's step-level advantage.
//!
//! Tasks are level seeds: task `i` (id `seed-i`) is the level of seed `i`; seeds `0..100` are the test split
//! and `100..10100` the train split.

pub(crate) mod env;
pub mod features;
pub mod level;

use std::ops::Range;
use std::sync::Arc;

use self::env::SokobanEnv;
use self::features::SokobanFeatures;
use self::level::{Level, LevelConfig};
use crate::env::{Capabilities, EnvError, EnvOptions, Registered, Split, Started, TaskInfo, Tasks};

/// The registry's line for Sokoban.
pub const REGISTERED: Registered = Registered {
    name: NAME,
    about: "Sokoban as text (verl-agent's notation): seeded levels made by reverse play, Gym-Sokoban's rewards",
    options: &[
        ("size", "rows and columns, walls included (5–12, default 6)"),
        ("boxes", "boxes per level (default 1)"),
        ("max_steps", "step limit of an episode; every level is solvable within it (default 15)"),
    ],
    open,
    capabilities: Capabilities::NONE,
    stand_in: false,
};

const NAME: &str = "sokoban";
const TEST: Range<usize> = 0..100;
const TRAIN: Range<usize> = 100..10_100;

/// What every episode is told.
pub const INSTRUCTION: &str = "push every box (X) onto a target (O) with up, down, left, right; # wall, _ floor, \
                               √ box on a target, P you, S you on a target";

fn open(options: &EnvOptions) -> Result<Arc<dyn Tasks>, EnvError> {
    let default = LevelConfig::default();
    let config = LevelConfig {
        size: options.value(NAME, "size")?.unwrap_or(default.size),
        boxes: options.value(NAME, "boxes")?.unwrap_or(default.boxes),
        max_steps: options.value(NAME, "max_steps")?.unwrap_or(default.max_steps),
    };
    Ok(Arc::new(SokobanTasks::new(config)?))
}

/// Sokoban's task list: one level per seed.
#[derive(Clone, Copy, Debug)]
pub struct SokobanTasks {
    config: LevelConfig,
}

impl SokobanTasks {
    pub fn new(config: LevelConfig) -> Result<SokobanTasks, EnvError> {
        let bad = |key: &str, why: &str| EnvError::BadOption { env: NAME.into(), key: key.into(), why: why.into() };
        if !(5..=12).contains(&config.size) {
            return Err(bad("size", "must be 5 to 12"));
        }
        let inner = (config.size - 2) * (config.size - 2);
        if config.boxes == 0 || config.boxes * 3 > inner {
            return Err(bad("boxes", &format!("must be 1 to {} for size {}", inner / 3, config.size)));
        }
        if config.max_steps == 0 {
            return Err(bad("max_steps", "must be at least 1"));
        }
        Ok(SokobanTasks { config })
    }

    pub fn config(&self) -> LevelConfig {
        self.config
    }

    /// The level of task `index`.
    pub fn level(&self, index: usize) -> Option<Level> {
        Level::generate(index as u64, self.config)
    }
}

/// The id of task `index`.
pub fn task_id(index: usize) -> String {
    format!("seed-{index}")
}

impl Tasks for SokobanTasks {
    fn env_name(&self) -> &str {
        NAME
    }

    fn len(&self) -> usize {
        TRAIN.end
    }

    fn task(&self, index: usize) -> Option<TaskInfo> {
        (index < self.len()).then(|| TaskInfo {
            id: task_id(index),
            instruction: INSTRUCTION.to_owned(),
            details: vec![
                ("seed".to_owned(), index.to_string()),
                ("room".to_owned(), format!("{0}×{0}", self.config.size)),
                ("boxes".to_owned(), self.config.boxes.to_string()),
                ("step limit".to_owned(), self.config.max_steps.to_string()),
            ],
        })
    }

    fn split(&self, split: Split) -> Range<usize> {
        match split {
            Split::Train => TRAIN,
            Split::Test => TEST,
        }
    }

    fn start(&self, index: usize) -> Result<Started, EnvError> {
        let level = (index < self.len()).then(|| self.level(index)).flatten();
        let level = level.ok_or_else(|| self.no_such_task(&task_id(index)))?;
        Ok(Started {
            env: Box::new(SokobanEnv::new(level, self.config.max_steps)),
            task_id: task_id(index),
            instruction: INSTRUCTION.to_owned(),
            features: Arc::new(SokobanFeatures::new(INSTRUCTION)),
        })
    }

    /// `seed-N` → N.
    fn index_of(&self, task_id: &str) -> Option<usize> {
        let index: usize = task_id.strip_prefix("seed-")?.parse().ok()?;
        (index < self.len()).then_some(index)
    }
}
