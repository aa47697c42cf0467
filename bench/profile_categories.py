#!/usr/bin/env python3
"""Sums a perf profile by kind of work: where a step's time goes.

Reads `perf report --no-children --sort symbol -g none` text on stdin (standard
library only) and prints a Markdown table of the share of samples per category, the
symbol names matched by the patterns below in order (the first match wins).

    VITUNE_NUM_THREADS=2 perf record -F 2000 -o step.perf \\
        build/bench/bench_train_step --benchmark_filter='BM_fmnist_method/0/' --benchmark_min_time=3
    perf report -i step.perf --no-children --sort symbol -g none | bench/profile_categories.py
"""
import re
import sys

# (category, regular expression on the symbol), first match wins.
CATEGORIES = [
    ("GEMM (kernel, packing)", r"micro_kernel|pack_[ab]_|sgemm|gemm"),
    ("masked weight gradient", r"masked_weight_grad|accumulate_block|accumulate_groups"),
    ("attention forward", r"attention_forward"),
    ("attention backward", r"attention_backward"),
    ("LayerNorm", r"layer_norm|input_grad_kernel|param_grad_kernel|forward_kernel<float>\(float const\*, float const\*, float const\*, double"),
    ("GELU", r"gelu|for_float_vectors"),
    ("softmax, cross-entropy", r"softmax|cross_entropy"),
    ("bias and residual adds, sums", r"add_row_broadcast|map2|add\(|sum_rows|reduce|axpy|scale"),
    ("optimizer update", r"optimizer|sgd|adamw"),
    ("copies (memmove, memset, reshape)", r"memmove|memset|memcpy|copy|contiguous|transpose|patch|tokens"),
    ("thread pool (waiting, dispatch)", r"ThreadPool|parallel_for|futex|sched|finish_task_switch|spin"),
    ("allocation, page faults", r"malloc|free|alloc|page|clear_page|pte|mmap|munmap|memcg"),
]

# "  12.34%  [.] symbol" (perf may add "-  -" columns after the symbol).
ROW = re.compile(r"^\s*([0-9.]+)%\s+\[[.k]\]\s+(.*?)(\s+-\s+-)?\s*$")


def main():
    shares = {name: 0.0 for name, _ in CATEGORIES}
    other = {}
    for line in sys.stdin:
        match = ROW.match(line)
        if not match:
            continue
        share, symbol = float(match.group(1)), match.group(2)
        for name, pattern in CATEGORIES:
            if re.search(pattern, symbol):
                shares[name] += share
                break
        else:
            other[symbol] = other.get(symbol, 0.0) + share
    print("| category | share of samples |")
    print("|---|---:|")
    for name, _ in CATEGORIES:
        print(f"| {name} | {shares[name]:.1f}% |")
    print(f"| other | {sum(other.values()):.1f}% |")
    top = sorted(other.items(), key=lambda item: -item[1])[:5]
    if top:
        print("\nLargest in other: " + "; ".join(f"{symbol[:60]} {share:.1f}%" for symbol, share in top))


if __name__ == "__main__":
    main()
