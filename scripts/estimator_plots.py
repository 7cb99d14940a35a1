#!/usr/bin/env python3
"""Issue 12 §3: the figures and the table of "closer to the truth, faster learning?".

Reads the training runs of scripts/estimator-experiment (RUNS/<env>/<estimator>-s<seed>/metrics.jsonl) and,
when given, the truth files of `gigscope truth` (TRUTH_DIR/seed<k>/truth/iteration-<i>.jsonl, their
`agreement` lines); writes into OUT:

  agreement.json   Spearman's ρ of each estimator with the truth per environment and iteration (per seed)
  learning.json    success per estimator, seed and iteration (rollouts and greedy evaluation) and the summary
  agreement.svg    ρ at iterations 1 / 20 / 40, both environments (mean over seeds, bars from lowest to highest)
  learning.svg     the learning curves (mean over seeds, band from lowest to highest seed)

and prints the README table. Without --truth, agreement.json is read back from OUT (the truth runs are not kept);
without --runs, learning.json: so the figures can be redrawn from the JSON files alone.

Plain Python: the SVG is written by hand (no plotting library on the machines this runs on).
"""

import argparse
import json
import math
import statistics
from pathlib import Path

ENVS = {"sokoban": "Sokoban", "webshop": "WebShop (394 products)"}
TRUTH_ITERATIONS = [1, 20, 40]
TABLE_ITERATIONS = [10, 20, 40]
# Success the 5-iteration window of rollout success must reach ("iterations to threshold"): about halfway to
# what GiGPO reaches by iteration 40 in each environment.
THRESHOLDS = {"sokoban": 0.8, "webshop": 0.2}
WINDOW = 5
COLORS = {
    "gigpo": "#1f77b4",
    "grpo": "#ff7f0e",
    "rloo": "#bcbd22",
    "step": "#8c564b",
    "hgpo": "#7f7f7f",
    "graphgpo": "#2ca02c",
    "proxmo": "#9467bd",
    "soft-page": "#e377c2",
    "q-minus-v": "#d62728",
}


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def agreement_from_truth(truth_dirs):
    """{env: {estimator: {iteration: [ρ per seed]}}} from the truth files' agreement lines."""
    out = {}
    for env, directory in truth_dirs.items():
        per_estimator = out.setdefault(env, {})
        for seed_dir in sorted(Path(directory).glob("seed*")):
            for iteration in TRUTH_ITERATIONS:
                path = seed_dir / "truth" / f"iteration-{iteration}.jsonl"
                for line in read_jsonl(path):
                    if line.get("kind") == "agreement" and line.get("spearman") is not None:
                        rhos = per_estimator.setdefault(line["estimator"], {}).setdefault(str(iteration), [])
                        rhos.append(line["spearman"])
    return out


def window_mean(values, end):
    """Mean of values[end-WINDOW+1 .. end] (1-based iterations)."""
    part = values[max(0, end - WINDOW) : end]
    return statistics.fmean(part) if part else math.nan


def learning_from_runs(runs):
    """{env: {estimator: {seed: {"success": [...per iteration], "eval": {iteration: success}}}}}."""
    out = {}
    for env in ENVS:
        for run in sorted((Path(runs) / env).glob("*-s*")):
            estimator, seed = run.name.rsplit("-s", 1)
            success, evals = [], {}
            for record in read_jsonl(run / "metrics.jsonl"):
                if "success" in record:
                    success.append(record["success"])
                if "eval_success" in record:
                    evals[str(record["iteration"])] = record["eval_success"]
            out.setdefault(env, {}).setdefault(estimator, {})[seed] = {"success": success, "eval": evals}
    return out


def summarize(learning):
    """Per environment and estimator: the table's cells, each a list over seeds."""
    summary = {}
    for env, estimators in learning.items():
        for estimator, seeds in estimators.items():
            cells = {"train": {}, "eval": {}, "to_threshold": [], "mean_train": [], "mean_eval": []}
            for run in seeds.values():
                success = run["success"]
                for i in TABLE_ITERATIONS:
                    cells["train"].setdefault(str(i), []).append(window_mean(success, i))
                    cells["eval"].setdefault(str(i), []).append(run["eval"].get(str(i), math.nan))
                reached = [i for i in range(WINDOW, len(success) + 1) if window_mean(success, i) >= THRESHOLDS[env]]
                cells["to_threshold"].append(reached[0] if reached else None)
                cells["mean_train"].append(statistics.fmean(success))
                cells["mean_eval"].append(statistics.fmean(v for k, v in run["eval"].items() if k != "0"))
            summary.setdefault(env, {})[estimator] = cells
    return summary


def spread(values, digits=2):
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return "—"
    f = f"{{:.{digits}f}}"
    return f"{f.format(statistics.fmean(values))} [{f.format(min(values))}, {f.format(max(values))}]"


def threshold_cell(values):
    reached = [v for v in values if v is not None]
    if not reached:
        return "not reached"
    text = f"{statistics.fmean(reached):.1f} [{min(reached)}, {max(reached)}]"
    return text if len(reached) == len(values) else f"{text}, {len(values) - len(reached)} seed(s) never"


def print_table(summary, agreement):
    for env, estimators in summary.items():
        print(f"\n{ENVS[env]} (threshold {THRESHOLDS[env]})")
        head = ["estimator", "mean ρ (1/20/40)"]
        head += [f"train {i}" for i in TABLE_ITERATIONS] + [f"eval {i}" for i in TABLE_ITERATIONS]
        head += ["iterations to threshold", "mean train 1–40", "mean eval 5–40"]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for estimator in sorted(estimators, key=list(COLORS).index):
            c = estimators[estimator]
            rho = agreement.get(env, {}).get(estimator, {})
            rho_text = " / ".join(f"{statistics.fmean(rho[str(i)]):.2f}" for i in TRUTH_ITERATIONS if str(i) in rho)
            row = [f"`{estimator}`", rho_text or "—"]
            row += [spread(c["train"][str(i)]) for i in TABLE_ITERATIONS]
            row += [spread(c["eval"][str(i)]) for i in TABLE_ITERATIONS]
            row += [threshold_cell(c["to_threshold"]), spread(c["mean_train"], 3), spread(c["mean_eval"], 3)]
            print("| " + " | ".join(row) + " |")


class Svg:
    """Just enough SVG: lines, polygons, rectangles and text, in user units."""

    def __init__(self, width, height):
        self.width, self.height, self.items = width, height, []

    def add(self, item):
        self.items.append(item)

    def line(self, x1, y1, x2, y2, color="#000", width=1.0, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" stroke-width="{width}"{d}/>')

    def polyline(self, points, color, width=1.8):
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.add(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="{width}"/>')

    def polygon(self, points, color, opacity=0.15):
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.add(f'<polygon points="{pts}" fill="{color}" fill-opacity="{opacity}" stroke="none"/>')

    def circle(self, x, y, color, r=3.0):
        self.add(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{color}"/>')

    def text(self, x, y, s, size=12, anchor="start", weight="normal", color="#222"):
        s = s.replace("&", "&amp;").replace("<", "&lt;")
        self.add(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'fill="{color}" font-family="sans-serif">{s}</text>'
        )

    def write(self, path):
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}">\n<rect width="100%" height="100%" fill="#fff"/>\n'
        )
        Path(path).write_text(head + "\n".join(self.items) + "\n</svg>\n")


class Panel:
    """A plot area at (x, y) of size w×h mapping data (x0..x1, y0..y1), with axes, ticks and a title."""

    def __init__(self, svg, box, xrange, yrange, title, xlabel, ylabel, xticks, yticks):
        self.svg, (self.x, self.y, self.w, self.h) = svg, box
        self.x0, self.x1 = xrange
        self.y0, self.y1 = yrange
        for t in yticks:
            svg.line(self.px(self.x0), self.py(t), self.px(self.x1), self.py(t), "#ddd")
            svg.text(self.x - 6, self.py(t) + 4, f"{t:g}", 11, "end")
        for t in xticks:
            svg.text(self.px(t), self.y + self.h + 16, f"{t:g}", 11, "middle")
        svg.line(self.x, self.y + self.h, self.x + self.w, self.y + self.h, "#444")
        svg.line(self.x, self.y, self.x, self.y + self.h, "#444")
        if self.y0 < 0 < self.y1:
            svg.line(self.px(self.x0), self.py(0), self.px(self.x1), self.py(0), "#888")
        svg.text(self.x + self.w / 2, self.y - 8, title, 13, "middle", "bold")
        svg.text(self.x + self.w / 2, self.y + self.h + 34, xlabel, 12, "middle")
        svg.add(
            f'<text transform="translate({self.x - 40:.1f},{self.y + self.h / 2:.1f}) rotate(-90)" font-size="12" '
            f'text-anchor="middle" font-family="sans-serif" fill="#222">{ylabel}</text>'
        )

    def px(self, v):
        return self.x + (v - self.x0) / (self.x1 - self.x0) * self.w

    def py(self, v):
        return self.y + self.h - (v - self.y0) / (self.y1 - self.y0) * self.h


def legend(svg, x, y, names, columns=1, step=150):
    for i, name in enumerate(names):
        cx, cy = x + (i % columns) * step, y + (i // columns) * 17
        svg.line(cx, cy - 4, cx + 20, cy - 4, COLORS.get(name, "#000"), 2.5)
        svg.text(cx + 26, cy, name, 12)


def agreement_svg(agreement, path):
    svg = Svg(980, 400)
    envs = [e for e in ENVS if e in agreement]
    for k, env in enumerate(envs):
        panel = Panel(
            svg, (70 + k * 390, 40, 320, 280), (-2, 42), (-0.2, 0.7), ENVS[env], "iteration of the run",
            "Spearman ρ with A* (K = 32)", TRUTH_ITERATIONS, [-0.2, 0, 0.2, 0.4, 0.6],
        )
        estimators = list(agreement[env])
        for j, estimator in enumerate(estimators):
            color = COLORS.get(estimator, "#000")
            offset = (j - (len(estimators) - 1) / 2) * 0.45
            points = []
            for i in TRUTH_ITERATIONS:
                rhos = agreement[env][estimator].get(str(i))
                if not rhos:
                    continue
                x = panel.px(i + offset)
                points.append((x, panel.py(statistics.fmean(rhos))))
                svg.line(x, panel.py(min(rhos)), x, panel.py(max(rhos)), color, 1.2)
                svg.circle(x, panel.py(statistics.fmean(rhos)), color)
            svg.polyline(points, color, 1.2)
    names = sorted({e for env in envs for e in agreement[env]}, key=list(COLORS).index)
    legend(svg, 850, 50, names)
    svg.text(850, 230, "dot: mean of 3 seeds", 11)
    svg.text(850, 246, "bar: lowest to highest", 11)
    svg.write(path)


def learning_svg(learning, path):
    svg = Svg(1020, 640)
    for k, env in enumerate(e for e in ENVS if e in learning):
        for col, (key, title) in enumerate([("success", "rollout success"), ("eval", "greedy test success")]):
            panel = Panel(
                svg, (70 + col * 420, 40 + k * 300, 340, 210), (0, 40), (0, 1),
                f"{ENVS[env]}: {title}", "iteration", "success", [0, 10, 20, 30, 40], [0, 0.25, 0.5, 0.75, 1],
            )
            for estimator, seeds in learning[env].items():
                color = COLORS.get(estimator, "#000")
                if key == "success":
                    n = min(len(r["success"]) for r in seeds.values())
                    xs = list(range(1, n + 1))
                    per_seed = [[window_mean(r["success"], i) for i in xs] for r in seeds.values()]
                else:
                    xs = sorted({int(i) for r in seeds.values() for i in r["eval"]})
                    per_seed = [[r["eval"].get(str(i), math.nan) for i in xs] for r in seeds.values()]
                columns = list(zip(*per_seed))
                lo = [(panel.px(x), panel.py(min(c))) for x, c in zip(xs, columns)]
                hi = [(panel.px(x), panel.py(max(c))) for x, c in zip(xs, columns)]
                svg.polygon(lo + hi[::-1], color)
                svg.polyline([(panel.px(x), panel.py(statistics.fmean(c))) for x, c in zip(xs, columns)], color)
        names = sorted(learning[env], key=list(COLORS).index)
        legend(svg, 870, 60 + k * 300, names)
    svg.text(870, 200, "line: mean of 3 seeds", 11)
    svg.text(870, 216, "band: lowest to highest", 11)
    svg.write(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", help="directory of the training runs (<env>/<estimator>-s<seed>)")
    parser.add_argument("--truth", action="append", default=[], metavar="ENV=DIR", help="truth runs of ENV")
    parser.add_argument("--out", default="assets/estimators")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    if args.truth:
        agreement = agreement_from_truth(dict(t.split("=", 1) for t in args.truth))
        (out / "agreement.json").write_text(json.dumps(agreement, indent=1) + "\n")
    else:
        agreement = json.loads((out / "agreement.json").read_text())
    if args.runs:
        learning = learning_from_runs(args.runs)
        (out / "learning.json").write_text(json.dumps(learning) + "\n")
    else:
        learning = json.loads((out / "learning.json").read_text())

    agreement_svg(agreement, out / "agreement.svg")
    learning_svg(learning, out / "learning.svg")
    print_table(summarize(learning), agreement)


if __name__ == "__main__":
    main()
