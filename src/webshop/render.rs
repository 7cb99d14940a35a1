//! Observation strings of the original's `text` mode, and the GiGPO trainer's reformatting of them.
//!
//! The original renders each page as HTML and turns it into text by taking the page's visible text nodes,
//! skipping nodes that are exactly `"\n"`, stripping each one and joining them with ` [SEP] `. The
//! templates put every data field in an element of its own, so a field contributes one segment: none when
//! it is empty (the element has no text node), an empty segment when it is whitespace only. The fixed
//! strings and their order follow the site's templates, checked against real pages in the tests.

use crate::text::py_strip;
use crate::webshop::catalog::Product;
use crate::webshop::page::{
    BACK_TO_SEARCH, BUY_NOW, DESCRIPTION, FEATURES, INSTRUCTION, NEXT, PREV, REVIEWS, SEARCH, SEP, THANK_YOU, WEBSHOP,
};

/// Products per results page.
pub const RESULTS_PER_PAGE: usize = 10;

/// The three sub-pages of an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubPage {
    Description,
    Features,
    Reviews,
}

impl SubPage {
    /// The button that opens it, as shown.
    pub fn label(self) -> &'static str {
        match self {
            SubPage::Description => DESCRIPTION,
            SubPage::Features => FEATURES,
            SubPage::Reviews => REVIEWS,
        }
    }
}

/// Visible strings of a page, in document order.
struct Segments {
    out: String,
    empty: bool,
}

impl Segments {
    fn new() -> Segments {
        Segments { out: String::with_capacity(256), empty: true }
    }

    fn push(&mut self, s: &str) {
        if !self.empty {
            self.out.push_str(SEP);
        }
        self.out.push_str(s);
        self.empty = false;
    }

    /// A fixed string of the template (already stripped and never empty).
    fn fixed(&mut self, s: &str) {
        self.push(s);
    }

    /// A data field: its text node, if it has one, stripped.
    fn field(&mut self, text: &str) {
        if !text.is_empty() && text != "\n" {
            self.push(py_strip(text));
        }
    }

    /// The instruction box and the `Back to Search` button that open every page but the search page.
    fn header(instruction: &str) -> Segments {
        let mut s = Segments::new();
        s.fixed(INSTRUCTION);
        s.field(instruction);
        s.fixed(BACK_TO_SEARCH);
        s
    }

    fn finish(self) -> String {
        self.out
    }
}

/// `WebShop [SEP] Instruction: [SEP] {instruction} [SEP] Search`.
pub fn search_page(instruction: &str) -> String {
    let mut s = Segments::new();
    s.fixed(WEBSHOP);
    s.fixed(INSTRUCTION);
    s.field(instruction);
    s.fixed(SEARCH);
    s.finish()
}

/// Results page `page` (1-based) of a search with `total` hits showing `shown` (at most
/// [`RESULTS_PER_PAGE`]; none past the last page). `Next >` is always there, `< Prev` from page 2 on.
pub fn results_page<'a>(
    instruction: &str,
    page: usize,
    total: usize,
    shown: impl IntoIterator<Item = &'a Product>,
) -> String {
    let mut s = Segments::header(instruction);
    s.fixed(&format!("Page {page} (Total results: {total})"));
    if page > 1 {
        s.fixed(PREV);
    }
    s.fixed(NEXT);
    for p in shown {
        s.field(&p.asin);
        s.field(&p.title);
        s.field(&p.price_text);
    }
    s.finish()
}

/// An item page: its options (name, then values), title, price, rating and the four buttons.
pub fn item_page(instruction: &str, product: &Product) -> String {
    let mut s = Segments::header(instruction);
    s.fixed(PREV);
    for (name, values) in &product.options {
        s.field(name);
        for v in values {
            s.field(v);
        }
    }
    s.field(&product.title);
    // `Price: {price}` is one text node, stripped as a whole.
    s.field(&format!("Price: {}", product.price_text));
    // The original shows no ratings: every product's rating is "N.A.".
    s.fixed("Rating: N.A.");
    s.fixed(DESCRIPTION);
    s.fixed(FEATURES);
    s.fixed(REVIEWS);
    s.fixed(BUY_NOW);
    s.finish()
}

/// A sub-page of an item: the description text, one segment per bullet point, or nothing for the
/// reviews (the original carries no reviews).
pub fn item_sub_page(instruction: &str, product: &Product, sub: SubPage) -> String {
    let mut s = Segments::header(instruction);
    s.fixed(PREV);
    match sub {
        SubPage::Description => s.field(&product.description),
        SubPage::Features => product.bullet_points.iter().for_each(|b| s.field(b)),
        SubPage::Reviews => {}
    }
    s.finish()
}

/// The page after `Buy Now`. The original's page shows a session code and debugging tables meant for
/// crowd workers; this keeps its opening line and the score, which is all an agent could use.
pub fn done_page(reward: f64) -> String {
    let mut s = Segments::new();
    s.fixed(THANK_YOU);
    s.fixed("Your score (min 0.0, max 1.0)");
    s.fixed(&crate::text::pyfloat::repr(reward));
    s.finish()
}

/// The observation as the GiGPO trainer formats it (also its anchor): everything up to and including
/// the instruction is dropped and each remaining segment is wrapped in single quotes, so the search page
/// becomes `'Search'`. An observation without an instruction (the done page) keeps all its segments.
pub fn format_for_gigpo(obs: &str) -> String {
    let segments: Vec<&str> = obs.split(SEP).collect();
    let start = match segments.iter().position(|s| *s == INSTRUCTION) {
        Some(i) => (i + 2).min(segments.len()),
        None => 0,
    };
    let mut out = String::with_capacity(obs.len() + 2 * (segments.len() - start));
    for (k, seg) in segments[start..].iter().enumerate() {
        if k > 0 {
            out.push_str(SEP);
        }
        out.push('\'');
        out.push_str(seg);
        out.push('\'');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product() -> Product {
        Product {
            asin: "B000TEST01".into(),
            title: "Soft Shoe".into(),
            description: "  A shoe.\n".into(),
            bullet_points: vec![" warm ".into(), "light".into()],
            category: "fashion".into(),
            product_category: "Shoes › Men".into(),
            query: "shoes".into(),
            price_text: "$19.99".into(),
            prices: vec![19.99],
            price: 19.99,
            options: vec![
                ("color".into(), vec!["red".into(), "navy | blue".into()]),
                ("size".into(), vec!["8".into()]),
            ],
            attributes: vec![],
            instruction: None,
            instruction_attributes: vec![],
            title_nouns: None,
        }
    }

    #[test]
    fn pages_have_the_original_layout() {
        let p = product();
        assert_eq!(search_page("find x"), "WebShop [SEP] Instruction: [SEP] find x [SEP] Search");
        assert_eq!(
            results_page("find x", 1, 1, [&p]),
            "Instruction: [SEP] find x [SEP] Back to Search [SEP] Page 1 (Total results: 1) [SEP] Next > [SEP] B000TEST01 [SEP] Soft Shoe [SEP] $19.99"
        );
        assert_eq!(
            results_page("find x", 2, 1, []),
            "Instruction: [SEP] find x [SEP] Back to Search [SEP] Page 2 (Total results: 1) [SEP] < Prev [SEP] Next >"
        );
        assert_eq!(
            item_page("find x", &p),
            "Instruction: [SEP] find x [SEP] Back to Search [SEP] < Prev [SEP] color [SEP] red [SEP] navy | blue [SEP] size [SEP] 8 [SEP] Soft Shoe [SEP] Price: $19.99 [SEP] Rating: N.A. [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now"
        );
        let head = "Instruction: [SEP] find x [SEP] Back to Search [SEP] < Prev";
        assert_eq!(item_sub_page("find x", &p, SubPage::Description), format!("{head} [SEP] A shoe."));
        assert_eq!(item_sub_page("find x", &p, SubPage::Features), format!("{head} [SEP] warm [SEP] light"));
        assert_eq!(item_sub_page("find x", &p, SubPage::Reviews), head);
    }

    #[test]
    fn empty_fields_vanish_and_blank_fields_leave_an_empty_segment() {
        let mut p = product();
        p.description = "   ".into();
        let head = "Instruction: [SEP] i [SEP] Back to Search [SEP] < Prev";
        assert_eq!(item_sub_page("i", &p, SubPage::Description), format!("{head} [SEP] "));
        p.description = String::new();
        assert_eq!(item_sub_page("i", &p, SubPage::Description), head);
        p.description = "\n".into();
        assert_eq!(item_sub_page("i", &p, SubPage::Description), head);
    }

    #[test]
    fn gigpo_format_drops_the_instruction_and_quotes_segments() {
        assert_eq!(format_for_gigpo(&search_page("find x")), "'Search'");
        assert_eq!(
            format_for_gigpo(&item_sub_page("i", &product(), SubPage::Features)),
            "'Back to Search' [SEP] '< Prev' [SEP] 'warm' [SEP] 'light'"
        );
        let mut p = product();
        p.description = " ".into();
        assert_eq!(
            format_for_gigpo(&item_sub_page("i", &p, SubPage::Description)),
            "'Back to Search' [SEP] '< Prev' [SEP] ''"
        );
        assert_eq!(
            format_for_gigpo("Thank you for shopping with us! [SEP] 1.0"),
            "'Thank you for shopping with us!' [SEP] '1.0'"
        );
    }
}
