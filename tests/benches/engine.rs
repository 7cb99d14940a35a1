//! Advantage engine benchmarks on synthetic WebShop-like runs (`gigscope::run::synth`):
//!
//! - 1,048,576 steps on average (8,192 groups × 8 trajectories × 14–18 steps), exact anchors
//!   (goal: under 1 s on one core): on every core (rayon's global pool, the default), on one thread, and
//!   `recompute` after a change of ω (the anchor groups kept);
//! - GiGPO's reference batch (16 groups × 8 trajectories × up to 15 steps) in every anchor mode, similarity
//!   at θ = 0.9 (goal: under 50 ms), and its worst case where every trajectory runs all 15 steps;
//! - one difflib ratio of two item pages.
//!
//! Run with `cargo bench --no-default-features --bench engine`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use gigscope::advantage::{compute, recompute, AdvantageSettings, AnchorMode};
use gigscope::run::synth::{episodes, SynthSpec};
use gigscope::run::Episode;
use gigscope::text::difflib::ratio;

fn million_steps(c: &mut Criterion) {
    let run: Vec<Episode> = episodes(&SynthSpec::million_steps()).collect();
    let steps: usize = run.iter().map(|e| e.steps.len()).sum();
    eprintln!("million_steps: {} episodes, {steps} steps", run.len());
    let mut group = c.benchmark_group("engine");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    let settings = AdvantageSettings::default();
    group.bench_function("million_steps_exact", |b| b.iter(|| compute(black_box(&run), &settings)));
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("thread pool");
    group.bench_function("million_steps_exact_one_thread", |b| {
        b.iter(|| one.install(|| compute(black_box(&run), &settings)))
    });
    let mut table = compute(&run, &settings);
    let mut omega = 1.0;
    group.bench_function("million_steps_recompute_omega", |b| {
        b.iter(|| {
            omega = if omega == 1.0 { 0.5 } else { 1.0 };
            recompute(&mut table, black_box(&run), &AdvantageSettings { omega, ..settings });
        })
    });
    group.finish();
}

fn reference_batch(c: &mut Criterion) {
    let run: Vec<Episode> = episodes(&SynthSpec::reference_batch()).collect();
    let steps: usize = run.iter().map(|e| e.steps.len()).sum();
    eprintln!("reference_batch: {} episodes, {steps} steps", run.len());
    let mut group = c.benchmark_group("engine");
    for (name, anchor) in [
        ("reference_batch_exact", AnchorMode::Exact),
        ("reference_batch_page", AnchorMode::Page),
        ("reference_batch_similarity_0.9", AnchorMode::Similarity(0.9)),
    ] {
        let settings = AdvantageSettings { anchor, ..AdvantageSettings::default() };
        group.bench_function(name, |b| b.iter(|| compute(black_box(&run), &settings)));
    }
    let full = SynthSpec { steps: 15..=15, ..SynthSpec::reference_batch() };
    let run: Vec<Episode> = episodes(&full).collect();
    let settings = AdvantageSettings { anchor: AnchorMode::Similarity(0.9), ..AdvantageSettings::default() };
    group.bench_function("reference_batch_15_steps_similarity_0.9", |b| b.iter(|| compute(black_box(&run), &settings)));
    group.finish();
}

fn difflib(c: &mut Criterion) {
    let run: Vec<Episode> = episodes(&SynthSpec::reference_batch()).collect();
    // Two different item pages of the same task: long enough for autojunk, similar but not equal.
    let items: Vec<&str> = run[..8]
        .iter()
        .flat_map(|e| &e.steps)
        .filter(|s| s.page.as_deref() == Some("item"))
        .map(|s| &*s.observation)
        .collect();
    let a = items.first().copied().unwrap_or_default();
    let b = items.iter().copied().find(|&s| s != a).unwrap_or(a);
    eprintln!("difflib: {} vs {} chars, ratio {}", a.chars().count(), b.chars().count(), ratio(a, b));
    c.bench_function("difflib_ratio_item_pages", |bench| bench.iter(|| ratio(black_box(a), black_box(b))));
}

criterion_group!(benches, million_steps, reference_batch, difflib);
criterion_main!(benches);
