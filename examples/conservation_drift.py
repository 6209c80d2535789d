#!/usr/bin/python3
"""How far SGD drifts from the conservation laws of gradient flow, at three step sizes.

Gradient flow of any loss conserves, for each hidden unit, the sum of the squares of its
incoming weights and bias minus that of its outgoing weights (Marcotte, Gribonval, Peyre, 2023;
``pathlift.conservation_laws``, docs/dynamics.md). A step of SGD, ``theta - eta g``, changes
each of them by exactly ``eta^2 Q(g)`` (the law evaluated at the minibatch gradient): the
linear term vanishes, so the drift is O(eta^2) a step, and over a fixed number of steps it
should shrink about 4 times when eta halves, while theta itself moves about half as far.

An MLP 64-32-10 (ReLU, float64) learns scikit-learn's digits (8x8 images in [0, 1], shipped
with scikit-learn: nothing is downloaded) by plain SGD (minibatches of 32, no momentum, no
weight decay) from one initialisation and one minibatch order, at three step sizes. Every 10
steps the largest relative drift of the laws, ``max_h |Q_h(theta_t) - Q_h(theta_0)| / S_h``
(S_h the law's sum of squares at the start), is printed beside how far theta moved,
``||theta_t - theta_0|| / ||theta_0||``; with ``--plot FILE`` the drift is drawn against the
step count on log axes (matplotlib, Agg). Usage::

    PYTHONPATH=build/python /usr/bin/python3 examples/conservation_drift.py \\
        [--steps 400] [--etas 0.2,0.1,0.05] [--plot FILE]

About 4 s with the defaults. Needs torch and scikit-learn (python3-torch, python3-sklearn), and
matplotlib for --plot (python3-matplotlib).
"""

import argparse

import numpy as np
import torch
from torch import nn

import pathlift
import pathlift.torch
from _figures import saved_figure  # this folder is on sys.path


def digits():
    """(X, y): 64 pixels in [0, 1] per image, the digit."""
    from sklearn.datasets import load_digits
    data = load_digits()
    return (torch.tensor(data.data / 16.0, dtype=torch.float64),
            torch.tensor(data.target, dtype=torch.int64))


def mlp(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)).double()


def train(eta, steps, seed, X, y, every=10):
    """Plain SGD at step eta; per recorded step (0, every, 2 every, ..., steps): the largest
    relative drift of the laws and the relative move of theta."""
    model = mlp(seed)
    net = pathlift.torch.from_torch(model)
    start = pathlift.conservation_laws(net)  # at the module's current parameters
    theta0 = pathlift.torch.theta_from_torch(model)
    batches = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=eta)
    rows = []
    for step in range(steps + 1):
        if step % every == 0:
            now = pathlift.conservation_laws(net)
            theta = pathlift.torch.theta_from_torch(model)
            rows.append((step, float(np.max(np.abs(now.values - start.values) / start.squares)),
                         float(np.linalg.norm(theta - theta0) / np.linalg.norm(theta0))))
        if step == steps:
            break
        idx = torch.randint(0, len(y), (32,), generator=batches)
        opt.zero_grad()
        nn.functional.cross_entropy(model(X[idx]), y[idx]).backward()
        opt.step()
    return start.independent, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--etas", default="0.2,0.1,0.05", help="step sizes, comma-separated")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot", metavar="FILE", help="save the drift against the step count")
    args = ap.parse_args()
    etas = [float(e) for e in args.etas.split(",")]
    X, y = digits()

    runs = {}
    for eta in etas:
        laws, runs[eta] = train(eta, args.steps, args.seed, X, y)
    print(f"MLP 64-32-10 on digits: {laws} conservation laws (one per hidden unit), "
          f"plain SGD, {args.steps} steps")
    print("\nlargest relative drift of the laws | relative move of theta")
    print("  step " + "".join(f" | eta={eta:<8g} drift   move" for eta in etas))
    for i, (step, _, _) in enumerate(runs[etas[0]]):
        if step % 50 and step != args.steps:
            continue
        print(f"  {step:>4} " + "".join(f" | {runs[eta][i][1]:>14.3e} {runs[eta][i][2]:>6.3f}"
                                       for eta in etas))
    print("\nat the last step, drift ratio between successive step sizes (eta^2: "
          "(eta1 / eta2)^2):")
    for a, b in zip(etas, etas[1:]):
        ratio = runs[a][-1][1] / runs[b][-1][1]
        print(f"  eta {a:g} / {b:g}: drift ratio {ratio:.2f} (eta^2 predicts {(a / b) ** 2:.2f}), "
              f"move ratio {runs[a][-1][2] / runs[b][-1][2]:.2f}")

    if args.plot:
        with saved_figure(args.plot, figsize=(5, 3.5)) as (fig, ax):
            for eta in etas:
                steps = [r[0] for r in runs[eta][1:]]
                ax.loglog(steps, [r[1] for r in runs[eta][1:]], label=f"eta = {eta:g}")
            ax.set_xlabel("SGD steps")
            ax.set_ylabel("max_h |Q_h(t) - Q_h(0)| / S_h")
            ax.set_title("drift of the conservation laws")
            ax.legend()
        print(f"\nwrote {args.plot}")


if __name__ == "__main__":
    main()
