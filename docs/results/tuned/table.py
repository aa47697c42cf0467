#!/usr/bin/env python3
"""The methods table of docs/results/tuned/run.sh, as markdown on stdout.

Usage: table.py [WORK_FOLDER [PROBE_RESULTS]]
  WORK_FOLDER: run.sh's W (default runs/tuned), whose methods/ holds the runs' results;
  PROBE_RESULTS: the probe's results (default WORK_FOLDER/sweep/probe.json).

For each method and step count: every learning rate's top-1 on the evaluation data as
mean ± sample std over seeds (with their number), the best rate (the highest mean; ties
go to the smaller rate), a warning where the best is at the edge of the rates run, and
the best's gain over the logistic-regression probe, (top-1 - probe) / probe. Also the
trainable parameters and the device the runs ran on. Step times and memory are left
out: the runs share a machine (JOBS at a time), so their timings measure the sharing.
"""
import json
import math
import pathlib
import re
import statistics
import sys

RUN_NAME = re.compile(r"^(?P<method>[a-z]+)-steps(?P<steps>\d+)-lr(?P<lr>[0-9.e+-]+)-s(?P<seed>\d+)\.json$")
METHOD_NAMES = {
    "full": "full finetuning",
    "gdfps": "GD-FPS sparse (k = 4)",
    "gps": "GPS sparse (k = 4)",
    "lora": "LoRA (rank 2)",
}


def mean_std(values):
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else math.nan
    return mean, std


def devices(by_lr):
    """The devices of every run of a row (a results file without "device" ran on the CPU)."""
    return ", ".join(sorted({r.get("device", "cpu") for runs in by_lr.values() for r in runs}))


def percent(mean, std):
    """mean ± std in percent; the mean alone for one seed."""
    return f"{100 * mean:.2f}" if math.isnan(std) else f"{100 * mean:.2f} ± {100 * std:.2f}"


def main():
    work = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "runs/tuned")
    probe_path = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else work / "sweep" / "probe.json"
    probe = json.loads(probe_path.read_text())["eval"]["top1"]
    cells = {}  # (method, steps) -> lr -> [results]
    for path in sorted((work / "methods").glob("*.json")):
        match = RUN_NAME.match(path.name)
        if not match:
            continue
        result = json.loads(path.read_text())
        key = (match["method"], int(match["steps"]))
        cells.setdefault(key, {}).setdefault(float(match["lr"]), []).append(result)
    if not cells:
        sys.exit(f"{work / 'methods'}: no finished runs")

    print(f"Linear probe (logistic regression, L-BFGS): {100 * probe:.2f}% top-1.\n")
    print("| method | steps | " + "learning rate: top-1 % (seeds) | " + "best lr | best | gain over probe"
          " | trainable | device |")
    print("|---|---:|---|---:|---:|---:|---:|---|")
    edges = []
    for (method, steps), by_lr in sorted(cells.items(), key=lambda item: (list(METHOD_NAMES).index(item[0][0]),
                                                                           item[0][1])):
        rates = sorted(by_lr)
        means = {lr: mean_std([r["eval"]["top1"] for r in by_lr[lr]]) for lr in rates}
        best = max(rates, key=lambda lr: (means[lr][0], -lr))
        position = "inside"
        if len(rates) > 1 and best == rates[0]:
            position = "lower edge"
        elif len(rates) > 1 and best == rates[-1]:
            position = "upper edge"
        grid = "; ".join(
            f"{lr:g}: {percent(*means[lr])} ({len(by_lr[lr])})" for lr in rates)
        runs = by_lr[best]
        best_text = f"{best:g}" + ("" if position == "inside" else f" ⚠ {position}")
        if position != "inside":
            edges.append(f"{METHOD_NAMES.get(method, method)}, {steps} steps: best at the {position} ({best:g})")
        gain = (means[best][0] - probe) / probe
        print(f"| {METHOD_NAMES.get(method, method)} | {steps} | {grid} | {best_text} | "
              f"{percent(*means[best])} | {100 * gain:+.1f}% | "
              f"{runs[0]['trainable_parameters']} | {devices(by_lr)} |")
    print()
    for edge in edges:
        print(f"WARNING: {edge}")
    if not edges:
        print("Every best learning rate is inside the rates run.")


if __name__ == "__main__":
    main()
