//! Goals built from the real 1k records (`../shared/webshop/`), checked against a Python transcription
//! of the original's goal procedure run by CPython (its `random` module is the oracle for the price
//! caps and the seeded shuffle).

use crate::python;

use std::fs::File;
use std::path::{Path, PathBuf};

use gigscope::webshop::catalog::Catalog;
use gigscope::webshop::goals::{
    build_goals, load_goals, save_goals, Goal, GoalOptions, GoalSource, Split, NO_PRICE_CAP,
};
use serde_json::{json, Value};

fn shared(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/webshop").join(name)
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/webshop").join(name)
}

/// The real records plus a small human-instruction file of our own.
fn catalog() -> Catalog {
    let open = |p: &Path| File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let (products, ins, human) =
        (shared("products_394.json"), shared("items_ins_v2_1000.json"), fixture("items_human_ins_sample.json"));
    Catalog::from_readers((&products, open(&products)), (&ins, open(&ins)), Some((&human, open(&human))), 11).unwrap()
}

/// The original's `get_synthetic_goals` / `get_human_goals` followed by `random.seed(233);
/// random.shuffle(goals)`, with the price caps drawn after `random.seed(cap_seed)`.
const ORACLE: &str = r#"
import sys, json, random, itertools
from collections import defaultdict
d = json.load(sys.stdin)
random.seed(d['cap_seed'])
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
def cap(price):
    price_range = [p for p in PRICE_RANGE if p > price][:4]
    if len(price_range) >= 2:
        _, price_upper = sorted(random.sample(price_range, 2))
        return price_upper, f', and price lower than {price_upper:.2f} dollars'
    return 1000000, ''
def base(p):
    return {'asin': p['asin'], 'category': p['category'], 'query': p['query'], 'name': p['name'],
            'product_category': p['product_category']}
goals = []
if d['source'] == 'synthetic':
    cnt = defaultdict(int)
    for p in d['products']:
        if p['instruction'] is None or not p['instruction_attributes']:
            continue
        price_upper, price_text = cap(p['price'])
        options = dict(p['options'])
        names = sorted(options)
        for combination in itertools.product(*(options[n] for n in names)):
            goal_options = {names[i]: o for i, o in enumerate(combination)}
            option_text = ', and '.join(f'{k}: {v}' for k, v in goal_options.items())
            option_text = ' with ' + option_text if option_text else ''
            g = base(p)
            g.update(instruction_text=f"{p['instruction']}{option_text}{price_text}",
                     attributes=p['instruction_attributes'], price_upper=price_upper, goal_options=goal_options)
            goals.append(g)
            for a in p['instruction_attributes']:
                cnt[a] += 1
    for g in goals:
        g['weight'] = sum(1. / cnt[a] for a in g['attributes']) / len(g['attributes'])
else:
    for p in d['products']:
        for ins in p['human']:
            if len(ins['instruction_attributes']) == 0:
                continue
            price_upper, price_text = cap(p['price'])
            g = base(p)
            g.update(instruction_text=ins['instruction'].strip('.') + price_text,
                     attributes=ins['instruction_attributes'], price_upper=price_upper,
                     goal_options=ins['instruction_options'], weight=1)
            goals.append(g)
random.seed(233)
random.shuffle(goals)
print(json.dumps(goals))
"#;

fn oracle_goals(catalog: &Catalog, source: &str, cap_seed: u64) -> Vec<Goal> {
    let products: Vec<Value> = catalog
        .products
        .iter()
        .map(|p| {
            let human: Vec<Value> = catalog
                .human_instructions
                .get(&p.asin)
                .into_iter()
                .flatten()
                .map(|h| {
                    json!({"instruction": h.instruction, "instruction_attributes": h.instruction_attributes,
                           "instruction_options": h.instruction_options})
                })
                .collect();
            json!({
                "asin": p.asin, "category": p.category, "query": p.query, "name": p.title,
                "product_category": p.product_category, "price": p.price, "options": p.options,
                "instruction": p.instruction, "instruction_attributes": p.instruction_attributes, "human": human,
            })
        })
        .collect();
    let input = json!({"cap_seed": cap_seed, "source": source, "products": products}).to_string();
    serde_json::from_str(&python::run_python(ORACLE, &input)).unwrap()
}

#[test]
fn synthetic_goals_match_the_original_procedure() {
    if !python::have_python("synthetic_goals_match_the_original_procedure") {
        return;
    }
    let catalog = catalog();
    for cap_seed in [0, 42] {
        let ours = build_goals(&catalog, GoalSource::Synthetic, cap_seed);
        let theirs = oracle_goals(&catalog, "synthetic", cap_seed);
        assert_eq!(ours.len(), theirs.len());
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(a, b, "goal {i}");
        }
    }
}

#[test]
fn human_goals_match_the_original_procedure() {
    if !python::have_python("human_goals_match_the_original_procedure") {
        return;
    }
    let catalog = catalog();
    let ours = build_goals(&catalog, GoalSource::Human, 5);
    assert_eq!(ours, oracle_goals(&catalog, "human", 5));
    // Two instructions have attributes; the one without is skipped, the unknown asin never loaded.
    assert_eq!(ours.len(), 2);
    let clusters = ours.iter().find(|g| g.asin == "B0017WNF34").unwrap();
    assert!(clusters
        .instruction_text
        .starts_with("i want caramel nut clusters in milk chocolate, and price lower than "));
    assert_eq!(clusters.goal_options, GoalOptions::Values(vec!["12 ounce".into()]));
    assert_eq!(clusters.weight, 1.0);
}

#[test]
fn synthetic_goals_from_the_real_records() {
    let catalog = catalog();
    let goals = build_goals(&catalog, GoalSource::Synthetic, 0);
    // Every product with an instruction contributes its option combinations.
    let expected: usize = catalog
        .products
        .iter()
        .filter(|p| p.instruction.is_some() && !p.instruction_attributes.is_empty())
        .map(|p| p.options.iter().map(|(_, v)| v.len()).product::<usize>())
        .sum();
    assert_eq!(goals.len(), expected);
    assert!(goals.len() > 216, "{}", goals.len());
    for g in &goals {
        let p = catalog.get(&g.asin).unwrap();
        let instruction = p.instruction.as_deref().unwrap();
        assert!(g.instruction_text.starts_with(instruction), "{}", g.instruction_text);
        assert_eq!(g.goal_options.len(), p.options.len());
        assert!(g.weight > 0.0 && g.weight <= 1.0);
        if g.price_upper == NO_PRICE_CAP {
            assert!(p.price >= 980.0);
        } else {
            assert!(g.price_upper > p.price && g.price_upper <= p.price + 40.0, "{} for {}", g.price_upper, p.price);
            assert!(g.instruction_text.ends_with(&format!(", and price lower than {:.2} dollars", g.price_upper)));
        }
        if let GoalOptions::Pairs(pairs) = &g.goal_options {
            let names: Vec<&String> = pairs.iter().map(|(n, _)| n).collect();
            assert!(names.windows(2).all(|w| w[0] < w[1]), "options in sorted name order: {names:?}");
            for (name, value) in pairs {
                assert!(g.instruction_text.contains(&format!("{name}: {value}")));
            }
        } else {
            panic!("synthetic goals carry (name, value) pairs");
        }
    }
    // The seeded shuffle is reproducible and the cap seed changes only the caps.
    assert_eq!(goals, build_goals(&catalog, GoalSource::Synthetic, 0));
    let other = build_goals(&catalog, GoalSource::Synthetic, 1);
    assert_eq!(other.iter().map(|g| &g.asin).collect::<Vec<_>>(), goals.iter().map(|g| &g.asin).collect::<Vec<_>>());
    assert_ne!(other, goals);
}

#[test]
fn goals_round_trip_through_a_file() {
    let catalog = catalog();
    let goals = build_goals(&catalog, GoalSource::Synthetic, 3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("goals.json");
    save_goals(&path, &goals).unwrap();
    assert_eq!(load_goals(&path).unwrap(), goals);
    // The file is one JSON list in the original's schema.
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(raw.as_array().unwrap().len(), goals.len());
    assert!(raw[0]["goal_options"].is_object());
    assert!(load_goals(&dir.path().join("missing.json")).unwrap_err().to_string().contains("missing.json"));
    std::fs::write(&path, "{}").unwrap();
    assert!(load_goals(&path).unwrap_err().to_string().contains("not a JSON list of goals"));
}

#[test]
fn human_session_goals_load_in_the_original_schema() {
    let dir = shared("human_sessions");
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let goal: Goal = serde_json::from_value(first["goal"].clone()).unwrap();
        assert!(matches!(goal.goal_options, GoalOptions::Values(_)));
        assert!(goal.price_upper > 0.0 && goal.instruction_text.contains("price lower than"));
    }
}

#[test]
fn splits_cover_the_list_in_order() {
    let n = 12087;
    let (t, d, r) = (Split::Test.range(n), Split::Dev.range(n), Split::Train.range(n));
    assert_eq!((t.start, t.end, d.end, r.end), (0, d.start, r.start, n));
    assert_eq!((t.len(), d.len()), (500, 1000));
}
