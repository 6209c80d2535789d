#!/usr/bin/python3
"""The paths themselves on a trained CNN: the heaviest ones, each layer's and each channel's
share of the L1 path-norm, and pruning the channels of smallest share.

A small CNN (conv1 1->8, ReLU, MaxPool, conv2 8->16, ReLU, Flatten, fc, float64) learns
scikit-learn's digits (8x8 images in [0, 1], shipped with scikit-learn: nothing is downloaded),
as in pruning_certificate.py. Then, on ``net = pathlift.from_torch(model, input_shape=(1, 8, 8))``:

- ``pathlift.top_paths(net, k=10)``: the 10 paths of largest ``|Phi_p|`` (the product of the
  weights along the path), each printed as the entries it crosses
  ``x[0,3,4] -> conv1[2,3,4] -> relu1[2,3,4] -> ... -> fc[7]`` and the weight of each step: the
  model parameter it carries (the path's ``param_names``, ``conv1.weight[2, 0, 1, 1]``) or its
  fixed weight (1 for a ReLU or a max pooling). A path may start at a bias
  (``fc.bias[6] -> fc[6]``).
- ``pathlift.path_norm_shares(net, s=1.0, by="layer")`` and ``by="channel"``: the fraction of
  ``||Phi||_1`` on the paths through each layer and each output channel (docs/paths.md#shares).
- Pruning: for each fraction f, the f smallest output channels of conv1 and of conv2 (each
  layer on its own) are zeroed (weights and bias), chosen by path-norm share or, the usual
  baseline, by the L2 norm of the channel's weights; both criteria are ranked once, on the
  trained model, and the table gives the test accuracy of each. Why: a channel's share counts
  what its weights carry to the outputs through the rest of the network, which its own norm
  ignores; whether that makes it the better criterion is what the table measures (here, one
  shot and without fine-tuning, the weight norm mostly keeps more accuracy: docs/paths.md).
  With ``--plot FILE`` the accuracies are drawn against f (matplotlib, Agg). Usage::

    PYTHONPATH=build/python /usr/bin/python3 examples/path_shares_pruning.py \
        [--epochs 30] [--plot FILE]

About 5 s with the defaults. Needs torch and scikit-learn (python3-torch, python3-sklearn), and
matplotlib for --plot (python3-matplotlib).
"""

import argparse
import copy

import numpy as np
import torch
from torch import nn

import pathlift
from _figures import saved_figure
from pruning_certificate import digits, train  # the same data and training

FRACTIONS = (0.0, 0.25, 0.5, 0.75)
CONVS = ("conv1", "conv2")


class CNN(nn.Module):
    """Named modules, so that pathlift's layers and nodes read conv1, relu1[c,h,w], ..., fc.
    Max pooling only: every fixed edge of the unrolled network has weight 1."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.relu2 = nn.ReLU()
        self.fc = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        h = self.pool(self.relu1(self.conv1(x)))
        h = self.relu2(self.conv2(h))
        return self.fc(torch.flatten(h, 1))


def cnn():
    return CNN().double()


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).double().mean().item()


def without_channels(model, channels):
    """A copy with the output channels {layer: [c, ...]} zeroed: weights and bias."""
    out = copy.deepcopy(model)
    with torch.no_grad():
        for layer, cs in channels.items():
            conv = getattr(out, layer)
            for c in cs:
                conv.weight[c] = 0.0
                conv.bias[c] = 0.0
    return out


def smallest(scores, fraction):
    """The indices of the round(fraction * n) smallest scores."""
    return [int(c) for c in np.argsort(scores, kind="stable")[:round(fraction * len(scores))]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot", metavar="FILE", help="save the accuracy against the fraction")
    args = ap.parse_args()
    x, y, xt, yt = digits(args.seed)
    torch.manual_seed(args.seed)
    model = train(cnn(), x, y, args.epochs, args.seed)
    print(f"trained: test accuracy {accuracy(model, xt, yt):.3f}")

    net = pathlift.from_torch(model, input_shape=(1, 8, 8))  # its weights: the model's, now
    print("\nthe 10 heaviest paths (Phi_p, the product of the weights along the path):")
    for i, p in enumerate(pathlift.top_paths(net, k=10)):
        print(f"{i + 1:2d}. {p['value']: .6g}  {' -> '.join(p['nodes'])}")
        print("      " + " * ".join(name if name is not None else f"{w:g}"
                                    for name, w in zip(p["param_names"], p["weights"])))

    layers = pathlift.path_norm_shares(net, s=1.0, by="layer")
    print(f"\n||Phi||_1 = {layers.total:.6g}; share of each layer (the paths through it):")
    for name, share in layers.as_dict().items():
        print(f"  {name:6s} {share:.4f}")
    channels = pathlift.path_norm_shares(net, s=1.0, by="channel").as_dict()
    share = {c: np.array([channels[f"{c}[{j}]"] for j in range(getattr(model, c).out_channels)])
             for c in CONVS}
    print("conv1's channels by share (and the L2 norm of their weights):")
    norm = {c: getattr(model, c).weight.detach().flatten(1).norm(dim=1).numpy() for c in CONVS}
    for j in np.argsort(-share["conv1"], kind="stable"):
        print(f"  conv1[{j}] {share['conv1'][j]:.4f}  (norm {norm['conv1'][j]:.3f})")

    print("\ntest accuracy after zeroing a fraction of the output channels of conv1 and conv2:")
    print("| fraction | channels zeroed (conv1 + conv2) | by path-norm share | by weight norm |")
    print("|---|---|---|---|")
    rows = []
    for f in FRACTIONS:
        acc = {}
        for criterion, scores in (("share", share), ("norm", norm)):
            chosen = {c: smallest(scores[c], f) for c in CONVS}
            acc[criterion] = accuracy(without_channels(model, chosen), xt, yt)
        n = " + ".join(str(len(smallest(share[c], f))) for c in CONVS)
        print(f"| {f:.2f} | {n} | {acc['share']:.3f} | {acc['norm']:.3f} |")
        rows.append((f, acc["share"], acc["norm"]))

    if args.plot:
        with saved_figure(args.plot, figsize=(5, 3.5)) as (fig, ax):
            f, a_share, a_norm = zip(*rows)
            ax.plot(f, a_share, "o-", label="smallest path-norm share")
            ax.plot(f, a_norm, "s--", label="smallest weight L2 norm")
            ax.set_xlabel("fraction of conv1's and conv2's output channels zeroed")
            ax.set_ylabel("test accuracy")
            ax.set_ylim(0, 1.02)
            ax.legend()
        print(f"\nwrote {args.plot}")


if __name__ == "__main__":
    main()
