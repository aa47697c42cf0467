#!/usr/bin/env python3
"""The 1-to-2-thread speedup of every benchmark of a Google Benchmark program.

Runs the same binary with VITUNE_NUM_THREADS=1 and =2, alternating (1, 2, 1, 2, ...)
for --rounds rounds so that load on the machine hits both alike, reads each run's JSON,
and prints per benchmark the median real time at each thread count and the speedup
(time at 1 thread / time at 2). Standard library only.

    bench/thread_scaling.py build/bench/bench_train_step --benchmark_filter=fmnist
    bench/thread_scaling.py --rounds 3 build/bench/bench_gemm --benchmark_min_time=0.2

Arguments after the program go to it unchanged (--benchmark_format and --benchmark_out
are set here). Exit status 1 when a run fails or the two thread counts ran different
benchmarks.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run_once(program, arguments, threads):
    """{benchmark name: real time in its time unit} and {name: unit} of one run."""
    env = dict(os.environ, VITUNE_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "run.json")
        command = [program, *arguments, "--benchmark_format=console", f"--benchmark_out={out}",
                   "--benchmark_out_format=json"]
        result = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            sys.exit(f"VITUNE_NUM_THREADS={threads} {' '.join(command)} failed "
                     f"(exit status {result.returncode}):\n{result.stderr}")
        with open(out) as stream:
            text = stream.read()
    # Google Benchmark exits with status 0 and writes nothing when no benchmark matches.
    if not text.strip():
        sys.exit(f"VITUNE_NUM_THREADS={threads} {' '.join(command)} ran no benchmark:\n{result.stderr}")
    report = json.loads(text)
    times, units = {}, {}
    for entry in report.get("benchmarks", []):
        if entry.get("run_type", "iteration") != "iteration":
            continue  # aggregates of --benchmark_repetitions: the repetitions themselves count
        times.setdefault(entry["name"], []).append(float(entry["real_time"]))
        units[entry["name"]] = entry.get("time_unit", "ns")
    return times, units


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1, help="runs at each thread count, alternating (default 1)")
    parser.add_argument("program", help="a Google Benchmark program, e.g. build/bench/bench_train_step")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="passed to the program")
    options = parser.parse_args()
    if options.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {options.rounds}")
    samples = {1: {}, 2: {}}
    units = {}
    for _ in range(options.rounds):
        for threads in (1, 2):
            times, run_units = run_once(options.program, options.arguments, threads)
            units.update(run_units)
            for name, values in times.items():
                samples[threads].setdefault(name, []).extend(values)
    if set(samples[1]) != set(samples[2]) or not samples[1]:
        sys.exit(f"thread_scaling: the runs with 1 and 2 threads ran different benchmarks "
                 f"({sorted(samples[1])} against {sorted(samples[2])})")
    width = max(len(name) for name in samples[1])
    print(f"{'benchmark':<{width}}  {'1 thread':>12}  {'2 threads':>12}  speedup")
    for name in samples[1]:
        one, two = statistics.median(samples[1][name]), statistics.median(samples[2][name])
        unit = units[name]
        print(f"{name:<{width}}  {one:>9.3f} {unit:<2}  {two:>9.3f} {unit:<2}  {one / two:.2f}x")


if __name__ == "__main__":
    main()
