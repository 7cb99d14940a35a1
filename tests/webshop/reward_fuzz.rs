//! `token_set_ratio` against thefuzz 0.19 itself (difflib backend) on real WebShop attribute and option
//! strings and on generated strings with punctuation, case, Latin-1 and other Unicode characters.

use crate::python;

use std::collections::BTreeSet;
use std::path::PathBuf;

use gigscope::webshop::token_set_ratio::token_set_ratio;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// thefuzz with python-Levenshtein hidden, so it takes the difflib path as on a plain install.
const ORACLE: &str = r#"
import sys, json
sys.modules['thefuzz.StringMatcher'] = None
from thefuzz import fuzz
pairs = json.load(sys.stdin)
print(json.dumps([fuzz.token_set_ratio(a, b) for a, b in pairs]))
"#;

fn shared(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/webshop").join(name)
}

/// Attributes, instruction attributes and option values of the real 1k records.
fn real_strings() -> Vec<String> {
    let mut set = BTreeSet::new();
    let ins: Value = serde_json::from_str(&std::fs::read_to_string(shared("items_ins_v2_1000.json")).unwrap()).unwrap();
    for rec in ins.as_object().unwrap().values() {
        for key in ["attributes", "instruction_attributes"] {
            for a in rec.get(key).and_then(Value::as_array).into_iter().flatten() {
                set.insert(a.as_str().unwrap().to_owned());
            }
        }
    }
    let products: Value = serde_json::from_str(&std::fs::read_to_string(shared("products_394.json")).unwrap()).unwrap();
    for p in products.as_array().unwrap() {
        for values in p.get("customization_options").and_then(Value::as_object).into_iter().flat_map(|m| m.values()) {
            for v in values.as_array().into_iter().flatten() {
                if let Some(s) = v.get("value").and_then(Value::as_str) {
                    set.insert(s.to_owned());
                }
            }
        }
    }
    set.into_iter().collect()
}

fn generated(rng: &mut ChaCha8Rng) -> String {
    const PIECES: &[&str] = &[
        "red",
        "Red",
        "navy",
        "blue",
        "x-large",
        "XL",
        "8",
        "8.5",
        "10",
        "size",
        "color",
        "men's",
        "women",
        "long",
        "lasting",
        "lasting",
        "easy",
        "clean",
        "café",
        "Crème",
        "łódź",
        "›",
        "™",
        "_",
        "a_b",
        "z2-pink",
        "3t280",
        "rl56 | 60",
        "silver",
        "mist",
        "ﬁ",
        "ß",
        "İ",
        "ΣΑΣ",
        "١٢",
        "(",
        ")",
        ",",
        "/",
        "  ",
        "\t",
        "!",
    ];
    let n = rng.random_range(0..6);
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(PIECES.choose(rng).unwrap());
        if rng.random_bool(0.7) {
            s.push(' ');
        }
    }
    s
}

#[test]
fn token_set_ratio_matches_thefuzz() {
    if !python::have_thefuzz("token_set_ratio_matches_thefuzz") {
        return;
    }
    let real = real_strings();
    assert!(real.len() > 500, "{} real strings", real.len());
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut pairs: Vec<(String, String)> = Vec::new();
    for _ in 0..3000 {
        pairs.push((real.choose(&mut rng).unwrap().clone(), real.choose(&mut rng).unwrap().clone()));
    }
    // Near matches: a real string against itself with a token dropped, added or reordered.
    for _ in 0..1000 {
        let a = real.choose(&mut rng).unwrap().clone();
        let mut tokens: Vec<&str> = a.split(' ').collect();
        if tokens.len() > 1 && rng.random_bool(0.5) {
            tokens.remove(rng.random_range(0..tokens.len()));
        } else {
            tokens.push(["pack", "xl", "black", "for"].choose(&mut rng).unwrap());
        }
        tokens.reverse();
        pairs.push((a.clone(), tokens.join(" ")));
    }
    for _ in 0..3000 {
        pairs.push((generated(&mut rng), generated(&mut rng)));
    }
    let input = serde_json::to_string(&pairs).unwrap();
    let expected: Vec<u32> = serde_json::from_str(&python::run_python(ORACLE, &input)).unwrap();
    assert_eq!(expected.len(), pairs.len());
    let mut mismatches = Vec::new();
    for ((a, b), want) in pairs.iter().zip(&expected) {
        let got = token_set_ratio(a, b);
        if got != *want {
            mismatches.push(format!("{a:?} vs {b:?}: got {got}, thefuzz {want}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} differ:\n{}",
        mismatches.len(),
        pairs.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
    // The threshold the reward uses is crossed on both sides in this sample.
    assert!(expected.iter().any(|&s| s > 85) && expected.iter().any(|&s| (1..=85).contains(&s)));
}
