//! The generator and the demo catalog shipped in `assets/demo_catalog/`.

use std::path::PathBuf;

use gigscope::webshop::catalog::Catalog;
use gigscope::webshop::product_search::ProductIndex;
use gigscope::webshop::synthetic_catalog as gen;

fn assets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/demo_catalog")
}

#[test]
fn regenerating_the_demo_catalog_gives_identical_files() {
    let out = tempfile::tempdir().expect("temp dir");
    gen::generate(out.path(), gen::DEMO_PRODUCTS, gen::DEMO_SEED).expect("generate");
    for name in [gen::PRODUCTS_FILE, gen::INS_FILE, gen::HUMAN_INS_FILE] {
        let shipped = std::fs::read(assets().join(name)).expect("shipped file");
        let fresh = std::fs::read(out.path().join(name)).expect("fresh file");
        assert!(shipped == fresh, "{name} differs from `gigscope webshop gen-catalog --out assets/demo_catalog`");
    }
}

#[test]
fn embedded_demo_catalog_is_complete_and_searchable() {
    let c = Catalog::embedded_demo().expect("embedded demo");
    assert_eq!(c.len(), gen::DEMO_PRODUCTS);
    let categories: std::collections::BTreeSet<&str> = c.products.iter().map(|p| p.category.as_str()).collect();
    assert_eq!(categories.into_iter().collect::<Vec<_>>(), ["beauty", "electronics", "fashion", "food", "furniture"]);
    assert!(c.products.iter().all(|p| p.product_category.split(" › ").count() >= 3));
    assert!(c.products.iter().any(|p| p.prices.len() == 2), "some price ranges");
    assert!(c.products.iter().any(|p| p.price_text == "$100.0"), "some missing prices");
    assert!(c.products.iter().any(|p| p.options.iter().any(|(n, _)| n == "color")));
    assert!(c.products.iter().any(|p| p.options.iter().any(|(n, _)| n == "flavor name")));
    assert!(c.products.iter().all(|p| p.attributes.len() >= 3));
    let with_instruction = c.products.iter().filter(|p| p.instruction.is_some()).count();
    assert!(with_instruction > 200, "{with_instruction} instructions");
    assert!(!c.human_instructions.is_empty());
    // Synthetic instruction attributes are the product's own attributes.
    for p in c.products.iter().filter(|p| p.instruction.is_some()) {
        assert!(p.instruction_attributes.iter().all(|a| p.attributes.contains(a)));
    }
    // The same files on disk load to the same catalog as the embedded bytes.
    let from_disk = Catalog::load(&assets(), gigscope::webshop::catalog::DEMO_SEED).expect("load assets");
    assert_eq!(from_disk.products, c.products);

    let index = ProductIndex::build_in_memory(&c).expect("index");
    let p = &c.products[0];
    let hits = index.search(&p.title);
    assert_eq!(c.products[hits[0]].asin, p.asin, "a product's own title finds it first");
}

#[test]
fn generator_scales_linearly_and_is_seeded() {
    let a = tempfile::tempdir().expect("temp dir");
    let b = tempfile::tempdir().expect("temp dir");
    gen::generate(a.path(), 50, 1).expect("generate");
    gen::generate(b.path(), 80, 1).expect("generate");
    let ca = Catalog::load(a.path(), 0).expect("load");
    let cb = Catalog::load(b.path(), 0).expect("load");
    assert_eq!(ca.len(), 50);
    // Product i does not depend on the catalog size.
    assert_eq!(ca.products[..], cb.products[..50]);
    let c = tempfile::tempdir().expect("temp dir");
    gen::generate(c.path(), 50, 2).expect("generate");
    assert_ne!(Catalog::load(c.path(), 0).expect("load").products, ca.products);
}
