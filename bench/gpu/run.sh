#!/usr/bin/env bash
# The GPU run in one script, for a machine with one NVIDIA GPU and only the CUDA toolkit,
# a C++ compiler and a shell (no network, no Debian packages): builds vitune with CUDA
# for sm_90 from the dependencies that bench/gpu/prepare_deps.sh packed beforehand
# (.gpu-deps/deps.tar.xz), runs the CUDA tests with launch-synchronous error checks, a
# trace of the tiny ViT checked against PyTorch's values, every command of the demo on
# the GPU, whole-step timings of ViT-B/16 in fp32, TF32 and bf16, and the GD-FPS prior
# anchor over 12,800 images at 224x224; prints a summary. Run from the repository root:
#
#   bench/gpu/prepare_deps.sh                      # on a Debian 12 machine with a mirror
#   bench/gpu/run.sh                               # on the GPU machine
#   DRY_RUN=1 BUILD=build-cuda bench/gpu/run.sh    # with nvcc, no GPU: tiny, on the CPU
#   DRY_RUN=1 SKIP_BUILD=1 BUILD=build bench/gpu/run.sh   # the same with any built tree
#
# Everything it writes ends in one tarball, $OUT/gpu-run.tar.gz (OUT defaults to runs/gpu):
# run.log (all it printed), parts.tsv and the results of each part; large generated files
# (a 346 MB random ViT-B/16, masks, the demo's models) stay in $SCRATCH (default
# $BUILD/bench-scratch). Budget on one H200 with 16 cores: 8 minutes in all (BUDGET_S=480),
# a deadline that every command's timeout respects; each part prints its time, and a part
# that finds the budget spent is skipped and recorded. Expected times [limits]:
#   a. unpack the dependencies, configure, build 5 targets, 16 jobs   ~2-3 min [the budget]
#   b. nvidia-smi and `vitune info`                                   seconds   [30 s]
#   c. cuda_tests with VITUNE_CUDA_SYNC=1                             < 1 min   [150 s]
#   d. `vitune trace --device cuda` of the tiny ViT, compare_trace    seconds   [60 s]
#   e. `vitune demo --device cuda` (every command of the demo)        ~1 min    [200 s]
#   f. vit_step, ViT-B/16 at batch 8, 32, 64 and the Fashion-MNIST ViT, in fp32, TF32,
#      bf16: 12 runs of 10 + 3 steps                                  ~1 min    [60 s each]
#   g. inputs (a random ViT-B/16, 12,800 images) + the GD-FPS anchor  ~30-60 s  [60 s + 180 s]
#   h. if time is left: selection_cost.sh at two batch sizes, and the anchor with --tf32
#   i. only when PARTS names it: `experiments`, docs/results/tuned/run.sh on the GPU with
#      JOBS runs at a time (the component sweep and the methods table of issue 15) ~5 min
# Only a failed build stops the script; any other part's failure is recorded in parts.tsv
# and the summary, and the script goes on.
#
# Environment: OUT, SCRATCH, BUILD (default build-gpu), JOBS (16), BUDGET_S (480), DEVICE
# (cuda), DEPS_ARCHIVE (default .gpu-deps/deps.tar.xz; none: the machine's own packages),
# CMAKE (a cmake to use; default the machine's cmake >= 3.22, else the carried one),
# PARTS (the parts after the build, in order; default "devices cuda_tests trace demo
# vit_step anchor selection anchor_tf32"; "experiments" is the part i above),
# EXPERIMENT_JOBS (runs at a time in part i, default JOBS), EXPERIMENTS_LIMIT (its
# seconds, default the budget), SKIP_BUILD=1 (use BUILD as it is), DRY_RUN=1 (DEVICE cpu, the TF32 and bf16 runs left
# out, tiny sizes, 2 jobs and a 40-minute budget: checks every command's flags and the
# files passed between them on a machine without a GPU; part i runs QUICK=1).
set -u -o pipefail

OUT=${OUT:-runs/gpu}
BUILD=${BUILD:-build-gpu}
SCRATCH=${SCRATCH:-$BUILD/bench-scratch}
DEPS_ARCHIVE=${DEPS_ARCHIVE:-.gpu-deps/deps.tar.xz}
mkdir -p "$BUILD"
DEPS=$(cd "$BUILD" && pwd)/deps
DRY_RUN=${DRY_RUN:-0}
SKIP_BUILD=${SKIP_BUILD:-0}
LOADER_THREADS=8
TRIPLET=x86_64-linux-gnu
if [ "$DRY_RUN" = 1 ]; then
  DEVICE=${DEVICE:-cpu}
  JOBS=${JOBS:-2}
  BUDGET_S=${BUDGET_S:-2400}
  VIT_B_BATCHES="1 2" STEPS=1 WARMUP=0
  ANCHOR_IMAGES=8 ANCHOR_BATCH=4
  SELECT_IMAGES=4 SELECT_BATCHES="2 4"
  DEMO_SIZE="--steps 2 --batch-size 10 --anchor-images 20 --plasticity-images 4 --jobs 2" DEMO_LIMIT=900
else
  DEVICE=${DEVICE:-cuda}
  JOBS=${JOBS:-16}
  BUDGET_S=${BUDGET_S:-480}
  VIT_B_BATCHES="8 32 64" STEPS=10 WARMUP=3
  ANCHOR_IMAGES=12800 ANCHOR_BATCH=128
  SELECT_IMAGES=1024 SELECT_BATCHES="32 64"
  DEMO_SIZE="--jobs 4" DEMO_LIMIT=200
fi
EXPERIMENTS_LIMIT=${EXPERIMENTS_LIMIT:-$BUDGET_S}
EXPERIMENT_JOBS=${EXPERIMENT_JOBS:-$JOBS}
ALL_PARTS="devices cuda_tests trace demo vit_step anchor selection anchor_tf32"
PARTS=${PARTS:-$ALL_PARTS}
PRECISIONS="fp32"
[ "$DEVICE" != cpu ] && PRECISIONS="fp32 tf32 bf16"

RESULTS=$OUT/gpu-run
VITUNE=$BUILD/cli/vitune
VIT_STEP=$BUILD/bench/vit_step
MAKE_IMAGES=$BUILD/bench/make_random_images
COMPARE_TRACE=$BUILD/bench/compare_trace
CUDA_TESTS=$BUILD/tests/cuda_tests
TARGETS="vitune vit_step make_random_images compare_trace cuda_tests"
VIT_B16="--img 224 --patch 16 --chans 3 --dim 768 --depth 12 --heads 12 --classes 1000"
TINY_VIT=tests/golden/tiny_vit.safetensors
TINY_IMAGES=tests/golden/tiny_images.safetensors
TINY_TRACE=tests/golden/tiny_trace.safetensors

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
  local name=$1 function=$2 start status outcome seconds
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
  seconds=$(since "$start")
  printf '%s\t%s\t%s\n' "$name" "$outcome" "$seconds" >> "$RESULTS/parts.tsv"
  echo "=== $name: $outcome in $seconds s"
}

# The version of the cmake program $1 when it runs and is at least 3.22, else nothing.
usable_cmake_version() {
  "$1" --version 2>/dev/null | awk 'NR == 1 { split($3, v, "."); if (v[1] > 3 || (v[1] == 3 && v[2] >= 22)) print $3 }'
}

# Unpacks the carried dependencies into $DEPS once per archive, and picks cmake and the
# generator: the machine's own where usable, else the carried ones.
tools() {
  if [ -f "$DEPS_ARCHIVE" ]; then
    local stamp
    stamp=$(cksum < "$DEPS_ARCHIVE")
    if [ "$(cat "$DEPS/.unpacked" 2>/dev/null)" != "$stamp" ]; then
      command -v xz > /dev/null || { echo "xz is needed to unpack $DEPS_ARCHIVE"; return 1; }
      echo "unpacking $DEPS_ARCHIVE into $DEPS"
      rm -rf "$DEPS" && mkdir -p "$DEPS" && tar -C "$DEPS" -xJf "$DEPS_ARCHIVE" || return 1
      echo "$stamp" > "$DEPS/.unpacked"
    fi
    PREFIX_ARGS=(-DCMAKE_PREFIX_PATH="$DEPS/usr")
  else
    echo "no $DEPS_ARCHIVE: using this machine's packages (bench/gpu/prepare_deps.sh makes the archive)"
    PREFIX_ARGS=()
  fi
  if [ -z "${CMAKE:-}" ]; then
    if command -v cmake > /dev/null && [ -n "$(usable_cmake_version cmake)" ]; then
      CMAKE=$(command -v cmake)
    elif [ -x "$DEPS/usr/bin/cmake" ]; then
      CMAKE=$DEPS/usr/bin/cmake
    else
      echo "no cmake >= 3.22 on this machine and none carried (prepare_deps.sh with WITH_CMAKE=1)"
      return 1
    fi
  fi
  if [ -z "$(usable_cmake_version "$CMAKE")" ]; then
    echo "$CMAKE does not run or is older than 3.22; the carried cmake needs glibc >= 2.36"
    echo "(this machine: $(ldd --version 2>/dev/null | head -n 1)); set CMAKE to a cmake >= 3.22"
    return 1
  fi
  GENERATOR_ARGS=()
  if command -v ninja > /dev/null && ninja --version > /dev/null 2>&1; then
    GENERATOR_ARGS=(-G Ninja -DCMAKE_MAKE_PROGRAM="$(command -v ninja)")
  elif [ -x "$DEPS/usr/bin/ninja" ] && "$DEPS/usr/bin/ninja" --version > /dev/null 2>&1; then
    GENERATOR_ARGS=(-G Ninja -DCMAKE_MAKE_PROGRAM="$DEPS/usr/bin/ninja")
  elif command -v make > /dev/null; then
    GENERATOR_ARGS=(-G "Unix Makefiles")
  else
    echo "neither ninja (machine or carried) nor make found"
    return 1
  fi
  echo "cmake: $CMAKE ($(usable_cmake_version "$CMAKE")); generator: ${GENERATOR_ARGS[*]}"
}

build() {
  tools || return 1
  if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q "^CMAKE_COMMAND:INTERNAL=$CMAKE\$" "$BUILD/CMakeCache.txt"; then
    echo "$BUILD was configured by another cmake: configuring afresh"
    rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles"
  fi
  local configure=("$CMAKE" -S . -B "$BUILD" "${GENERATOR_ARGS[@]}" "${PREFIX_ARGS[@]}" -DCMAKE_BUILD_TYPE=Release
                   -DVITUNE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DVITUNE_BUILD_TESTS=ON
                   -DVITUNE_BUILD_BENCH=ON -DVITUNE_BUILD_EXAMPLES=OFF)
  [ "$DRY_RUN" = 1 ] && configure+=(-DVITUNE_CUDA=AUTO)
  echo "\$ ${configure[*]}  (output in build.log)"
  limited 180 "${configure[@]}" >> "$RESULTS/build.log" 2>&1 || { tail -n 30 "$RESULTS/build.log"; return 1; }
  grep -E '^-- (vitune|Found)' "$RESULTS/build.log" | sort -u
  # shellcheck disable=SC2086  # TARGETS is a list
  echo "\$ $CMAKE --build $BUILD -j$JOBS --target $TARGETS"
  # shellcheck disable=SC2086
  if limited "$BUDGET_S" "$CMAKE" --build "$BUILD" -j"$JOBS" --target $TARGETS >> "$RESULTS/build.log" 2>&1; then
    return 0
  fi
  # The test program is not needed by the benchmarks: without it, part c fails alone.
  echo "the build with cuda_tests failed (see build.log); building the other programs alone"
  limited "$BUDGET_S" "$CMAKE" --build "$BUILD" -j"$JOBS" --target vitune vit_step make_random_images compare_trace \
    >> "$RESULTS/build.log" 2>&1
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

# Every kernel launch synchronised and checked (engine/cuda reads VITUNE_CUDA_SYNC).
cuda_tests() {
  limited 150 env VITUNE_CUDA_SYNC=1 "$CUDA_TESTS" --gtest_output=json:"$RESULTS/cuda_tests.json" 2>&1 |
    tee "$RESULTS/cuda_tests.txt" | tail -n 25
}

trace() {
  limited 60 "$VITUNE" trace --model "$TINY_VIT" --images "$TINY_IMAGES" --device "$DEVICE" \
    --out "$RESULTS/trace_tiny_vit.safetensors" || return $?
  # Every tensor's line goes to trace_compare.txt; the mismatches and the count are shown.
  limited 60 "$COMPARE_TRACE" "$RESULTS/trace_tiny_vit.safetensors" "$TINY_TRACE" | tee "$RESULTS/trace_compare.txt" |
    awk '!/  ok$/'
}

# The demo at its defaults (at its smallest in a dry run), every step on DEVICE, on the
# carried Fashion-MNIST (or the machine's Debian package).
# Sets DATA_SUFFIX to the "&root=" of the carried Fashion-MNIST, or to nothing where the
# machine has the Debian package; fails where neither is there.
fashion_mnist() {
  DATA_SUFFIX=""
  if [ -f "$DEPS/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte" ]; then
    DATA_SUFFIX="&root=$DEPS/usr/share/datasets/fashion-mnist"
  elif [ ! -d /usr/share/datasets/fashion-mnist ]; then
    echo "no Fashion-MNIST: neither carried (prepare_deps.sh with WITH_DATA=1) nor installed"
    return 1
  fi
}

demo() {
  fashion_mnist || return 1
  local suffix=$DATA_SUFFIX
  rm -rf "$SCRATCH/demo"
  # shellcheck disable=SC2086  # DEMO_SIZE is a list of flags
  limited "$DEMO_LIMIT" "$VITUNE" demo --device "$DEVICE" $DEMO_SIZE --out "$SCRATCH/demo" \
    --pretrain-data "fashion-mnist:train?classes=0-4$suffix" \
    --data "fashion-mnist:train?classes=5-9&per_class=200&part=0:160&seed=0$suffix" \
    --eval-data "fashion-mnist:test?classes=5-9$suffix" 2>&1 | tail -n 40
  local status=$?
  # Its reports, logs and charts; not its models and masks.
  mkdir -p "$RESULTS/demo"
  [ -d "$SCRATCH/demo" ] && tar -C "$SCRATCH/demo" -cf - --exclude='*.safetensors' . | tar -C "$RESULTS/demo" -xf -
  return $status
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
        --device "$DEVICE" $flag | tee -a "$RESULTS/vit_step.jsonl" || failed=1
    done
    # shellcheck disable=SC2086
    limited 60 "$VIT_STEP" --batch 128 --steps "$STEPS" --warmup "$WARMUP" --mode train --device "$DEVICE" \
      $flag | tee -a "$RESULTS/vit_step.jsonl" || failed=1
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
    --data "cifar10:$SCRATCH/anchor/pre_random.bin" --normalization imagenet --resize-images --batch-size "$ANCHOR_BATCH" \
    --loader-threads "$LOADER_THREADS" --device "$DEVICE" $1 --overwrite --out "$SCRATCH/anchor/anchor$2.safetensors" \
    --results "$RESULTS/anchor$2.json"
  status=$?
  echo "anchor over $ANCHOR_IMAGES images: $(since "$start") s wall in all (model load included)"
  return $status
}
anchor_fp32() { anchor_run "" "" 180; }
anchor_tf32() { anchor_run --tf32 _tf32 120; }

# selection_cost.sh's ViT-B/16 part at each batch size; the select results are copied
# to selection_b<batch>/.
selection() {
  local failed=0 batch
  for batch in $SELECT_BATCHES; do
    limited 200 env VITUNE="$VITUNE" OUT="$SCRATCH/selection_b$batch" IMAGES="$SELECT_IMAGES" BATCH="$batch" \
      DEVICE="$DEVICE" MODELS=vit_b16 MAKE_IMAGES="$MAKE_IMAGES" LOADER_THREADS="$LOADER_THREADS" \
      sh bench/selection_cost.sh || failed=1
    mkdir -p "$RESULTS/selection_b$batch"
    cp "$SCRATCH/selection_b$batch"/vit_b16_*.json "$RESULTS/selection_b$batch/" || failed=1
  done
  return $failed
}

# docs/results/tuned/run.sh on DEVICE with 16 runs at a time: the component sweep until
# every best rate is bracketed, and the methods table; every run's results, logs and
# output (not the models) are copied to experiments/. Needs the Debian data folder
# /usr/share/datasets/fashion-mnist (linked to the carried one where missing), because
# the script's dataset specs name no root.
experiments() {
  fashion_mnist || return 1
  if [ -n "$DATA_SUFFIX" ] && [ ! -e /usr/share/datasets/fashion-mnist ]; then
    mkdir -p /usr/share/datasets && ln -s "$DEPS/usr/share/datasets/fashion-mnist" /usr/share/datasets/fashion-mnist ||
      { echo "cannot link the carried Fashion-MNIST into /usr/share/datasets"; return 1; }
  fi
  local work=$SCRATCH/tuned status
  limited "$EXPERIMENTS_LIMIT" env V="$VITUNE" W="$work" DEVICE="$DEVICE" JOBS="$EXPERIMENT_JOBS" \
    QUICK="$DRY_RUN" sh docs/results/tuned/run.sh > "$RESULTS/experiments.log" 2>&1
  status=$?
  tail -n 5 "$RESULTS/experiments.log"
  mkdir -p "$RESULTS/experiments"
  [ -d "$work" ] && tar -C "$work" -cf - --exclude='*.safetensors' . | tar -C "$RESULTS/experiments" -xf -
  return $status
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
  awk -F '\t' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }' "$RESULTS/parts.tsv"
  [ -f "$RESULTS/trace_compare.txt" ] && echo && tail -n 1 "$RESULTS/trace_compare.txt"
  [ -f "$RESULTS/demo/demo.md" ] && echo && cat "$RESULTS/demo/demo.md"
  if [ -s "$RESULTS/vit_step.jsonl" ]; then
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
    done < "$RESULTS/vit_step.jsonl"
  fi
  local file
  for file in "$RESULTS/anchor.json" "$RESULTS/anchor_tf32.json"; do
    [ -f "$file" ] || continue
    local flat
    flat=$(tr -d '\n' < "$file")
    echo
    echo "$(basename "$file"): $(echo "$flat" | json_field images) images in" \
      "$(echo "$flat" | json_field wall_seconds | awk '{ printf "%.2f", $1 }') s," \
      "peak device bytes $(echo "$flat" | json_field peak_device_bytes), tf32 $(echo "$flat" | json_field tf32)"
  done
  if ls "$RESULTS"/selection_b*/vit_b16_gps.json > /dev/null 2>&1; then
    echo
    if command -v python3 > /dev/null; then
      python3 bench/selection_table.py "$RESULTS"/selection_b*
    else
      grep -H -E '"(method|images|wall_seconds|peak_host_bytes|peak_device_bytes|flops_per_image)"' \
        "$RESULTS"/selection_b*/*.json
    fi
  fi
}

main() {
  echo "bench/gpu/run.sh: OUT=$OUT BUILD=$BUILD SCRATCH=$SCRATCH DEVICE=$DEVICE JOBS=$JOBS" \
    "BUDGET_S=$BUDGET_S DRY_RUN=$DRY_RUN, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit" \
    "$(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores"
  if [ "$SKIP_BUILD" != 1 ]; then
    part build build
    if ! tail -n 1 "$RESULTS/parts.tsv" | grep -q $'\tok\t'; then
      echo "the build failed: the last lines of build.log:"
      tail -n 40 "$RESULTS/build.log"
      summary
      return 1
    fi
  fi
  local name
  for name in $PARTS; do
    case $name in
      devices) part devices devices ;;
      cuda_tests) part cuda_tests cuda_tests ;;
      trace) part trace trace ;;
      demo) part demo demo ;;
      vit_step) part vit_step vit_steps ;;
      anchor) part anchor_inputs anchor_inputs; part anchor anchor_fp32 ;;
      selection) part selection selection ;;
      anchor_tf32) [ "$DEVICE" != cpu ] && part anchor_tf32 anchor_tf32 ;;
      experiments) part experiments experiments ;;
      *) echo "PARTS: unknown part $name (expected: $ALL_PARTS experiments)"; return 1 ;;
    esac
  done
  summary
}

# One tarball of everything written, whatever happens to the run.
pack() {
  tar -C "$OUT" -czf "$OUT/gpu-run.tar.gz.tmp" gpu-run && mv "$OUT/gpu-run.tar.gz.tmp" "$OUT/gpu-run.tar.gz" &&
    rm -rf "$RESULTS" && echo "everything written is in $OUT/gpu-run.tar.gz ($(du -h "$OUT/gpu-run.tar.gz" | cut -f1))"
}

rm -rf "$RESULTS" "$OUT/gpu-run.tar.gz"
mkdir -p "$RESULTS" "$SCRATCH"
: > "$RESULTS/parts.tsv"
trap 'pack' EXIT
trap 'exit 143' TERM INT
main 2>&1 | tee "$RESULTS/run.log"
