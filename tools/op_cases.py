"""Per-op golden cases: inputs drawn in float64 and cast to float32, results and
gradients computed by PyTorch in float32. Returns one dict of name -> tensor."""

import numpy as np
import torch
import torch.nn.functional as F

from tiny_vit import attention_context

TOPK_K = 3
# torch 1.13's CPU topk does not order tied values by index: on a row of 12 zeros it
# returned indices [9, 7, 8], and for two tied maxima at 6 and 7 it returned 7 first.
# vitune breaks ties toward the lower index, so these rows hold ties only below the
# k-th largest value (the top k+1 values of each row are distinct), where no tie rule
# can change the result. make_topk_case asserts that.
TOPK_ROWS = [
    [0.5, 2.0, -1.0, 3.5, 0.5, 0.5, -1.0, 2.5, 0.0, 0.0, 1.0, -2.0],
    [-3.0, -1.5, -4.0, -4.0, -0.25, -4.0, -2.0, -2.0, -5.0, -0.75, -6.0, -2.0],
    [1.0, 1.0, 1.0, 1.0, 9.0, 1.0, 8.0, 1.0, 7.0, 1.0, 6.0, 1.0],
    [4.0, -1.0, 0.0, 0.0, 0.0, 3.0, 2.0, -1.0, 0.0, 5.0, 0.0, -1.0],
]


def randn64(generator, *shape):
    """N(0,1) drawn in float64, cast to float32."""
    return torch.randn(*shape, dtype=torch.float64, generator=generator).float()


def input_with_grad(tensor):
    return tensor.clone().requires_grad_(True)


def make_layer_norm_case(gen):
    x = input_with_grad(2.0 * randn64(gen, 6, 10) + 0.5)
    w = input_with_grad(1.0 + 0.1 * randn64(gen, 10))
    b = input_with_grad(0.1 * randn64(gen, 10))
    dy = randn64(gen, 6, 10)
    y = F.layer_norm(x, (10,), w, b, eps=1e-5)
    dx, dw, db = torch.autograd.grad(y, (x, w, b), dy)
    return {"ln.x": x, "ln.w": w, "ln.b": b, "ln.y": y, "ln.dy": dy,
            "ln.dx": dx, "ln.dw": dw, "ln.db": db}


def make_softmax_case(gen):
    x = 3.0 * randn64(gen, 5, 9)
    x[2] = torch.linspace(80.0, 100.0, 9, dtype=torch.float64)[torch.randperm(9, generator=gen)]
    x = input_with_grad(x)
    dy = randn64(gen, 5, 9)
    y = torch.softmax(x, dim=-1)
    (dx,) = torch.autograd.grad(y, x, dy)
    return {"softmax.x": x, "softmax.y": y, "softmax.dy": dy, "softmax.dx": dx}


def make_gelu_case(gen):
    x = input_with_grad(torch.linspace(-6.0, 6.0, 50, dtype=torch.float64).float())
    dy = randn64(gen, 50)
    y = F.gelu(x, approximate="none")
    (dx,) = torch.autograd.grad(y, x, dy)
    return {"gelu.x": x, "gelu.y": y, "gelu.dy": dy, "gelu.dx": dx}


def make_cross_entropy_case(gen):
    logits = input_with_grad(2.0 * randn64(gen, 6, 7))
    labels = torch.tensor([0, 3, 6, 2, 5, 1], dtype=torch.int64)
    loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
    (dlogits,) = torch.autograd.grad(loss, logits)
    return {"ce.logits": logits, "ce.labels": labels, "ce.loss": loss.reshape(1),
            "ce.dlogits": dlogits}


def make_attention_case(gen):
    qkv = input_with_grad(randn64(gen, 2, 5, 24))
    dctx = randn64(gen, 2, 5, 8)
    ctx = attention_context(qkv, heads=2)
    (dqkv,) = torch.autograd.grad(ctx, qkv, dctx)
    return {"attn.qkv": qkv, "attn.ctx": ctx, "attn.dctx": dctx, "attn.dqkv": dqkv}


def make_topk_case():
    x = torch.tensor(TOPK_ROWS, dtype=torch.float32)
    values, indices = torch.topk(x, TOPK_K, dim=-1, largest=True, sorted=True)
    for row in x.numpy():
        top = np.sort(row)[::-1][:TOPK_K + 1]
        assert len(set(top.tolist())) == TOPK_K + 1, "topk rows must be tie-free at the top"
    lower_index_first = np.argsort(-x.numpy(), axis=-1, kind="stable")[:, :TOPK_K]
    assert np.array_equal(indices.numpy(), lower_index_first)
    return {"topk.x": x, "topk.values": values, "topk.indices": indices}


def make_op_cases(seed):
    gen = torch.Generator().manual_seed(seed)
    cases = {}
    for make in (make_layer_norm_case, make_softmax_case, make_gelu_case,
                 make_cross_entropy_case, make_attention_case):
        cases.update(make(gen))
    cases.update(make_topk_case())
    return {name: value.detach() for name, value in cases.items()}
