//! WebShop's inputs from outside and the queries users type: a catalog's products file, a goals file, a product
//! search query, a trajectory query (the TUI's `/` and `gigscope search`). The first byte picks which.
#![no_main]

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use gigscope::advantage::AdvantageSettings;
use gigscope::index::TrajectoryIndex;
use gigscope::webshop::catalog::Catalog;
use gigscope::webshop::goals::load_goals;
use gigscope::webshop::product_search::ProductIndex;
use gigscope_fuzz::{good_episodes, scratch};
use libfuzzer_sys::fuzz_target;

fn product_index() -> &'static ProductIndex {
    static INDEX: OnceLock<ProductIndex> = OnceLock::new();
    INDEX.get_or_init(|| {
        let catalog = Catalog::embedded_demo().expect("the demo catalog loads");
        ProductIndex::build_in_memory(&catalog).expect("the demo catalog is indexed")
    })
}

/// A trajectory index of two sample episodes (its directories live as long as the process).
fn trajectory_index() -> &'static Mutex<TrajectoryIndex> {
    static INDEX: OnceLock<Mutex<TrajectoryIndex>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let (run, cache) = (scratch().keep(), scratch().keep());
        let lines: String = good_episodes().iter().map(|(line, _)| format!("{line}\n")).collect();
        std::fs::write(run.join("episodes.jsonl"), lines).unwrap();
        let index = TrajectoryIndex::open(&run, &cache, &AdvantageSettings::default()).expect("the index opens");
        Mutex::new(index)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, fuzzed)) = data.split_first() else { return };
    match which % 4 {
        0 => {
            let products = Path::new("items_shuffle.json");
            let attributes: &[u8] = b"{}";
            let read = Catalog::from_readers(
                (products, fuzzed),
                (Path::new("items_ins_v2.json"), attributes),
                None::<(&Path, &[u8])>,
                0,
            );
            if let Err(e) = read {
                assert!(e.to_string().contains("items_"), "a catalog error that names no file: {e}");
            }
        }
        1 => {
            let dir = scratch();
            let path = dir.path().join("goals.json");
            std::fs::write(&path, fuzzed).unwrap();
            if let Err(e) = load_goals(&path) {
                assert!(e.to_string().contains("goals.json"), "a goals error that names no file: {e}");
            }
        }
        2 => {
            let _ = product_index().search(&String::from_utf8_lossy(fuzzed));
        }
        _ => {
            let index = trajectory_index().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let _ = index.search(&String::from_utf8_lossy(fuzzed), 10);
        }
    }
});
