#!/usr/bin/python3
"""A certificate for magnitude pruning and quantization: how far can the changed network move,
on any input?

A small CNN (Conv 1->8, ReLU, MaxPool, Conv 8->16, ReLU, Flatten, Linear, float64) learns
scikit-learn's digits (8x8 images in [0, 1], shipped with scikit-learn: nothing is downloaded).
Its weights are then pruned by magnitude (each tensor's smallest fraction set to 0) or rounded
to a grid, and for each copy ``pathlift.torch.lipschitz_bound(model, copy)`` gives the constant
C of the path-metric bound (Gonon et al., ICML 2025)

    ||f(x) - f_copy(x)||_1 <= max(||x||_inf, 1) C   for every input x,

here ``<= C`` since pixels lie in [0, 1]. Beside it: the largest output change measured on the
data set, and the test accuracy. Pruning gives the exact path-metric (two path-norm passes);
rounding changes some signs and goes through the point where they are 0. Usage::

    PYTHONPATH=build/python /usr/bin/python3 examples/pruning_certificate.py [--epochs 30]

About 5 s with the defaults. Needs torch and scikit-learn (python3-torch, python3-sklearn).
"""

import argparse
import copy

import numpy as np
import torch
from torch import nn

import pathlift.torch as pt


def digits(seed):
    """(X_train, y_train, X_test, y_test): 1x8x8 pixels in [0, 1], a quarter held out."""
    from sklearn.datasets import load_digits
    data = load_digits()
    x = torch.tensor(data.images / 16.0, dtype=torch.float64).unsqueeze(1)
    y = torch.tensor(data.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    cut = len(y) // 4
    return x[perm[cut:]], y[perm[cut:]], x[perm[:cut]], y[perm[:cut]]


def cnn():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(16 * 2 * 2, 10)).double()


def train(model, x, y, epochs, seed):
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(epochs):
        for idx in torch.randperm(len(y)).split(64):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


def pruned(model, fraction):
    out = copy.deepcopy(model)
    with torch.no_grad():
        for p in out.parameters():
            p[p.abs() <= p.abs().flatten().quantile(fraction)] = 0.0
    return out


def rounded(model, step):
    out = copy.deepcopy(model)
    with torch.no_grad():
        for p in out.parameters():
            p.copy_(torch.round(p / step) * step)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    x, y, xt, yt = digits(args.seed)
    torch.manual_seed(args.seed)
    model = train(cnn(), x, y, args.epochs, args.seed)
    everything = torch.cat([x, xt])
    with torch.no_grad():
        out = model(everything)
        acc = (model(xt).argmax(1) == yt).double().mean().item()
    print(f"trained: test accuracy {acc:.3f}\n")
    print("| copy | bound C | worst change measured | ratio | test accuracy | sign changes |")
    print("|---|---|---|---|---|---|")
    copies = [(f"pruned {f:.0%}", pruned(model, f)) for f in (0.1, 0.3, 0.5, 0.7)]
    copies += [(f"rounded to {s:g}", rounded(model, s)) for s in (2.0**-6, 2.0**-3)]
    for name, changed in copies:
        c = pt.lipschitz_bound(model, changed, input_shape=(1, 8, 8))
        with torch.no_grad():
            worst = (model(everything) - changed(everything)).abs().sum(1).max().item()
            acc2 = (changed(xt).argmax(1) == yt).double().mean().item()
        assert worst <= c.constant * (1 + 1e-12), (name, worst, c.constant)
        print(f"| {name} | {c.constant:.4g}{' (exact)' if c.exact else ''} | {worst:.4g} | "
              f"{c.constant / worst:.3g} | {acc2:.3f} | {c.sign_changes} |")
    assert out.shape == (len(everything), 10)


if __name__ == "__main__":
    main()
