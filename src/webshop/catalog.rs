//! The product catalog: WebShop's own files (`items_shuffle*.json`, `items_ins_v2*.json`,
//! `items_human_ins.json`) cleaned exactly as the original `load_products` does.
//!
//! # File-name rules for [`Catalog::load`]
//! In the given directory:
//! - products: `items_shuffle.json` if present, else the only `items_shuffle*.json`, else the only
//!   `products*.json` (the name of the shared test extract); more than one candidate is an error;
//! - attributes: `items_ins_v2.json` if present, else the only `items_ins_v2*.json` (required);
//! - human instructions: `items_human_ins.json` (optional).
//!
//! The products file is read as a stream, one array element at a time, so the full 1.18 M-product
//! file (≈5 GB of JSON, mostly fields WebShop drops) never sits in memory whole.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::de::{DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::text::{py_strip, pyfloat};

/// One cleaned product, as the environment shows and scores it.
#[derive(Clone, Debug, PartialEq)]
pub struct Product {
    pub asin: String,
    /// `name`.
    pub title: String,
    /// `full_description`.
    pub description: String,
    /// `small_description` (a string becomes a one-element list).
    pub bullet_points: Vec<String>,
    /// `category` (e.g. "beauty").
    pub category: String,
    /// `product_category`: the breadcrumb, levels separated by `›`.
    pub product_category: String,
    /// `query`, lower-cased and stripped.
    pub query: String,
    /// Shown price: `$X` or `$X to $Y`, numbers printed as Python prints a float.
    pub price_text: String,
    /// One value, or the low and high end of a range.
    pub prices: Vec<f64>,
    /// Price used by the reward: the single price, or a seeded uniform draw in [lo, hi] for a range.
    pub price: f64,
    /// Option name (lower-cased) → values (stripped, lower-cased, `/` → ` | `), in record order.
    pub options: Vec<(String, Vec<String>)>,
    /// From `items_ins_v2` (`DUMMY_ATTR` when the asin is missing there).
    pub attributes: Vec<String>,
    /// Synthetic instruction from `items_ins_v2`, if any, and its attributes.
    pub instruction: Option<String>,
    pub instruction_attributes: Vec<String>,
    /// Precomputed NOUN/PROPN tokens of the title, when the catalog carries them.
    pub title_nouns: Option<Vec<String>>,
}

/// One human-written instruction for a product (`items_human_ins.json`), kept for the goal builder.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct HumanInstruction {
    pub instruction: String,
    #[serde(default)]
    pub instruction_attributes: Vec<String>,
    #[serde(default)]
    pub instruction_options: Vec<String>,
}

/// The cleaned catalog.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// In file order, after dropping bad and duplicate asins.
    pub products: Vec<Product>,
    /// asin → index into `products`.
    pub by_asin: HashMap<String, usize>,
    /// asin → its human instructions, only for asins in `products` (empty without `items_human_ins.json`).
    pub human_instructions: HashMap<String, Vec<HumanInstruction>>,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("no {what} file in {dir}")]
    Missing { what: &'static str, dir: PathBuf },
    #[error("more than one {what} file in {dir}: {candidates:?} (keep one, or name it exactly {exact})")]
    Ambiguous { what: &'static str, dir: PathBuf, candidates: Vec<String>, exact: &'static str },
    #[error("reading {path}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: record {index}: {source}")]
    Record { path: PathBuf, index: usize, source: serde_json::Error },
    #[error("{path}: {source}")]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("{path}: record {index} (asin {asin}): pricing {pricing:?} is not `$X` or `$X$Y`")]
    Price { path: PathBuf, index: usize, asin: String, pricing: String },
}

/// The files of the embedded demo catalog, produced by `gigscope webshop gen-catalog` (see `gen`).
const DEMO_PRODUCTS: &[u8] = include_bytes!("../../assets/demo_catalog/items_shuffle.json");
const DEMO_INS: &[u8] = include_bytes!("../../assets/demo_catalog/items_ins_v2.json");
const DEMO_HUMAN_INS: &[u8] = include_bytes!("../../assets/demo_catalog/items_human_ins.json");
/// Seed of the range-price draws for the demo catalog.
pub const DEMO_SEED: u64 = 0;

impl Catalog {
    /// Loads WebShop's files from `dir` (see the module doc for the names). `seed` seeds the draw of
    /// the reward price of products shown with a price range; the original draws it with Python's
    /// unseeded `random.uniform`, so its prices differ from run to run while ours are reproducible.
    pub fn load(dir: &Path, seed: u64) -> Result<Catalog, CatalogError> {
        let products_path = find_file(dir, "products", "items_shuffle.json", &["items_shuffle", "products"])?;
        let ins_path = find_file(dir, "attributes (items_ins_v2)", "items_ins_v2.json", &["items_ins_v2"])?;
        let human_path = dir.join("items_human_ins.json");
        let human = human_path.is_file().then_some(human_path);
        Catalog::from_readers(
            (&products_path, open(&products_path)?),
            (&ins_path, open(&ins_path)?),
            match &human {
                Some(path) => Some((path.as_path(), open(path)?)),
                None => None,
            },
            seed,
        )
    }

    /// The demo catalog compiled into the binary (a few hundred generated products), so every
    /// command works with no data downloaded.
    pub fn embedded_demo() -> Result<Catalog, CatalogError> {
        let dir = Path::new("<embedded>/assets/demo_catalog");
        Catalog::from_readers(
            (&dir.join("items_shuffle.json"), DEMO_PRODUCTS),
            (&dir.join("items_ins_v2.json"), DEMO_INS),
            Some((&dir.join("items_human_ins.json"), DEMO_HUMAN_INS)),
            DEMO_SEED,
        )
    }

    /// [`Catalog::load`] on `dir` when given, else [`Catalog::embedded_demo`] (what `--catalog`
    /// means on every command).
    pub fn load_or_demo(dir: Option<&Path>, seed: u64) -> Result<Catalog, CatalogError> {
        match dir {
            Some(dir) => Catalog::load(dir, seed),
            None => Catalog::embedded_demo(),
        }
    }

    /// Loads from readers of the three files; the paths only name them in errors.
    pub fn from_readers<P: Read, I: Read, H: Read>(
        products: (&Path, P),
        ins: (&Path, I),
        human: Option<(&Path, H)>,
        seed: u64,
    ) -> Result<Catalog, CatalogError> {
        let mut attributes: HashMap<String, RawIns> = HashMap::new();
        stream_map(ins.0, ins.1, |asin, rec| {
            attributes.insert(asin, rec);
        })?;
        let mut human_by_asin: HashMap<String, Vec<HumanInstruction>> = HashMap::new();
        if let Some((path, reader)) = human {
            stream_map(path, reader, |asin, recs| {
                human_by_asin.insert(asin, recs);
            })?;
        }

        let path = products.0;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut catalog = Catalog::default();
        let mut price_error = None;
        stream_array(path, products.1, |index, raw: RawProduct| {
            if price_error.is_some() {
                return;
            }
            let asin = raw.asin.clone();
            if asin == "nan" || asin.chars().count() > 10 || catalog.by_asin.contains_key(&asin) {
                return;
            }
            match clean(raw, attributes.remove(&asin), &mut rng) {
                Ok(product) => {
                    if let Some(human) = human_by_asin.remove(&asin) {
                        catalog.human_instructions.insert(asin.clone(), human);
                    }
                    catalog.by_asin.insert(asin, catalog.products.len());
                    catalog.products.push(product);
                }
                Err(pricing) => price_error = Some((index, asin, pricing)),
            }
        })?;
        if let Some((index, asin, pricing)) = price_error {
            return Err(CatalogError::Price { path: path.to_owned(), index, asin, pricing });
        }
        Ok(catalog)
    }

    /// Builds a catalog from products already cleaned (tests, generated data in memory).
    pub fn from_products(products: Vec<Product>) -> Catalog {
        let mut catalog = Catalog::default();
        for product in products {
            if catalog.by_asin.contains_key(&product.asin) {
                continue;
            }
            catalog.by_asin.insert(product.asin.clone(), catalog.products.len());
            catalog.products.push(product);
        }
        catalog
    }

    pub fn get(&self, asin: &str) -> Option<&Product> {
        self.by_asin.get(asin).map(|&i| &self.products[i])
    }

    pub fn len(&self) -> usize {
        self.products.len()
    }

    pub fn is_empty(&self) -> bool {
        self.products.is_empty()
    }
}

fn open(path: &Path) -> Result<BufReader<File>, CatalogError> {
    File::open(path)
        .map(|f| BufReader::with_capacity(1 << 20, f))
        .map_err(|source| CatalogError::Io { path: path.to_owned(), source })
}

/// Picks `exact` if it exists, else the single file whose name starts with one of `prefixes` (tried
/// in order) and ends in `.json`.
fn find_file(dir: &Path, what: &'static str, exact: &'static str, prefixes: &[&str]) -> Result<PathBuf, CatalogError> {
    let exact_path = dir.join(exact);
    if exact_path.is_file() {
        return Ok(exact_path);
    }
    let entries = std::fs::read_dir(dir).map_err(|source| CatalogError::Io { path: dir.to_owned(), source })?;
    let names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    for prefix in prefixes {
        let mut candidates: Vec<String> =
            names.iter().filter(|n| n.starts_with(prefix) && n.ends_with(".json")).cloned().collect();
        candidates.sort();
        match candidates.len() {
            0 => continue,
            1 => return Ok(dir.join(&candidates[0])),
            _ => return Err(CatalogError::Ambiguous { what, dir: dir.to_owned(), candidates, exact }),
        }
    }
    Err(CatalogError::Missing { what, dir: dir.to_owned() })
}

/// The fields of a raw `items_shuffle` record that WebShop uses; the rest are skipped unparsed.
/// Text fields the original requires default to empty here rather than failing the whole load.
#[derive(Deserialize)]
struct RawProduct {
    asin: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    full_description: Option<String>,
    #[serde(default)]
    small_description: Option<StringOrList>,
    #[serde(default)]
    pricing: Option<String>,
    #[serde(default)]
    product_category: Option<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    customization_options: Option<OptionMap>,
    #[serde(default)]
    title_nouns: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum StringOrList {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct RawOptionValue {
    value: String,
}

/// `customization_options`: name → list of values or null, in record order. A later duplicate
/// of a lower-cased name replaces the values in place, as Python's dict assignment does.
struct OptionMap(Vec<(String, Vec<String>)>);

impl<'de> Deserialize<'de> for OptionMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OptionMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of option name → list of {value, ...}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OptionMap, A::Error> {
                let mut out: Vec<(String, Vec<String>)> = Vec::new();
                while let Some((name, contents)) = map.next_entry::<String, Option<Vec<RawOptionValue>>>()? {
                    let Some(contents) = contents else { continue };
                    let name = name.to_lowercase();
                    let values: Vec<String> = contents.into_iter().map(|c| clean_option_value(&c.value)).collect();
                    match out.iter_mut().find(|(n, _)| *n == name) {
                        Some(slot) => slot.1 = values,
                        None => out.push((name, values)),
                    }
                }
                Ok(OptionMap(out))
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// `value.strip().replace('/', ' | ').lower()`.
fn clean_option_value(value: &str) -> String {
    py_strip(value).replace('/', " | ").to_lowercase()
}

/// One `items_ins_v2` entry.
#[derive(Deserialize)]
struct RawIns {
    #[serde(default)]
    attributes: Option<Vec<String>>,
    #[serde(default)]
    instruction: Option<String>,
    #[serde(default)]
    instruction_attributes: Option<Vec<String>>,
}

/// Cleans one record; `Err(pricing)` when its pricing has a `$` not followed by a number (where the
/// original's `Decimal(...)` raises).
fn clean(raw: RawProduct, ins: Option<RawIns>, rng: &mut ChaCha8Rng) -> Result<Product, String> {
    let (prices, price_text) = match raw.pricing.as_deref() {
        None | Some("") => (vec![100.0], "$100.0".to_owned()),
        Some(pricing) => {
            let mut prices = Vec::new();
            for piece in pricing.split('$').skip(1) {
                let kept: String = piece.chars().filter(|c| c.is_ascii_digit() || *c == '.').collect();
                prices.push(kept.parse::<f64>().map_err(|_| pricing.to_owned())?);
            }
            match prices.len() {
                // `"abc".split('$')[1:]` is empty: the original then fails on `pricing[0]`.
                0 => return Err(pricing.to_owned()),
                1 => {
                    let text = format!("${}", pyfloat::repr(prices[0]));
                    (prices, text)
                }
                _ => {
                    prices.truncate(2);
                    let text = format!("${} to ${}", pyfloat::repr(prices[0]), pyfloat::repr(prices[1]));
                    (prices, text)
                }
            }
        }
    };
    let price = if prices.len() == 2 {
        // Python's `random.uniform(a, b)` is `a + (b - a) * random()`.
        prices[0] + (prices[1] - prices[0]) * rng.random::<f64>()
    } else {
        prices[0]
    };
    let bullet_points = match raw.small_description {
        Some(StringOrList::Many(list)) => list,
        Some(StringOrList::One(s)) => vec![s],
        None => vec![String::new()],
    };
    let (attributes, instruction, instruction_attributes) = match ins {
        Some(ins) => (
            ins.attributes.unwrap_or_else(|| vec!["DUMMY_ATTR".to_owned()]),
            ins.instruction,
            ins.instruction_attributes.unwrap_or_default(),
        ),
        None => (vec!["DUMMY_ATTR".to_owned()], None, Vec::new()),
    };
    Ok(Product {
        asin: raw.asin,
        title: raw.name,
        description: raw.full_description.unwrap_or_default(),
        bullet_points,
        category: raw.category.unwrap_or_default(),
        product_category: raw.product_category.unwrap_or_default(),
        query: py_strip(&raw.query.unwrap_or_default().to_lowercase()).to_owned(),
        price_text,
        prices,
        price,
        options: raw.customization_options.map(|o| o.0).unwrap_or_default(),
        attributes,
        instruction,
        instruction_attributes,
        title_nouns: raw.title_nouns,
    })
}

/// Streams a JSON array, calling `f(index, element)` per element; a bad element fails the load
/// with the file name and its index.
fn stream_array<R: Read, T: DeserializeOwned>(
    path: &Path,
    reader: R,
    f: impl FnMut(usize, T),
) -> Result<(), CatalogError> {
    struct Seed<F> {
        f: F,
        failed_at: Option<usize>,
    }
    struct ArrayVisitor<'s, F, T>(&'s mut Seed<F>, std::marker::PhantomData<T>);
    impl<'de, F: FnMut(usize, T), T: DeserializeOwned> Visitor<'de> for ArrayVisitor<'_, F, T> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON array of product records")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut index = 0;
            loop {
                match seq.next_element::<T>() {
                    Ok(Some(item)) => (self.0.f)(index, item),
                    Ok(None) => return Ok(()),
                    Err(e) => {
                        self.0.failed_at = Some(index);
                        return Err(e);
                    }
                }
                index += 1;
            }
        }
    }
    impl<'de, F: FnMut(usize, T), T: DeserializeOwned> DeserializeSeed<'de> for ArrayVisitor<'_, F, T> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    let mut seed = Seed { f, failed_at: None };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let result = ArrayVisitor(&mut seed, std::marker::PhantomData).deserialize(&mut de).and_then(|_| de.end());
    result.map_err(|source| match seed.failed_at {
        Some(index) => CatalogError::Record { path: path.to_owned(), index, source },
        None => CatalogError::Json { path: path.to_owned(), source },
    })
}

/// Streams a JSON object, calling `f(key, value)` per entry; a bad entry fails the load with the
/// file name and its index (entry position in the object).
fn stream_map<R: Read, T: DeserializeOwned>(
    path: &Path,
    reader: R,
    f: impl FnMut(String, T),
) -> Result<(), CatalogError> {
    struct MapVisitor<'s, F, T>(&'s mut F, &'s mut Option<usize>, std::marker::PhantomData<T>);
    impl<'de, F: FnMut(String, T), T: DeserializeOwned> Visitor<'de> for MapVisitor<'_, F, T> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object keyed by asin")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut index = 0;
            loop {
                match map.next_entry::<String, T>() {
                    Ok(Some((k, v))) => (self.0)(k, v),
                    Ok(None) => return Ok(()),
                    Err(e) => {
                        *self.1 = Some(index);
                        return Err(e);
                    }
                }
                index += 1;
            }
        }
    }
    let mut f = f;
    let mut failed_at = None;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let result =
        de.deserialize_map(MapVisitor(&mut f, &mut failed_at, std::marker::PhantomData)).and_then(|_| de.end());
    result.map_err(|source| match failed_at {
        Some(index) => CatalogError::Record { path: path.to_owned(), index, source },
        None => CatalogError::Json { path: path.to_owned(), source },
    })
}
