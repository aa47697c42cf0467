#!/usr/bin/env python3
"""Writes the PyTorch golden data the C++ tests compare against, into tests/golden/.

A tiny timm-style ViT (tiny_vit.py) with fixed-seed weights: the weights in the timm,
Hugging Face and Google .npz layouts, a batch of images, a forward trace with every
block's activations, the loss and every parameter gradient, several optimizer steps,
and per-op cases (op_cases.py). Deterministic: fixed seeds, deterministic algorithms,
one thread, float32 math.
"""

import copy
import json
import os
import sys

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__ from the sibling imports

import numpy as np
import torch
import torch.nn.functional as F

from op_cases import make_op_cases
from safetensors_io import read_safetensors, to_numpy, write_safetensors
from tiny_vit import CONFIG, TinyViT, init_parameters
from vit_layouts import hf_to_timm, npz_to_timm, timm_to_hf, timm_to_npz

SEED = 1234
LABELS = [3, 7, 0, 9]
OPTIM_STEPS = 5
TRACE_STEPS = ["norm1_in", "norm1_out", "attn_ctx", "attn_out", "norm2_in", "norm2_out",
               "fc1_pre", "fc1_act", "fc2_out", "block_out"]
GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")


def data_file(name):
    return os.path.normpath(os.path.join(GOLDEN_DIR, name))


def report(name, count, size):
    print(f"wrote tests/golden/{name}: {count} arrays, {size} bytes")


def save(name, tensors, metadata=None):
    """Writes a safetensors file, reads it back to check it bit for bit, and reports it."""
    path = data_file(name)
    size = write_safetensors(path, tensors, metadata)
    arrays, read_metadata = read_safetensors(path)
    assert list(arrays) == list(tensors) and read_metadata == metadata
    for key, value in tensors.items():
        expected = to_numpy(value)
        assert arrays[key].dtype == expected.dtype and arrays[key].shape == expected.shape
        assert arrays[key].tobytes() == expected.tobytes(), key
    report(name, len(tensors), size)


def timm_weights(model):
    return {name: to_numpy(param) for name, param in model.named_parameters()}


def assert_same_weights(rebuilt, original, layout):
    assert list(sorted(rebuilt)) == list(sorted(original)), layout
    for name, value in original.items():
        assert rebuilt[name].dtype == value.dtype and rebuilt[name].shape == value.shape, name
        assert np.array_equal(rebuilt[name], value), f"{layout}: {name} differs"


def make_batch():
    images = torch.randn(4, CONFIG["in_chans"], CONFIG["img_size"], CONFIG["img_size"])
    return images, torch.tensor(LABELS, dtype=torch.int64)


def make_trace(model, images, labels):
    trace = {}
    logits = model(images, trace)
    loss = F.cross_entropy(logits, labels)
    model.zero_grad(set_to_none=True)
    loss.backward()
    out = {"logits": logits.detach()}
    for i in range(CONFIG["depth"]):
        for step in TRACE_STEPS:
            out[f"blocks.{i}.{step}"] = trace[f"blocks.{i}.{step}"]
    out["loss"] = loss.detach().reshape(1)
    for name, param in model.named_parameters():
        out[f"grad.{name}"] = param.grad.clone()

    model.zero_grad(set_to_none=True)
    loss_smoothed = F.cross_entropy(model(images), labels, label_smoothing=0.1)
    loss_smoothed.backward()
    out["loss_smoothed"] = loss_smoothed.detach().reshape(1)
    out["grad_smoothed.head.weight"] = model.head.weight.grad.clone()
    model.zero_grad(set_to_none=True)
    return out


def run_optimizer(start_model, prefix, make_optimizer, images, labels, trainable=None):
    """OPTIM_STEPS full-batch steps from a copy of start_model; returns the losses seen
    before each step and the final values of the trainable parameters."""
    model = copy.deepcopy(start_model)
    for name, param in model.named_parameters():
        param.requires_grad_(trainable is None or trainable(name))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = make_optimizer(params)
    losses = []
    for _ in range(OPTIM_STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
    out = {f"{prefix}.losses": torch.tensor(losses, dtype=torch.float32)}
    for name, param in model.named_parameters():
        if param.requires_grad:
            out[f"{prefix}.final.{name}"] = param.detach().clone()
    return out


def make_optim(model, images, labels):
    def sgd(params):
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4,
                               nesterov=False)

    def adamw(params):
        return torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                 weight_decay=0.05)

    def partial(name):
        return name.startswith("blocks.1.") or name.startswith("head.")

    out = run_optimizer(model, "sgd", sgd, images, labels)
    out.update(run_optimizer(model, "adamw", adamw, images, labels))
    out.update(run_optimizer(model, "sgd_partial", sgd, images, labels, partial))
    return out


def save_npz(name, arrays, compressed):
    path = data_file(name)
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    with np.load(path) as loaded:
        rebuilt = {key: loaded[key] for key in loaded.files}
    report(name, len(arrays), os.path.getsize(path))
    return rebuilt


def main():
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float32)
    os.makedirs(GOLDEN_DIR, exist_ok=True)

    model = TinyViT(CONFIG)
    init_parameters(model)
    images, labels = make_batch()
    weights = timm_weights(model)
    depth = CONFIG["depth"]

    save("tiny_vit.safetensors", weights,
         {"vit_config": json.dumps(CONFIG), "format": "pt"})
    save("tiny_images.safetensors", {"images": images, "labels": labels})
    save("tiny_trace.safetensors", make_trace(model, images, labels))
    save("tiny_optim.safetensors", make_optim(model, images, labels))

    hf = timm_to_hf(weights, depth)
    assert_same_weights(hf_to_timm(hf, depth), weights, "Hugging Face layout")
    save("tiny_vit_hf.safetensors", hf)

    npz = timm_to_npz(weights, depth, CONFIG["heads"])
    for name, compressed in (("tiny_vit_npz_deflated.npz", True),
                             ("tiny_vit_npz_stored.npz", False)):
        rebuilt = save_npz(name, npz, compressed)
        assert_same_weights(npz_to_timm(rebuilt, depth), weights, name)

    save("ops_golden.safetensors", make_op_cases(SEED))


if __name__ == "__main__":
    main()
