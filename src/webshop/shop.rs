//! A ready-to-play shop: catalog, search index, colour list and goals, composed once. The trainer, the TUI's
//! live play and anything else that starts episodes take their environment from here.

use std::path::Path;
use std::sync::Arc;

use super::catalog::{Catalog, DEMO_SEED};
use super::env::WebShopEnv;
use super::goals::{self, Goal, GoalSource};
use super::product_search::ProductIndex;
use super::reward::ColorSet;

/// Seed of the goals' price caps (the original leaves them unseeded; any fixed value makes runs repeatable).
pub const CAP_SEED: u64 = 0;

#[derive(Debug, thiserror::Error)]
#[error("{what}: {reason}")]
pub struct ShopError {
    what: &'static str,
    reason: String,
}

fn shop_err(what: &'static str) -> impl FnOnce(&dyn std::fmt::Display) -> ShopError {
    move |e| ShopError { what, reason: e.to_string() }
}

/// An environment that has not been reset yet (clone it, then `reset` with a goal) and the goals. Clones
/// share the catalog and the search index.
#[derive(Clone)]
pub struct Shop {
    pub env: WebShopEnv,
    pub goals: Vec<Arc<Goal>>,
}

impl std::fmt::Debug for Shop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shop")
            .field("products", &self.env.catalog().products.len())
            .field("goals", &self.goals.len())
            .finish()
    }
}

impl Shop {
    /// The embedded demo catalog, or WebShop's files in `catalog_dir`. `source` defaults to human goals when
    /// the catalog has human instructions, else synthetic ones.
    pub fn open(catalog_dir: Option<&Path>, source: Option<GoalSource>) -> Result<Shop, ShopError> {
        let (catalog, colors) = match catalog_dir {
            Some(dir) => {
                let catalog = Catalog::load(dir, DEMO_SEED).map_err(|e| shop_err("catalog")(&e))?;
                let colors = ColorSet::from_catalog_dir(dir).map_err(|e| shop_err("colours")(&e))?;
                (catalog, colors.unwrap_or_else(ColorSet::empty))
            }
            None => (Catalog::embedded_demo().map_err(|e| shop_err("demo catalog")(&e))?, ColorSet::empty()),
        };
        let search = ProductIndex::open_or_build(&catalog, None).map_err(|e| shop_err("search index")(&e))?;
        let goals = match source {
            Some(source) => goals::build_goals(&catalog, source, CAP_SEED),
            None => {
                let human = goals::build_goals(&catalog, GoalSource::Human, CAP_SEED);
                if human.is_empty() {
                    goals::build_goals(&catalog, GoalSource::Synthetic, CAP_SEED)
                } else {
                    human
                }
            }
        };
        let env = WebShopEnv::new(Arc::new(catalog), Arc::new(search), Arc::new(colors));
        Ok(Shop { env, goals: goals.into_iter().map(Arc::new).collect() })
    }

    /// A fresh episode of goal `index` (`None` when there is no such goal).
    pub fn start(&self, index: usize) -> Option<WebShopEnv> {
        let goal = Arc::clone(self.goals.get(index)?);
        let mut env = self.env.clone();
        env.reset(goal);
        Some(env)
    }

    /// The task id of goal `index`, as the trainer writes it.
    pub fn task_id(index: usize) -> String {
        format!("goal-{index}")
    }
}
