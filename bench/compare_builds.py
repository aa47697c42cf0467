#!/usr/bin/env python3
"""Two builds of one Google Benchmark program, side by side.

Runs the program of build A and of build B back to back for --rounds rounds at the
same VITUNE_NUM_THREADS (A then B, then B then A, and so on), so that load on the
machine hits both alike, and prints per benchmark the median real time of each and the
median over the rounds of the round's ratio B / A (below 1 when B is faster), with its
quartiles. On a machine whose speed drifts over minutes the ratio within a round is
steadier than the ratio of the medians. Standard library only.

    bench/compare_builds.py --rounds 8 old/build/bench/bench_attention \\
        build/bench/bench_attention --benchmark_min_time=0.3

Arguments after the two programs go to both unchanged. Exit status 1 when a run fails
or the two programs ran different benchmarks.
"""
import argparse
import os
import statistics
import sys

from thread_scaling import run_once


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="runs of each program, alternating (default 5)")
    parser.add_argument("--threads", type=int, default=int(os.environ.get("VITUNE_NUM_THREADS", "2")),
                        help="VITUNE_NUM_THREADS of every run (default: as set, else 2)")
    parser.add_argument("a", help="build A's program (the baseline)")
    parser.add_argument("b", help="build B's program")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="passed to both programs")
    options = parser.parse_args()
    if options.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {options.rounds}")
    samples = {"a": {}, "b": {}}
    ratios = {}
    units = {}
    for round_index in range(options.rounds):
        times = {}
        for build in ("a", "b") if round_index % 2 == 0 else ("b", "a"):
            times[build], run_units = run_once(getattr(options, build), options.arguments, options.threads)
            units.update(run_units)
            for name, values in times[build].items():
                samples[build].setdefault(name, []).extend(values)
        if set(times["a"]) != set(times["b"]) or not times["a"]:
            sys.exit(f"compare_builds: the two programs ran different benchmarks "
                     f"({sorted(times['a'])} against {sorted(times['b'])})")
        for name in times["a"]:
            ratios.setdefault(name, []).append(statistics.median(times["b"][name]) / statistics.median(times["a"][name]))
    width = max(len(name) for name in samples["a"])
    print(f"{options.threads} threads, {options.rounds} rounds")
    print(f"{'benchmark':<{width}}  {'A (median)':>12}  {'B (median)':>12}  B / A (median of rounds, quartiles)")
    for name in samples["a"]:
        a, b = statistics.median(samples["a"][name]), statistics.median(samples["b"][name])
        unit = units[name]
        quartiles = statistics.quantiles(ratios[name], n=4) if len(ratios[name]) > 1 else ratios[name] * 3
        print(f"{name:<{width}}  {a:>9.4g} {unit:<2}  {b:>9.4g} {unit:<2}  {statistics.median(ratios[name]):.2f} "
              f"({quartiles[0]:.2f}-{quartiles[2]:.2f})")


if __name__ == "__main__":
    main()
