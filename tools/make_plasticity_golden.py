"""Golden values for vitune's plasticity measurement and bounds, from PyTorch.

Run with Debian's Python (python3-torch, python3-numpy):

    /usr/bin/python3 tools/make_plasticity_golden.py

It reads the tiny ViT of tests/golden/tiny_vit.safetensors, draws two fixed batches of
6 images, and writes tests/golden/plasticity_golden.safetensors with:

  images, reference_images        [6, 3, 16, 16] f32
  paper.stats                     [depth, 6, 4] f64: per block and component (ln1, mha,
                                  ln2, fc1, fc2, block) mean, std (ddof 0), min, max of
                                  |f(x_a) - f(x_b)| / |x_a - x_b| over the 15 pairs a < b
  paper_no_gelu.fc1               [depth, 4] f64: the same for fc1 ending before GELU
  reference.stats                 [depth, 5, 4] f64: the reference protocol (components
                                  on the embedding output, pairs (reference k, image k))
  paper.bounds, reference.bounds  [depth, 6] and [depth, 5] f64: each bound, with the
                                  spectral norms from an SVD
  spectral.m<i>, spectral.sigma   small f64 matrices and their largest singular values

Distances are direct differences in float64 of the float32 activations.
"""

import math
import os
import sys

sys.dont_write_bytecode = True

import torch
import torch.nn.functional as F

from safetensors_io import read_safetensors, write_safetensors
from tiny_vit import CONFIG, TinyViT

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "tests", "golden")
BATCH = 6
PAPER = [("ln1", "norm1_in", "norm1_out"), ("mha", "norm1_out", "attn_out"), ("ln2", "norm2_in", "norm2_out"),
         ("fc1", "norm2_out", "fc1_act"), ("fc2", "fc1_act", "fc2_out"), ("block", "norm1_in", "block_out")]


def load_model():
    arrays, _ = read_safetensors(os.path.join(GOLDEN, "tiny_vit.safetensors"))
    model = TinyViT(CONFIG)
    model.load_state_dict({name: torch.from_numpy(array.copy()) for name, array in arrays.items()})
    return model.eval()


def stats(ratios):
    r = ratios.double()
    return torch.stack([r.mean(), r.std(unbiased=False), r.min(), r.max()])


def flat(x):
    return x.double().reshape(x.shape[0], -1)


def pair_ratios(inputs, outputs):
    a, b = torch.triu_indices(inputs.shape[0], inputs.shape[0], offset=1)
    x, y = flat(inputs), flat(outputs)
    return (y[a] - y[b]).norm(dim=1) / (x[a] - x[b]).norm(dim=1)


def matched_ratios(inputs_ref, inputs, outputs_ref, outputs):
    return (flat(outputs_ref) - flat(outputs)).norm(dim=1) / (flat(inputs_ref) - flat(inputs)).norm(dim=1)


def sigma(matrix):
    return torch.linalg.svdvals(matrix.double())[0].item()


def min_token_std(x, eps):
    return (x.double().var(dim=-1, unbiased=False) + eps).sqrt().min().item()


def attention_bound(attn, tokens, radius):
    dim = attn.proj.weight.shape[0]
    dh = dim // attn.heads
    w, bias, wo = attn.qkv.weight.double(), attn.qkv.bias.double(), attn.proj.weight.double()
    total = 0.0
    for h in range(attn.heads):
        rows = slice(h * dh, (h + 1) * dh)
        wq, wk = w[:dim][rows], w[dim:2 * dim][rows]
        wv = w[2 * dim:][rows]
        value_output = sigma(wo[:, rows] @ wv)
        query_key = sigma(wq.t() @ wk / math.sqrt(dh))
        query_bias = (wk.t() @ bias[:dim][rows] / math.sqrt(dh)).norm().item()
        root_n = math.sqrt(tokens)
        total += value_output * (root_n + radius ** 2 * query_key * (1 + root_n) + radius * root_n * query_bias)
    return total


def gelu_lipschitz():
    x = math.sqrt(2.0)
    return 0.5 * math.erfc(-x / math.sqrt(2.0)) + x * math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


@torch.no_grad()
def main():
    model = load_model()
    eps = CONFIG["ln_eps"]
    tokens = (CONFIG["img_size"] // CONFIG["patch"]) ** 2 + 1
    generator = torch.Generator().manual_seed(20260206)
    shape = (BATCH, CONFIG["in_chans"], CONFIG["img_size"], CONFIG["img_size"])
    images = torch.randn(shape, generator=generator)
    reference_images = 0.8 * torch.randn(shape, generator=generator) + 0.1

    trace, reference_trace = {}, {}
    model(images, trace)
    model(reference_images, reference_trace)
    out = {"images": images, "reference_images": reference_images}

    paper, no_gelu, paper_bounds = [], [], []
    reference, reference_bounds = [], []
    x0, x0_ref = trace["blocks.0.norm1_in"], reference_trace["blocks.0.norm1_in"]
    for i, block in enumerate(model.blocks):
        t = {step: trace[f"blocks.{i}.{step}"] for step in
             ["norm1_in", "norm1_out", "attn_out", "norm2_in", "norm2_out", "fc1_pre", "fc1_act", "fc2_out",
              "block_out"]}
        paper.append(torch.stack([stats(pair_ratios(t[src], t[dst])) for _, src, dst in PAPER]))
        no_gelu.append(stats(pair_ratios(t["norm2_out"], t["fc1_pre"])))

        ln1 = block.norm1.weight.abs().max().item() / min_token_std(t["norm1_in"], eps)
        ln2 = block.norm2.weight.abs().max().item() / min_token_std(t["norm2_in"], eps)
        radius = t["norm1_out"].double().norm(dim=-1).max().item()
        mha = attention_bound(block.attn, tokens, radius)
        w1, w2 = sigma(block.mlp.fc1.weight), sigma(block.mlp.fc2.weight)
        lg = gelu_lipschitz()
        paper_bounds.append([ln1, mha, ln2, w1 * lg, w2, (1 + mha * ln1) * (1 + w2 * w1 * lg * ln2)])

        hidden = block.mlp.fc1.weight.shape[0]
        pad = lambda x: F.pad(x, (0, hidden - x.shape[-1]))
        components = [block.norm1, lambda x: block.attn.proj(block.attn.context(x)), block.norm2, block.mlp.fc1,
                      lambda x: block.mlp.fc2(pad(x))]
        reference.append(torch.stack([stats(matched_ratios(x0_ref, x0, f(x0_ref), f(x0))) for f in components]))
        both = torch.cat([x0_ref, x0])
        r_ln1 = block.norm1.weight.abs().max().item() / min_token_std(both, eps)
        r_ln2 = block.norm2.weight.abs().max().item() / min_token_std(both, eps)
        r_mha = attention_bound(block.attn, tokens, both.double().norm(dim=-1).max().item())
        reference_bounds.append([r_ln1, r_mha, r_ln2, w1, sigma(block.mlp.fc2.weight[:, :x0.shape[-1]])])

    out["paper.stats"] = torch.stack(paper)
    out["paper_no_gelu.fc1"] = torch.stack(no_gelu)
    out["paper.bounds"] = torch.tensor(paper_bounds, dtype=torch.float64)
    out["reference.stats"] = torch.stack(reference)
    out["reference.bounds"] = torch.tensor(reference_bounds, dtype=torch.float64)

    spectral = torch.Generator().manual_seed(7)
    shapes = [(5, 7), (16, 16), (32, 128), (64, 9)]
    sigmas = []
    for i, (rows, cols) in enumerate(shapes):
        m = torch.randn(rows, cols, generator=spectral, dtype=torch.float64) / math.sqrt(cols)
        out[f"spectral.m{i}"] = m
        sigmas.append(sigma(m))
    out["spectral.sigma"] = torch.tensor(sigmas, dtype=torch.float64)

    path = os.path.join(GOLDEN, "plasticity_golden.safetensors")
    size = write_safetensors(path, out, {"generator": "tools/make_plasticity_golden.py"})
    arrays, _ = read_safetensors(path)
    for name, value in out.items():
        assert (torch.from_numpy(arrays[name].copy()) == value).all(), name
    print(f"plasticity_golden.safetensors: {len(out)} tensors, {size} bytes")


if __name__ == "__main__":
    main()
