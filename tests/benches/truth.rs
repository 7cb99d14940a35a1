//! Ground-truth benchmark (issue 12 §2's goal: under 60 s on 2 cores): one iteration of a 16 × 8 WebShop run,
//! every anchor state of all 16 episode groups branched with K = 32 continuations per state and per action.
//!
//! `./scripts/dev cargo bench --all-features --bench truth`. `GIGSCOPE_BENCH_CATALOG=DIR` trains on a WebShop
//! catalog directory (e.g. `../shared/webshop`, 394 real products) instead of the embedded demo catalog;
//! `GIGSCOPE_BENCH_ITERATION=I` trains I iterations and measures the last (default 1); `GIGSCOPE_BENCH_K` and
//! `GIGSCOPE_BENCH_THREADS` (0: every core) set K and the workers.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use gigscope::env::EnvOptions;
use gigscope::plugin_host::{DeviceChoice, Request, RunMode, TaskSource, TrainConfig, TrainRequest};
use gigscope::plugin_host::{TruthGroups, TruthProgress, TruthRequest};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let iterations = env_number("GIGSCOPE_BENCH_ITERATION", 1);
    let k = env_number("GIGSCOPE_BENCH_K", 32);
    let threads = env_number("GIGSCOPE_BENCH_THREADS", 0);
    let mut options = EnvOptions::default();
    if let Ok(catalog) = std::env::var("GIGSCOPE_BENCH_CATALOG") {
        options.set("catalog", catalog);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    let train = Request::Train(Box::new(TrainRequest {
        run: run.clone(),
        tasks: TaskSource::new("webshop", options.clone()),
        config: TrainConfig {
            iterations: iterations as u64,
            eval_every: 0,
            device: DeviceChoice::Cpu,
            seed: 0,
            ..TrainConfig::default()
        },
        mode: RunMode::AsConfigured,
    }));
    let clock = Instant::now();
    let stop = AtomicBool::new(false);
    gigscope::trainer::service::serve(&serde_json::to_vec(&train).expect("request"), &stop, &mut |_| {})
        .expect("training");
    let train_s = clock.elapsed().as_secs_f64();

    let request =
        TruthRequest { run, iteration: iterations as i64, rollouts: k, groups: TruthGroups::All, seed: 0, threads };
    let clock = Instant::now();
    let mut last = TruthProgress::default();
    let file = gigscope::trainer::truth::measure(&request, &stop, &mut |p| last = p.clone()).expect("truth");
    let truth_s = clock.elapsed().as_secs_f64();
    println!(
        "truth, {} catalog, iteration {} of a 16 x 8 run ({} step rows, {} episode groups, K = {k}, {} worker \
         threads): {} states, {} continuations in {truth_s:.1} s (training took {train_s:.1} s); {} divergences",
        options.get("catalog").unwrap_or("embedded demo"),
        request.iteration,
        file.rows.len(),
        file.header.groups.len(),
        if threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { threads },
        last.states_done,
        last.continuations,
        file.divergences.len(),
    );
    for a in &file.agreements {
        println!(
            "  {:<10} rows {:>4} spearman {:>7} sign {:>6} rmse {:>8}",
            a.estimator,
            a.rows,
            a.spearman.map_or("-".into(), |v| format!("{v:.3}")),
            a.sign_agreement.map_or("-".into(), |v| format!("{v:.3}")),
            a.rmse.map_or("-".into(), |v| format!("{v:.4}")),
        );
    }
}
