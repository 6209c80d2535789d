#!/usr/bin/python3
"""The path-norm toolkit's iterative magnitude pruning (IMP) experiment, in miniature, as a
pathlift sweep (docs/sweeps.md).

A small CNN (Conv 1->8, ReLU, MaxPool, Conv 8->16, ReLU, Flatten, Linear, float64) learns
scikit-learn's digits (nothing is downloaded). Then, for 10 rounds, 20% of its remaining
weights (convolution and linear weights, by magnitude over the whole network) are pruned and
the network is trained again with the pruned weights held at 0; each round's state_dict is a
checkpoint. ``pathlift.sweep`` then computes the L1, L2 and L4 path-norms of the 11 checkpoints
(on a local process pool, or on the Dask cluster of --scheduler), beside the test accuracy the
example measures itself, and the table and a plot are written::

    PYTHONPATH=build/python /usr/bin/python3 examples/imp_sweep.py [--rounds 10] \\
        [--epochs 30] [--out DIR] [--scheduler tcp://host:8786]

About 20 s with the defaults on 2 cores. Needs torch, scikit-learn, pandas and matplotlib
(python3-torch, python3-sklearn, python3-pandas, python3-matplotlib); Dask for --scheduler.
"""

import argparse
import os

import torch
from torch import nn

import pathlift
from _figures import saved_figure
from pruning_certificate import digits  # the same data split (this folder is on sys.path)


class DigitsCNN(nn.Sequential):
    """The network (a class: the sweep's workers build it again from the checkpoints)."""

    def __init__(self):
        super().__init__(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(16 * 4 * 4, 10))


def weights(model):
    return [m.weight for m in model if isinstance(m, (nn.Conv2d, nn.Linear))]


def train(model, masks, data, epochs, seed):
    x, y = data[0], data[1]
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for _ in range(epochs):
        for idx in torch.randperm(len(y), generator=g).split(64):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
            with torch.no_grad():
                for w, m in zip(weights(model), masks):
                    w.mul_(m)


def accuracy(model, data):
    with torch.no_grad():
        return float((model(data[2]).argmax(1) == data[3]).double().mean())


def prune(model, masks, fraction):
    """Masks with `fraction` of the remaining weights (the smallest |w| over the network) set
    to 0, and those weights zeroed."""
    alive = torch.cat([w.detach().abs()[m > 0] for w, m in zip(weights(model), masks)])
    cut = torch.quantile(alive, fraction)
    new = [m * (w.detach().abs() > cut) for w, m in zip(weights(model), masks)]
    with torch.no_grad():
        for w, m in zip(weights(model), new):
            w.mul_(m)
    return new


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=30, help="epochs of the first training")
    ap.add_argument("--retrain", type=int, default=5, help="epochs after each pruning")
    ap.add_argument("--out", default="imp_sweep", help="folder of the checkpoints and table")
    ap.add_argument("--scheduler", help="a Dask scheduler's address (default: local processes)")
    ap.add_argument("--plot", help="the figure (.png); default OUT/imp_sweep.png")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    data = digits(0)
    model = DigitsCNN().double()
    masks = [torch.ones_like(w) for w in weights(model)]
    train(model, masks, data, args.epochs, 0)
    items, acc, remaining = [], [], []
    for r in range(args.rounds + 1):
        if r > 0:
            masks = prune(model, masks, 0.2)
            train(model, masks, data, args.retrain, r)
        path = os.path.join(args.out, f"round{r:02d}.pt")
        torch.save(model.state_dict(), path)
        items.append(pathlift.TorchCheckpoint(path, DigitsCNN, (1, 8, 8)))
        acc.append(accuracy(model, data))
        remaining.append(float(sum(m.sum() for m in masks) / sum(m.numel() for m in masks)))
    client = None
    if args.scheduler:
        from distributed import Client
        client = Client(args.scheduler)
    table = pathlift.sweep(items, ["norm:1", "norm:2", "norm:4"], client=client,
                           out=os.path.join(args.out, "table.csv"))
    table.insert(1, "round", range(len(items)))
    table.insert(2, "weights_left", remaining)
    table.insert(3, "test_accuracy", acc)
    print(table[["round", "weights_left", "test_accuracy", "norm:1", "norm:2",
                 "norm:4"]].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    figure = args.plot or os.path.join(args.out, "imp_sweep.png")
    with saved_figure(figure, figsize=(6, 3.6), dpi=110) as (fig, ax):
        for s in ("1", "2", "4"):
            ax.plot(table["round"], table[f"norm:{s}:log10"], marker="o", label=f"L{s} path-norm")
        ax.set_xlabel("IMP round (20% of the remaining weights pruned each)")
        ax.set_ylabel("log10 path-norm")
        ax2 = ax.twinx()
        ax2.plot(table["round"], table["test_accuracy"], color="gray", ls="--",
                 label="test accuracy")
        ax2.set_ylabel("test accuracy")
        ax.legend(loc="center left")
        ax2.legend(loc="lower left")
        ax.set_title("digits CNN under iterative magnitude pruning")
    print(f"wrote {figure} and {os.path.join(args.out, 'table.csv')}")


if __name__ == "__main__":
    main()
