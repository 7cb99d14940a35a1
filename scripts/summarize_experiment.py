#!/usr/bin/env python3
"""Summarise GiGPO-vs-GRPO runs written by scripts/experiment.

Reads RUNS/<estimator>-s<seed>/metrics.jsonl and writes to OUT:
  curves.csv      estimator, seed, iteration, env_steps (cumulative), time_s, eval_success, eval_score,
                  baseline_success, train_success
  summary.json    per estimator and evaluated iteration: mean/min/max greedy test success over seeds,
                  plus throughput (env steps/s, update seconds per iteration)
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


def main(runs_dir, out_dir):
    runs_dir, out_dir = Path(runs_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    curves = []  # (estimator, seed, iteration, env_steps, time, eval_success, eval_score, baseline, train_success)
    throughput = defaultdict(lambda: {"env_steps_per_s": [], "update_s": [], "rollout_s": []})
    for run in sorted(runs_dir.iterdir()):
        metrics = run / "metrics.jsonl"
        if not metrics.is_file() or "-s" not in run.name:
            continue
        estimator, seed = run.name.rsplit("-s", 1)
        steps = 0
        for m in read_metrics(metrics):
            steps += int(m.get("env_steps", 0))
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
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    if plt is not None:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for est, color in (("gigpo", "tab:blue"), ("grpo", "tab:orange")):
            pts = summary["curves"].get(est, [])
            if not pts:
                continue
            xs = [p["iteration"] for p in pts]
            ax.plot(xs, [p["eval_success_mean"] for p in pts], color=color,
                    label=f"{est.upper()} (mean of {pts[-1]['seeds']} seeds)")
            ax.fill_between(xs, [p["eval_success_min"] for p in pts], [p["eval_success_max"] for p in pts],
                            color=color, alpha=0.2)
        base = next((p["baseline_success"] for pts in summary["curves"].values() for p in pts
                     if p["baseline_success"] is not None), None)
        if base is not None:
            ax.axhline(base, color="grey", linestyle="--", label="rule baseline (search, first result, buy)")
        ax.set_xlabel("iteration (16 goals x 8 episodes each)")
        ax.set_ylabel("greedy test success")
        ax.set_ylim(0, 1)
        ax.legend(loc="upper left")
        ax.set_title("WebShop demo catalog, CPU: GiGPO vs GRPO (omega = 0)")
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
    if len(sys.argv) != 3:
        sys.exit("usage: summarize_experiment.py RUNS_DIR OUT_DIR")
    main(sys.argv[1], sys.argv[2])
