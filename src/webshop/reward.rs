//! WebShop's reward for buying a product with chosen options at a price, for a goal, with its breakdown.
//!
//! `reward = (attribute matches + option matches + [price <= price_upper])
//!           / (n_attributes + n_goal_options + 1) * r_type`
//!
//! - attribute match: some product attribute has `token_set_ratio > 85` with the goal attribute, else the
//!   goal attribute is a substring of the lower-cased title, joined bullet points or description;
//! - option match: after colour normalisation, some chosen option value has `token_set_ratio > 85` with
//!   the goal option;
//! - `r_type`: 1.0, 0.5 when neither the query nor ≥ 2 breadcrumb levels match and the title score is at
//!   most 0.2, then 0.1 when the title score is below 0.1, 0 when it is 0.
//!
//! Title nouns. The original takes the NOUN and PROPN tokens of spaCy's `en_core_web_sm` parse of both
//! titles. A product or goal may carry them precomputed (`title_nouns`), which makes the score exact;
//! otherwise [`approximate_title_nouns`] stands in for spaCy (see there for how it differs).
//!
//! Colours. The original's colour list lives in its code; gigscope reads it from `color_set.json` (a JSON
//! list, in WebShop's order) next to the catalog files, and normalises no colour when there is none.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::text::py_strip;
use crate::webshop::catalog::Product;
use crate::webshop::goals::{Goal, GoalOptions};
use crate::webshop::token_set_ratio::token_set_ratio;

/// Fuzzy scores above this count as a match.
const MATCH_THRESHOLD: u32 = 85;
/// File name of the colour list in a catalog directory.
pub const COLOR_SET_FILE: &str = "color_set.json";

/// The reward and its parts, as the original reports them (`r_option` is absent when the goal has no
/// options).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RewardBreakdown {
    pub reward: f64,
    pub r_type: f64,
    pub r_att: f64,
    pub r_option: Option<f64>,
    pub r_price: bool,
    pub title_score: f64,
    pub query_match: bool,
    pub category_match: bool,
}

impl RewardBreakdown {
    /// The original counts an episode as a success only at the full reward.
    pub fn success(&self) -> bool {
        self.reward == 1.0
    }

    /// The reward's parts in words and its formula filled in as [`combine`] computes it, for a goal of
    /// `attributes` attributes and `options` options priced up to `price_upper`: lines for the player's screen.
    /// The matches are counted back from `r_att` and `r_option` (the share of the goal's attributes and
    /// options matched).
    pub fn explain(&self, attributes: usize, options: usize, price_upper: f64) -> Vec<String> {
        let n_att = (self.r_att * attributes as f64).round() as usize;
        let n_opt = self.r_option.map_or(0, |r| (r * options as f64).round() as usize);
        let price = usize::from(self.r_price);
        let yes = |b: bool| if b { "yes" } else { "no" };
        vec![
            format!(
                "r_type {:.1}: the product's type (query matched {}, category {}, title score {:.2})",
                self.r_type,
                yes(self.query_match),
                yes(self.category_match),
                self.title_score
            ),
            format!("r_att {:.3}: {n_att} of the goal's {attributes} attributes matched", self.r_att),
            match self.r_option {
                Some(r) => format!("r_option {r:.3}: {n_opt} of the goal's {options} options chosen"),
                None => "r_option none: the goal asks for no option".to_string(),
            },
            format!(
                "r_price {price}: the price is {} the goal's limit {price_upper:.2}",
                if self.r_price { "within" } else { "over" }
            ),
            "reward = (attributes matched + options chosen + r_price) / (attributes + options + 1) · r_type".into(),
            format!(
                "       = ({n_att} + {n_opt} + {price}) / ({attributes} + {options} + 1) · {:.1} = {:.3}",
                self.r_type, self.reward
            ),
        ]
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ColorSetError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a JSON list of colour names: {source}")]
    Json { path: PathBuf, source: serde_json::Error },
}

/// WebShop's colour list, in order: an option is normalised to the first colour it contains.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColorSet {
    colors: Vec<String>,
}

impl ColorSet {
    pub fn new(colors: Vec<String>) -> ColorSet {
        ColorSet { colors }
    }

    /// No colours: options are compared unnormalised.
    pub fn empty() -> ColorSet {
        ColorSet::default()
    }

    pub fn from_file(path: &Path) -> Result<ColorSet, ColorSetError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ColorSetError::Io { path: path.to_owned(), source })?;
        let colors =
            serde_json::from_str(&text).map_err(|source| ColorSetError::Json { path: path.to_owned(), source })?;
        Ok(ColorSet { colors })
    }

    /// `color_set.json` in a catalog directory, if there is one.
    pub fn from_catalog_dir(dir: &Path) -> Result<Option<ColorSet>, ColorSetError> {
        let path = dir.join(COLOR_SET_FILE);
        if path.is_file() {
            ColorSet::from_file(&path).map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn colors(&self) -> &[String] {
        &self.colors
    }

    /// The first colour that is a substring of `option`, else `option` unchanged.
    pub fn normalize<'a>(&'a self, option: &'a str) -> &'a str {
        self.colors.iter().find(|c| option.contains(c.as_str())).map_or(option, |c| c.as_str())
    }

    /// The original passes a synthetic goal's `(name, value)` pair itself to its normaliser, where
    /// `colour in pair` tests equality with either element: the first colour equal to one of them, else
    /// the pair unchanged.
    fn normalize_pair(&self, name: &str, value: &str) -> Option<&str> {
        self.colors.iter().find(|c| *c == name || *c == value).map(|c| c.as_str())
    }
}

/// Words that are never nouns: determiners, pronouns, prepositions, conjunctions, auxiliaries, common
/// adverbs and product-title adjectives.
const NOT_NOUNS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "all",
    "also",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "been",
    "best",
    "big",
    "both",
    "but",
    "by",
    "can",
    "compatible",
    "cute",
    "deep",
    "do",
    "does",
    "durable",
    "each",
    "easy",
    "extra",
    "for",
    "from",
    "great",
    "has",
    "have",
    "high",
    "his",
    "her",
    "how",
    "if",
    "in",
    "inch",
    "into",
    "is",
    "it",
    "its",
    "large",
    "lightweight",
    "long",
    "low",
    "many",
    "me",
    "more",
    "most",
    "much",
    "my",
    "new",
    "no",
    "non",
    "not",
    "of",
    "off",
    "on",
    "one",
    "only",
    "or",
    "our",
    "out",
    "over",
    "own",
    "per",
    "perfect",
    "portable",
    "premium",
    "small",
    "so",
    "soft",
    "some",
    "super",
    "than",
    "that",
    "the",
    "their",
    "them",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "two",
    "under",
    "up",
    "very",
    "w",
    "was",
    "we",
    "were",
    "what",
    "when",
    "which",
    "while",
    "who",
    "will",
    "with",
    "without",
    "you",
    "your",
];

/// A stand-in for spaCy's NOUN/PROPN tokens of a title: runs of letters and digits that contain a
/// letter, lower-cased, minus [`NOT_NOUNS`] and adverbs in `-ly`. It differs from spaCy where spaCy
/// splits units off numbers (`4GB` → `4`, `GB`), tags capitalised adjectives and participles of Title
/// Case titles (`Modern`, `Upholstered`) as PROPN or not depending on context, or tags a noun-looking word
/// as a verb; title scores are then close to, not equal to, the original's.
pub fn approximate_title_nouns(title: &str) -> Vec<String> {
    title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.chars().any(char::is_alphabetic))
        .map(str::to_lowercase)
        .filter(|t| !(NOT_NOUNS.contains(&t.as_str()) || (t.len() > 4 && t.ends_with("ly"))))
        .collect()
}

fn nouns(precomputed: Option<&Vec<String>>, title: &str) -> Vec<String> {
    match precomputed {
        // The original lower-cases spaCy's token texts.
        Some(list) => list.iter().map(|t| t.to_lowercase()).collect(),
        None => approximate_title_nouns(title),
    }
}

/// The title score: the share of the goal's title nouns (with repeats) that the bought title has; 0.2
/// when the goal title has no nouns.
pub fn title_score(bought_nouns: &[String], goal_nouns: &[String]) -> f64 {
    if goal_nouns.is_empty() {
        return 0.2;
    }
    let bought: HashSet<&String> = bought_nouns.iter().collect();
    let wanted: HashSet<&String> = goal_nouns.iter().collect();
    bought.intersection(&wanted).count() as f64 / goal_nouns.len() as f64
}

/// `r_type` from its three signals.
pub fn type_score(query_match: bool, category_match: bool, title_score: f64) -> f64 {
    let mut r_type = 1.0;
    if !(query_match || category_match || title_score > 0.2) {
        r_type = 0.5;
    }
    if title_score < 0.1 {
        r_type = 0.1;
    }
    if title_score == 0.0 {
        r_type = 0.0;
    }
    r_type
}

/// At least two breadcrumb levels (split on `›`, stripped) in common, in any order.
pub fn category_match(a: &str, b: &str) -> bool {
    let levels = |c: &str| -> HashSet<String> { c.split('›').map(|l| py_strip(l).to_owned()).collect() };
    levels(a).intersection(&levels(b)).count() >= 2
}

/// The type part: `(r_type, query_match, category_match, title_score)`.
fn type_reward(product: &Product, goal: &Goal) -> (f64, bool, bool, f64) {
    let query_match = product.query == goal.query;
    let category_match = category_match(&product.product_category, &goal.product_category);
    let bought = nouns(product.title_nouns.as_ref(), &product.title);
    let wanted = nouns(goal.title_nouns.as_ref(), &goal.name);
    let title_score = title_score(&bought, &wanted);
    (type_score(query_match, category_match, title_score), query_match, category_match, title_score)
}

/// How many goal attributes the product has.
fn attribute_matches(product: &Product, goal: &Goal) -> usize {
    let title = product.title.to_lowercase();
    let bullets = product.bullet_points.join(" ").to_lowercase();
    let description = product.description.to_lowercase();
    goal.attributes
        .iter()
        .filter(|g| {
            product.attributes.iter().any(|p| token_set_ratio(p, g) > MATCH_THRESHOLD)
                || title.contains(g.as_str())
                || bullets.contains(g.as_str())
                || description.contains(g.as_str())
        })
        .count()
}

/// How many goal options some chosen option value matches.
pub fn option_matches(chosen: &[&str], goal_options: &GoalOptions, colors: &ColorSet) -> usize {
    let chosen: Vec<&str> = chosen.iter().map(|o| colors.normalize(o)).collect();
    let matches = |g: &str| chosen.iter().any(|p| token_set_ratio(p, g) > MATCH_THRESHOLD);
    match goal_options {
        GoalOptions::Values(values) => values.iter().filter(|g| matches(colors.normalize(g))).count(),
        GoalOptions::Pairs(pairs) => pairs
            .iter()
            .filter(|(name, value)| match colors.normalize_pair(name, value) {
                Some(color) => matches(color),
                // The pair reaches the fuzzy matcher as Python's `str` of the tuple.
                None => matches(&py_tuple_repr(name, value)),
            })
            .count(),
    }
}

/// Python's `str((name, value))` for two strings.
fn py_tuple_repr(name: &str, value: &str) -> String {
    format!("({}, {})", py_str_repr(name), py_str_repr(value))
}

/// Python's `repr` of a string: single quotes unless the text has a single quote and no double quote;
/// backslashes, the quote and non-printable characters escaped. Printability is approximated with
/// control characters, non-space whitespace and the common invisible format characters.
fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control()
                || (c.is_whitespace() && c != ' ')
                || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}') =>
            {
                let code = u32::from(c);
                if code < 0x100 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code < 0x10000 {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `(attribute matches + option matches + [price ok]) / (n_attributes + n_goal_options + 1) * r_type`.
pub fn combine(
    n_att: usize,
    n_opt: usize,
    r_price: bool,
    goal_attributes: usize,
    goal_options: usize,
    r_type: f64,
) -> f64 {
    let matched = n_att + n_opt + usize::from(r_price);
    let total = goal_attributes + goal_options + 1;
    matched as f64 / total as f64 * r_type
}

/// The reward of buying `product` at `price` with the chosen options (`name → value`, in any order) for
/// `goal`. A goal without attributes has `r_att` 0 (the original divides by zero there).
pub fn compute_reward(
    product: &Product,
    goal: &Goal,
    price: f64,
    chosen: &[(String, String)],
    colors: &ColorSet,
) -> RewardBreakdown {
    let (r_type, query_match, category_match, title_score) = type_reward(product, goal);
    let r_price = price <= goal.price_upper;
    let n_att = attribute_matches(product, goal);
    let r_att = if goal.attributes.is_empty() { 0.0 } else { n_att as f64 / goal.attributes.len() as f64 };
    let (n_opt, r_option) = if goal.goal_options.is_empty() {
        (0, None)
    } else {
        let values: Vec<&str> = chosen.iter().map(|(_, v)| v.as_str()).collect();
        let n = option_matches(&values, &goal.goal_options, colors);
        (n, Some(n as f64 / goal.goal_options.len() as f64))
    };
    RewardBreakdown {
        reward: combine(n_att, n_opt, r_price, goal.attributes.len(), goal.goal_options.len(), r_type),
        r_type,
        r_att,
        r_option,
        r_price,
        title_score,
        query_match,
        category_match,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_reprs() {
        assert_eq!(py_tuple_repr("color", "black"), "('color', 'black')");
        assert_eq!(py_str_repr("men's"), "\"men's\"");
        assert_eq!(py_str_repr("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(py_str_repr("a\nb\u{a0}c\u{2028}"), "'a\\nb\\xa0c\\u2028'");
        assert_eq!(py_str_repr("x\\y"), "'x\\\\y'");
    }

    #[test]
    fn colour_normalisation_takes_the_first_listed_substring() {
        let colors = ColorSet::new(vec!["black".into(), "blue".into(), "navy".into(), "red".into()]);
        assert_eq!(colors.normalize("navy blue"), "blue");
        assert_eq!(colors.normalize("z2-red"), "red");
        assert_eq!(colors.normalize("8"), "8");
        assert_eq!(colors.normalize_pair("color", "black"), Some("black"));
        assert_eq!(colors.normalize_pair("color", "jet black"), None);
    }

    #[test]
    fn approximate_nouns_drop_function_words() {
        assert_eq!(
            approximate_title_nouns("Soft Cotton T-Shirt for Men, 2 Pack (Really Blue)"),
            ["cotton", "t", "shirt", "men", "pack", "blue"]
        );
    }
}
