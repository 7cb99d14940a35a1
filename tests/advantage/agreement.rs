//! The agreement measures of `gigscope truth` (Spearman with average ranks, sign agreement, RMSE after the best
//! scale fit) against a plain-Python oracle written from their definitions (scipy is not installed; the oracle
//! implements `scipy.stats.rankdata(method="average")` and Pearson's r as textbooks state them).

use crate::python;

use gigscope::advantage::agreement::{agreement, average_ranks};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const ORACLE: &str = r#"
import json, math, sys

def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return r

def pearson(x, y):
    n = len(x)
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)

def sign(v):
    return (v > 0) - (v < 0)

out = []
for case in json.load(sys.stdin):
    x, y = case["x"], case["y"]
    n = len(x)
    sxx = sum(a * a for a in x)
    c = sum(a * b for a, b in zip(x, y)) / sxx if sxx > 0 else 0.0
    out.append({
        "ranks": ranks(x),
        "spearman": pearson(ranks(x), ranks(y)),
        "sign": sum(sign(a) == sign(b) for a, b in zip(x, y)) / n,
        "scale": c,
        "rmse": math.sqrt(sum((c * a - b) ** 2 for a, b in zip(x, y)) / n),
    })
print(json.dumps(out))
"#;

fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
        (None, None) => true,
        _ => false,
    }
}

#[test]
fn agreement_measures_equal_the_python_oracle() {
    if !python::have_python("agreement_measures_equal_the_python_oracle") {
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut cases: Vec<(Vec<f64>, Vec<f64>)> = vec![
        // Hand-made: ties on both sides, an all-zero estimate, a constant truth, two rows.
        (vec![0.5, 0.5, -1.0, 2.0, 0.0], vec![0.1, 0.3, -0.2, 0.9, 0.0]),
        (vec![0.0, 0.0, 0.0], vec![1.0, -2.0, 0.5]),
        (vec![1.0, 2.0, 3.0], vec![0.25, 0.25, 0.25]),
        (vec![-1.0, 1.0], vec![2.0, -3.0]),
    ];
    for _ in 0..60 {
        let n = rng.random_range(1..50);
        let ties = rng.random_bool(0.5);
        let draw = |rng: &mut ChaCha8Rng| {
            if ties {
                f64::from(rng.random_range(-3i32..=3)) / 2.0
            } else {
                rng.random_range(-5.0..5.0)
            }
        };
        let x: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
        let y: Vec<f64> = x.iter().map(|v| 0.7 * v + draw(&mut rng)).collect();
        cases.push((x, y));
    }
    let input: Vec<serde_json::Value> = cases.iter().map(|(x, y)| serde_json::json!({"x": x, "y": y})).collect();
    let out = python::run_python(ORACLE, &serde_json::to_string(&input).unwrap());
    let expected: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    for ((x, y), want) in cases.iter().zip(&expected) {
        let got = agreement(x, y);
        let ranks: Vec<f64> = serde_json::from_value(want["ranks"].clone()).unwrap();
        assert_eq!(average_ranks(x), ranks, "{x:?}");
        assert!(close(got.spearman, want["spearman"].as_f64()), "{x:?} {y:?}: {got:?} vs {want}");
        assert!(close(got.sign_agreement, want["sign"].as_f64()), "{x:?} {y:?}: {got:?} vs {want}");
        assert!(close(got.scale, want["scale"].as_f64()), "{x:?} {y:?}: {got:?} vs {want}");
        assert!(close(got.rmse, want["rmse"].as_f64()), "{x:?} {y:?}: {got:?} vs {want}");
        assert_eq!(got.rows, x.len());
    }
    // One golden case written out, so a reader sees the numbers without running Python.
    let golden = agreement(&cases[0].0, &cases[0].1);
    assert!((golden.spearman.unwrap() - 0.9746794344808964).abs() < 1e-12, "{golden:?}");
    assert_eq!(golden.sign_agreement, Some(1.0));
}
