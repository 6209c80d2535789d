#!/usr/bin/python3
"""Training with path-lifting quantities: plain SGD, SGD with a path-norm penalty, and Path-SGD.

A 64-h-h-10 ReLU MLP (float64) learns scikit-learn's digits (8x8 images, 1797 samples, shipped
with scikit-learn: nothing is downloaded) three times from the same initialisation:

* ``sgd``: plain minibatch SGD on the cross-entropy;
* ``sgd+penalty``: the same with ``lam * pathlift.torch.path_norm(net, 1)`` added to the loss
  (the L1 path-norm, differentiable: its gradient is pathlift's, by dynamic programming);
* ``path-sgd``: :class:`pathlift.torch.PathSGD` (Neyshabur et al. 2015), each step divided by
  the path kernel's diagonal, which makes it invariant under neuron rescaling;
* ``pathcond+sgd``: :func:`pathlift.torch.path_cond` (PathCond, Lebeurrier et al. 2026) rescales
  the hidden units once before training (the function unchanged, the path kernel's diagonal
  conditioned), then plain SGD.

``--imbalance F`` first rescales each hidden unit of the shared initialisation by a random
factor in [1/F, F] (the same function): plain SGD feels it, Path-SGD and PathCond do not.

It prints a table (final training loss, test accuracy, L1 path-norm) and saves a figure with the
L1 path-norm and the test accuracy over the epochs (the Agg backend; no display needed)::

    PYTHONPATH=build/python /usr/bin/python3 examples/path_training.py --out path_training.png

Needs torch, matplotlib and scikit-learn (Debian: python3-torch, python3-matplotlib,
python3-sklearn). About 10 s with the defaults (50 epochs); ``--epochs 2`` takes a few seconds.
"""

import argparse
import copy
import pathlib
import sys
import time

import numpy as np
import torch
from torch import nn

import pathlift
import pathlift.torch as pt
from _figures import saved_figure  # this folder is on sys.path

ROOT = pathlib.Path(__file__).resolve().parents[1]


def digits(seed):
    """(X_train, y_train, X_test, y_test) as float64 / int64 tensors: pixels scaled to [0, 1],
    a quarter of the samples held out (a permutation drawn from seed)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("this example needs scikit-learn (Debian: apt-get install python3-sklearn)")
    data = load_digits()
    X = torch.tensor(data.data / 16.0, dtype=torch.float64)
    y = torch.tensor(data.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    test, train = order[: len(y) // 4], order[len(y) // 4:]
    return X[train], y[train], X[test], y[test]


def mlp(hidden, seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 10)).double()


def cnn(hidden, seed):
    """Conv 1->8, ReLU, MaxPool 2, Conv 8->hidden/2, ReLU, Flatten, Linear, on 1x8x8 images."""
    torch.manual_seed(seed)
    width = max(hidden // 2, 1)
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, width, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(width * 2 * 2, 10)).double()


def train(model, method, data, args):
    """Trains in place; returns the history: epoch, loss, L1 path-norm, test accuracy."""
    X, y, X_test, y_test = data
    net = pathlift.from_torch(model, input_shape=args.shape)  # traced once; follows the module
    opt: torch.optim.Optimizer
    if method == "pathcond+sgd":
        pt.path_cond(net)  # rescales the module in place, before any step
    if method == "path-sgd":
        opt = pt.PathSGD(net, lr=args.path_lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    lam = args.penalty if method == "sgd+penalty" else 0.0
    criterion = nn.CrossEntropyLoss()
    batches = torch.Generator().manual_seed(args.seed)
    history = []

    def record(epoch, loss):
        with torch.no_grad():
            accuracy = (model(X_test).argmax(1) == y_test).double().mean().item()
            norm = pt.path_norm(net, 1.0).item()
        history.append((epoch, loss, norm, accuracy))

    record(0, criterion(model(X), y).item())
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for batch in torch.randperm(len(y), generator=batches).split(args.batch):
            opt.zero_grad()
            loss = criterion(model(X[batch]), y[batch])
            total += loss.item() * len(batch)
            if lam:
                loss = loss + lam * pt.path_norm(net, 1.0)
            loss.backward()
            opt.step()
        record(epoch, total / len(y))
    return history


def plot(histories, out):
    out.parent.mkdir(parents=True, exist_ok=True)
    with saved_figure(out, 1, 2, figsize=(8, 3), dpi=100) as (fig, (left, right)):
        for method, history in histories.items():
            epochs, _, norms, accuracies = zip(*history)
            left.plot(epochs, norms, label=method)
            right.plot(epochs, accuracies, label=method)
        left.set(xlabel="epoch", ylabel="L1 path-norm", yscale="log", title="path-norm")
        right.set(xlabel="epoch", ylabel="test accuracy", title="digits, held-out quarter")
        right.legend(loc="lower right")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--hidden", type=int, default=32, help="width of both hidden layers")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05, help="SGD's learning rate")
    parser.add_argument("--path-lr", type=float, default=0.03, help="PathSGD's learning rate")
    parser.add_argument("--penalty", type=float, default=2e-4,
                        help="lam, the weight of the L1 path-norm in the penalized loss")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp",
                        help="the 64-h-h-10 MLP, or a small CNN on the 8x8 images")
    parser.add_argument("--imbalance", type=float, default=1.0,
                        help="rescale each hidden unit of the initialisation by a random factor "
                             "in [1/F, F] first (the same function)")
    parser.add_argument("--out", type=pathlib.Path,
                        default=ROOT / "docs" / "figures" / "path_training.png")
    args = parser.parse_args(argv)

    if args.model == "cnn" and args.imbalance != 1.0:
        parser.error("--imbalance draws one factor per hidden neuron: it is for the MLP")
    data = digits(args.seed)
    args.shape = (64,) if args.model == "mlp" else (1, 8, 8)
    data = tuple(t.reshape(-1, *args.shape) if t.dtype == torch.float64 else t for t in data)
    init = (mlp if args.model == "mlp" else cnn)(args.hidden, args.seed)
    if args.imbalance != 1.0:
        rng = np.random.default_rng(args.seed)
        hidden = pathlift.from_torch(init, input_shape=args.shape).unrolled().h
        init = pt.rescale(init, np.exp(rng.uniform(-1, 1, hidden) * np.log(args.imbalance)),
                          input_shape=args.shape)
    net = pathlift.from_torch(init, input_shape=args.shape)
    name = f"MLP 64-{args.hidden}-{args.hidden}-10" if args.model == "mlp" else "CNN"
    print(f"digits: {len(data[1])} training, {len(data[3])} test samples; "
          f"{name}: d = {net.d}, "
          f"P = {pathlift.count_paths(net).paths} paths")
    histories = {}
    for method in ("sgd", "sgd+penalty", "path-sgd", "pathcond+sgd"):
        start = time.perf_counter()
        histories[method] = train(copy.deepcopy(init), method, data, args)
        _, loss, norm, accuracy = histories[method][-1]
        print(f"{method:<12} loss {loss:7.4f}  test accuracy {accuracy:6.1%}  "
              f"L1 path-norm {norm:10.4g}  ({time.perf_counter() - start:.1f} s)")
    plot(histories, args.out)
    print(f"figure: {args.out}")


if __name__ == "__main__":
    main()
