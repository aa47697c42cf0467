#!/usr/bin/env bash
# The GPU benchmark in one run: builds vitune with CUDA, runs the CUDA test suite, a
# trace of the tiny ViT, whole-step timings of ViT-B/16 and the Fashion-MNIST ViT, the
# GD-FPS prior anchor over 12,800 images and GD-FPS against GPS selection, and prints a
# summary. Everything it prints also goes to $OUT/run.log; results go under $OUT
# (default runs/gpu); the large inputs it generates (a 346 MB random ViT-B/16, masks) go
# to $SCRATCH (default build-gpu/bench-scratch), outside $OUT. Run from the repository
# root:
#
#   bench/gpu/run.sh                                   # on the GPU machine
#   DRY_RUN=1 BUILD=build-cuda bench/gpu/run.sh        # with nvcc, no GPU: tiny, on the CPU
#   DRY_RUN=1 SKIP_BUILD=1 BUILD=build bench/gpu/run.sh   # the same with any built tree
#
# Budget on one H200 with 16 cores: 8 minutes in all (BUDGET_S=480), a deadline that
# every command's timeout respects; a part that finds the budget spent is skipped and
# recorded as such. Expected times (limits in brackets):
#   a. configure + build, 16 jobs (about 210 objects)      ~2-3 min  [the budget]
#   b. nvidia-smi and `vitune info`                        seconds   [30 s]
#   c. cuda_tests                                          < 1 min   [120 s]
#   d. `vitune trace` of the tiny ViT                      seconds   [60 s]
#   e. vit_step, 12 runs of 13 + 1 steps (fp32, tf32, bf16) ~60 s    [60 s each]
#   f. inputs (12,800 images, 39 MB a file) + the anchor   ~30-60 s  [60 s + 180 s]
#   g. selection_cost.sh at two batch sizes, 1,024 images  ~1-2 min  [200 s each]
#   h. the anchor again with --tf32, if time is left       ~20-40 s  [120 s]
# Only a failed build stops the script; any other part's failure is recorded in
# $OUT/parts.tsv and the summary, and the script goes on.
#
# Environment: OUT, SCRATCH, BUILD (default build-gpu), JOBS (16), BUDGET_S (480),
# DEVICE (cuda), SKIP_BUILD=1 (use BUILD as it is), DRY_RUN=1 (DEVICE cpu, the TF32 and bf16 runs
# left out, tiny sizes, 1 job and a 30-minute budget: checks every command's flags and the
# files passed between them on a machine without a GPU).
set -u -o pipefail

OUT=${OUT:-runs/gpu}
BUILD=${BUILD:-build-gpu}
SCRATCH=${SCRATCH:-$BUILD/bench-scratch}
DRY_RUN=${DRY_RUN:-0}
SKIP_BUILD=${SKIP_BUILD:-0}
LOADER_THREADS=8
if [ "$DRY_RUN" = 1 ]; then
  DEVICE=${DEVICE:-cpu}
  JOBS=${JOBS:-1}
  BUDGET_S=${BUDGET_S:-1800}
  VIT_B_BATCHES="1 2" STEPS=1 WARMUP=0
  ANCHOR_IMAGES=8 ANCHOR_BATCH=4
  SELECT_IMAGES=4 SELECT_BATCHES="2 4"
else
  DEVICE=${DEVICE:-cuda}
  JOBS=${JOBS:-16}
  BUDGET_S=${BUDGET_S:-480}
  VIT_B_BATCHES="8 32 64" STEPS=10 WARMUP=3
  ANCHOR_IMAGES=12800 ANCHOR_BATCH=128
  SELECT_IMAGES=1024 SELECT_BATCHES="32 64"
fi
PRECISIONS="fp32"
[ "$DEVICE" != cpu ] && PRECISIONS="fp32 tf32 bf16"

VITUNE=$BUILD/cli/vitune
VIT_STEP=$BUILD/bench/vit_step
MAKE_IMAGES=$BUILD/bench/make_random_images
CUDA_TESTS=$BUILD/tests/cuda_tests
VIT_B16="--img 224 --patch 16 --chans 3 --dim 768 --depth 12 --heads 12 --classes 1000"
TINY_VIT=tests/golden/tiny_vit.safetensors
TINY_IMAGES=tests/golden/tiny_images.safetensors

DEADLINE=$((SECONDS + BUDGET_S))

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Runs a command for at most $1 seconds and never past the deadline (timeout signals
# the command's whole process group); 124 when cut short or skipped. The command line
# is echoed to stderr, so that stdout stays the command's own.
limited() {
  local limit=$1
  shift
  local left=$((DEADLINE - SECONDS))
  if [ "$left" -lt 5 ]; then
    echo "   skipped, the ${BUDGET_S} s budget is spent: $*" >&2
    return 124
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "\$ $*" >&2
  timeout -k 10 "$limit" "$@"
}

# Runs the function $2 as part $1, timing it and recording its outcome in parts.tsv.
part() {
  local name=$1 function=$2 start status outcome
  echo
  echo "=== $name ($((DEADLINE - SECONDS)) s of the budget left)"
  start=$(now)
  "$function"
  status=$?
  case $status in
    0) outcome=ok ;;
    124) outcome="timed out or skipped" ;;
    *) outcome="failed (exit $status)" ;;
  esac
  printf '%s\t%s\t%s\n' "$name" "$outcome" "$(since "$start")" >> "$OUT/parts.tsv"
  echo "=== $name: $outcome"
}

build() {
  local configure=(cmake -S . -B "$BUILD" -DVITUNE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
                   -DVITUNE_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release)
  echo "\$ ${configure[*]}  (output in $OUT/build.log)"
  limited 120 "${configure[@]}" >> "$OUT/build.log" 2>&1 || return 1
  echo "\$ cmake --build $BUILD -j$JOBS --target vitune vit_step make_random_images cuda_tests engine_tests"
  if limited "$BUDGET_S" cmake --build "$BUILD" -j"$JOBS" --target vitune vit_step make_random_images \
      cuda_tests engine_tests >> "$OUT/build.log" 2>&1; then
    return 0
  fi
  # The test programs are not needed by the benchmarks: without them, part c fails alone.
  echo "the build with the test programs failed (see build.log); building the benchmark programs alone"
  limited "$BUDGET_S" cmake --build "$BUILD" -j"$JOBS" --target vitune vit_step make_random_images \
    >> "$OUT/build.log" 2>&1
}

devices() {
  if command -v nvidia-smi > /dev/null; then
    limited 30 nvidia-smi -L
    limited 30 nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit,driver_version --format=csv
  else
    echo "no nvidia-smi on this machine"
  fi
  limited 30 "$VITUNE" info "$TINY_VIT" | grep '^engine'
}

cuda_tests() {
  limited 120 "$CUDA_TESTS" --gtest_output=json:"$OUT/cuda_tests.json" 2>&1 | tee "$OUT/cuda_tests.txt"
}

trace() {
  limited 60 "$VITUNE" trace --model "$TINY_VIT" --images "$TINY_IMAGES" --device "$DEVICE" \
    --out "$OUT/trace_tiny_vit.safetensors"
}

# One JSON line per run into vit_step.jsonl: ViT-B/16 training steps at each batch size,
# then the Fashion-MNIST ViT's at batch 128, in each precision.
vit_steps() {
  local failed=0 precision flag batch
  for precision in $PRECISIONS; do
    flag=""
    [ "$precision" = tf32 ] && flag=--tf32
    [ "$precision" = bf16 ] && flag=--bf16
    for batch in $VIT_B_BATCHES; do
      # shellcheck disable=SC2086  # VIT_B16 and flag are lists of flags
      limited 60 "$VIT_STEP" $VIT_B16 --batch "$batch" --steps "$STEPS" --warmup "$WARMUP" --mode train \
        --device "$DEVICE" $flag | tee -a "$OUT/vit_step.jsonl" || failed=1
    done
    # shellcheck disable=SC2086
    limited 60 "$VIT_STEP" --batch 128 --steps "$STEPS" --warmup "$WARMUP" --mode train --device "$DEVICE" \
      $flag | tee -a "$OUT/vit_step.jsonl" || failed=1
  done
  return $failed
}

anchor_inputs() {
  limited 60 "$MAKE_IMAGES" "$SCRATCH/anchor" "$ANCHOR_IMAGES"
}

# The GD-FPS prior anchor of the random ViT-B/16 over all of pre_random.bin; $1 is empty
# or --tf32, $2 names the results file.
anchor_run() {
  local start status
  start=$(now)
  # shellcheck disable=SC2086  # $1 is empty or one flag
  limited "$3" "$VITUNE" anchor --model "$SCRATCH/anchor/vit_b16_random.safetensors" \
    --data "cifar10:$SCRATCH/anchor/pre_random.bin" --normalization imagenet --batch-size "$ANCHOR_BATCH" \
    --loader-threads "$LOADER_THREADS" --device "$DEVICE" $1 --out "$SCRATCH/anchor/anchor$2.safetensors" \
    --results "$OUT/anchor$2.json"
  status=$?
  echo "anchor over $ANCHOR_IMAGES images: $(since "$start") s wall in all (model load included)"
  return $status
}
anchor_fp32() { anchor_run "" "" 180; }
anchor_tf32() { anchor_run --tf32 _tf32 120; }

# selection_cost.sh's ViT-B/16 part at each batch size; the select results are copied
# to $OUT/selection_b<batch>/.
selection() {
  local failed=0 batch
  for batch in $SELECT_BATCHES; do
    limited 200 env VITUNE="$VITUNE" OUT="$SCRATCH/selection_b$batch" IMAGES="$SELECT_IMAGES" BATCH="$batch" \
      DEVICE="$DEVICE" MODELS=vit_b16 MAKE_IMAGES="$MAKE_IMAGES" LOADER_THREADS="$LOADER_THREADS" \
      sh bench/selection_cost.sh || failed=1
    mkdir -p "$OUT/selection_b$batch"
    cp "$SCRATCH/selection_b$batch"/vit_b16_*.json "$OUT/selection_b$batch/" || failed=1
  done
  return $failed
}

# The value of "key" in a one-line JSON object (numbers, booleans and simple strings),
# at any depth: the first occurrence; "-" where there is none.
json_field() {
  awk -v key="\"$1\":" '{
    at = index($0, key)
    if (at == 0) { print "-"; next }
    rest = substr($0, at + length(key))
    sub(/^ */, "", rest)
    match(rest, /^("[^"]*"|[^,}]*)/)
    value = substr(rest, RSTART, RLENGTH)
    gsub(/"/, "", value)
    print value
  }'
}

summary() {
  echo
  echo "=== summary"
  echo "| part | outcome | seconds |"
  echo "|---|---|---:|"
  awk -F '\t' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }' "$OUT/parts.tsv"
  if [ -s "$OUT/vit_step.jsonl" ]; then
    echo
    echo "vit_step (train steps):"
    echo "| model dim | batch | tf32 | bf16 | images/s | ms/step | GFLOPs/step | MFU | peak device MiB |"
    echo "|---:|---:|---|---|---:|---:|---:|---:|---:|"
    while IFS= read -r line; do
      printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
        "$(echo "$line" | json_field dim)" "$(echo "$line" | json_field batch)" \
        "$(echo "$line" | json_field tf32)" "$(echo "$line" | json_field bf16)" \
        "$(echo "$line" | json_field images_per_s)" \
        "$(echo "$line" | json_field ms_per_step)" \
        "$(echo "$line" | json_field model_flops_per_step | awk '{ printf "%.1f", $1 / 1e9 }')" \
        "$(echo "$line" | json_field mfu)" \
        "$(echo "$line" | json_field peak_device_bytes | awk '$1 != "-" { printf "%.0f", $1 / 1048576 } $1 == "-" { print "-" }')"
    done < "$OUT/vit_step.jsonl"
  fi
  local file
  for file in "$OUT/anchor.json" "$OUT/anchor_tf32.json"; do
    [ -f "$file" ] || continue
    local flat
    flat=$(tr -d '\n' < "$file")
    echo
    echo "$(basename "$file"): $(echo "$flat" | json_field images) images in" \
      "$(echo "$flat" | json_field wall_seconds | awk '{ printf "%.2f", $1 }') s," \
      "peak device bytes $(echo "$flat" | json_field peak_device_bytes), tf32 $(echo "$flat" | json_field tf32)"
  done
  if ls "$OUT"/selection_b*/vit_b16_gps.json > /dev/null 2>&1; then
    echo
    if command -v python3 > /dev/null; then
      python3 bench/selection_table.py "$OUT"/selection_b*
    else
      grep -H -E '"(method|images|wall_seconds|peak_host_bytes|peak_device_bytes|flops_per_image)"' \
        "$OUT"/selection_b*/*.json
    fi
  fi
}

main() {
  echo "bench/gpu/run.sh: OUT=$OUT BUILD=$BUILD SCRATCH=$SCRATCH DEVICE=$DEVICE JOBS=$JOBS" \
    "BUDGET_S=$BUDGET_S DRY_RUN=$DRY_RUN, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit" \
    "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  if [ "$SKIP_BUILD" != 1 ]; then
    part build build
    if ! tail -n 1 "$OUT/parts.tsv" | grep -q $'\tok\t'; then
      echo "the build failed: the last lines of $OUT/build.log:"
      tail -n 40 "$OUT/build.log"
      summary
      return 1
    fi
  fi
  part devices devices
  part cuda_tests cuda_tests
  part trace trace
  part vit_step vit_steps
  part anchor_inputs anchor_inputs
  part anchor anchor_fp32
  part selection selection
  [ "$DEVICE" != cpu ] && part anchor_tf32 anchor_tf32
  summary
}

mkdir -p "$OUT" "$SCRATCH"
: > "$OUT/parts.tsv"
main 2>&1 | tee "$OUT/run.log"
