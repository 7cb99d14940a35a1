//! A deterministic synthetic catalog in WebShop's raw schema: `items_shuffle.json` (product
//! records), `items_ins_v2.json` (attributes and synthetic instructions) and `items_human_ins.json`
//! (human-style instructions for a few products), realistic enough to demo the environment and to
//! benchmark search at WebShop's full scale (1.18 M products).
//!
//! Every product is drawn from its own ChaCha stream (seed, product index), so the output depends
//! only on `(products, seed)` and product `i` is the same whatever the catalog size. Records are
//! written one at a time: memory stays flat at any size.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Size and seed of the demo catalog shipped in `assets/demo_catalog/`.
pub const DEMO_PRODUCTS: usize = 1000;
pub const DEMO_SEED: u64 = 2022;

/// Names of the files written (the ones [`crate::webshop::catalog::Catalog::load`] looks for first).
pub const PRODUCTS_FILE: &str = "items_shuffle.json";
pub const INS_FILE: &str = "items_ins_v2.json";
pub const HUMAN_INS_FILE: &str = "items_human_ins.json";

#[derive(Debug, thiserror::Error)]
#[error("writing {path}: {source}")]
pub struct GenError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenSummary {
    pub products: usize,
    pub with_instruction: usize,
    pub with_human_instructions: usize,
}

struct CategorySpec {
    category: &'static str,
    /// Breadcrumb levels and the product nouns that live there.
    shelves: &'static [(&'static str, &'static [&'static str])],
    brands: &'static [&'static str],
    adjectives: &'static [&'static str],
    attributes: &'static [&'static str],
    /// Option name → possible values (a product shows a random subset, in this order).
    options: &'static [(&'static str, &'static [&'static str])],
    /// Typical price range in dollars.
    price: (f64, f64),
    specs: &'static [&'static str],
}

const CATEGORIES: &[CategorySpec] = &[
    CategorySpec {
        category: "beauty",
        shelves: &[
            ("Beauty & Personal Care › Skin Care › Face › Creams & Moisturizers", &["face moisturizer", "night cream", "day cream"]),
            ("Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Shampoos", &["shampoo", "dry shampoo", "conditioner"]),
            ("Beauty & Personal Care › Makeup › Lips › Lipstick", &["lipstick", "lip gloss", "lip balm"]),
            ("Beauty & Personal Care › Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish", &["nail polish", "gel polish"]),
            ("Beauty & Personal Care › Personal Care › Bath & Bathing Accessories › Bath › Body Washes", &["body wash", "shower gel", "bath bomb"]),
            ("Beauty & Personal Care › Tools & Accessories › Makeup Brushes & Tools › Brush Sets", &["makeup brush set", "sponge blender"]),
        ],
        brands: &["Lumiere", "Pure Petal", "Dermaglow", "Aurelle", "Mistral Botanics", "Velvet Fern", "Oceane", "Kindred Skin"],
        adjectives: &["Hydrating", "Nourishing", "Gentle", "Brightening", "Soothing", "Lightweight", "Daily"],
        attributes: &[
            "paraben free", "cruelty free", "long lasting", "natural ingredients", "sensitive skin", "dry skin",
            "easy to use", "travel size", "fragrance free", "tea tree", "hyaluronic acid", "anti aging", "high quality",
        ],
        options: &[
            ("Color", &["Nude", "Ruby Red", "Coral", "Berry", "Mauve", "Clear"]),
            ("Scent", &["Lavender", "Unscented", "Coconut", "Rose", "Citrus"]),
            ("Size", &["1 Fl Oz (Pack of 1)", "3.4 Fl Oz", "8 Ounce (Pack of 2)", "16.9 Fl Oz"]),
        ],
        price: (4.0, 90.0),
        specs: &["1.7 Fl Oz", "8 Ounce", "Pack of 2", "Travel Size", "12 Count"],
    },
    CategorySpec {
        category: "electronics",
        shelves: &[
            ("Electronics › Computers & Accessories › Computer Accessories & Peripherals › Keyboards, Mice & Accessories › Mice", &["wireless mouse", "gaming mouse", "ergonomic mouse"]),
            ("Electronics › Headphones, Earbuds & Accessories › Headphones › Over-Ear Headphones", &["bluetooth headphones", "noise cancelling headphones", "wireless earbuds"]),
            ("Electronics › Accessories & Supplies › Audio & Video Accessories › Cables › HDMI Cables", &["hdmi cable", "usb c cable", "displayport cable"]),
            ("Electronics › Cell Phones & Accessories › Cases, Holsters & Sleeves › Basic Cases", &["phone case", "tablet case", "screen protector"]),
            ("Electronics › Television & Video › Televisions", &["smart tv", "4k tv", "tv wall mount"]),
            ("Electronics › Power Accessories › Chargers › USB Chargers", &["usb c charger", "wall charger", "portable power bank"]),
        ],
        brands: &["Voltrix", "Sonique", "Nexacore", "Brightwave", "Kinetik", "Auralis", "Quanta Labs", "Zephyr Tech"],
        adjectives: &["Wireless", "Ultra Slim", "Portable", "Premium", "Compact", "Pro", "Rechargeable"],
        attributes: &[
            "high speed", "fast charging", "noise cancelling", "easy install", "long battery life", "water resistant",
            "usb port", "high definition", "wireless bluetooth", "plug and play", "aluminum alloy", "dual band",
        ],
        options: &[
            ("Color", &["Black", "White", "Silver", "Navy Blue", "Space Gray", "Red"]),
            ("Size", &["3 ft", "6 ft", "10 ft", "2 Pack", "32 Inch", "55 Inch"]),
            ("Style", &["Standard", "Pro", "Bundle with Case", "Wired/Wireless"]),
        ],
        price: (7.0, 600.0),
        specs: &["4K 60Hz", "20W", "Bluetooth 5.3", "2 Pack", "USB-C", "40 Hour Playtime"],
    },
    CategorySpec {
        category: "fashion",
        shelves: &[
            ("Clothing, Shoes & Jewelry › Women › Shoes › Sandals › Flat Sandals", &["flat sandals", "slide sandals", "wedge sandals"]),
            ("Clothing, Shoes & Jewelry › Men › Clothing › Shirts › T-Shirts", &["t-shirt", "crew neck tee", "polo shirt"]),
            ("Clothing, Shoes & Jewelry › Women › Clothing › Dresses › Casual", &["maxi dress", "summer dress", "wrap dress"]),
            ("Clothing, Shoes & Jewelry › Men › Shoes › Athletic › Running", &["running shoes", "walking shoes", "trail sneakers"]),
            ("Clothing, Shoes & Jewelry › Women › Clothing › Active › Leggings", &["yoga leggings", "workout shorts", "sports bra"]),
            ("Clothing, Shoes & Jewelry › Men › Clothing › Jackets & Coats › Lightweight Jackets", &["rain jacket", "fleece jacket", "puffer vest"]),
        ],
        brands: &["Northtrail", "Maison Clea", "Urban Loom", "Stride & Co", "Pacifica Wear", "Ironleaf", "Bella Sorel", "Kestrel"],
        adjectives: &["Classic", "Casual", "Lightweight", "Breathable", "Comfort", "Everyday", "Vintage"],
        attributes: &[
            "machine wash", "long sleeve", "short sleeve", "rubber sole", "arch support", "slim fit", "high waist",
            "button closure", "polyester spandex", "cotton blend", "relaxed fit", "non slip", "quick drying",
        ],
        options: &[
            ("Color", &["Black", "Navy Blue", "White", "Heather Grey", "Khaki", "Pink", "Olive Green", "Black/White"]),
            ("Size", &["Small", "Medium", "Large", "X-Large", "XX-Large", "7", "7.5", "8", "8.5", "9", "10", "11"]),
            ("Fit Type", &["Regular", "Big & Tall", "Petite"]),
        ],
        price: (9.0, 140.0),
        specs: &["Regular Fit", "Pack of 3", "Wide Width", "Plus Size", "Slim Fit"],
    },
    CategorySpec {
        category: "food",
        shelves: &[
            ("Grocery & Gourmet Food › Snacks & Sweets › Chips & Crisps › Potato", &["potato chips", "kettle chips", "veggie crisps"]),
            ("Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Tea › Green", &["green tea", "herbal tea", "matcha powder"]),
            ("Grocery & Gourmet Food › Pantry Staples › Herbs, Spices & Seasonings › Mixed Spices & Seasonings", &["seasoning blend", "sea salt", "taco seasoning"]),
            ("Grocery & Gourmet Food › Snacks & Sweets › Cookies › Chocolate Chip", &["chocolate chip cookies", "shortbread cookies", "protein bars"]),
            ("Grocery & Gourmet Food › Breakfast Foods › Cereals › Granola", &["granola", "oatmeal cups", "breakfast cereal"]),
            ("Grocery & Gourmet Food › Beverages › Bottled Beverages, Water & Drink Mixes › Energy Drinks", &["energy drink", "sparkling water", "electrolyte drink mix"]),
        ],
        brands: &["Harvest Lane", "Golden Acre", "Nutrisun", "Maple & Oak", "Blue Orchard", "Farmstead", "Tastewell", "Kettle Ridge"],
        adjectives: &["Organic", "Crunchy", "Classic", "Gourmet", "Wholesome", "Zesty", "Artisan"],
        attributes: &[
            "gluten free", "non gmo", "low carb", "sugar free", "keto friendly", "plant based", "high protein",
            "certified organic", "kosher", "individually wrapped", "low calorie", "natural flavors",
        ],
        options: &[
            ("Flavor Name", &["Original", "Sea Salt", "BBQ", "Chocolate", "Vanilla", "Mint", "Lemon", "Variety Pack"]),
            ("Size", &["12 Count (Pack of 1)", "1.5 Ounce (Pack of 24)", "8 Ounce", "2 Pound", "16 Fl Oz (Pack of 12)"]),
        ],
        price: (2.5, 70.0),
        specs: &["12 Count", "1.5 Ounce (Pack of 24)", "2 Pound Bag", "16 Fl Oz", "Family Size"],
    },
    CategorySpec {
        category: "furniture",
        shelves: &[
            ("Home & Kitchen › Furniture › Living Room Furniture › Sofas & Couches", &["sofa", "loveseat", "sleeper sofa"]),
            ("Home & Kitchen › Furniture › Bedroom Furniture › Nightstands", &["nightstand", "dresser", "bedside table"]),
            ("Home & Kitchen › Furniture › Home Office Furniture › Home Office Chairs › Desk Chairs", &["office chair", "desk chair", "gaming chair"]),
            ("Home & Kitchen › Furniture › Kitchen & Dining Room Furniture › Tables", &["dining table", "coffee table", "bar stool"]),
            ("Home & Kitchen › Home Décor Products › Window Treatments › Curtains & Drapes › Panels", &["blackout curtains", "sheer curtains", "curtain rod"]),
            ("Home & Kitchen › Furniture › Bedroom Furniture › Beds, Frames & Bases › Beds", &["platform bed", "bed frame", "storage bed"]),
        ],
        brands: &["Oakhaven", "Nordvik Home", "Casa Linea", "Timberline Studio", "Willow & Ash", "Urbanest", "Hearthwood", "Lumen Living"],
        adjectives: &["Modern", "Rustic", "Mid Century", "Minimalist", "Industrial", "Classic", "Farmhouse"],
        attributes: &[
            "easy assemble", "solid wood", "living room", "storage space", "mid century", "metal frame",
            "faux leather", "wood finish", "lumbar support", "easy clean", "space saving", "heavy duty",
        ],
        options: &[
            ("Color", &["Espresso", "White", "Walnut", "Grey", "Black", "Natural", "Rustic Brown"]),
            ("Size", &["Twin", "Full", "Queen", "King", "42 in", "52 x 84 in", "63 in"]),
        ],
        price: (25.0, 1200.0),
        specs: &["Set of 2", "Queen Size", "52 x 84 Inch", "Easy Assembly", "2 Drawers"],
    },
];

/// Writes `products` products drawn with `seed` into `dir` (created if needed).
pub fn generate(dir: &Path, products: usize, seed: u64) -> Result<GenSummary, GenError> {
    std::fs::create_dir_all(dir).map_err(|source| GenError { path: dir.to_owned(), source })?;
    let mut items = JsonWriter::create(&dir.join(PRODUCTS_FILE), b'[')?;
    let mut ins = JsonWriter::create(&dir.join(INS_FILE), b'{')?;
    let mut human = JsonWriter::create(&dir.join(HUMAN_INS_FILE), b'{')?;
    let mut summary = GenSummary { products, with_instruction: 0, with_human_instructions: 0 };
    for i in 0..products {
        let g = generate_one(seed, i);
        items.element(None, &g.record)?;
        summary.with_instruction += usize::from(g.ins.instruction.is_some());
        ins.element(Some(&g.record.asin), &g.ins)?;
        if let Some(h) = &g.human {
            summary.with_human_instructions += 1;
            human.element(Some(&g.record.asin), h)?;
        }
    }
    items.finish(b']')?;
    ins.finish(b'}')?;
    human.finish(b'}')?;
    Ok(summary)
}

/// Writes a JSON array or object one element per line.
struct JsonWriter {
    path: PathBuf,
    out: BufWriter<File>,
    first: bool,
}

impl JsonWriter {
    fn create(path: &Path, open: u8) -> Result<JsonWriter, GenError> {
        let err = |source| GenError { path: path.to_owned(), source };
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path).map_err(err)?);
        out.write_all(&[open]).map_err(err)?;
        Ok(JsonWriter { path: path.to_owned(), out, first: true })
    }

    fn element<T: Serialize>(&mut self, key: Option<&str>, value: &T) -> Result<(), GenError> {
        let sep: &[u8] = if self.first { b"\n" } else { b",\n" };
        self.first = false;
        let result = (|| {
            self.out.write_all(sep)?;
            if let Some(key) = key {
                serde_json::to_writer(&mut self.out, key)?;
                self.out.write_all(b": ")?;
            }
            serde_json::to_writer(&mut self.out, value)?;
            Ok::<(), std::io::Error>(())
        })();
        result.map_err(|source| GenError { path: self.path.clone(), source })
    }

    fn finish(mut self, close: u8) -> Result<(), GenError> {
        let result = (|| {
            if !self.first {
                self.out.write_all(b"\n")?;
            }
            self.out.write_all(&[close, b'\n'])?;
            self.out.flush()
        })();
        result.map_err(|source| GenError { path: self.path, source })
    }
}

/// The raw `items_shuffle` fields WebShop reads, plus a few it ignores, in the real field order.
#[derive(Serialize)]
struct RawRecord {
    name: String,
    brand: String,
    full_description: String,
    pricing: String,
    list_price: String,
    images: Vec<String>,
    product_category: String,
    average_rating: f64,
    small_description: Vec<String>,
    total_reviews: u32,
    customization_options: serde_json::Map<String, serde_json::Value>,
    asin: String,
    category: String,
    query: String,
}

#[derive(Serialize)]
struct InsRecord {
    attributes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instruction: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instruction_attributes: Option<Vec<String>>,
}

#[derive(Serialize)]
struct HumanRecord {
    asin: String,
    instruction: String,
    instruction_attributes: Vec<String>,
    instruction_options: Vec<String>,
    assignment_id: String,
    worker_id: String,
}

struct Generated {
    record: RawRecord,
    ins: InsRecord,
    human: Option<Vec<HumanRecord>>,
}

/// A unique 10-character asin per index: `B0` + 8 base-36 digits of an invertible mix of `i`.
fn asin(seed: u64, i: usize) -> String {
    const SPACE: u64 = 36u64.pow(8);
    // 1_000_003 is prime and coprime with 36, so `i ↦ i·m + offset (mod 36^8)` is a bijection.
    let mut v = (i as u64).wrapping_mul(1_000_003).wrapping_add(seed.wrapping_mul(7919)) % SPACE;
    let mut digits = [b'0'; 8];
    for d in digits.iter_mut().rev() {
        *d = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[(v % 36) as usize];
        v /= 36;
    }
    format!("B0{}", String::from_utf8_lossy(&digits))
}

fn title_case(s: &str) -> String {
    s.split(' ')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn pick<'a, T>(rng: &mut ChaCha8Rng, items: &'a [T]) -> &'a T {
    // Every table above is non-empty; an empty one is a programming error caught by the tests.
    items.choose(rng).expect("non-empty generator table")
}

/// `n` distinct items of `items` (in table order), n ≤ len.
fn pick_distinct<T: Clone>(rng: &mut ChaCha8Rng, items: &[T], n: usize) -> Vec<T> {
    let mut idx: Vec<usize> = rand::seq::index::sample(rng, items.len(), n.min(items.len())).into_vec();
    idx.sort_unstable();
    idx.into_iter().map(|i| items[i].clone()).collect()
}

fn price_text(rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> (String, f64) {
    // Log-uniform: many cheap items, a few expensive ones, as in a real store.
    let p = (lo.ln() + (hi.ln() - lo.ln()) * rng.random::<f64>()).exp();
    let cents = (p * 100.0).round() / 100.0;
    let fmt = |v: f64| {
        let whole = v.trunc() as u64;
        let frac = ((v - v.trunc()) * 100.0).round() as u64;
        // Real records write thousands with a comma; the loader strips it.
        let whole = if whole >= 1000 { format!("{},{:03}", whole / 1000, whole % 1000) } else { whole.to_string() };
        format!("${whole}.{frac:02}")
    };
    (fmt(cents), cents)
}

fn generate_one(seed: u64, i: usize) -> Generated {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(i as u64);
    let rng = &mut rng;
    let spec = pick(rng, CATEGORIES);
    let (shelf, nouns) = *pick(rng, spec.shelves);
    let noun = *pick(rng, nouns);
    let brand = *pick(rng, spec.brands);
    let adjective = *pick(rng, spec.adjectives);
    let n_attrs = rng.random_range(3..=5);
    let attributes: Vec<String> = pick_distinct(rng, spec.attributes, n_attrs).into_iter().map(str::to_owned).collect();
    let spec_text = *pick(rng, spec.specs);

    let name = format!(
        "{brand} {adjective} {} with {}, {} - {spec_text}",
        title_case(noun),
        title_case(&attributes[0]),
        title_case(&attributes[1])
    );
    let full_description = format!(
        "Meet the {adjective_l} {noun} from {brand}. It is {a0} and {a1}, made for everyday use. \
         {brand} designs every {noun} to be {a2}{more}. Backed by our satisfaction promise.",
        adjective_l = adjective.to_lowercase(),
        a0 = attributes[0],
        a1 = attributes[1],
        a2 = attributes[2],
        more = attributes.get(3).map(|a| format!(" and {a}")).unwrap_or_default(),
    );
    let mut small_description: Vec<String> = attributes
        .iter()
        .map(|a| format!("{}: this {noun} is {a}, as promised by {brand} ", a.to_uppercase()))
        .collect();
    small_description.push(format!("Package includes: 1 x {} ({spec_text}) ", title_case(noun)));

    // 10% no price (shown as $100.0), 15% a range, the rest one price.
    let pricing = match rng.random_range(0..20) {
        0 | 1 => String::new(),
        2..=4 => {
            let (a, pa) = price_text(rng, spec.price.0, spec.price.1);
            let (b, _) = price_text(rng, pa, spec.price.1 * 1.5);
            format!("{a}{b}")
        }
        _ => price_text(rng, spec.price.0, spec.price.1).0,
    };

    let mut options = serde_json::Map::new();
    let mut chosen_option: Option<String> = None;
    if rng.random_range(0..10) < 8 {
        let n_kinds = rng.random_range(1..=spec.options.len());
        for (opt_name, values) in pick_distinct(rng, spec.options, n_kinds) {
            let n_values = rng.random_range(2..=values.len().min(6));
            let values = pick_distinct(rng, values, n_values);
            let selected = rng.random_range(0..values.len());
            if chosen_option.is_none() {
                chosen_option = Some(values[selected].to_lowercase().replace('/', " | "));
            }
            let entries: Vec<serde_json::Value> = values
                .iter()
                .enumerate()
                .map(|(k, v)| {
                    serde_json::json!({
                        "is_selected": k == selected,
                        "url": null,
                        "value": v,
                        "price_string": "",
                        "price": 0,
                        "image": null,
                    })
                })
                .collect();
            options.insert(opt_name.to_owned(), serde_json::Value::Array(entries));
        }
    }

    let asin = asin(seed, i);
    let query = if rng.random_bool(0.5) { noun.to_owned() } else { format!("{} {noun}", attributes[0]) };
    let record = RawRecord {
        name,
        brand: format!("Brand: {brand}"),
        full_description,
        pricing,
        list_price: String::new(),
        images: vec![format!("https://example.invalid/images/{asin}.jpg")],
        product_category: shelf.to_owned(),
        average_rating: f64::from(rng.random_range(30..=50u32)) / 10.0,
        small_description,
        total_reviews: rng.random_range(0..5000),
        customization_options: options,
        asin: asin.clone(),
        category: spec.category.to_owned(),
        query,
    };

    let ins = if rng.random_bool(0.4) {
        let k = rng.random_range(1..=attributes.len().min(3));
        let wanted = pick_distinct(rng, &attributes, k);
        let instruction = match wanted.as_slice() {
            [only] => format!("Find me {noun} with {only}"),
            [first @ .., last] => format!("Find me {} {noun} with {last}", first.join(", ")),
            [] => format!("Find me {noun}"),
        };
        InsRecord {
            attributes: attributes.clone(),
            instruction: Some(instruction),
            instruction_attributes: Some(wanted),
        }
    } else {
        InsRecord { attributes: attributes.clone(), instruction: None, instruction_attributes: None }
    };

    let human = rng.random_bool(0.1).then(|| {
        let wanted = pick_distinct(rng, &attributes, 1);
        let option_clause = chosen_option.as_ref().map(|o| format!(" in {o}")).unwrap_or_default();
        vec![HumanRecord {
            asin: asin.clone(),
            instruction: format!("i am looking for a {} {noun}{option_clause}", wanted[0]),
            instruction_attributes: wanted,
            instruction_options: chosen_option.iter().cloned().collect(),
            assignment_id: format!("synthetic-{i}"),
            worker_id: "synthetic".to_owned(),
        }]
    });

    Generated { record, ins, human }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asins_are_unique_and_ten_chars() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..20_000 {
            let a = asin(3, i);
            assert_eq!(a.len(), 10);
            assert!(seen.insert(a));
        }
    }

    #[test]
    fn product_i_does_not_depend_on_catalog_size() {
        let a = generate_one(5, 17);
        let b = generate_one(5, 17);
        assert_eq!(serde_json::to_string(&a.record).ok(), serde_json::to_string(&b.record).ok());
        assert_ne!(asin(5, 17), asin(5, 18));
    }
}
