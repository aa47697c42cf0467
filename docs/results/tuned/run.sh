#!/bin/sh
# The tuned experiments of issue 15, as one resumable script (run from the repository
# root after building vitune):
#
#  1. the component sweep of the plasticity paper (8 components x 4 SGD + 4 AdamW rates
#     x 3 seeds, 10 epochs), then `sweep extend` and the new runs, again and again, until
#     no best learning rate is at its grid's edge (at most ROUNDS times), the
#     logistic-regression probe and the report;
#  2. the methods table: full finetuning, GD-FPS and GPS sparse (k = 4 per row), LoRA
#     (rank 2 on qkv, proj, fc1, fc2), each at 5 AdamW learning rates, 160 and 480 steps,
#     3 seeds; the masks from one anchor and one selection each.
#
# Environment: V (the vitune program, default build/cli/vitune), W (the work folder,
# default runs/tuned), DEVICE (cpu), JOBS (runs at a time, default 2), ROUNDS (3),
# QUICK=1 (a small grid, a few steps per run, one seed, 100 test images: checks the
# script, not the findings).
# A finished run (its results file exists) is never run again: stop and start at will.
# docs/results/tuned/table.py makes the tables from $W.
set -eu

V=${V:-build/cli/vitune}
W=${W:-runs/tuned}
DEVICE=${DEVICE:-cpu}
JOBS=${JOBS:-2}
ROUNDS=${ROUNDS:-3}
M=models/fmnist_c0-4_vit.safetensors
TASK='fashion-mnist:train?classes=5-9&per_class=200&part=0:160&seed=0'
TEST='fashion-mnist:test?classes=5-9'
PRE='fashion-mnist:train?classes=0-4'
SEEDS="0 42 3407"
STEP_COUNTS="160 480"
SWEEP_GRID="--epochs 10"
if [ "${QUICK:-0}" = 1 ]; then
  SEEDS=0 STEP_COUNTS=4 TEST="$TEST&per_class=20"
  SWEEP_GRID="--steps 2 --components ln1,mha --sgd-lrs 0.01,0.03 --adamw-lrs 1e-4,3e-4"
fi
COMMON="--device $DEVICE --loader-threads 1"

mkdir -p "$W/sweep" "$W/methods"

# Runs the lines of file $1 (one shell command each), JOBS at a time.
run_lines() {
  tr '\n' '\0' < "$1" | xargs -0 -P "$JOBS" -I CMD sh -c CMD
}

# --- 1. the component sweep -------------------------------------------------------
if [ ! -f "$W/sweep/plan.json" ]; then
  # shellcheck disable=SC2086  # SWEEP_GRID and COMMON are lists of flags
  $V sweep plan --model $M --data "$TASK" --eval-data "$TEST" --out "$W/sweep" $SWEEP_GRID \
    --seeds "$(echo $SEEDS | tr ' ' ,)" --batch-size 50 --warmup-steps 16 $COMMON
fi
sweep_shards() {
  : > "$W/sweep/shards.txt"
  i=0
  while [ "$i" -lt "$JOBS" ]; do
    echo "$V sweep run --plan $W/sweep/plan.json --shard $i/$JOBS > $W/sweep/shard$i.log 2>&1" >> "$W/sweep/shards.txt"
    i=$((i + 1))
  done
  run_lines "$W/sweep/shards.txt" || echo "some sweep runs failed: see $W/sweep/shard*.log"
}
[ -f "$W/sweep/probe.json" ] || $V probe --model $M --data "$TASK" --eval-data "$TEST" $COMMON --results "$W/sweep/probe.json"
round=0
while :; do
  sweep_shards
  $V sweep extend --plan "$W/sweep/plan.json" | tee "$W/sweep/extend$round.txt"
  grep -q "no best learning rate is at its grid's edge" "$W/sweep/extend$round.txt" && break
  round=$((round + 1))
  if [ "$round" -ge "$ROUNDS" ]; then
    sweep_shards
    break
  fi
done
$V sweep report --plan "$W/sweep/plan.json" --probe "$W/sweep/probe.json" --out "$W/sweep/report" --overwrite

# --- 2. the methods table -----------------------------------------------------------
S=$W/methods
[ -f "$S/anchor.safetensors" ] || $V anchor --model $M --data "$PRE" --images 2000 $COMMON --out "$S/anchor.safetensors"
[ -f "$S/gdfps.safetensors" ] || $V select --method gdfps --model $M --anchor "$S/anchor.safetensors" --data "$TASK" \
  --k 4 $COMMON --out "$S/gdfps.safetensors" --results "$S/select_gdfps.json"
[ -f "$S/gps.safetensors" ] || $V select --method gps --model $M --data "$TASK" --k 4 $COMMON \
  --out "$S/gps.safetensors" --results "$S/select_gps.json"

# The learning rates of each method: wide enough that the best lies inside.
method_rates() {
  case $1 in
    full) echo "3e-5 1e-4 3e-4 1e-3 3e-3" ;;
    lora) echo "3e-4 1e-3 3e-3 1e-2 3e-2" ;;
    *) echo "1e-3 3e-3 1e-2 3e-2 1e-1" ;;
  esac
}
method_flags() {
  case $1 in
    full) echo "--train all" ;;
    lora) echo "--lora 2 --lora-targets qkv,proj,fc1,fc2 --lora-alpha 4" ;;
    *) echo "--mask $S/$1.safetensors" ;;
  esac
}
: > "$S/runs.txt"
for method in full gdfps gps lora; do
  for steps in $STEP_COUNTS; do
    for lr in $(method_rates $method); do
      for seed in $SEEDS; do
        id=$method-steps$steps-lr$lr-s$seed
        [ -f "$S/$id.json" ] && continue
        echo "$V --threads 1 finetune --model $M --data '$TASK' --eval-data '$TEST' --batch-size 50" \
          "--steps $steps --optimizer adamw --lr $lr --weight-decay 0 --warmup-steps 16 --clip-norm 1" \
          "--seed $seed --log-every 10 $(method_flags $method) $COMMON --no-lock --overwrite" \
          "--out $S/$id.safetensors --results $S/$id.json --log $S/$id.jsonl > $S/$id.out 2>&1" >> "$S/runs.txt"
      done
    done
  done
done
run_lines "$S/runs.txt" || echo "some method runs failed: see $S/*.out"
echo "done: $(ls "$W"/sweep/runs/*.json 2>/dev/null | wc -l) sweep runs, $(ls "$S"/*-s*.json 2>/dev/null | wc -l) method runs"
