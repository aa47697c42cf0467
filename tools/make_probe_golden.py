"""Golden values of the logistic-regression linear probe (peft/linear_probe.h).

Features of 3 overlapping Gaussian classes; multinomial logistic regression with the
objective of scikit-learn's LogisticRegression(C) divided by C N (mean cross-entropy
plus ||W||^2 / (2 C N), bias not penalised), fit from zero with PyTorch's L-BFGS
(strong Wolfe line search) in float64 until the gradient is below 1e-8 (what double
precision allows: a smaller step no longer changes the objective). Writes
tests/golden/probe_golden.json: the features, labels, C, the weights, bias, objective,
and the accuracies on the training and the held-out features.

Run with Debian's Python: /usr/bin/python3 tools/make_probe_golden.py
"""
import json
import os

import torch

torch.set_default_dtype(torch.float64)


def make_features(generator, centres, count):
    labels = torch.arange(count) % centres.shape[0]
    features = centres[labels] + 1.5 * torch.randn(count, centres.shape[1], generator=generator)
    return features, labels


def objective(features, labels, weight, bias, c):
    n = features.shape[0]
    scores = features @ weight + bias
    loss = torch.nn.functional.cross_entropy(scores, labels, reduction="mean")
    return loss + (weight * weight).sum() / (2 * c * n)


def accuracy(features, labels, weight, bias):
    return ((features @ weight + bias).argmax(1) == labels).double().mean().item()


def main():
    generator = torch.Generator().manual_seed(15)
    dim, classes, c = 5, 3, 0.5
    centres = torch.randn(classes, dim, generator=generator)
    train_x, train_y = make_features(generator, centres, 60)
    eval_x, eval_y = make_features(generator, centres, 30)

    weight = torch.zeros(dim, classes, requires_grad=True)
    bias = torch.zeros(classes, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], lr=1, max_iter=10000, tolerance_grad=1e-14,
                                  tolerance_change=1e-30, history_size=10, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = objective(train_x, train_y, weight, bias, c)
        loss.backward()
        return loss

    for _ in range(20):  # L-BFGS stops early when a step changes little; start it again
        optimizer.step(closure)
    loss = closure()
    gradient = max(weight.grad.abs().max().item(), bias.grad.abs().max().item())
    assert gradient < 1e-8, gradient
    golden = {
        "c": c,
        "classes": classes,
        "train_features": train_x.tolist(),
        "train_labels": train_y.tolist(),
        "eval_features": eval_x.tolist(),
        "eval_labels": eval_y.tolist(),
        "weight": weight.detach().tolist(),
        "bias": bias.detach().tolist(),
        "objective": loss.item(),
        "gradient_max": gradient,
        "train_accuracy": accuracy(train_x, train_y, weight.detach(), bias.detach()),
        "eval_accuracy": accuracy(eval_x, eval_y, weight.detach(), bias.detach()),
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden", "probe_golden.json")
    with open(path, "w") as out:
        json.dump(golden, out, indent=1)
        out.write("\n")
    print(f"wrote {os.path.normpath(path)}: objective {golden['objective']:.12f}, gradient {gradient:.1e}, "
          f"train {golden['train_accuracy']:.3f}, eval {golden['eval_accuracy']:.3f}")


if __name__ == "__main__":
    main()
