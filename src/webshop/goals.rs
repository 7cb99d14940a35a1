//! Goals: the original's synthetic goals (one per combination of option values of each product with a
//! synthetic instruction) and human goals (from `items_human_ins.json`), shuffled as the original does,
//! split by index, frozen to and loaded from JSON.
//!
//! Randomness. The original picks each price cap with Python's global `random.sample`, unseeded, and
//! then orders the goals with `random.seed(233); random.shuffle(goals)`. Here the caps come from a
//! Python-identical generator seeded with `cap_seed` (so they are reproducible; the original's are not),
//! and the shuffle is exactly the original's, so with the same goals before shuffling the order matches.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::webshop::catalog::{Catalog, Product};
use crate::webshop::pyrandom::PyRandom;

/// The seed of the original's goal shuffle.
pub const SHUFFLE_SEED: u64 = 233;
/// Cap of goals whose product is too expensive for two caps below 1000 (the original's value).
pub const NO_PRICE_CAP: f64 = 1_000_000.0;
/// First indices of the test and dev splits; train is everything after dev.
pub const TEST_END: usize = 500;
pub const DEV_END: usize = 1500;

/// A goal in the original's schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    /// The product the goal was made from.
    #[serde(default)]
    pub asin: String,
    #[serde(default)]
    pub category: String,
    pub query: String,
    /// The product's title.
    pub name: String,
    pub product_category: String,
    #[serde(default)]
    pub instruction_text: String,
    pub attributes: Vec<String>,
    pub price_upper: f64,
    #[serde(default)]
    pub goal_options: GoalOptions,
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// NOUN/PROPN tokens of `name`, when precomputed (else the reward approximates them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_nouns: Option<Vec<String>>,
}

fn default_weight() -> f64 {
    1.0
}

/// Synthetic goals carry options as name → value (a JSON object); human goals as a list of values.
#[derive(Clone, Debug, PartialEq)]
pub enum GoalOptions {
    Pairs(Vec<(String, String)>),
    Values(Vec<String>),
}

impl Default for GoalOptions {
    fn default() -> Self {
        GoalOptions::Values(Vec::new())
    }
}

impl GoalOptions {
    pub fn len(&self) -> usize {
        match self {
            GoalOptions::Pairs(p) => p.len(),
            GoalOptions::Values(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Serialize for GoalOptions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            GoalOptions::Pairs(pairs) => {
                let mut m = s.serialize_map(Some(pairs.len()))?;
                for (k, v) in pairs {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            GoalOptions::Values(values) => {
                let mut q = s.serialize_seq(Some(values.len()))?;
                for v in values {
                    q.serialize_element(v)?;
                }
                q.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for GoalOptions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = GoalOptions;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of option name -> value, or a list of option values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<GoalOptions, A::Error> {
                let mut pairs = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, String>()? {
                    pairs.push((k, v));
                }
                Ok(GoalOptions::Pairs(pairs))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<GoalOptions, A::Error> {
                let mut values = Vec::new();
                while let Some(v) = seq.next_element::<String>()? {
                    values.push(v);
                }
                Ok(GoalOptions::Values(values))
            }
            fn visit_unit<E: de::Error>(self) -> Result<GoalOptions, E> {
                Ok(GoalOptions::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// Which goals to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GoalSource {
    /// From `items_human_ins.json` (what GiGPO trains and evaluates on).
    Human,
    /// One per option combination of each product with a synthetic instruction.
    Synthetic,
}

/// The original's price-cap rule: two distinct picks among the next four multiples of 10 above the
/// price (10 … 990), the larger one is the cap; with fewer than two left (price ≥ 980) there is no cap.
fn price_cap(price: f64, rng: &mut PyRandom) -> Option<f64> {
    let range: Vec<f64> = (1..100).map(|i| 10.0 * f64::from(i)).filter(|&p| p > price).take(4).collect();
    if range.len() < 2 {
        return None;
    }
    let picked = rng.sample_indices(range.len(), 2);
    Some(range[picked[0]].max(range[picked[1]]))
}

fn price_text(cap: Option<f64>) -> String {
    cap.map_or(String::new(), |c| format!(", and price lower than {c:.2} dollars"))
}

fn goal_for(
    product: &Product,
    instruction_text: String,
    attributes: Vec<String>,
    cap: Option<f64>,
    options: GoalOptions,
) -> Goal {
    Goal {
        asin: product.asin.clone(),
        category: product.category.clone(),
        query: product.query.clone(),
        name: product.title.clone(),
        product_category: product.product_category.clone(),
        instruction_text,
        attributes,
        price_upper: cap.unwrap_or(NO_PRICE_CAP),
        goal_options: options,
        weight: 1.0,
        title_nouns: product.title_nouns.clone(),
    }
}

/// Synthetic goals, in catalog order, unshuffled. One price cap is drawn per product, shared by all its
/// option combinations; options are combined in sorted name order, values in record order. A product
/// with an option that has no values yields no goal (the product of the value lists is empty), as in the
/// original. Products whose instruction has no attributes are skipped (the original asserts they do not
/// exist). Weight: the mean over the goal's attributes of 1 / (number of goals with that attribute).
pub fn synthetic_goals(catalog: &Catalog, rng: &mut PyRandom) -> Vec<Goal> {
    let mut goals = Vec::new();
    for product in &catalog.products {
        let Some(instruction) = &product.instruction else { continue };
        if product.instruction_attributes.is_empty() {
            continue;
        }
        let cap = price_cap(product.price, rng);
        let mut options: Vec<&(String, Vec<String>)> = product.options.iter().collect();
        options.sort_by(|a, b| a.0.cmp(&b.0));
        for combination in combinations(&options) {
            let pairs: Vec<(String, String)> =
                options.iter().zip(combination).map(|(o, v)| (o.0.clone(), v.clone())).collect();
            let option_text = pairs.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", and ");
            let option_text = if option_text.is_empty() { option_text } else { format!(" with {option_text}") };
            let text = format!("{instruction}{option_text}{}", price_text(cap));
            goals.push(goal_for(product, text, product.instruction_attributes.clone(), cap, GoalOptions::Pairs(pairs)));
        }
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for g in &goals {
        for a in &g.attributes {
            *counts.entry(a.as_str()).or_default() += 1;
        }
    }
    let weights: Vec<f64> = goals
        .iter()
        .map(|g| {
            let sum: f64 = g.attributes.iter().map(|a| 1.0 / counts[a.as_str()] as f64).sum();
            sum / g.attributes.len() as f64
        })
        .collect();
    for (g, w) in goals.iter_mut().zip(weights) {
        g.weight = w;
    }
    goals
}

/// `itertools.product` over the value lists, in order (the last list varies fastest).
fn combinations<'a>(options: &[&'a (String, Vec<String>)]) -> Vec<Vec<&'a String>> {
    let mut out: Vec<Vec<&String>> = vec![Vec::new()];
    for (_, values) in options {
        out = out.iter().flat_map(|prefix| values.iter().map(move |v| [prefix.as_slice(), &[v]].concat())).collect();
    }
    out
}

/// Human goals, in catalog order, unshuffled: one per human instruction with at least one attribute,
/// a price cap drawn per instruction, the instruction stripped of leading/trailing dots, weight 1.
pub fn human_goals(catalog: &Catalog, rng: &mut PyRandom) -> Vec<Goal> {
    let mut goals = Vec::new();
    for product in &catalog.products {
        let Some(instructions) = catalog.human_instructions.get(&product.asin) else { continue };
        for ins in instructions {
            if ins.instruction_attributes.is_empty() {
                continue;
            }
            let cap = price_cap(product.price, rng);
            let text = format!("{}{}", ins.instruction.trim_matches('.'), price_text(cap));
            let options = GoalOptions::Values(ins.instruction_options.clone());
            goals.push(goal_for(product, text, ins.instruction_attributes.clone(), cap, options));
        }
    }
    goals
}

/// The original's goal list: built from `source` with price caps drawn from `cap_seed`, then shuffled
/// with `random.seed(233); random.shuffle(goals)`.
pub fn build_goals(catalog: &Catalog, source: GoalSource, cap_seed: u64) -> Vec<Goal> {
    let mut rng = PyRandom::new(cap_seed);
    let mut goals = match source {
        GoalSource::Human => human_goals(catalog, &mut rng),
        GoalSource::Synthetic => synthetic_goals(catalog, &mut rng),
    };
    PyRandom::new(SHUFFLE_SEED).shuffle(&mut goals);
    goals
}

/// The goal splits, by index into the shuffled list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Split {
    /// Goals 0..500.
    Test,
    /// Goals 500..1500.
    Dev,
    /// Goals 1500.. .
    Train,
}

impl Split {
    /// The indices of this split among `n` goals (empty when the list is too short).
    pub fn range(self, n: usize) -> Range<usize> {
        let (start, end) = match self {
            Split::Test => (0, TEST_END),
            Split::Dev => (TEST_END, DEV_END),
            Split::Train => (DEV_END, n),
        };
        start.min(n)..end.min(n)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GoalError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a JSON list of goals: {source}")]
    Json { path: PathBuf, source: serde_json::Error },
}

/// Writes goals as a JSON list, one goal per line.
pub fn save_goals(path: &Path, goals: &[Goal]) -> Result<(), GoalError> {
    let io = |source| GoalError::Io { path: path.to_owned(), source };
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    out.write_all(b"[\n").map_err(io)?;
    for (i, g) in goals.iter().enumerate() {
        if i > 0 {
            out.write_all(b",\n").map_err(io)?;
        }
        serde_json::to_writer(&mut out, g).map_err(|source| GoalError::Json { path: path.to_owned(), source })?;
    }
    out.write_all(b"\n]\n").map_err(io)?;
    out.flush().map_err(io)
}

/// Reads a JSON list of goals (as written by [`save_goals`], or any list in the original's schema).
pub fn load_goals(path: &Path) -> Result<Vec<Goal>, GoalError> {
    let file = std::fs::File::open(path).map_err(|source| GoalError::Io { path: path.to_owned(), source })?;
    serde_json::from_reader(std::io::BufReader::new(file))
        .map_err(|source| GoalError::Json { path: path.to_owned(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn price_caps_follow_the_next_four_multiples_of_ten() {
        let mut rng = PyRandom::new(1);
        for _ in 0..200 {
            let cap = price_cap(23.5, &mut rng);
            assert!(matches!(cap, Some(c) if [40.0, 50.0, 60.0].contains(&c)), "{cap:?}");
        }
        assert_eq!(price_cap(975.0, &mut rng), Some(990.0));
        assert_eq!(price_cap(980.0, &mut rng), None);
        assert_eq!(price_cap(5000.0, &mut rng), None);
        // A price on a multiple of ten is not below itself.
        let cap = price_cap(10.0, &mut rng);
        assert!(matches!(cap, Some(c) if [30.0, 40.0, 50.0].contains(&c)), "{cap:?}");
    }

    #[test]
    fn combinations_vary_the_last_option_fastest() {
        let a = ("a".to_owned(), vec!["1".to_owned(), "2".to_owned()]);
        let b = ("b".to_owned(), vec!["x".to_owned(), "y".to_owned()]);
        let got = combinations(&[&a, &b]);
        let got: Vec<Vec<&str>> = got.iter().map(|c| c.iter().map(|s| s.as_str()).collect()).collect();
        assert_eq!(got, [["1", "x"], ["1", "y"], ["2", "x"], ["2", "y"]]);
        assert_eq!(combinations(&[]).len(), 1);
        let empty = ("c".to_owned(), vec![]);
        assert!(combinations(&[&a, &empty]).is_empty());
    }

    #[test]
    fn splits_are_index_ranges() {
        assert_eq!(Split::Test.range(12087), 0..500);
        assert_eq!(Split::Dev.range(12087), 500..1500);
        assert_eq!(Split::Train.range(12087), 1500..12087);
        assert_eq!(Split::Dev.range(700), 500..700);
        assert_eq!(Split::Train.range(700), 700..700);
    }

    #[test]
    fn goal_options_round_trip_as_object_or_list() {
        let json = r#"{"query":"q","name":"n","product_category":"a › b","attributes":["x"],"price_upper":50.0,
            "goal_options":{"size":"8","color":"red"}}"#;
        let g: Goal = serde_json::from_str(json).unwrap();
        assert_eq!(
            g.goal_options,
            GoalOptions::Pairs(vec![("size".into(), "8".into()), ("color".into(), "red".into())])
        );
        assert_eq!(g.weight, 1.0);
        let back = serde_json::to_value(&g).unwrap();
        assert_eq!(back["goal_options"], serde_json::json!({"size": "8", "color": "red"}));
        let g: Goal = serde_json::from_str(&json.replace(r#"{"size":"8","color":"red"}"#, r#"["pink","8"]"#)).unwrap();
        assert_eq!(g.goal_options, GoalOptions::Values(vec!["pink".into(), "8".into()]));
    }
}
