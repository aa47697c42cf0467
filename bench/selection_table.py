#!/usr/bin/env python3
"""Prints the tables of the selection-cost benchmark from its results files.

Usage: selection_table.py FOLDER [FOLDER...]. In each folder, every model whose
<model>_gdfps.json and <model>_gps.json (results of `vitune select`) exist gives one row
per method -- images, wall time, peak host memory, GEMM FLOPs per image, and the peak
device memory when the selection ran on a GPU -- and one row of GPS / GD-FPS ratios (the
memory ratio of the device peak where there is one, else of the host peak). With
several folders, each row starts with its folder's name. Needs only the standard library.
"""

import json
import os
import sys

MODELS = ("fmnist", "vit_b16")
METHODS = ("gdfps", "gps")


def read_runs(folders):
    runs = []
    for folder in folders:
        for model in MODELS:
            paths = {m: os.path.join(folder, f"{model}_{m}.json") for m in METHODS}
            if all(os.path.isfile(p) for p in paths.values()):
                runs.append((folder, model, {m: json.load(open(p)) for m, p in paths.items()}))
    return runs


def memory(result):
    """The peak that matters: the device's when the run had one, else the host's."""
    return result.get("peak_device_bytes", result["peak_host_bytes"])


def main():
    folders = sys.argv[1:]
    if not folders:
        sys.exit("usage: selection_table.py FOLDER [FOLDER...]")
    runs = read_runs(folders)
    if not runs:
        sys.exit("selection_table.py: no <model>_gdfps.json and <model>_gps.json pair in " + ", ".join(folders))
    on_device = any("peak_device_bytes" in r for _, _, results in runs for r in results.values())
    named = len(folders) > 1
    lead = "| run " if named else ""
    rule = "|---" if named else ""

    device_head = " peak device MiB |" if on_device else ""
    print(f"{lead}| model | images | method | wall s | peak MiB |{device_head} GFLOPs/image |")
    print(f"{rule}|---|---|---|---|---|{'---|' if on_device else ''}---|")
    for folder, model, results in runs:
        name = f"| {os.path.basename(os.path.normpath(folder))} " if named else ""
        for m in METHODS:
            r = results[m]
            device = ""
            if on_device:
                device = f" {r['peak_device_bytes'] / 2**20:.1f} |" if "peak_device_bytes" in r else " - |"
            print(f"{name}| {model} | {r['images']} | {m} | {r['wall_seconds']:.2f} | "
                  f"{r['peak_host_bytes'] / 2**20:.1f} |{device} {r['flops_per_image'] / 1e9:.3f} |")
    print()
    memory_head = "peak memory (device's where used)" if on_device else "peak memory"
    print(f"{lead}| model | GPS / GD-FPS time | GPS / GD-FPS {memory_head} | GPS / GD-FPS FLOPs |")
    print(f"{rule}|---|---|---|---|")
    for folder, model, r in runs:
        name = f"| {os.path.basename(os.path.normpath(folder))} " if named else ""
        time = r["gps"]["wall_seconds"] / r["gdfps"]["wall_seconds"]
        peak = memory(r["gps"]) / memory(r["gdfps"])
        flops = r["gps"]["flops_per_image"] / r["gdfps"]["flops_per_image"]
        print(f"{name}| {model} | {time:.2f}x | {peak:.2f}x | {flops:.2f}x |")


if __name__ == "__main__":
    main()
