#!/usr/bin/env python3
"""Writes tests/golden/lora_tiny.safetensors: LoRA golden values from PyTorch.

The committed tiny ViT (tests/golden/tiny_vit.safetensors) and its batch of images
(tiny_images.safetensors) with LoRA adapters on qkv and fc1 of every block:
y = x W^T + b + (alpha / rank) (x A^T) B^T. A and B are fixed non-zero draws (B is not
zero here, unlike at the start of training, so that every gradient is non-trivial) and
are stored in the file. The base weights are frozen; the file holds the logits, the
cross-entropy loss and the gradient of every trainable tensor (each A and B, and the
head), as "grad.<name>". Deterministic: fixed seed, one thread, float32 math.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__ from the sibling imports

import torch
import torch.nn.functional as F
from torch import nn

from safetensors_io import read_safetensors, to_numpy, write_safetensors
from tiny_vit import TinyViT

SEED = 4321
RANK = 4
ALPHA = 8.0
TARGETS = ["attn.qkv", "mlp.fc1"]
GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")


class LoraLinear(nn.Module):
    """A frozen nn.Linear plus the scaled low-rank term."""

    def __init__(self, base, lora_a, lora_b):
        super().__init__()
        self.base = base
        self.lora_A = nn.Parameter(lora_a)
        self.lora_B = nn.Parameter(lora_b)
        self.scaling = ALPHA / RANK

    def forward(self, x):
        return self.base(x) + self.scaling * ((x @ self.lora_A.t()) @ self.lora_B.t())


def golden_path(name):
    return os.path.normpath(os.path.join(GOLDEN_DIR, name))


def load_tiny_vit():
    arrays, metadata = read_safetensors(golden_path("tiny_vit.safetensors"))
    model = TinyViT(json.loads(metadata["vit_config"]))
    state = {name: torch.from_numpy(array.copy()) for name, array in arrays.items()}
    model.load_state_dict(state)
    return model


def add_adapters(model):
    """Replaces each targeted linear by a LoraLinear; returns name -> adapter."""
    adapters = {}
    for i, block in enumerate(model.blocks):
        for target in TARGETS:
            owner_name, layer_name = target.split(".")
            owner = getattr(block, owner_name)
            base = getattr(owner, layer_name)
            out_features, in_features = base.weight.shape
            lora_a = torch.randn(RANK, in_features) / in_features ** 0.5
            lora_b = 0.5 * torch.randn(out_features, RANK) / RANK ** 0.5
            adapter = LoraLinear(base, lora_a, lora_b)
            setattr(owner, layer_name, adapter)
            adapters[f"blocks.{i}.{target}"] = adapter
    return adapters


def main():
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    model = load_tiny_vit()
    for param in model.parameters():
        param.requires_grad_(False)
    model.head.weight.requires_grad_(True)
    model.head.bias.requires_grad_(True)
    adapters = add_adapters(model)

    batch, _ = read_safetensors(golden_path("tiny_images.safetensors"))
    images = torch.from_numpy(batch["images"].copy())
    labels = torch.from_numpy(batch["labels"].copy())
    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    loss.backward()

    out = {}
    for prefix, adapter in adapters.items():
        out[prefix + ".lora_A"] = adapter.lora_A.detach()
        out[prefix + ".lora_B"] = adapter.lora_B.detach()
    out["logits"] = logits.detach()
    out["loss"] = loss.detach().reshape(1)
    for prefix, adapter in adapters.items():
        out["grad." + prefix + ".lora_A"] = adapter.lora_A.grad
        out["grad." + prefix + ".lora_B"] = adapter.lora_B.grad
    out["grad.head.weight"] = model.head.weight.grad
    out["grad.head.bias"] = model.head.bias.grad

    metadata = {"rank": str(RANK), "alpha": str(ALPHA), "targets": ",".join(TARGETS)}
    path = golden_path("lora_tiny.safetensors")
    size = write_safetensors(path, out, metadata)
    arrays, _ = read_safetensors(path)
    for name, value in out.items():
        assert arrays[name].tobytes() == to_numpy(value).tobytes(), name
    print(f"wrote tests/golden/lora_tiny.safetensors: {len(out)} arrays, {size} bytes")


if __name__ == "__main__":
    main()
