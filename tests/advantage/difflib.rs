//! Differential test: `gigscope::text::difflib::ratio` against CPython's `difflib` on generated pairs,
//! short and long (autojunk applies from 200 code points on), ASCII and not, related and unrelated.

use std::io::Write;
use std::process::{Command, Stdio};

use gigscope::text::difflib::{ratio, Candidate, Matcher, Reference};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const WORDS: &[&str] = &[
    "search",
    "results",
    "[SEP]",
    "Back to Search",
    "Next >",
    "< Prev",
    "Buy Now",
    "price",
    "$12.99",
    "size",
    "color",
    "red",
    "navy blue",
    "x-large",
    "women's",
    "men",
    "shoes",
    "B07XYZ1234",
    "Description",
    "Features",
    "Reviews",
    "Attributes",
    "Instruction:",
    "i need",
    "a",
    "the",
    "with",
    "lower than",
    "dollars",
    "café",
    "naïve",
    "größe",
    "красный",
    "中文",
    "日本語",
    "😀",
    "🛒",
];

/// A WebShop-like page of `words` words.
fn page(rng: &mut ChaCha8Rng, words: usize) -> String {
    (0..words).map(|_| *WORDS.choose(rng).unwrap_or(&"")).collect::<Vec<_>>().join(" ")
}

/// `s` with a few random code points inserted, deleted or replaced.
fn mutate(rng: &mut ChaCha8Rng, s: &str, edits: usize) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    let alphabet: Vec<char> = "abcxyz [SEP]é中😀0123".chars().collect();
    for _ in 0..edits {
        let at = rng.random_range(0..=chars.len());
        let c = alphabet[rng.random_range(0..alphabet.len())];
        match rng.random_range(0..3) {
            0 => chars.insert(at, c),
            1 if at < chars.len() => {
                chars.remove(at);
            }
            _ if at < chars.len() => chars[at] = c,
            _ => chars.push(c),
        }
    }
    chars.into_iter().collect()
}

/// Random string over a tiny alphabet: many popular elements once long enough.
fn small_alphabet(rng: &mut ChaCha8Rng, len: usize) -> String {
    let alphabet = ['a', 'b', 'c', 'é', ' '];
    (0..len).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect()
}

fn pairs() -> Vec<(String, String)> {
    let mut rng = ChaCha8Rng::seed_from_u64(20260522);
    let mut out = vec![
        (String::new(), String::new()),
        ("abc".into(), String::new()),
        (String::new(), "abc".into()),
        ("x".repeat(250), "x".repeat(250)),
        ("x".repeat(199), "x".repeat(200)),
        ("ab".repeat(150), "ba".repeat(150)),
    ];
    for _ in 0..150 {
        let words = rng.random_range(1..80);
        let a = page(&mut rng, words);
        let edits = rng.random_range(0..25);
        let b = mutate(&mut rng, &a, edits);
        out.push((a.clone(), b.clone()));
        out.push((b, a));
    }
    for _ in 0..60 {
        let (la, lb) = (rng.random_range(0..400), rng.random_range(150..400));
        out.push((small_alphabet(&mut rng, la), small_alphabet(&mut rng, lb)));
        let (wa, wb) = (rng.random_range(1..90), rng.random_range(1..90));
        out.push((page(&mut rng, wa), page(&mut rng, wb)));
    }
    // Lengths straddling the autojunk threshold of b (199, 200, 201 code points).
    for len in [198, 199, 200, 201, 202] {
        let b = small_alphabet(&mut rng, len);
        let a = mutate(&mut rng, &b, 10);
        out.push((a, b));
    }
    out
}

/// CPython's ratios for `pairs`, as printed by `repr` (shortest round-trip, parsed back exactly).
fn python_ratios(pairs: &[(String, String)]) -> Vec<f64> {
    let script = "import sys, json, difflib\n\
                  for line in sys.stdin:\n    a, b = json.loads(line)\n    \
                  print(repr(difflib.SequenceMatcher(None, a, b).ratio()))\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 must be installed for the difflib differential test");
    let mut input = String::new();
    for pair in pairs {
        input.push_str(&serde_json::to_string(pair).expect("strings serialise"));
        input.push('\n');
    }
    child.stdin.take().expect("piped stdin").write_all(input.as_bytes()).expect("write to python3");
    let output = child.wait_with_output().expect("python3 runs");
    assert!(output.status.success(), "python3 failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .expect("python prints ASCII")
        .lines()
        .map(|l| l.parse().expect("python prints floats"))
        .collect()
}

#[test]
fn ratio_equals_cpython_difflib() {
    let pairs = pairs();
    let expected = python_ratios(&pairs);
    assert_eq!(expected.len(), pairs.len());
    let mut long_b = 0;
    for ((a, b), want) in pairs.iter().zip(expected) {
        long_b += usize::from(b.chars().count() >= 200);
        assert_eq!(ratio(a, b).to_bits(), want.to_bits(), "ratio({a:?}, {b:?}): gigscope vs python");
    }
    assert!(long_b >= 30, "the autojunk path must be exercised ({long_b} long b's)");
}

#[test]
fn thresholded_comparison_equals_cpython_difflib() {
    // `Matcher::similar` prunes with upper bounds, stops matching blocks once the threshold is reached or out
    // of reach, and reuses one `Reference` for many `a`s; it must decide exactly like the full ratio at
    // thresholds on and around the true value.
    let pairs = pairs();
    let expected = python_ratios(&pairs);
    let mut matcher = Matcher::default();
    for ((a, b), want) in pairs.iter().zip(expected) {
        let reference = Reference::new(b);
        let a = Candidate::new(a);
        // One ULP either side of the true value too: the early exits must stop exactly on the threshold.
        let below = if want > 0.0 { f64::from_bits(want.to_bits() - 1) } else { 0.3 };
        for theta in [0.3, 0.9, want, f64::from_bits(want.to_bits() + 1), below] {
            assert_eq!(matcher.similar(&a, &reference, theta), want >= theta, "θ={theta} a={a:?} b={b:?}");
        }
    }
}
