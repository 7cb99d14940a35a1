//! A tiny shop with WebShop's page structure (search → results → item → options → buy): small enough that
//! tests and benchmarks of the trainer run in seconds without a catalog or a search index. An environment of
//! the port like the others, registered as a stand-in (`--env toy`); its policy sees it as it sees WebShop
//! (WebShop's [`WebShopFeatures`]). It records its page type on every step as it plays, and has no page anchor
//! for observations recorded elsewhere.

use std::ops::Range;
use std::sync::Arc;

use crate::env::features::words;
use crate::env::{
    Capabilities, EnvError, EnvOptions, Environment, Registered, Split, Started, TaskInfo, Tasks, Transition,
};
use crate::run::Outcome;
use crate::webshop::policy_features::{click_argument, search_argument, WebShopFeatures};

/// The registry's line for the toy shop.
pub const REGISTERED: Registered = Registered {
    name: NAME,
    about: "a six-product shop with WebShop's pages, for smoke tests",
    options: &[],
    open,
    capabilities: Capabilities { paged_observations: true, ..Capabilities::NONE },
    stand_in: true,
};

/// Its registry name.
pub const NAME: &str = "toy";

fn open(_options: &EnvOptions) -> Result<Arc<dyn Tasks>, EnvError> {
    Ok(Arc::new(ToyShop))
}

struct Product {
    asin: &'static str,
    title: &'static str,
    price: f64,
    colors: &'static [&'static str],
}

const PRODUCTS: &[Product] = &[
    Product { asin: "B0TOY00001", title: "Red Cotton T-Shirt", price: 12.0, colors: &["red", "white"] },
    Product { asin: "B0TOY00002", title: "Blue Running Shoes", price: 45.0, colors: &["blue", "black"] },
    Product { asin: "B0TOY00003", title: "Green Ceramic Coffee Mug", price: 8.5, colors: &["green", "white"] },
    Product { asin: "B0TOY00004", title: "Black Leather Wallet", price: 30.0, colors: &["black", "brown"] },
    Product { asin: "B0TOY00005", title: "Wool Winter Hat", price: 18.0, colors: &["grey", "navy blue"] },
    Product { asin: "B0TOY00006", title: "Cotton Running Socks", price: 6.0, colors: &["white", "black"] },
];

/// (product index, colour) pairs; goal `i` asks for `GOALS[i]` under a price cap above the product's price.
const GOALS: &[(usize, &str)] = &[
    (0, "white"),
    (1, "black"),
    (2, "green"),
    (3, "brown"),
    (4, "navy blue"),
    (5, "black"),
    (0, "red"),
    (1, "blue"),
    (4, "grey"),
    (5, "white"),
];

#[derive(Clone, Debug, PartialEq)]
enum Page {
    Search,
    /// Product indices shown, best match first.
    Results(Vec<usize>),
    Item {
        product: usize,
        color: Option<String>,
    },
    Done,
}

/// One episode in the toy shop.
#[derive(Clone, Debug)]
pub struct ToyEnv {
    goal: usize,
    instruction: String,
    page: Page,
    observation: String,
    /// The purchase's reward, once bought.
    bought: Option<f64>,
}

impl ToyEnv {
    fn new(goal: usize) -> ToyEnv {
        let (p, color) = GOALS[goal];
        let product = &PRODUCTS[p];
        let instruction = format!(
            "i want a {} with color: {}, and price lower than {:.2} dollars",
            product.title.to_lowercase(),
            color,
            product.price + 10.0
        );
        let mut env = ToyEnv { goal, instruction, page: Page::Search, observation: String::new(), bought: None };
        env.render();
        env
    }

    fn render(&mut self) {
        let head = format!("Instruction: [SEP] {}", self.instruction);
        self.observation = match &self.page {
            Page::Search => format!("WebShop [SEP] {head} [SEP] Search"),
            Page::Results(shown) => {
                let items: Vec<String> = shown
                    .iter()
                    .map(|&i| {
                        format!("{} [SEP] {} [SEP] ${:?}", PRODUCTS[i].asin, PRODUCTS[i].title, PRODUCTS[i].price)
                    })
                    .collect();
                format!(
                    "{head} [SEP] Back to Search [SEP] Page 1 (Total results: {}) [SEP] Next > [SEP] {}",
                    shown.len(),
                    items.join(" [SEP] ")
                )
            }
            Page::Item { product, .. } => {
                let p = &PRODUCTS[*product];
                format!(
                    "{head} [SEP] Back to Search [SEP] < Prev [SEP] color [SEP] {} [SEP] {} [SEP] Price: ${:?} [SEP] Buy Now",
                    p.colors.join(" [SEP] "),
                    p.title,
                    p.price
                )
            }
            Page::Done => "Thank you for shopping with us!".to_string(),
        };
    }

    /// Products ranked by how many query words their title shares (ties by catalog order).
    fn search(query: &str) -> Vec<usize> {
        let query_words: Vec<String> = words(query).collect();
        let mut scored: Vec<(usize, usize)> = PRODUCTS
            .iter()
            .enumerate()
            .map(|(i, p)| (i, words(p.title).filter(|w| query_words.contains(w)).count()))
            .collect();
        scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.into_iter().take(4).map(|(i, _)| i).collect()
    }

    /// WebShop-like reward: product, colour and price each count a third; only the right product scores.
    fn reward(&self, product: usize, color: Option<&str>) -> f64 {
        let (want, want_color) = GOALS[self.goal];
        if product != want {
            return 0.0;
        }
        let color_ok = color == Some(want_color);
        (1.0 + f64::from(u8::from(color_ok)) + 1.0) / 3.0
    }
}

impl Environment for ToyEnv {
    fn observation(&self) -> &str {
        &self.observation
    }

    fn anchor(&self) -> String {
        // GiGPO's format: what follows the instruction, each segment quoted.
        let segments: Vec<&str> = self.observation.split(" [SEP] ").collect();
        let rest = match segments.iter().position(|s| *s == self.instruction) {
            Some(i) => &segments[i + 1..],
            None => &segments[..],
        };
        rest.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(" [SEP] ")
    }

    fn page(&self) -> Option<&str> {
        Some(match self.page {
            Page::Search => "search",
            Page::Results(_) => "results",
            Page::Item { .. } => "item",
            Page::Done => "done",
        })
    }

    fn available_actions(&self) -> Vec<String> {
        match &self.page {
            Page::Search => vec!["search[...]".to_string()],
            Page::Results(shown) => ["click[back to search]".to_string(), "click[next >]".to_string()]
                .into_iter()
                .chain(shown.iter().map(|&i| format!("click[{}]", PRODUCTS[i].asin.to_lowercase())))
                .collect(),
            Page::Item { product, .. } => ["click[back to search]", "click[< prev]", "click[buy now]"]
                .iter()
                .map(|s| s.to_string())
                .chain(PRODUCTS[*product].colors.iter().map(|c| format!("click[{c}]")))
                .collect(),
            Page::Done => Vec::new(),
        }
    }

    fn step(&mut self, action: &str) -> Transition {
        let mut reward = 0.0;
        let mut valid = true;
        let next = if let Some(q) = search_argument(action) {
            Some(Page::Results(Self::search(q)))
        } else if let Some(arg) = click_argument(action) {
            match (&self.page, arg) {
                (Page::Results(_) | Page::Item { .. }, "back to search") => Some(Page::Search),
                (Page::Results(shown), "next >") => Some(Page::Results(shown.clone())),
                (Page::Results(shown), asin) => shown
                    .iter()
                    .find(|&&i| PRODUCTS[i].asin.eq_ignore_ascii_case(asin))
                    .map(|&i| Page::Item { product: i, color: None }),
                (Page::Item { .. }, "< prev") => Some(Page::Results(Self::search(&self.instruction))),
                (Page::Item { product, color }, "buy now") => {
                    reward = self.reward(*product, color.as_deref());
                    self.bought = Some(reward);
                    Some(Page::Done)
                }
                (Page::Item { product, .. }, value) if PRODUCTS[*product].colors.contains(&value) => {
                    Some(Page::Item { product: *product, color: Some(value.to_string()) })
                }
                _ => None,
            }
        } else {
            None
        };
        match next {
            Some(page) => self.page = page,
            None => valid = false,
        }
        self.render();
        Transition { reward, done: self.page == Page::Done, valid }
    }

    /// WebShop's scoring: the purchase's reward; success is a perfect one.
    fn outcome(&self) -> Outcome {
        let score = self.bought.unwrap_or(0.0);
        Outcome { success: (score - 1.0).abs() < 1e-9, score, ..Outcome::default() }
    }

    fn box_clone(&self) -> Box<dyn Environment> {
        Box::new(self.clone())
    }
}

/// The toy shop's goals; the test split is the same list (the point is speed, not generalisation).
#[derive(Clone, Copy, Debug, Default)]
pub struct ToyShop;

impl Tasks for ToyShop {
    fn env_name(&self) -> &str {
        NAME
    }

    fn len(&self) -> usize {
        GOALS.len()
    }

    fn task(&self, index: usize) -> Option<TaskInfo> {
        (index < GOALS.len()).then(|| TaskInfo {
            id: format!("toy-{index}"),
            instruction: ToyEnv::new(index).instruction,
            details: Vec::new(),
        })
    }

    fn split(&self, _split: Split) -> Range<usize> {
        0..GOALS.len()
    }

    fn start(&self, index: usize) -> Result<Started, EnvError> {
        if index >= GOALS.len() {
            return Err(self.no_such_task(&format!("toy-{index}")));
        }
        let env = ToyEnv::new(index);
        let instruction = env.instruction.clone();
        Ok(Started {
            task_id: format!("toy-{index}"),
            features: Arc::new(WebShopFeatures::new(&instruction)),
            instruction,
            env: Box::new(env),
        })
    }

    fn index_of(&self, task_id: &str) -> Option<usize> {
        task_id.strip_prefix("toy-")?.parse().ok().filter(|&i| i < GOALS.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_right_clicks_score_one() {
        let mut env = ToyShop.start_in(Split::Train, 4).unwrap().env;
        assert_eq!(env.anchor(), "'Search'");
        assert!(env.step("search[wool winter hat]").valid);
        assert_eq!(env.page(), Some("results"));
        assert!(env.available_actions().contains(&"click[b0toy00005]".to_string()));
        env.step("click[b0toy00005]");
        env.step("click[navy blue]");
        let last = env.step("click[buy now]");
        assert_eq!((last.reward, last.done), (1.0, true));
    }

    #[test]
    fn inadmissible_actions_are_no_ops() {
        let mut env = ToyShop.start_in(Split::Train, 0).unwrap().env;
        let before = env.observation().to_string();
        let t = env.step("click[buy now]");
        assert!(!t.valid && !t.done);
        assert_eq!(env.observation(), before);
    }
}
