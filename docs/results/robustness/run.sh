#!/bin/sh
# The robustness experiment of GD-FPS against GPS: selections at seeds {0, 1, 2},
# batch sizes {8, 32, 128} and data ratios {25, 50, 100 %} of the downstream training
# data, each compared with the reference selection (seed 0, batch 32, 100 %) by its
# intersection ratio |A n B| / |A|. Writes masks and comparisons into OUT and the
# table to OUT/ir.md. Run from the repository root:
#   docs/results/robustness/run.sh [build/cli/vitune] [OUT]
set -eu
VITUNE=${1:-build/cli/vitune}
OUT=${2:-runs/robustness}
MODEL=models/fmnist_c0-4_vit.safetensors
K=4
mkdir -p "$OUT"

data() { echo "fashion-mnist:train?classes=5-9&per_class=200&part=0:$1&seed=0"; }

"$VITUNE" anchor --model "$MODEL" --data "fashion-mnist:train?classes=0-4" --images 2000 \
  --overwrite --out "$OUT/anchor.safetensors" > "$OUT/anchor.out"

select_mask() {  # method seed batch per_class_images name
  extra=""
  [ "$1" = gdfps ] && extra="--anchor $OUT/anchor.safetensors"
  # shellcheck disable=SC2086
  "$VITUNE" select --method "$1" --model "$MODEL" $extra --data "$(data "$4")" --k $K --seed "$2" \
    --batch-size "$3" --overwrite --out "$OUT/$5.safetensors" --results "$OUT/$5.json" > "$OUT/$5.out"
}

ir() {  # reference other -> percent
  "$VITUNE" compare-masks "$OUT/$1.safetensors" "$OUT/$2.safetensors" --json "$OUT/$1_vs_$2.json" > /dev/null
  sed -n 's/^ *"ratio": *\([0-9.e+-]*\),*$/\1/p' "$OUT/$1_vs_$2.json" | head -n 1 |
    awk '{ printf "%.1f", 100 * $1 }'
}

{
  echo "| method | setting | IR with seed 0, batch 32, 100 % |"
  echo "|---|---|---:|"
  for method in gdfps gps; do
    select_mask $method 0 32 160 "${method}_ref"
    for seed in 1 2; do
      select_mask $method $seed 32 160 "${method}_seed$seed"
      echo "| $method | seed $seed | $(ir "${method}_ref" "${method}_seed$seed") |"
    done
    for batch in 8 128; do
      select_mask $method 0 $batch 160 "${method}_batch$batch"
      echo "| $method | batch $batch | $(ir "${method}_ref" "${method}_batch$batch") |"
    done
    for ratio in 25 50; do
      select_mask $method 0 32 $((160 * ratio / 100)) "${method}_data$ratio"
      echo "| $method | data $ratio % | $(ir "${method}_ref" "${method}_data$ratio") |"
    done
  done
} > "$OUT/ir.md"
cat "$OUT/ir.md"
