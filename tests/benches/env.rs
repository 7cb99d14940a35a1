//! Environment benchmark: steps per second of a uniformly random policy on the embedded demo catalog,
//! on one thread, searches included (every step the policy takes on the search page is a search); then the
//! same on Sokoban through the environment port, each episode a newly generated level (reverse play included).
//!
//! `cargo bench --no-default-features --bench env`; `GIGSCOPE_BENCH_STEPS` sets the number of steps.

use std::sync::Arc;
use std::time::Instant;

use gigscope::env::EnvOptions;
use gigscope::env_registry as registry;
use gigscope::webshop::actions::SEARCH_ACTION;
use gigscope::webshop::catalog::Catalog;
use gigscope::webshop::env::WebShopEnv;
use gigscope::webshop::goals::{build_goals, GoalSource};
use gigscope::webshop::product_search::ProductIndex;
use gigscope::webshop::reward::ColorSet;
use rand::seq::IndexedRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn main() {
    let steps: usize = std::env::var("GIGSCOPE_BENCH_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let catalog = Arc::new(Catalog::embedded_demo().expect("demo catalog"));
    let index = ProductIndex::build_in_memory(&catalog).expect("index");
    let goals: Vec<Arc<_>> = build_goals(&catalog, GoalSource::Human, 0).into_iter().map(Arc::new).collect();
    // Queries a policy might type: the products' own search queries.
    let queries: Vec<String> = catalog.products.iter().map(|p| p.query.clone()).filter(|q| !q.is_empty()).collect();
    let mut env = WebShopEnv::new(catalog.clone(), Arc::new(index), Arc::new(ColorSet::empty()));
    let mut rng = ChaCha8Rng::seed_from_u64(0);

    let (mut searches, mut episodes, mut bought, mut total_reward) = (0usize, 0usize, 0usize, 0.0);
    env.reset(goals.choose(&mut rng).expect("goals").clone());
    let t = Instant::now();
    for _ in 0..steps {
        let actions = env.available_actions();
        let action = actions.choose(&mut rng).expect("a live episode offers actions");
        let action = if action == SEARCH_ACTION {
            searches += 1;
            format!("search[{}]", queries.choose(&mut rng).expect("queries"))
        } else {
            action.clone()
        };
        let out = std::hint::black_box(env.step(&action));
        if out.done {
            episodes += 1;
            if let Some(r) = out.info.reward {
                bought += 1;
                total_reward += r.reward;
            }
            env.reset(goals.choose(&mut rng).expect("goals").clone());
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "env random policy, demo catalog ({} products): {steps} steps in {secs:.2} s = {:.0} steps/s on one thread; \
         {searches} searches ({:.1}% of steps), {episodes} episodes, {bought} purchases, mean reward {:.3}",
        catalog.products.len(),
        steps as f64 / secs,
        100.0 * searches as f64 / steps as f64,
        if bought > 0 { total_reward / bought as f64 } else { 0.0 },
    );
    sokoban(steps);
}

/// A random policy on Sokoban (6×6, one box, 15 steps) through the port: every episode starts a new level of the
/// train split, so level generation is part of the time.
fn sokoban(steps: usize) {
    let tasks = registry::open("sokoban", &EnvOptions::default()).expect("sokoban");
    let train = tasks.split(gigscope::env::Split::Train);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let (mut episodes, mut solved) = (0usize, 0usize);
    let t = Instant::now();
    let mut env = tasks.start(train.start).expect("level").env;
    for _ in 0..steps {
        let actions = env.available_actions();
        let action = actions.choose(&mut rng).expect("a live episode offers actions");
        if std::hint::black_box(env.step(action)).done {
            episodes += 1;
            solved += usize::from(env.outcome().success);
            env = tasks.start(train.start + episodes % train.len()).expect("level").env;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "env random policy, Sokoban 6x6 with one box: {steps} steps in {secs:.2} s = {:.0} steps/s on one thread; \
         {episodes} episodes (a level generated for each, {:.0} levels/s), {solved} solved",
        steps as f64 / secs,
        episodes as f64 / secs,
    );
}
