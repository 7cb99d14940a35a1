//! The product catalog: WebShop's own files (`items_shuffle*.json`, `items_ins_v2*.json`,
//! `items_human_ins.json`) cleaned exactly as the original does.

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
