#!/bin/sh
# Selection cost of GD-FPS against GPS, whole program: `vitune select` on
#  1. fmnist: the pretrained Fashion-MNIST model and its downstream task (800 images),
#     with the anchor on 2000 pretraining images;
#  2. vit_b16: a ViT-B/16 with random weights on random 224x224 images (IMAGES of them),
#     with the anchor on as many other random images.
# Each select reports its wall time, peak host memory (the engine's allocator), GEMM
# FLOPs per image and, on a GPU, its peak device memory; the table at the end
# (bench/selection_table.py) gives them and the GPS / GD-FPS ratios.
# Run from the repository root after building `vitune`, on an otherwise idle machine.
#
#   bench/selection_cost.sh                      # all defaults
#   VITUNE=build/cli/vitune OUT=runs/sel IMAGES=32 BATCH=16 PYTHON=/usr/bin/python3 bench/selection_cost.sh
#   DEVICE=cuda MODELS=vit_b16 IMAGES=1024 MAKE_IMAGES=build/bench/make_random_images bench/selection_cost.sh
#
# Environment: VITUNE, OUT, IMAGES, BATCH, K as above; DEVICE (--device of every command,
# default cpu); MODELS (which of "fmnist vit_b16" to run, default both); LOADER_THREADS
# (default 2); MAKE_IMAGES (the make_random_images program to write the ViT-B/16 inputs;
# unset: bench/make_random_vit_inputs.py under PYTHON, which needs numpy and torch);
# PYTHON (default python3; the table needs only its standard library).
set -eu

VITUNE=${VITUNE:-build/cli/vitune}
OUT=${OUT:-selection_cost}
IMAGES=${IMAGES:-64}
BATCH=${BATCH:-32}
K=${K:-8}
DEVICE=${DEVICE:-cpu}
MODELS=${MODELS:-fmnist vit_b16}
LOADER_THREADS=${LOADER_THREADS:-2}
MAKE_IMAGES=${MAKE_IMAGES:-}
PYTHON=${PYTHON:-python3}  # with numpy and torch (Debian: /usr/bin/python3) unless MAKE_IMAGES is set
mkdir -p "$OUT"
RUN="--device $DEVICE --loader-threads $LOADER_THREADS --batch-size $BATCH --overwrite"  # rerun into one OUT

for model in $MODELS; do
  case $model in
    fmnist)
      FMNIST_MODEL=models/fmnist_c0-4_vit.safetensors
      FMNIST_TASK='fashion-mnist:train?classes=5-9&per_class=200&part=0:160&seed=0'
      # shellcheck disable=SC2086  # RUN is a list of flags
      "$VITUNE" anchor --model "$FMNIST_MODEL" --data 'fashion-mnist:train?classes=0-4' --images 2000 \
        $RUN --out "$OUT/fmnist_anchor.safetensors"
      # shellcheck disable=SC2086
      "$VITUNE" select --method gdfps --model "$FMNIST_MODEL" --anchor "$OUT/fmnist_anchor.safetensors" \
        --data "$FMNIST_TASK" --k "$K" $RUN --out "$OUT/fmnist_gdfps.safetensors" \
        --results "$OUT/fmnist_gdfps.json"
      # shellcheck disable=SC2086
      "$VITUNE" select --method gps --model "$FMNIST_MODEL" --data "$FMNIST_TASK" --k "$K" \
        $RUN --out "$OUT/fmnist_gps.safetensors" --results "$OUT/fmnist_gps.json"
      ;;
    vit_b16)
      if [ -n "$MAKE_IMAGES" ]; then
        "$MAKE_IMAGES" "$OUT" "$IMAGES"
      else
        "$PYTHON" bench/make_random_vit_inputs.py "$OUT" "$IMAGES"
      fi
      VIT_B=$OUT/vit_b16_random.safetensors
      # shellcheck disable=SC2086
      "$VITUNE" anchor --model "$VIT_B" --data "cifar10:$OUT/pre_random.bin" --normalization imagenet --resize-images \
        $RUN --out "$OUT/vit_b16_anchor.safetensors"
      # shellcheck disable=SC2086
      "$VITUNE" select --method gdfps --model "$VIT_B" --anchor "$OUT/vit_b16_anchor.safetensors" \
        --data "cifar10:$OUT/task_random.bin" --normalization imagenet --resize-images --k "$K" $RUN \
        --out "$OUT/vit_b16_gdfps.safetensors" --results "$OUT/vit_b16_gdfps.json"
      # shellcheck disable=SC2086
      "$VITUNE" select --method gps --model "$VIT_B" --data "cifar10:$OUT/task_random.bin" \
        --normalization imagenet --resize-images --k "$K" $RUN --out "$OUT/vit_b16_gps.safetensors" \
        --results "$OUT/vit_b16_gps.json"
      ;;
    *)
      echo "selection_cost.sh: MODELS: unknown model '$model' (expected fmnist and/or vit_b16)" >&2
      exit 2
      ;;
  esac
done

if command -v "$PYTHON" >/dev/null 2>&1; then
  "$PYTHON" bench/selection_table.py "$OUT"
else
  echo "selection_cost.sh: no $PYTHON for the table; the figures as the results files hold them:"
  grep -H -E '"(method|images|wall_seconds|peak_host_bytes|peak_device_bytes|flops_per_image)"' "$OUT"/*_gdfps.json \
    "$OUT"/*_gps.json
fi
