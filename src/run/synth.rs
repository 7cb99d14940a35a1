//! Deterministic synthetic WebShop-like runs, for benchmarks and tests.
//!
//! Each episode group is one task (an instruction and a small catalog of items); its trajectories are random
//! walks over the raw text-mode pages (search → results → item → sub-pages, with pagination, back-tracking
//! and the odd invalid action that leaves the page unchanged), ending with `click[Buy Now]` or at the length
//! drawn for them. Trajectories of a group revisit the same pages, so exact anchors form real step groups,
//! and pages differ in a few fields only (item pages of one task, results pages of one query), so similarity
//! anchors merge some of them, as in real WebShop runs. Observations are a few hundred characters.
//!
//! The same spec and seed always give the same episodes, whatever the platform.

use std::ops::RangeInclusive;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::format::{Episode, Outcome, Step, Task};

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct SynthSpec {
    pub groups: usize,
    /// Trajectories per group.
    pub trajectories: usize,
    /// Each trajectory's length is drawn uniformly from this range.
    pub steps: RangeInclusive<usize>,
    /// Groups per training iteration (`Episode::iteration` = group index / this).
    pub groups_per_iteration: usize,
    pub seed: u64,
}

impl SynthSpec {
    /// GiGPO's reference WebShop batch: 16 groups × 8 trajectories × up to 15 steps.
    pub fn reference_batch() -> Self {
        SynthSpec { groups: 16, trajectories: 8, steps: 3..=15, groups_per_iteration: 16, seed: 1 }
    }

    /// About a million steps: 8,192 groups × 8 trajectories × 14–18 steps (2^20 on average).
    pub fn million_steps() -> Self {
        SynthSpec { groups: 8192, trajectories: 8, steps: 14..=18, groups_per_iteration: 16, seed: 2 }
    }
}

const COLORS: &[&str] = &["black", "navy blue", "red", "white", "grey", "olive green", "pink", "beige"];
const SIZES: &[&str] = &["small", "medium", "large", "x-large", "xx-large", "7.5", "8", "9 wide"];
const PRODUCTS: &[&str] = &[
    "men's running shoes",
    "women's rain jacket",
    "cotton crew neck t-shirt",
    "wireless earbuds",
    "stainless steel water bottle",
    "high waist yoga pants",
    "leather wallet",
    "memory foam pillow",
];
const MATERIALS: &[&str] = &["breathable mesh", "water resistant", "organic cotton", "lightweight", "machine washable"];

/// One item of a task's catalog.
struct Item {
    asin: String,
    title: String,
    price: f64,
}

/// One task: the instruction, its catalog and the queries the agent tends to type.
struct SynthTask {
    instruction: String,
    items: Vec<Item>,
    queries: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Page {
    Search,
    Results { query: usize, page: usize },
    Item { item: usize, from: (usize, usize) },
    Sub { item: usize, from: (usize, usize), section: usize },
}

const SECTIONS: &[&str] = &["Description", "Features", "Reviews"];

/// The episodes of `spec`, group by group, generated lazily (a large run need not be held in memory).
pub fn episodes(spec: &SynthSpec) -> impl Iterator<Item = Episode> + '_ {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    (0..spec.groups).flat_map(move |g| {
        let task = make_task(&mut rng);
        let episodes: Vec<Episode> = (0..spec.trajectories).map(|k| walk(&mut rng, spec, &task, g, k)).collect();
        episodes
    })
}

fn make_task(rng: &mut ChaCha8Rng) -> SynthTask {
    let product = *PRODUCTS.choose(rng).unwrap_or(&PRODUCTS[0]);
    let color = *COLORS.choose(rng).unwrap_or(&COLORS[0]);
    let size = *SIZES.choose(rng).unwrap_or(&SIZES[0]);
    let budget = rng.random_range(3..10) * 10;
    let instruction = format!("i need a {color} {product} in size {size}, and price lower than {budget}.00 dollars");
    let items = (0..rng.random_range(6..12))
        .map(|_| {
            let material = *MATERIALS.choose(rng).unwrap_or(&MATERIALS[0]);
            let c = *COLORS.choose(rng).unwrap_or(&COLORS[0]);
            Item {
                asin: format!("B0{:08X}", rng.random::<u32>()),
                title: format!("{} {c} {product}, {material}, everyday comfort fit", brand(rng)),
                price: rng.random_range(500..12000) as f64 / 100.0,
            }
        })
        .collect();
    let queries = vec![
        format!("{color} {product}"),
        format!("{product} size {size}"),
        format!("{color} {product} under {budget} dollars"),
    ];
    SynthTask { instruction, items, queries }
}

fn brand(rng: &mut ChaCha8Rng) -> &'static str {
    ["Acme", "Northwind", "Contoso", "Fabrikam", "Globex", "Initech"].choose(rng).copied().unwrap_or("Acme")
}

/// Items shown on a results page: five per page, a query-dependent rotation of the catalog.
fn results_items(task: &SynthTask, query: usize, page: usize) -> impl Iterator<Item = usize> + '_ {
    let n = task.items.len();
    (0..5).map(move |i| (query * 3 + page * 5 + i) % n)
}

fn render(task: &SynthTask, page: Page) -> String {
    let head = format!("Instruction: [SEP] {} [SEP] Back to Search", task.instruction);
    match page {
        Page::Search => format!("WebShop [SEP] Instruction: [SEP] {} [SEP] Search", task.instruction),
        Page::Results { query, page } => {
            let mut s = format!("{head} [SEP] Page {} (Total results: 50) [SEP] Next >", page + 1);
            for i in results_items(task, query, page) {
                let item = &task.items[i];
                s.push_str(&format!(" [SEP] {} [SEP] {} [SEP] ${:.2}", item.asin, item.title, item.price));
            }
            s
        }
        Page::Item { item, .. } => {
            let item = &task.items[item];
            format!(
                "{head} [SEP] < Prev [SEP] size [SEP] small [SEP] medium [SEP] large [SEP] x-large [SEP] color \
                 [SEP] black [SEP] navy blue [SEP] red [SEP] {} [SEP] Price: ${:.2} [SEP] Rating: N.A. [SEP] \
                 Description [SEP] Features [SEP] Reviews [SEP] Buy Now",
                item.title, item.price
            )
        }
        Page::Sub { item, section, .. } => {
            let item = &task.items[item];
            format!(
                "{head} [SEP] < Prev [SEP] {} of {}: {} at ${:.2}, ships in 2 days.",
                SECTIONS[section], item.asin, item.title, item.price
            )
        }
    }
}

fn page_name(page: Page) -> &'static str {
    match page {
        Page::Search => "search",
        Page::Results { .. } => "results",
        Page::Item { .. } => "item",
        Page::Sub { .. } => "item_sub",
    }
}

/// One trajectory of group `g`: a random walk of the drawn length.
fn walk(rng: &mut ChaCha8Rng, spec: &SynthSpec, task: &SynthTask, g: usize, k: usize) -> Episode {
    let len = rng.random_range(spec.steps.clone()).max(1);
    let mut page = Page::Search;
    let mut steps = Vec::with_capacity(len);
    let mut outcome = Outcome::default();
    for t in 0..len {
        let last = t + 1 == len;
        let (action, next, valid) = choose_action(rng, task, page, last);
        let mut reward = 0.0;
        if last && matches!(page, Page::Item { .. }) && action == "click[Buy Now]" {
            let score = [0.25, 0.5, 0.75, 1.0].choose(rng).copied().unwrap_or(0.0);
            reward = score;
            outcome = Outcome { success: score == 1.0, score, ..Outcome::default() };
        }
        let mut step = Step::new(render(task, page), action, reward);
        step.valid = valid;
        step.page = Some(page_name(page).to_string());
        step.tokens = Some(rng.random_range(30..120));
        steps.push(step);
        page = next;
    }
    let mut episode = Episode::new(format!("g{g}-t{k}"), format!("task-{g}"), steps);
    episode.iteration = (g / spec.groups_per_iteration.max(1)) as i64;
    episode.task = Some(Task { id: format!("task-{g}"), instruction: task.instruction.clone(), ..Task::default() });
    episode.outcome = Some(outcome);
    episode
}

/// The action taken on `page`, the page it leads to, and whether it was valid.
fn choose_action(rng: &mut ChaCha8Rng, task: &SynthTask, page: Page, last: bool) -> (String, Page, bool) {
    if rng.random_bool(0.05) {
        return ("click[checkout]".to_string(), page, false);
    }
    match page {
        Page::Search => {
            let query = rng.random_range(0..task.queries.len());
            (format!("search[{}]", task.queries[query]), Page::Results { query, page: 0 }, true)
        }
        Page::Results { query, page: p } => match rng.random_range(0..10) {
            0 if p < 2 => ("click[Next >]".to_string(), Page::Results { query, page: p + 1 }, true),
            1 => ("click[Back to Search]".to_string(), Page::Search, true),
            _ => {
                let shown: Vec<usize> = results_items(task, query, p).collect();
                let item = shown[rng.random_range(0..shown.len())];
                let asin = &task.items[item].asin;
                (format!("click[{}]", asin.to_lowercase()), Page::Item { item, from: (query, p) }, true)
            }
        },
        Page::Item { item, from } => match rng.random_range(0..10) {
            _ if last => ("click[Buy Now]".to_string(), page, true),
            0..=2 => {
                let size = *["small", "medium", "large", "x-large"].choose(rng).unwrap_or(&"small");
                (format!("click[{size}]"), page, true)
            }
            3..=4 => {
                let section = rng.random_range(0..SECTIONS.len());
                (format!("click[{}]", SECTIONS[section]), Page::Sub { item, from, section }, true)
            }
            5..=6 => ("click[< Prev]".to_string(), Page::Results { query: from.0, page: from.1 }, true),
            7 => ("click[Back to Search]".to_string(), Page::Search, true),
            _ => ("click[Buy Now]".to_string(), page, true),
        },
        Page::Sub { item, from, .. } => ("click[< Prev]".to_string(), Page::Item { item, from }, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webshop::page::classify_observation;

    #[test]
    fn deterministic_and_shaped_as_asked() {
        let spec = SynthSpec { groups: 3, trajectories: 4, steps: 2..=6, groups_per_iteration: 2, seed: 7 };
        let a: Vec<Episode> = episodes(&spec).collect();
        assert_eq!(a, episodes(&spec).collect::<Vec<_>>());
        assert_eq!(a.len(), 12);
        assert!(a.iter().all(|e| (2..=6).contains(&e.steps.len())));
        assert_eq!(a[11].iteration, 1);
        assert!(a[0].steps[0].observation.starts_with("WebShop [SEP] Instruction:"));
    }

    #[test]
    fn page_field_agrees_with_the_classifier() {
        for episode in episodes(&SynthSpec::reference_batch()) {
            for step in &episode.steps {
                assert_eq!(Some(classify_observation(&step.observation).as_str()), step.page.as_deref());
            }
        }
    }
}
