#!/usr/bin/env bash
# Runs one fuzz target: first on its regression inputs (fuzz/regressions/<name>/, each
# once), then fuzzing for a bounded time from the committed seeds. New inputs go to a
# working corpus under <work>, never into the source tree; a crash, hang or leak is
# saved under <work>/artifacts and fails the run. The mutations follow a fixed seed
# (VITUNE_FUZZ_SEED, default 1), so that a run explores the same inputs each time and a
# CI result repeats; VITUNE_FUZZ_SEED=0 lets libFuzzer draw one. Targets whose parser
# takes a path write each input to a file under TMPDIR: unless TMPDIR is set, that is
# /dev/shm where it is writable (in memory: 2 to 7 times the executions per second of a
# disk-backed /tmp).
# Usage: run_target.sh <fuzz binary> <target name> <source dir> <work dir> <seconds> [executions]
# With executions, the run also stops after that many inputs (libFuzzer's -runs).
set -euo pipefail
binary=$1 name=$2 source=$3 work=$4 seconds=$5 executions=${6:--1}

mkdir -p "$work/corpus/$name" "$work/artifacts"
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
regressions=("$source/fuzz/regressions/$name"/*)
if [ -e "${regressions[0]}" ]; then
  "$binary" -artifact_prefix="$work/artifacts/$name-" "${regressions[@]}"
fi
"$binary" -seed="${VITUNE_FUZZ_SEED:-1}" -max_total_time="$seconds" -runs="$executions" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/$name-" "$work/corpus/$name" "$source/fuzz/corpus/$name"
