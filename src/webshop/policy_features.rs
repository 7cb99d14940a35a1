//! How the policy sees WebShop ([`PolicyFeatures`]): hashed tokens of the instruction, the page and the
//! episode's previous actions, a few cheap dense features per state and per (state, action) pair, and the
//! search queries it may choose from.
//!
//! The dense features are the signals WebShop's choice models learn from text overlap (does this title or
//! option value say what the instruction asks for, is the price under the cap, was this already clicked);
//! giving them directly is what lets a small network learn within minutes on a CPU.

use std::collections::HashSet;
use std::sync::OnceLock;

use regex::Regex;

use crate::env::features::{
    hashed, words, ActionFeatures, Decision, PolicyFeatures, StateFeatures, StateView, Taken, ACTION_DENSE, STATE_DENSE,
};

/// Observation tokens kept per state: the first screen of a page carries what matters (titles, options).
const MAX_OBS_TOKENS: usize = 192;
/// Previous actions kept in the history bag.
const HISTORY: usize = 4;

/// Page types as the environment names them.
const PAGES: [&str; 4] = ["search", "results", "item", "item_sub"];

/// Words that say nothing about the product; left out of overlap counts and keyword queries.
const STOP_WORDS: &[&str] = &[
    "i", "a", "an", "the", "and", "or", "with", "for", "of", "to", "in", "on", "is", "am", "are", "be", "it", "that",
    "this", "my", "me", "want", "need", "looking", "find", "buy", "get", "some", "please", "price", "lower", "than",
    "dollars", "less", "under", "would", "like", "im",
];

fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// What kind of control an action is; one-hot in [`ActionFeatures::dense`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    Search,
    Product,
    Option,
    Buy,
    Next,
    Prev,
    Back,
    /// Description / Features / Reviews sub-pages.
    Detail,
}

const KINDS: usize = 8;

impl ActionKind {
    /// Classify `action` offered on a page of type `page`: buttons by their text, other clicks are products
    /// on a results page and option values elsewhere.
    pub fn of(action: &str, page: &str) -> ActionKind {
        let Some(arg) = click_argument(action) else {
            return ActionKind::Search;
        };
        match arg {
            "buy now" => ActionKind::Buy,
            "next >" => ActionKind::Next,
            "< prev" => ActionKind::Prev,
            "back to search" => ActionKind::Back,
            "description" | "features" | "reviews" => ActionKind::Detail,
            _ if page == "results" => ActionKind::Product,
            _ => ActionKind::Option,
        }
    }
}

/// `x` of `click[x]`.
pub fn click_argument(action: &str) -> Option<&str> {
    action.strip_prefix("click[")?.strip_suffix(']')
}

/// `q` of `search[q]`.
pub fn search_argument(action: &str) -> Option<&str> {
    action.strip_prefix("search[")?.strip_suffix(']')
}

/// Everything derived once per task from its instruction.
#[derive(Clone, Debug)]
pub struct Instruction {
    tokens: Vec<i64>,
    /// Content words (no stop words).
    words: HashSet<String>,
    /// Lower-cased text with single spaces, for phrase matches of option values.
    normalized: String,
    /// `price lower than X dollars`.
    price_cap: Option<f64>,
    /// Search queries the policy chooses from, most specific first, without duplicates.
    pub queries: Vec<String>,
}

fn price_cap_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"price lower than ([0-9]+(?:\.[0-9]+)?) dollars").expect("valid regex"))
}

/// Synthetic WebShop goals append ` with {option name}: {value}, and ...`; the colon tells it apart from a
/// `with` that is part of the product description.
fn options_clause_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\s+with\s+[a-z0-9 ]+:").expect("valid regex"))
}

fn price_clause_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r",?\s*(and\s+)?price lower than [0-9.]+ dollars").expect("valid regex"))
}

fn normalize(text: &str) -> String {
    words(text).collect::<Vec<_>>().join(" ")
}

impl Instruction {
    pub fn new(instruction: &str) -> Instruction {
        let lower = instruction.trim().to_lowercase();
        let price_cap = price_cap_re().captures(&lower).and_then(|c| c[1].parse().ok());
        let without_price = price_clause_re().replace_all(&lower, "").trim().to_string();
        let base = match options_clause_re().find(&without_price) {
            Some(m) => without_price[..m.start()].trim().to_string(),
            None => without_price.clone(),
        };
        let keywords = words(&base).filter(|w| !is_stop_word(w)).collect::<Vec<_>>().join(" ");
        let mut queries: Vec<String> = Vec::new();
        for q in [lower.clone(), without_price, base, keywords] {
            let q = q.trim().trim_end_matches([',', '.']).trim().to_string();
            if !q.is_empty() && !queries.contains(&q) {
                queries.push(q);
            }
        }
        Instruction {
            tokens: hashed(&lower, usize::MAX),
            words: words(&lower).filter(|w| !is_stop_word(w)).collect(),
            normalized: normalize(&lower),
            price_cap,
            queries,
        }
    }
}

/// The actions the policy chooses among: the env's actions with the search bar expanded into the
/// instruction's query candidates. WebShop lists `click[search]` on the search page, but it does nothing
/// there (the original's quirk), so it is not a choice.
pub fn candidate_actions(available: &[String], instruction: &Instruction) -> Vec<String> {
    let mut out = Vec::with_capacity(available.len() + instruction.queries.len());
    for action in available {
        if click_argument(action) == Some("search") {
            continue;
        }
        if search_argument(action).is_some() {
            out.extend(instruction.queries.iter().map(|q| format!("search[{q}]")));
        } else {
            out.push(action.clone());
        }
    }
    out
}

/// Title and price text shown after each product id on a results page, keyed by the lower-cased id.
fn product_context<'a>(segments: &[&'a str], asin: &str) -> Option<(&'a str, &'a str)> {
    let i = segments.iter().position(|s| s.eq_ignore_ascii_case(asin))?;
    Some((segments.get(i + 1).copied().unwrap_or(""), segments.get(i + 2).copied().unwrap_or("")))
}

/// `$12.5` or `$10.0 to $20.0` → the lowest price shown.
fn shown_price(text: &str) -> Option<f64> {
    let first = text.trim().strip_prefix('$')?;
    let number: String = first.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    number.parse().ok()
}

/// The value is one of the instruction's words or phrases (`navy blue` in `... color: navy blue, ...`).
fn phrase_in(normalized_instruction: &str, text: &str) -> bool {
    let phrase = normalize(text);
    !phrase.is_empty() && format!(" {normalized_instruction} ").contains(&format!(" {phrase} "))
}

/// The episode so far, as far as the policy needs it: each action taken and what kind it was on its page.
#[derive(Clone, Debug, Default)]
pub struct History {
    pub actions: Vec<(String, ActionKind)>,
}

impl History {
    /// The history of the actions `taken`, each classified on the page it was taken on.
    pub fn of(taken: &[Taken]) -> History {
        let mut history = History::default();
        for t in taken {
            history.push(&t.action, t.page.as_deref().unwrap_or(""));
        }
        history
    }

    pub fn push(&mut self, action: &str, page: &str) {
        self.actions.push((action.to_string(), ActionKind::of(action, page)));
    }

    fn taken(&self, action: &str) -> bool {
        self.actions.iter().any(|(a, _)| a == action)
    }

    /// Option clicks since the last product was opened.
    fn options_since_product(&self) -> usize {
        self.actions
            .iter()
            .rev()
            .take_while(|(_, k)| *k != ActionKind::Product)
            .filter(|(_, k)| *k == ActionKind::Option)
            .count()
    }

    fn products_opened(&self) -> usize {
        self.actions.iter().filter(|(_, k)| *k == ActionKind::Product).count()
    }
}

/// Build the features of one decision. `actions` are the candidates from [`candidate_actions`].
pub fn featurize(instruction: &Instruction, view: StateView<'_>, history: &History, actions: &[String]) -> Decision {
    let StateView { observation, anchor, page, step, step_limit } = view;
    let page = page.unwrap_or("");
    let segments: Vec<&str> = observation.split(" [SEP] ").map(str::trim).collect();
    let kinds: Vec<ActionKind> = actions.iter().map(|a| ActionKind::of(a, page)).collect();
    let mut product_rank = 0usize;
    let action_features: Vec<ActionFeatures> = actions
        .iter()
        .zip(&kinds)
        .enumerate()
        .map(|(i, (action, &kind))| {
            let mut dense = [0f32; ACTION_DENSE];
            dense[kind as usize] = 1.0;
            let (context, price) = match kind {
                ActionKind::Search => (search_argument(action).unwrap_or("").to_string(), None),
                ActionKind::Product => {
                    let asin = click_argument(action).unwrap_or("");
                    let (title, price) = product_context(&segments, asin).unwrap_or(("", ""));
                    (title.to_string(), shown_price(price))
                }
                _ => (click_argument(action).unwrap_or("").to_string(), None),
            };
            let context_words: HashSet<String> = words(&context).filter(|w| !is_stop_word(w)).collect();
            let matched = context_words.intersection(&instruction.words).count() as f32;
            dense[KINDS] = if context_words.is_empty() { 0.0 } else { matched / context_words.len() as f32 };
            dense[KINDS + 1] =
                if instruction.words.is_empty() { 0.0 } else { matched / instruction.words.len() as f32 };
            dense[KINDS + 2] = if history.taken(action) { 1.0 } else { 0.0 };
            dense[KINDS + 3] = match (kind, price, instruction.price_cap) {
                (ActionKind::Product, Some(p), Some(cap)) if p <= cap => 1.0,
                (ActionKind::Product, Some(_), Some(_)) => 0.0,
                (ActionKind::Product, _, _) => 0.5,
                _ => 0.0,
            };
            dense[KINDS + 4] = match kind {
                ActionKind::Product => {
                    product_rank += 1;
                    product_rank as f32 / 10.0
                }
                ActionKind::Search => {
                    instruction.queries.iter().position(|q| Some(q.as_str()) == search_argument(action)).unwrap_or(i)
                        as f32
                        / 4.0
                }
                _ => 0.0,
            };
            dense[KINDS + 5] =
                if kind == ActionKind::Option && phrase_in(&instruction.normalized, &context) { 1.0 } else { 0.0 };
            dense[KINDS + 6] = if kind == ActionKind::Search { words(&context).count() as f32 / 20.0 } else { 0.0 };
            ActionFeatures { text: hashed(&context, MAX_OBS_TOKENS), dense }
        })
        .collect();

    let mut dense = [0f32; STATE_DENSE];
    let page_slot = PAGES.iter().position(|p| *p == page).unwrap_or(PAGES.len());
    dense[page_slot] = 1.0;
    dense[5] = step as f32 / step_limit.max(1) as f32;
    dense[6] = history.options_since_product() as f32 / 3.0;
    dense[7] = if actions.iter().zip(&action_features).any(|(a, f)| f.dense[KINDS + 5] > 0.0 && !history.taken(a)) {
        1.0
    } else {
        0.0
    };
    dense[8] = history.products_opened() as f32 / 3.0;

    let recent = history.actions.iter().rev().take(HISTORY).map(|(a, _)| a.as_str()).collect::<Vec<_>>().join(" ");
    Decision {
        state: StateFeatures {
            instruction: instruction.tokens.clone(),
            observation: hashed(anchor, MAX_OBS_TOKENS),
            history: hashed(&recent, MAX_OBS_TOKENS),
            dense,
        },
        actions: action_features,
    }
}

/// WebShop's [`PolicyFeatures`] for one goal: its instruction parsed once.
pub struct WebShopFeatures {
    instruction: Instruction,
}

impl WebShopFeatures {
    pub fn new(instruction: &str) -> WebShopFeatures {
        WebShopFeatures { instruction: Instruction::new(instruction) }
    }
}

impl PolicyFeatures for WebShopFeatures {
    fn candidates(&self, available: &[String]) -> Vec<String> {
        candidate_actions(available, &self.instruction)
    }

    fn describe(&self, state: StateView<'_>, history: &[Taken], candidates: &[String]) -> Decision {
        featurize(&self.instruction, state, &History::of(history), candidates)
    }

    /// Search the full instruction, click the first result, buy.
    fn rule_choice(&self, state: StateView<'_>, candidates: &[String]) -> usize {
        let page = state.page.unwrap_or("");
        let first_of = |kind: ActionKind| candidates.iter().position(|a| ActionKind::of(a, page) == kind);
        // Search candidates start with the full instruction, so the first search action is "search the
        // instruction".
        first_of(ActionKind::Search)
            .or_else(|| first_of(ActionKind::Product))
            .or_else(|| first_of(ActionKind::Buy))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_drop_options_and_price_clauses() {
        let ins = Instruction::new(
            "i need a long sleeve cotton shirt for men with color: navy blue, and size: large, and price lower than 40.00 dollars",
        );
        assert_eq!(ins.price_cap, Some(40.0));
        assert_eq!(
            ins.queries,
            vec![
                "i need a long sleeve cotton shirt for men with color: navy blue, and size: large, and price lower than 40.00 dollars",
                "i need a long sleeve cotton shirt for men with color: navy blue, and size: large",
                "i need a long sleeve cotton shirt for men",
                "long sleeve cotton shirt men",
            ]
        );
    }

    #[test]
    fn search_bar_expands_into_queries() {
        let ins = Instruction::new("red shoes, and price lower than 20.00 dollars");
        let offered = ["search[<your query>]", "click[search]", "click[back to search]"].map(String::from);
        let actions = candidate_actions(&offered, &ins);
        assert_eq!(
            actions,
            vec!["search[red shoes, and price lower than 20.00 dollars]", "search[red shoes]", "click[back to search]"]
        );
    }

    #[test]
    fn product_features_read_title_and_price_from_the_page() {
        let ins = Instruction::new("i want red running shoes, and price lower than 50.00 dollars");
        let obs = "Instruction: [SEP] i want red running shoes [SEP] Back to Search [SEP] Page 1 (Total results: 2) [SEP] Next > [SEP] B000000001 [SEP] Red Running Shoes [SEP] $30.0 [SEP] B000000002 [SEP] Blue Hat [SEP] $60.0";
        let actions: Vec<String> = ["click[back to search]", "click[next >]", "click[b000000001]", "click[b000000002]"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let view = StateView { observation: obs, anchor: obs, page: Some("results"), step: 1, step_limit: 15 };
        let d = featurize(&ins, view, &History::default(), &actions);
        assert_eq!(d.state.dense[1], 1.0, "results page");
        let shoes = &d.actions[2].dense;
        let hat = &d.actions[3].dense;
        assert_eq!(shoes[ActionKind::Product as usize], 1.0);
        assert_eq!(shoes[KINDS], 1.0, "every title word is in the instruction");
        assert_eq!(hat[KINDS], 0.0);
        assert_eq!((shoes[KINDS + 3], hat[KINDS + 3]), (1.0, 0.0), "price under / over the cap");
        assert_eq!((shoes[KINDS + 4], hat[KINDS + 4]), (0.1, 0.2), "rank on the page");
        assert_eq!(d.actions[1].dense[ActionKind::Next as usize], 1.0);
    }

    #[test]
    fn option_phrases_and_history() {
        let ins = Instruction::new("a shirt with color: navy blue, and price lower than 40.00 dollars");
        let actions: Vec<String> =
            ["click[navy blue]", "click[red]", "click[buy now]"].iter().map(|s| s.to_string()).collect();
        let mut history = History::default();
        history.push("search[a shirt]", "search");
        history.push("click[b00abcdefg]", "results");
        history.push("click[navy blue]", "item");
        let view = StateView { observation: "obs", anchor: "obs", page: Some("item"), step: 3, step_limit: 15 };
        let d = featurize(&ins, view, &history, &actions);
        assert_eq!(d.actions[0].dense[KINDS + 5], 1.0);
        assert_eq!(d.actions[0].dense[KINDS + 2], 1.0, "already clicked");
        assert_eq!(d.actions[1].dense[KINDS + 5], 0.0, "`red` is not in the instruction");
        assert_eq!(d.state.dense[6], 1.0 / 3.0, "one option clicked since the product was opened");
        assert_eq!(d.state.dense[7], 0.0, "the matching option was already taken");
        assert_eq!(d.state.dense[8], 1.0 / 3.0, "one product opened");
    }
}
