#!/usr/bin/env python3
"""Writes tests/golden/gps_golden.safetensors: PyTorch reference values for GPS.

1. The supervised contrastive loss (SupCon, contrast_mode 'all', base_temperature equal
   to the temperature, features L2-normalised inside) as the GPS code computes it, on
   small random features: the loss and its gradient with respect to the features.
2. GPS scores on the tiny ViT of tests/golden/tiny_vit.safetensors with a fixed head
   (stored here; the C++ test installs it): for each selectable weight, |sum over two
   batches of the gradient of the batch-mean loss|, for cross-entropy through the head
   and for SupCon on the cls features of two fixed views of each image.

Everything is computed in float64 (the model's float32 weights converted exactly);
the scores are stored in float32. Run from anywhere: /usr/bin/python3 tools/make_gps_golden.py
"""

import os
import sys

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__ from the sibling imports

import torch
import torch.nn.functional as F

from safetensors_io import read_safetensors, to_numpy, write_safetensors
from tiny_vit import CONFIG, TinyViT

SEED = 4321
TEMPERATURE = 0.07
BATCH_SIZES = [3, 2]
GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")
# The features of the standalone loss cases: two views of four images, labels with a
# repeated class so that anchors have one or three positives.
LOSS_CASE_LABELS = [0, 1, 0, 2, 0, 1, 0, 2]
LOSS_CASE_DIM = 5
LOSS_CASE_TEMPERATURES = [("t007", 0.07), ("t05", 0.5)]


class SupervisedContrastiveLoss:
    """SupCon as the GPS code uses it: features [batch, views, dim] are normalised, every
    view of every image is an anchor, the positives of an anchor are the other rows with
    its label, and the loss is the mean over anchors scaled by T / base_T."""

    def __init__(self, temperature=TEMPERATURE, base_temperature=TEMPERATURE):
        self.temperature = temperature
        self.base_temperature = base_temperature

    def __call__(self, features, labels):
        features = F.normalize(features, dim=2)
        batch, views = features.shape[0], features.shape[1]
        rows = torch.cat(torch.unbind(features, dim=1), dim=0)  # [view1; view2; ...]
        row_labels = labels.repeat(views)
        same_label = (row_labels[:, None] == row_labels[None, :]).to(features.dtype)
        not_self = 1.0 - torch.eye(batch * views, dtype=features.dtype)
        positives = same_label * not_self
        scores = rows @ rows.T / self.temperature
        scores = scores - scores.max(dim=1, keepdim=True).values.detach()
        log_denominator = torch.log((torch.exp(scores) * not_self).sum(dim=1, keepdim=True))
        log_prob = scores - log_denominator
        mean_positive_log_prob = (positives * log_prob).sum(dim=1) / positives.sum(dim=1)
        return -(self.temperature / self.base_temperature) * mean_positive_log_prob.mean()


def features_of(model, images):
    """The final-normed cls feature: the model's forward without the head."""
    x = model.patch_embed(images)
    x = torch.cat([model.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + model.pos_embed
    for block in model.blocks:
        x = block(x)
    return model.norm(x)[:, 0]


def selectable_weights(model):
    """The weights GPS scores: every weight matrix of the backbone (patch embedding,
    qkv, proj, fc1, fc2), not norms, biases, tokens or the head."""
    return [name for name, _ in model.named_parameters()
            if name.endswith(".weight") and "norm" not in name and not name.startswith("head.")]


def loss_cases(out):
    labels = torch.tensor(LOSS_CASE_LABELS, dtype=torch.int64)
    rows = len(LOSS_CASE_LABELS)
    features = torch.randn(rows, LOSS_CASE_DIM, dtype=torch.float64)
    out["loss_case.features"] = features.clone()
    out["loss_case.labels"] = labels
    for key, temperature in LOSS_CASE_TEMPERATURES:
        x = features.clone().requires_grad_(True)
        # [view1; view2] rows -> [batch, 2, dim] as the GPS code stacks them.
        half = rows // 2
        stacked = torch.stack([x[:half], x[half:]], dim=1)
        loss = SupervisedContrastiveLoss(temperature, temperature)(stacked, labels[:half])
        loss.backward()
        out[f"loss_case.{key}.loss"] = loss.detach().reshape(1)
        out[f"loss_case.{key}.grad"] = x.grad.clone()


def load_tiny_vit():
    weights, _ = read_safetensors(os.path.join(GOLDEN_DIR, "tiny_vit.safetensors"))
    model = TinyViT(CONFIG)
    model.load_state_dict({name: torch.from_numpy(array.copy()) for name, array in weights.items()})
    return model.double()


def gps_scores(model, names, batches, loss_of_batch):
    """|sum over batches of d loss_b / d W|: the gradients accumulate over the backward
    passes without being zeroed in between, as the GPS code accumulates them."""
    model.zero_grad(set_to_none=True)
    for batch in batches:
        loss_of_batch(batch).backward()
    params = dict(model.named_parameters())
    return {name: params[name].grad.abs().to(torch.float32) for name in names}


def score_cases(out):
    model = load_tiny_vit()
    head_weight = 0.3 * torch.randn(CONFIG["num_classes"], CONFIG["dim"])
    head_bias = 0.1 * torch.randn(CONFIG["num_classes"])
    with torch.no_grad():
        model.head.weight.copy_(head_weight.double())
        model.head.bias.copy_(head_bias.double())
    out["head.weight"] = head_weight
    out["head.bias"] = head_bias

    shape = (CONFIG["in_chans"], CONFIG["img_size"], CONFIG["img_size"])
    batches = []
    for b, size in enumerate(BATCH_SIZES):
        images = torch.randn(size, *shape)
        second_view = torch.randn(size, *shape)
        labels = torch.randint(0, CONFIG["num_classes"], (size,), dtype=torch.int64)
        out[f"batch{b}.images"] = images
        out[f"batch{b}.second_view"] = second_view
        out[f"batch{b}.labels"] = labels
        batches.append((images.double(), second_view.double(), labels))

    names = selectable_weights(model)
    supcon = SupervisedContrastiveLoss(TEMPERATURE, TEMPERATURE)

    def cross_entropy(batch):
        images, _, labels = batch
        return F.cross_entropy(model(images), labels)

    def contrastive(batch):
        images, second_view, labels = batch
        feature = features_of(model, torch.cat([images, second_view], dim=0))
        first, second = torch.split(feature, [images.shape[0], images.shape[0]], dim=0)
        return supcon(torch.stack([first, second], dim=1), labels)

    for prefix, loss_of_batch in (("ce", cross_entropy), ("supcon", contrastive)):
        for name, score in gps_scores(model, names, batches, loss_of_batch).items():
            out[f"{prefix}.{name}"] = score


def main():
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    out = {}
    loss_cases(out)
    score_cases(out)
    path = os.path.normpath(os.path.join(GOLDEN_DIR, "gps_golden.safetensors"))
    size = write_safetensors(path, out, {"temperature": str(TEMPERATURE)})
    arrays, _ = read_safetensors(path)
    for key, value in out.items():
        assert arrays[key].tobytes() == to_numpy(value).tobytes(), key
    print(f"wrote tests/golden/gps_golden.safetensors: {len(out)} arrays, {size} bytes")


if __name__ == "__main__":
    main()
