#!/usr/bin/env python3
"""Summarise GiGPO-vs-GRPO runs written by scripts/experiment.

Reads RUNS/<estimator>-s<seed>/metrics.jsonl (or RUNS/<estimator>-s<seed>.jsonl, the copies kept in
OUT/metrics/) and writes to OUT:
  metrics/        each run's metrics.jsonl, kept as the experiment's data
  curves.csv      estimator, seed, iteration, env_steps (cumulative), time_s, eval_success, eval_score,
                  baseline_success, train_success
  summary.json    per estimator and evaluated iteration: mean/min/max greedy test success over seeds;
                  per estimator and iteration: training success (the iteration's own E x N rollouts, sampled
                  actions) averaged over seeds, and over a 5-iteration window; per seed: the mean of both
                  curves over the run (the area under the curve, so "learns faster" has one number per seed);
                  plus throughput (env steps/s, update seconds per iteration)
  (made_by: the commit, iterations, catalog and extra flags that made the runs, from RUNS/made-by.json)
  curves.png      the curves, when matplotlib is importable; else curves.txt, an ASCII chart
Standard library only (matplotlib optional).
"""
import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def read_metrics(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def main(runs_dir, out_dir, title="WebShop demo catalog"):
    runs_dir, out_dir = Path(runs_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    curves = []  # (estimator, seed, iteration, env_steps, time, eval_success, eval_score, baseline, train_success)
    throughput = defaultdict(lambda: {"env_steps_per_s": [], "update_s": [], "rollout_s": []})
    rollout_success = defaultdict(dict)  # (estimator, seed) -> iteration -> training success
    kept = out_dir / "metrics"
    kept.mkdir(exist_ok=True)
    for run in sorted(runs_dir.iterdir()):
        metrics = run / "metrics.jsonl" if run.is_dir() else run
        name = run.name[: -len(".jsonl")] if run.name.endswith(".jsonl") else run.name
        if not metrics.is_file() or "-s" not in name:
            continue
        if metrics.resolve() != (kept / f"{name}.jsonl").resolve():
            (kept / f"{name}.jsonl").write_bytes(metrics.read_bytes())
        estimator, seed = name.rsplit("-s", 1)
        steps = 0
        for m in read_metrics(metrics):
            steps += int(m.get("env_steps", 0))
            if "success" in m:
                rollout_success[(estimator, int(seed))][m["iteration"]] = m["success"]
            for k in ("env_steps_per_s", "update_s", "rollout_s"):
                if k in m:
                    throughput[estimator][k].append(m[k])
            if "eval_success" in m:
                curves.append((estimator, int(seed), m["iteration"], steps, m.get("time", 0.0), m["eval_success"],
                               m["eval_score"], m.get("baseline_success"), m.get("success")))

    with open(out_dir / "curves.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["estimator", "seed", "iteration", "env_steps", "time_s", "eval_success", "eval_score",
                    "baseline_success", "train_success"])
        w.writerows(curves)

    by = defaultdict(list)
    for est, seed, it, steps, t, succ, score, base, train in curves:
        by[(est, it)].append((succ, score, base))
    summary = {"curves": {}, "throughput": {}}
    made_by = runs_dir / "made-by.json"
    if made_by.is_file():
        summary["made_by"] = json.loads(made_by.read_text())
    for (est, it), vals in sorted(by.items()):
        s = [v[0] for v in vals]
        summary["curves"].setdefault(est, []).append({
            "iteration": it, "seeds": len(vals), "eval_success_mean": statistics.mean(s),
            "eval_success_min": min(s), "eval_success_max": max(s),
            "eval_score_mean": statistics.mean(v[1] for v in vals),
            "baseline_success": vals[0][2],
        })
    for est, t in throughput.items():
        summary["throughput"][est] = {k: statistics.median(v) for k, v in t.items() if v}

    # Training success, every iteration: the mean over seeds, and over a window of 5 iterations (the rollouts of
    # one iteration are 128 episodes, so single iterations are noisy).
    summary["train_success"] = {}
    summary["per_seed"] = {}
    for est in sorted({e for e, _ in rollout_success}):
        seeds = sorted(s for e, s in rollout_success if e == est)
        iterations = sorted(set.intersection(*(set(rollout_success[(est, s)]) for s in seeds)))
        means = [statistics.mean(rollout_success[(est, s)][i] for s in seeds) for i in iterations]
        window = [statistics.mean(means[max(0, k - 4): k + 1]) for k in range(len(means))]
        summary["train_success"][est] = [
            {"iteration": i, "mean": m, "window5_mean": w} for i, m, w in zip(iterations, means, window)
        ]
        summary["per_seed"][est] = [
            {
                "seed": s,
                "train_success_auc": statistics.mean(rollout_success[(est, s)][i] for i in iterations),
                "eval_success_auc": statistics.mean(c[5] for c in curves if c[0] == est and c[1] == s),
            }
            for s in seeds
        ]
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    if plt is not None:
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
        for est, color in (("gigpo", "tab:blue"), ("grpo", "tab:orange")):
            pts = summary["curves"].get(est, [])
            if not pts:
                continue
            xs = [p["iteration"] for p in pts]
            ax.plot(xs, [p["eval_success_mean"] for p in pts], color=color,
                    label=f"{est.upper()} (mean of {pts[-1]['seeds']} seeds)")
            ax.fill_between(xs, [p["eval_success_min"] for p in pts], [p["eval_success_max"] for p in pts],
                            color=color, alpha=0.2)
            tr = summary["train_success"].get(est, [])
            ax2.plot([p["iteration"] for p in tr], [p["mean"] for p in tr], color=color, alpha=0.3)
            ax2.plot([p["iteration"] for p in tr], [p["window5_mean"] for p in tr], color=color,
                     label=f"{est.upper()} (5-iteration window)")
        base = next((p["baseline_success"] for pts in summary["curves"].values() for p in pts
                     if p["baseline_success"] is not None), None)
        if base is not None:
            ax.axhline(base, color="grey", linestyle="--", label="rule baseline (search, first result, buy)")
        ax.set_xlabel("iteration (16 goals x 8 episodes each)")
        ax.set_ylabel("greedy test success")
        ax.set_ylim(0, 1)
        ax.legend(loc="upper left")
        ax.set_title("greedy success on the test goals")
        ax2.set_xlabel("iteration (16 goals x 8 episodes each)")
        ax2.set_ylabel("training success (sampled rollouts)")
        ax2.set_ylim(0, 1)
        ax2.legend(loc="upper left")
        ax2.set_title("success of each iteration's own rollouts")
        fig.suptitle(f"{title}, CPU: GiGPO vs GRPO (omega = 0), equal samples")
        fig.tight_layout()
        fig.savefig(out_dir / "curves.png", dpi=110)
    else:
        lines = ["greedy test success (mean over seeds), one row per evaluated iteration", ""]
        for est, pts in summary["curves"].items():
            lines.append(est)
            for p in pts:
                bar = "#" * round(p["eval_success_mean"] * 50)
                lines.append(f"  it {p['iteration']:4d} {p['eval_success_mean']:.3f} |{bar}")
        (out_dir / "curves.txt").write_text("\n".join(lines) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: summarize_experiment.py RUNS_DIR OUT_DIR [TITLE]")
    main(*sys.argv[1:])
