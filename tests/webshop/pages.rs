//! The text renderer against real pages rendered by the original WebShop site
//! (`../shared/webshop/mock_pages/`). The original's text mode is the page's visible text nodes,
//! stripped and joined with ` [SEP] `. Each test reads the product data out of the page by its
//! markup (classes, radio inputs), renders it with gigscope, and compares with the page's text.

use std::path::PathBuf;

use gigscope::webshop::catalog::Product;
use gigscope::webshop::page::{classify_observation, PageType};
use gigscope::webshop::render::{format_for_gigpo, item_page, item_sub_page, results_page, SubPage};

fn mock_page(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/webshop/mock_pages").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A text node with the tag and attributes of the element that holds it.
#[derive(Debug)]
struct TextNode {
    text: String,
    tag: String,
    attrs: String,
}

/// Minimal HTML reading for these pages: text nodes outside `head`, `script`, `style` and comments,
/// each with its innermost open element; plus the radio inputs as (name, value).
struct Parsed {
    texts: Vec<TextNode>,
    radios: Vec<(String, String)>,
}

const VOID: &[&str] = &["input", "img", "br", "link", "meta", "hr"];

fn decode(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let end = after.find(';').expect("entity ends with ;");
        let entity = &after[1..end];
        let c = match entity {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            e if e.starts_with("#x") => char::from_u32(u32::from_str_radix(&e[2..], 16).unwrap()).unwrap(),
            e if e.starts_with('#') => char::from_u32(e[1..].parse().unwrap()).unwrap(),
            e => panic!("unknown entity {e}"),
        };
        out.push(c);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn attr(attrs: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let start = attrs.find(&key)? + key.len();
    let end = attrs[start..].find('"')? + start;
    Some(decode(&attrs[start..end]))
}

fn parse(html: &str) -> Parsed {
    let mut texts = Vec::new();
    let mut radios = Vec::new();
    let mut stack: Vec<(String, String)> = Vec::new();
    let mut rest = html;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("<!--") {
            let end = after.find("-->").expect("comment closes");
            rest = &after[end + 3..];
        } else if rest.starts_with('<') {
            let end = rest.find('>').expect("tag closes");
            let inner = &rest[1..end];
            rest = &rest[end + 1..];
            if let Some(name) = inner.strip_prefix('/') {
                let name = name.trim().to_lowercase();
                // An end tag without a matching open element (the pages have `<h4>…</h5>`) is ignored.
                if let Some(pos) = stack.iter().rposition(|(t, _)| *t == name) {
                    stack.truncate(pos);
                }
                continue;
            }
            if inner.starts_with('!') {
                continue;
            }
            let (name, attrs) = inner.split_once(char::is_whitespace).unwrap_or((inner, ""));
            let name = name.to_lowercase();
            if name == "input" && attr(attrs, "type").as_deref() == Some("radio") {
                radios.push((attr(attrs, "name").unwrap(), attr(attrs, "value").unwrap()));
            }
            if matches!(name.as_str(), "script" | "style" | "head") {
                let close = format!("</{name}>");
                let end = rest.find(&close).expect("raw element closes");
                rest = &rest[end + close.len()..];
                continue;
            }
            if !VOID.contains(&name.as_str()) {
                stack.push((name, attrs.to_owned()));
            }
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            let text = decode(&rest[..end]);
            rest = &rest[end..];
            let (tag, attrs) = stack.last().cloned().unwrap_or_default();
            texts.push(TextNode { text, tag, attrs });
        }
    }
    Parsed { texts, radios }
}

impl Parsed {
    /// The original's text mode for this page (indentation between tags is not page text).
    fn text_mode(&self) -> String {
        let visible: Vec<&str> = self.texts.iter().map(|t| t.text.trim()).filter(|t| !t.is_empty()).collect();
        visible.join(" [SEP] ")
    }

    /// Non-blank text nodes held by an element of `class`.
    fn with_class(&self, class: &str) -> Vec<String> {
        self.texts
            .iter()
            .filter(|t| !t.text.trim().is_empty())
            .filter(|t| attr(&t.attrs, "class").is_some_and(|c| c.split_whitespace().any(|c| c == class)))
            .map(|t| t.text.clone())
            .collect()
    }

    fn in_tag(&self, tag: &str) -> Vec<String> {
        self.texts.iter().filter(|t| t.tag == tag && !t.text.trim().is_empty()).map(|t| t.text.clone()).collect()
    }

    fn instruction(&self) -> String {
        let i = self.texts.iter().position(|t| t.text == "Instruction:").expect("instruction label");
        self.texts[i + 1].text.clone()
    }

    /// Radio inputs grouped by option name, in page order.
    fn options(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for (name, value) in &self.radios {
            match out.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1.push(value.clone()),
                None => out.push((name.clone(), vec![value.clone()])),
            }
        }
        out
    }
}

fn product(asin: &str, title: &str, price_text: &str) -> Product {
    Product {
        asin: asin.to_owned(),
        title: title.to_owned(),
        description: String::new(),
        bullet_points: Vec::new(),
        category: String::new(),
        product_category: String::new(),
        query: String::new(),
        price_text: price_text.to_owned(),
        prices: Vec::new(),
        price: 0.0,
        options: Vec::new(),
        attributes: Vec::new(),
        instruction: None,
        instruction_attributes: Vec::new(),
        title_nouns: None,
    }
}

/// The asin of the item the item-page mocks show (from their form actions).
const ITEM_ASIN: &str = "B09P87V3LZ";

fn item_product(page: &Parsed) -> Product {
    let titles = page.in_tag("h2");
    assert_eq!(titles.len(), 1);
    let price = page.texts.iter().find_map(|t| t.text.strip_prefix("Price: ")).expect("price line");
    let mut p = product(ITEM_ASIN, &titles[0], price);
    p.options = page.options();
    p
}

#[test]
fn results_page_matches_the_original() {
    let page = parse(&mock_page("mock_parse_results_ws.html"));
    let asins = page.in_tag("a");
    let titles = page.with_class("product-title");
    let prices = page.with_class("product-price");
    assert_eq!(asins.len(), 10);
    assert_eq!((titles.len(), prices.len()), (10, 10));
    let products: Vec<Product> = (0..10).map(|i| product(&asins[i], &titles[i], &prices[i])).collect();
    let rendered = results_page(&page.instruction(), 1, 50, &products);
    assert_eq!(rendered, page.text_mode());
    assert_eq!(classify_observation(&rendered), PageType::Results);
    assert_eq!(classify_observation(&format_for_gigpo(&rendered)), PageType::Results);
    assert!(format_for_gigpo(&rendered)
        .starts_with("'Back to Search' [SEP] 'Page 1 (Total results: 50)' [SEP] 'Next >' [SEP] 'B09GKFNQWT'"));
}

#[test]
fn item_page_matches_the_original() {
    let page = parse(&mock_page("mock_parse_item_page_ws.html"));
    let p = item_product(&page);
    assert_eq!(p.options.len(), 2, "{:?}", p.options);
    let rendered = item_page(&page.instruction(), &p);
    assert_eq!(rendered, page.text_mode());
    assert_eq!(classify_observation(&rendered), PageType::Item);
    assert_eq!(classify_observation(&format_for_gigpo(&rendered)), PageType::Item);
}

#[test]
fn description_page_matches_the_original() {
    let page = parse(&mock_page("mock_parse_item_page_ws_desc.html"));
    let mut p = product(ITEM_ASIN, "", "");
    let info = page.with_class("product-info");
    assert_eq!(info.len(), 1);
    p.description = info[0].clone();
    let rendered = item_sub_page(&page.instruction(), &p, SubPage::Description);
    assert_eq!(rendered, page.text_mode());
    assert_eq!(classify_observation(&rendered), PageType::ItemSub);
    assert_eq!(classify_observation(&format_for_gigpo(&rendered)), PageType::ItemSub);
}

#[test]
fn features_page_matches_the_original() {
    let page = parse(&mock_page("mock_parse_item_page_ws_feat.html"));
    let mut p = product(ITEM_ASIN, "", "");
    p.bullet_points = page.with_class("product-info");
    assert_eq!(p.bullet_points.len(), 8);
    // The bullets carry the scraped leading/trailing spaces; the text mode strips them.
    assert!(p.bullet_points[0].starts_with(' '));
    let rendered = item_sub_page(&page.instruction(), &p, SubPage::Features);
    assert_eq!(rendered, page.text_mode());
    assert_eq!(classify_observation(&rendered), PageType::ItemSub);
}
