//! `gigscope webshop reward`: the reward of one purchase, with its breakdown, as one JSON object.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::webshop::catalog::{Catalog, Product};
use crate::webshop::goals::Goal;
use crate::webshop::reward::{compute_reward, ColorSet};

use super::goals::colors_for;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// One raw catalog record (items_shuffle fields) plus `attributes` (as in items_ins_v2) and
    /// optional `title_nouns`.
    #[arg(long, value_name = "FILE")]
    pub product: PathBuf,
    /// A goal in WebShop's schema (query, product_category, name, attributes, goal_options as an
    /// object or a list, price_upper, optional title_nouns and instruction_text).
    #[arg(long, value_name = "FILE")]
    pub goal: PathBuf,
    /// The chosen options as a JSON object name -> value.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub options: String,
    /// The price paid.
    #[arg(long)]
    pub price: f64,
    /// Catalog directory whose color_set.json normalises colours.
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    /// WebShop's colour list (a JSON list), instead of the catalog's.
    #[arg(long, value_name = "FILE")]
    pub colors: Option<PathBuf>,
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

/// Cleans the record exactly as the catalog does by loading it as a one-product catalog.
fn product_from_record(path: &Path) -> anyhow::Result<Product> {
    let record = read_json(path)?;
    let Some(asin) = record.get("asin").and_then(Value::as_str) else {
        bail!("{}: the product record has no string `asin`", path.display());
    };
    let mut ins = serde_json::Map::new();
    if let Some(attributes) = record.get("attributes") {
        ins.insert(asin.to_owned(), json!({ "attributes": attributes }));
    }
    let products = serde_json::to_vec(&[&record])?;
    let ins = serde_json::to_vec(&ins)?;
    let none: Option<(&Path, &[u8])> = None;
    let catalog = Catalog::from_readers((path, products.as_slice()), (path, ins.as_slice()), none, 0)?;
    match catalog.products.into_iter().next() {
        Some(p) => Ok(p),
        None => bail!(
            "{}: WebShop drops this record (asin {asin:?} is \"nan\" or longer than 10 characters)",
            path.display()
        ),
    }
}

fn parse_options(text: &str) -> anyhow::Result<Vec<(String, String)>> {
    let value: Value = serde_json::from_str(text).context("--options is not JSON")?;
    let Value::Object(map) = value else { bail!("--options must be a JSON object name -> value") };
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            other => bail!("--options: the value of {k:?} is {other}, not a string"),
        })
        .collect()
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let product = product_from_record(&args.product)?;
    let goal: Goal = serde_json::from_value(read_json(&args.goal)?)
        .with_context(|| format!("{} is not a goal in WebShop's schema", args.goal.display()))?;
    let options = parse_options(&args.options)?;
    let colors = match &args.colors {
        Some(path) => ColorSet::from_file(path)?,
        None => colors_for(args.catalog.as_deref())?,
    };
    let breakdown = compute_reward(&product, &goal, args.price, &options, &colors);
    println!("{}", serde_json::to_string(&breakdown)?);
    Ok(ExitCode::SUCCESS)
}
