#!/usr/bin/env python3
"""Writes the inputs of the ViT-B/16 selection-cost benchmark into a folder:

  vit_b16_random.safetensors  a ViT-B/16 (224x224 RGB, patch 16, dim 768, depth 12,
                              12 heads, 1000 classes) in timm names: linear and patch
                              weights and pos_embed N(0, 0.02^2), cls_token N(0, 1e-12),
                              biases 0, LayerNorms 1 and 0
  pre_random.bin, task_random.bin
                              CIFAR-10 binary files of N random images each (uniform
                              bytes; the task images over a narrower range), which the
                              loader resizes to 224x224

Usage: make_random_vit_inputs.py FOLDER [N]. Needs numpy (and torch, which the small
safetensors writer in tools/ imports).
"""

import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))

import numpy as np

from safetensors_io import write_safetensors

CONFIG = {"img_size": 224, "patch": 16, "in_chans": 3, "dim": 768, "depth": 12, "heads": 12,
          "mlp_ratio": 4.0, "num_classes": 1000, "ln_eps": 1e-6}


def vit_b16(rng):
    d, hidden, patch = CONFIG["dim"], int(CONFIG["dim"] * CONFIG["mlp_ratio"]), CONFIG["patch"]
    tokens = (CONFIG["img_size"] // patch) ** 2 + 1

    def normal(*shape, std=0.02):
        return (rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float32)

    tensors = {
        "cls_token": normal(1, 1, d, std=1e-6),
        "pos_embed": normal(1, tokens, d),
        "patch_embed.proj.weight": normal(d, CONFIG["in_chans"], patch, patch),
        "patch_embed.proj.bias": np.zeros(d, np.float32),
    }
    for i in range(CONFIG["depth"]):
        b = f"blocks.{i}."
        for name, shape in (("attn.qkv", (3 * d, d)), ("attn.proj", (d, d)),
                            ("mlp.fc1", (hidden, d)), ("mlp.fc2", (d, hidden))):
            if name == "mlp.fc1":
                tensors[b + "norm2.weight"] = np.ones(d, np.float32)
                tensors[b + "norm2.bias"] = np.zeros(d, np.float32)
            if name == "attn.qkv":
                tensors[b + "norm1.weight"] = np.ones(d, np.float32)
                tensors[b + "norm1.bias"] = np.zeros(d, np.float32)
            tensors[b + name + ".weight"] = normal(*shape)
            tensors[b + name + ".bias"] = np.zeros(shape[0], np.float32)
    tensors["norm.weight"] = np.ones(d, np.float32)
    tensors["norm.bias"] = np.zeros(d, np.float32)
    tensors["head.weight"] = normal(CONFIG["num_classes"], d)
    tensors["head.bias"] = np.zeros(CONFIG["num_classes"], np.float32)
    return tensors


def write_cifar(path, rng, count, low, high):
    labels = (np.arange(count) % 10).astype(np.uint8).reshape(count, 1)
    pixels = rng.integers(low, high, size=(count, 3 * 32 * 32), dtype=np.uint8)
    with open(path, "wb") as f:
        f.write(np.concatenate([labels, pixels], axis=1).tobytes())


def main():
    folder = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    write_safetensors(os.path.join(folder, "vit_b16_random.safetensors"), vit_b16(rng),
                      {"vit_config": json.dumps(CONFIG)})
    write_cifar(os.path.join(folder, "pre_random.bin"), rng, count, 0, 256)
    write_cifar(os.path.join(folder, "task_random.bin"), rng, count, 40, 216)


if __name__ == "__main__":
    main()
