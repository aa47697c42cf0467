#!/usr/bin/env python3
"""Writes tests/golden/tiny_bf16.safetensors: the tiny ViT trained with bf16 products.

The committed tiny ViT (tests/golden/tiny_vit.safetensors) on its batch of images
(tiny_images.safetensors), two ways, each as the logits (fp32) and the cross-entropy
loss (taken in fp32) of the first forward, then 5 full-batch steps of SGD with the
hyperparameters of tiny_optim.safetensors' "sgd" run (lr 0.05, momentum 0.9, weight
decay 1e-4) on fp32 master weights: the loss before each step and every parameter
afterwards. bf16 keeps fp32's exponent range, so no gradient scaling.

- "autocast.*": under torch.autocast("cpu", dtype=torch.bfloat16), as a PyTorch user
  would train. Autocast also rounds the outputs of the products (the activations) and
  the attention's own products to bf16.
- "emulated.*": vitune's autocast semantics written independently in PyTorch: every
  linear layer (and the patch embedding, as a linear map on flattened patches) takes
  its operands rounded to bf16 in all three products -- x W^T, dy W and dy^T x -- with
  fp32 accumulation and fp32 outputs; everything else stays fp32.

Keys: "<way>.logits" [4, 10], "<way>.loss" [1], "<way>.losses" [5],
"<way>.final.<param>". Deterministic: one thread, deterministic algorithms, no draws.
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

STEPS = 5
GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")


def golden_path(name):
    return os.path.normpath(os.path.join(GOLDEN_DIR, name))


def load_tiny_vit():
    arrays, metadata = read_safetensors(golden_path("tiny_vit.safetensors"))
    model = TinyViT(json.loads(metadata["vit_config"]))
    model.load_state_dict({name: torch.from_numpy(array.copy()) for name, array in arrays.items()})
    return model


def bf16_round(t):
    """fp32 values rounded to the nearest bfloat16 (ties to even), kept in fp32."""
    return t.bfloat16().float()


class Bf16Linear(torch.autograd.Function):
    """y = round(x) round(W)^T + b; dx = round(dy) round(W), dW = round(dy)^T round(x),
    db = sum of dy over rows; products accumulated and returned in fp32."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        x_r, w_r = bf16_round(x), bf16_round(weight)
        ctx.save_for_backward(x_r, w_r)
        return x_r @ w_r.t() + bias

    @staticmethod
    def backward(ctx, dy):
        x_r, w_r = ctx.saved_tensors
        dy_r = bf16_round(dy)
        dx = dy_r @ w_r
        dw = dy_r.reshape(-1, dy.shape[-1]).t() @ x_r.reshape(-1, x_r.shape[-1])
        db = dy.reshape(-1, dy.shape[-1]).sum(0)
        return dx, dw, db


def emulate_vitune_autocast(model):
    """Routes every nn.Linear and the patch embedding through Bf16Linear."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.forward = (lambda m: lambda x: Bf16Linear.apply(x, m.weight, m.bias))(module)
    proj = model.patch_embed.proj
    patch = proj.kernel_size[0]

    def patch_forward(images):
        # Patches flattened in (channel, row, column) order, the order of the conv
        # weight [D, C, p, p] viewed as [D, C p p].
        b, c, h, w = images.shape
        patches = images.unfold(2, patch, patch).unfold(3, patch, patch)  # [B, C, H/p, W/p, p, p]
        patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(b, (h // patch) * (w // patch), c * patch * patch)
        return Bf16Linear.apply(patches, proj.weight.reshape(proj.weight.shape[0], -1), proj.bias)

    model.patch_embed.forward = patch_forward


def autocast_forward(model, images):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(images)
    return logits.float()


def train(model, forward, images, labels, prefix):
    """STEPS full-batch SGD steps; the first logits and loss, the losses, the final weights."""
    out = {}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4, nesterov=False)
    losses = []
    for step in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        logits = forward(model, images)
        loss = F.cross_entropy(logits, labels)
        if step == 0:
            out[prefix + "logits"] = logits.detach().clone()
            out[prefix + "loss"] = loss.detach().reshape(1).clone()
        losses.append(loss.item())
        loss.backward()
        for name, param in model.named_parameters():
            assert param.dtype == torch.float32 and param.grad.dtype == torch.float32, name
        optimizer.step()
    out[prefix + "losses"] = torch.tensor(losses, dtype=torch.float32)
    for name, param in model.named_parameters():
        out[prefix + "final." + name] = param.detach().clone()
    return out


def main():
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    batch, _ = read_safetensors(golden_path("tiny_images.safetensors"))
    images = torch.from_numpy(batch["images"].copy())
    labels = torch.from_numpy(batch["labels"].copy())

    out = train(load_tiny_vit(), autocast_forward, images, labels, "autocast.")
    emulated = load_tiny_vit()
    emulate_vitune_autocast(emulated)
    out.update(train(emulated, lambda model, x: model(x), images, labels, "emulated."))

    path = golden_path("tiny_bf16.safetensors")
    size = write_safetensors(path, out, {"optimizer": "sgd lr 0.05 momentum 0.9 wd 1e-4", "steps": str(STEPS)})
    arrays, _ = read_safetensors(path)
    for name, value in out.items():
        assert arrays[name].tobytes() == to_numpy(value).tobytes(), name
    print(f"wrote tests/golden/tiny_bf16.safetensors: {len(out)} arrays, {size} bytes")


if __name__ == "__main__":
    main()
