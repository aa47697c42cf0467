#!/usr/bin/env python3
"""Two builds of one Google Benchmark program, side by side.

Runs the program of build A and of build B in turn (A, B, A, B, ...) for --rounds
rounds at the same VITUNE_NUM_THREADS, so that load on the machine hits both alike, and
prints per benchmark the median real time of each and their ratio (B over A: below 1
when B is faster). Standard library only.

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
    units = {}
    for _ in range(options.rounds):
        for build in ("a", "b"):
            times, run_units = run_once(getattr(options, build), options.arguments, options.threads)
            units.update(run_units)
            for name, values in times.items():
                samples[build].setdefault(name, []).extend(values)
    if set(samples["a"]) != set(samples["b"]) or not samples["a"]:
        sys.exit(f"compare_builds: the two programs ran different benchmarks "
                 f"({sorted(samples['a'])} against {sorted(samples['b'])})")
    width = max(len(name) for name in samples["a"])
    print(f"{options.threads} threads, median of {options.rounds} rounds")
    print(f"{'benchmark':<{width}}  {'A':>12}  {'B':>12}  B / A")
    for name in samples["a"]:
        a, b = statistics.median(samples["a"][name]), statistics.median(samples["b"][name])
        unit = units[name]
        print(f"{name:<{width}}  {a:>9.1f} {unit:<2}  {b:>9.1f} {unit:<2}  {b / a:.2f}")


if __name__ == "__main__":
    main()
