#!/bin/sh
# Selection cost of GD-FPS against GPS, whole program: `vitune select` on
#  1. the pretrained Fashion-MNIST model and its downstream task (800 images), with the
#     anchor on 2000 pretraining images;
#  2. a ViT-B/16 with random weights on random 224x224 images (IMAGES of them), with
#     the anchor on as many other random images.
# Each select reports its wall time, peak host memory (the engine's allocator) and
# GEMM FLOPs per image; the table at the end gives them and the GPS / GD-FPS ratios.
# Run from the repository root after building `vitune`, on an otherwise idle machine.
#
#   bench/selection_cost.sh                      # all defaults
#   VITUNE=build/cli/vitune OUT=runs/sel IMAGES=32 BATCH=16 PYTHON=/usr/bin/python3 bench/selection_cost.sh
set -eu

VITUNE=${VITUNE:-build/cli/vitune}
OUT=${OUT:-selection_cost}
IMAGES=${IMAGES:-64}
BATCH=${BATCH:-32}
K=${K:-8}
PYTHON=${PYTHON:-python3}  # with numpy and torch (Debian: /usr/bin/python3)
mkdir -p "$OUT"

FMNIST_MODEL=models/fmnist_c0-4_vit.safetensors
FMNIST_TASK='fashion-mnist:train?classes=5-9&per_class=200&part=0:160&seed=0'
"$VITUNE" anchor --model "$FMNIST_MODEL" --data 'fashion-mnist:train?classes=0-4' --images 2000 \
  --batch-size "$BATCH" --out "$OUT/fmnist_anchor.safetensors"
"$VITUNE" select --method gdfps --model "$FMNIST_MODEL" --anchor "$OUT/fmnist_anchor.safetensors" \
  --data "$FMNIST_TASK" --k "$K" --batch-size "$BATCH" --out "$OUT/fmnist_gdfps.safetensors" \
  --results "$OUT/fmnist_gdfps.json"
"$VITUNE" select --method gps --model "$FMNIST_MODEL" --data "$FMNIST_TASK" --k "$K" \
  --batch-size "$BATCH" --out "$OUT/fmnist_gps.safetensors" --results "$OUT/fmnist_gps.json"

"$PYTHON" bench/make_random_vit_inputs.py "$OUT" "$IMAGES"
VIT_B=$OUT/vit_b16_random.safetensors
"$VITUNE" anchor --model "$VIT_B" --data "cifar10:$OUT/pre_random.bin" --normalization imagenet \
  --batch-size "$BATCH" --out "$OUT/vit_b16_anchor.safetensors"
"$VITUNE" select --method gdfps --model "$VIT_B" --anchor "$OUT/vit_b16_anchor.safetensors" \
  --data "cifar10:$OUT/task_random.bin" --normalization imagenet --k "$K" --batch-size "$BATCH" \
  --out "$OUT/vit_b16_gdfps.safetensors" --results "$OUT/vit_b16_gdfps.json"
"$VITUNE" select --method gps --model "$VIT_B" --data "cifar10:$OUT/task_random.bin" \
  --normalization imagenet --k "$K" --batch-size "$BATCH" --out "$OUT/vit_b16_gps.safetensors" \
  --results "$OUT/vit_b16_gps.json"

"$PYTHON" - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
print("| model | images | method | wall s | peak MiB | GFLOPs/image |")
print("|---|---|---|---|---|---|")
ratios = []
for model in ("fmnist", "vit_b16"):
    r = {m: json.load(open(os.path.join(out, f"{model}_{m}.json"))) for m in ("gdfps", "gps")}
    for m in ("gdfps", "gps"):
        print(f"| {model} | {r[m]['images']} | {m} | {r[m]['wall_seconds']:.2f} | "
              f"{r[m]['peak_host_bytes'] / 2**20:.1f} | {r[m]['flops_per_image'] / 1e9:.3f} |")
    ratios.append((model, r["gps"]["wall_seconds"] / r["gdfps"]["wall_seconds"],
                   r["gps"]["peak_host_bytes"] / r["gdfps"]["peak_host_bytes"],
                   r["gps"]["flops_per_image"] / r["gdfps"]["flops_per_image"]))
print()
print("| model | GPS / GD-FPS time | GPS / GD-FPS peak memory | GPS / GD-FPS FLOPs |")
print("|---|---|---|---|")
for model, time, memory, flops in ratios:
    print(f"| {model} | {time:.2f}x | {memory:.2f}x | {flops:.2f}x |")
PY
