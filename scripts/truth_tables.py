#!/usr/bin/env python3
"""docs/ground-truth.md's agreement tables from the truth runs (issue 12 §3, measured again for issue 26).

Reads RUNS/<env>-s<seed>/ (a `gigscope train` run of each environment and seed 0, 1, 2, each with the truth files
`truth/iteration-<i>.jsonl` of `gigscope truth RUN --iteration I --rollouts 32 --seed 0` for iterations 1, 20 and
40) and prints, per environment, the headline figures of each iteration (training success, distinct states, step
rows, mean |A*| and its standard error, the share of rows whose A* is resolved, the shares of anchor groups that
merge more than one true state and of their rows; the wrong-sign rows are in `gigscope truth`'s output) and the
table: Spearman's ρ mean [lowest, highest] / sign agreement / RMSE after the scale fit.
It also checks what the per-row truth must hold: every row whose step ends its episode has Q̂ equal to its own
reward under the run's shaping (the invalid-action penalty; the runs use no success reward or efficiency term),
with standard error 0; the rows that do not are counted as `terminal off`.

  python3 scripts/truth_tables.py RUNS
"""

import argparse
import json
import math
import statistics
from pathlib import Path

ENVS = ["webshop", "sokoban"]
SEEDS = [0, 1, 2]
ITERATIONS = [1, 20, 40]
ESTIMATORS = ["gigpo", "grpo", "rloo", "step", "hgpo", "graphgpo", "proxmo", "soft-page", "q-minus-v"]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def number(x, digits=2):
    return f"{x:.{digits}f}".replace("-", "−")


def span(values, digits=2):
    return f"{number(min(values), digits)}–{number(max(values), digits)}"


def measure(run, iteration):
    """One truth file's figures, or None when it is not there."""
    path = run / "truth" / f"iteration-{iteration}.jsonl"
    if not path.exists():
        return None
    header, *lines = read_jsonl(path)
    rows = [x for x in lines if x.get("kind") == "row"]
    se = [math.hypot(r["q_se"], r["v_se"]) for r in rows]
    metrics = [m for m in read_jsonl(run / "metrics.jsonl") if m.get("iteration") == iteration and "success" in m]
    episodes = {e["id"]: e for e in read_jsonl(run / "episodes.jsonl") if e.get("iteration") == iteration}
    terminal = off = 0
    for r in rows:
        steps = episodes[r["episode"]]["steps"]
        if r["step"] != len(steps) - 1:
            continue
        step = steps[r["step"]]
        own = step["reward"] - (0.0 if step.get("valid", True) else header["invalid_penalty"])
        terminal += 1
        off += abs(r["q"] - own) > 1e-9 or r["q_se"] > 1e-9
    # Anchor groups (episode group, step's anchor) and the distinct true states among their rows.
    anchors = {}
    for r in rows:
        step = episodes[r["episode"]]["steps"][r["step"]]
        key = (r["group"], step.get("anchor", step["observation"]))
        anchors.setdefault(key, []).append(r.get("state"))
    aliased = [states for states in anchors.values() if len(set(states)) > 1]
    return {
        "success": metrics[0]["success"] if metrics else float("nan"),
        "states": len({r.get("state") or (r["episode"], r["step"]) for r in rows}),
        "rows": len(rows),
        "abs_a": statistics.mean(abs(r["a_star"]) for r in rows),
        "se": statistics.mean(se),
        "resolved": sum(abs(r["a_star"]) > 2 * s for r, s in zip(rows, se)) / len(rows),
        "aliased_groups": len(aliased) / len(anchors),
        "aliased_rows": sum(len(a) for a in aliased) / len(rows),
        "terminal": terminal,
        "off": off,
        "agreement": {
            x["estimator"]: (x["spearman"], x["sign_agreement"], x["rmse"])
            for x in lines
            if x.get("kind") == "agreement" and x.get("spearman") is not None
        },
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", help="directory of the runs, <env>-s<seed>")
    runs = Path(parser.parse_args().runs)
    for env in ENVS:
        print(f"\n{env}")
        figures = {i: [m for s in SEEDS if (m := measure(runs / f"{env}-s{s}", i))] for i in ITERATIONS}
        for i, seeds in figures.items():
            if not seeds:
                print(f"  iteration {i}: not measured")
                continue
            pick = lambda key: [m[key] for m in seeds]
            print(
                f"  iteration {i} ({len(seeds)} seeds): success {span(pick('success'))}, states "
                f"{min(pick('states'))}–{max(pick('states'))}, rows {min(pick('rows'))}–{max(pick('rows'))}, "
                f"mean |A*| {statistics.mean(pick('abs_a')):.3f}, se {statistics.mean(pick('se')):.3f}, resolved "
                f"{100 * statistics.mean(pick('resolved')):.0f}%, aliased groups "
                f"{span([100 * x for x in pick('aliased_groups')], 0)}%, rows "
                f"{span([100 * x for x in pick('aliased_rows')], 0)}%, terminal rows {sum(pick('terminal'))}, "
                f"terminal off {sum(pick('off'))}"
            )
        print("\n| estimator | iteration 1 | iteration 20 | iteration 40 |\n|---|---|---|---|")
        digits = 3 if env == "webshop" else 2
        for estimator in ESTIMATORS:
            cells = []
            for i in ITERATIONS:
                values = [m["agreement"][estimator] for m in figures[i] if estimator in m["agreement"]]
                if not values:
                    cells.append("—")
                    continue
                rho = [v[0] for v in values]
                cells.append(
                    f"{number(statistics.mean(rho))} [{number(min(rho))}, {number(max(rho))}] / "
                    f"{number(statistics.mean(v[1] for v in values))} / "
                    f"{number(statistics.mean(v[2] for v in values), digits)}"
                )
            if any(c != "—" for c in cells):
                print(f"| `{estimator}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
