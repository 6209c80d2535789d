#!/usr/bin/python3
"""pathcond's MLP and two-moons experiments, rerun small: plain SGD, SGD after pathlift's
PathCond, and SGD after pathcond's own PathCond, per learning rate, initialization and seed
(issue 51).

PathCond (Lebeurrier, Vayer, Gribonval, "Path-conditioned training: a principled way to rescale
ReLU neural networks", 2026) rescales a ReLU network once, before training. Its authors' code
(the GitHub repository Artim436/pathcond) sweeps learning rates, initializations and seeds on an
MNIST MLP and on two moons. MNIST cannot be downloaded here, so this script uses scikit-learn's
``load_digits`` (8x8 digits, 1797 images) in its place, and ``make_moons`` for two moons:

  digits   MLP 64-128-128-10, minibatch SGD (batch 128, pathcond's MNIST batch size),
           --epochs-digits epochs; fixed 70/30 train/test split, batch order seeded.
  moons    MLP 2-16-16-16-16-16-2 (pathcond's moons grid is [k]*5, k = 2..32), full-batch
           gradient descent as in pathcond (one step per epoch), --epochs-moons epochs;
           make_moons(1000, noise=0.1) and a 70/30 split, both seeded by the seed as there.

Both MLPs have biases on the hidden layers and none on the output layer (pathcond's MLP).
Cross-entropy loss, torch.optim.SGD without momentum (pathcond's "sgd"). Initializations:

  default         PyTorch's nn.Linear default (pathcond's MLP as built, and its demo)
  kaiming_normal  weights kaiming_normal_, biases default (pathcond's init_kai_normal=True)
  normal          weights and biases N(0, --normal-std^2) (pathcond's teacher-student "normal"
                  init, whose std ranges over logspace(-2, -1))
  rescaled        the default init moved along its rescaling orbit: each hidden neuron's
                  incoming weights and bias times lambda, its outgoing weights divided by
                  lambda, log lambda ~ N(0, --rescale-sigma^2). Same function as `default`,
                  badly scaled (not in pathcond's code; the case a user meets after
                  hand-scaling a layer)

For each (dataset, init, seed) one model is drawn; each method starts from a copy of it:

  sgd       no rescaling
  pathlift  pathlift.torch.path_cond(model, input_shape=...) (in place, to convergence)
  pathcond  pathcond.pathcond.rescaling_path_cond(model) (in place; its defaults: 10 sweeps,
            tol 1e-2), when --pathcond-src points at a checkout of pathcond; skipped with a note
            otherwise. pathcond's code is imported at run time and never copied here.

Recorded per run: the final training loss (whole training set, after training), train and test
accuracy, whether the loss became inf/nan (diverged: training stops), the PathCond criterion
``n log(sum_k G_kk) - sum_k log G_kk`` of the starting point (pathlift.torch.kernel_diagonal,
float64), and the training-loss curve. With pathcond's code, the criterion after pathlift's
PathCond is compared with pathcond's on the digits MLP in float64, same initial weights, for
each init (pathcond run to convergence: --pathcond-sweeps sweeps, tolerance 1e-12; and with its
defaults); the script exits with status 1 when they differ by more than 1e-8 relative.

Outputs in OUT: runs.csv (one row per run), results.json (configuration, runs with curves,
criterion comparison), summary.md (mean +- std over seeds per dataset, init, lr and method),
pathcond_<dataset>.png (final loss and test accuracy against lr, one panel per init) and
pathcond_<dataset>_curves.png (loss curves at the grid lr nearest --curve-lr); --replot
redraws the last two from results.json.

Usage (Debian's /usr/bin/python3, which has torch, scikit-learn and matplotlib;
PYTHONPATH=<build>/python):

  bench/pathcond_experiments.py --out /tmp/pc --pathcond-src /tmp/pathcond   # the full grid
  bench/pathcond_experiments.py --out /tmp/pc                                # without pathcond
  bench/pathcond_experiments.py --out /tmp/pc --datasets moons --lrs 0.03 --seeds 1 \\
      --epochs-moons 5 --inits default rescaled                              # a smoke run
"""

import argparse
import copy
import csv
import importlib
import importlib.util
import json
import math
import pathlib
import sys
import time
import types

import numpy as np
import torch
from torch import nn

import pathlift.torch as pathlift_torch

DATASETS = ("digits", "moons")
INITS = ("default", "kaiming_normal", "normal", "rescaled")
METHODS = ("sgd", "pathlift", "pathcond")
LABELS = {"sgd": "plain SGD", "pathlift": "pathlift PathCond", "pathcond": "pathcond's PathCond"}
COLORS = {"sgd": "#1b9e77", "pathlift": "#d95f02", "pathcond": "#7570b3"}
AGREE_RTOL = 1e-8
CSV_FIELDS = ["dataset", "init", "lr", "seed", "method", "final_train_loss", "train_acc",
              "test_acc", "diverged", "epochs_run", "criterion_start", "am_over_gm_start",
              "sum_g_start", "rescale_error"]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=pathlib.Path,
                    help="output folder (created): runs.csv, results.json, summary.md, PNGs")
    ap.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    ap.add_argument("--inits", nargs="+", choices=INITS, default=list(INITS))
    ap.add_argument("--nb-lr", type=int, default=7,
                    help="learning rates, log-spaced from --lr-min to --lr-max (default 7)")
    ap.add_argument("--lr-min", type=float, default=1e-3)
    ap.add_argument("--lr-max", type=float, default=1.0)
    ap.add_argument("--lrs", type=float, nargs="+",
                    help="explicit learning rates (replace --nb-lr/--lr-min/--lr-max)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default 3)")
    ap.add_argument("--epochs-moons", type=int, default=500,
                    help="full-batch steps on two moons (default 500)")
    ap.add_argument("--epochs-digits", type=int, default=20,
                    help="epochs of minibatch SGD on digits (default 20)")
    ap.add_argument("--batch-size", type=int, default=128, help="digits minibatch (default 128)")
    ap.add_argument("--normal-std", type=float, default=0.1,
                    help="std of the 'normal' init (default 0.1)")
    ap.add_argument("--rescale-sigma", type=float, default=2.0,
                    help="std of log lambda in the 'rescaled' init (default 2)")
    ap.add_argument("--pathcond-src", type=pathlib.Path,
                    help="a checkout of pathcond (the folder holding its pathcond/ package); "
                         "without it, or when it cannot be imported, its runs are skipped")
    ap.add_argument("--pathcond-sweeps", type=int, default=2000,
                    help="sweeps of pathcond's solver for the criterion comparison (default 2000)")
    ap.add_argument("--curve-lr", type=float, default=0.03,
                    help="the curves figure shows the grid lr nearest this (default 0.03)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--replot", action="store_true",
                    help="train nothing: redraw summary.md and the figures from OUT/results.json "
                         "(the grid it was run on; --curve-lr may change)")
    args = ap.parse_args(argv)
    if args.lrs is None:
        if args.nb_lr < 1 or not 0 < args.lr_min <= args.lr_max:
            ap.error("need --nb-lr >= 1 and 0 < --lr-min <= --lr-max")
        args.lrs = [float(v) for v in np.logspace(math.log10(args.lr_min),
                                                  math.log10(args.lr_max), args.nb_lr)]
    if args.seeds < 1:
        ap.error("need --seeds >= 1")
    return args


# --------------------------------------------------------------------------------------------
# pathcond's code, imported at run time from a checkout


class PathCond:
    """pathcond's functions, imported from ``src`` (None when that fails: the reason in
    ``note``). pathcond imports tqdm only for progress bars on code paths not used here; where
    tqdm is not installed a stand-in that returns its iterable is put in sys.modules."""

    def __init__(self, src):
        self.note = None
        self.rescaling_path_cond = None
        if src is None:
            self.note = "no --pathcond-src: pathcond's own rescaling is skipped"
            return
        src = pathlib.Path(src).resolve()
        if not (src / "pathcond" / "rescaling_polyn.py").is_file():
            self.note = f"{src} has no pathcond/rescaling_polyn.py: pathcond's runs skipped"
            return
        if importlib.util.find_spec("tqdm") is None:
            stub = types.ModuleType("tqdm")
            stub.tqdm = lambda iterable=None, *a, **k: iterable
            sys.modules["tqdm"] = stub
        sys.path.insert(0, str(src))
        try:
            top = importlib.import_module("pathcond.pathcond")
            polyn = importlib.import_module("pathcond.rescaling_polyn")
            net = importlib.import_module("pathcond.network_to_optim")
        except Exception as exc:  # its imports (torchvision, ...) may be missing here
            self.note = f"pathcond at {src} cannot be imported ({type(exc).__name__}: {exc})"
            return
        self.rescaling_path_cond = top.rescaling_path_cond
        self.optimize = polyn.optimize_rescaling_polynomial
        self.reweight = polyn.reweight_model_inplace
        self.diag_g = net.compute_diag_G
        self.src = src

    @property
    def available(self):
        return self.rescaling_path_cond is not None


# --------------------------------------------------------------------------------------------
# Data, models, initializations


def load_data(name, seed):
    """(X_train, y_train, X_test, y_test) as float32 / int64 tensors."""
    from sklearn.model_selection import train_test_split
    if name == "moons":
        from sklearn.datasets import make_moons
        X, y = make_moons(n_samples=1000, noise=0.1, random_state=seed)
        split_seed = seed
    else:
        from sklearn.datasets import load_digits
        digits = load_digits()
        X, y = digits.data / 16.0, digits.target
        split_seed = 0
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=split_seed)
    as_x = lambda a: torch.tensor(a, dtype=torch.float32)
    as_y = lambda a: torch.tensor(a, dtype=torch.long)
    return as_x(Xtr), as_y(ytr), as_x(Xte), as_y(yte)


def sizes_of(name):
    return [2, 16, 16, 16, 16, 16, 2] if name == "moons" else [64, 128, 128, 10]


def make_mlp(sizes):
    """Linear + ReLU layers, biases on the hidden layers only."""
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        hidden = i < len(sizes) - 2
        layers.append(nn.Linear(a, b, bias=hidden))
        if hidden:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def initial_model(dataset, init, seed, args):
    torch.manual_seed(seed)
    model = make_mlp(sizes_of(dataset))
    linears = [m for m in model if isinstance(m, nn.Linear)]
    with torch.no_grad():
        if init == "kaiming_normal":
            for layer in linears:
                nn.init.kaiming_normal_(layer.weight)
        elif init == "normal":
            for layer in linears:
                nn.init.normal_(layer.weight, std=args.normal_std)
                if layer.bias is not None:
                    nn.init.normal_(layer.bias, std=args.normal_std)
        elif init == "rescaled":
            for layer, after in zip(linears[:-1], linears[1:]):
                lam = torch.exp(args.rescale_sigma * torch.randn(layer.out_features))
                layer.weight.mul_(lam[:, None])
                layer.bias.mul_(lam)
                after.weight.div_(lam[None, :])
    return model


def criterion(model, input_shape, spread=False):
    """PathCond's criterion n log(sum G_kk) - sum log G_kk over the n G_kk > 0, in float64.
    With spread=True, (criterion, AM/GM, sum G): AM/GM = exp(criterion / n) / n is the ratio of
    the arithmetic to the geometric mean of those G_kk (1 when they are all equal, the
    criterion's floor n log n); sum_k G_kk is the trace of the path kernel dPhi^T dPhi."""
    m64 = copy.deepcopy(model).double()
    g = pathlift_torch.kernel_diagonal(m64, input_shape=input_shape)
    value = criterion_of(g)
    if not spread:
        return value
    n = int((g > 0).sum())
    return value, math.exp(value / n) / n, float(g.sum())


def criterion_of(g):
    g = g.to(torch.float64)
    g = g[g > 0]
    return float(g.numel() * torch.log(g.sum()) - torch.log(g).sum())


# --------------------------------------------------------------------------------------------
# Training


def train(model, data, lr, dataset, seed, args):
    """SGD; returns (curve, epochs_run, diverged). The curve holds each epoch's mean training
    loss (moons: the full-batch loss before the step)."""
    Xtr, ytr, _, _ = data
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    curve = []
    model.train()
    epochs = args.epochs_moons if dataset == "moons" else args.epochs_digits
    for epoch in range(epochs):
        if dataset == "moons":
            batches = [slice(None)]
        else:
            perm = torch.randperm(len(ytr), generator=gen)
            batches = [perm[i:i + args.batch_size] for i in range(0, len(ytr), args.batch_size)]
        total, count = 0.0, 0
        for idx in batches:
            opt.zero_grad()
            loss = loss_fn(model(Xtr[idx]), ytr[idx])
            value = loss.item()
            if not math.isfinite(value):
                curve.append(float("nan"))
                return curve, epoch + 1, True
            loss.backward()
            opt.step()
            n = len(ytr[idx])
            total, count = total + value * n, count + n
        curve.append(total / count)
    return curve, epochs, False


@torch.no_grad()
def evaluate(model, data):
    Xtr, ytr, Xte, yte = data
    model.eval()
    logits = model(Xtr)
    loss = float(nn.functional.cross_entropy(logits, ytr))
    acc = lambda out, y: float((out.argmax(1) == y).double().mean())
    return loss, acc(logits, ytr), acc(model(Xte), yte)


def run_grid(args, pathcond):
    runs = []
    methods = [m for m in METHODS if m != "pathcond" or pathcond.available]
    for dataset in args.datasets:
        input_shape = (sizes_of(dataset)[0],)
        for seed in range(args.seeds):
            data = load_data(dataset, seed)
            for init in args.inits:
                model0 = initial_model(dataset, init, seed, args)
                starts = {}
                for method in methods:
                    model, error = copy.deepcopy(model0), ""
                    if method == "pathlift":
                        pathlift_torch.path_cond(model, input_shape=input_shape)
                    elif method == "pathcond":
                        try:
                            pathcond.rescaling_path_cond(model)
                        except Exception as exc:  # e.g. its "Negative discriminant" ValueError
                            error = f"{type(exc).__name__}: {exc}"
                    starts[method] = (model, error) + criterion(model, input_shape, spread=True)
                for lr in args.lrs:
                    for method in methods:
                        start, error, crit, am_gm, sum_g = starts[method]
                        row = dict(dataset=dataset, init=init, lr=lr, seed=seed, method=method,
                                   criterion_start=crit, am_over_gm_start=am_gm,
                                   sum_g_start=sum_g, rescale_error=error)
                        if error:
                            row.update(final_train_loss=float("nan"), train_acc=float("nan"),
                                       test_acc=float("nan"), diverged=False, epochs_run=0,
                                       curve=[])
                        else:
                            model = copy.deepcopy(start)
                            curve, epochs_run, diverged = train(model, data, lr, dataset, seed,
                                                                args)
                            loss, train_acc, test_acc = evaluate(model, data)
                            diverged = diverged or not math.isfinite(loss)
                            row.update(final_train_loss=loss if not diverged else float("nan"),
                                       train_acc=train_acc, test_acc=test_acc,
                                       diverged=diverged, epochs_run=epochs_run, curve=curve)
                        runs.append(row)
                print(f"  {dataset:6s} seed {seed} {init:14s} done ({len(runs)} runs)",
                      flush=True)
    return runs


# --------------------------------------------------------------------------------------------
# The criterion: pathlift against pathcond on the digits MLP, float64


def compare_criterion(args, pathcond):
    """For each init (seed 0): the criterion before, after pathlift's PathCond, after pathcond's
    (converged, and with its defaults), each evaluated by both libraries' G."""
    rows = []
    input_shape = (64,)
    for init in args.inits:
        model = initial_model("digits", init, 0, args).double()
        probe = torch.rand(256, 64, generator=torch.Generator().manual_seed(0),
                           dtype=torch.float64)
        with torch.no_grad():
            reference = model(probe)
        moved = lambda m: float((m(probe) - reference).abs().max() / reference.abs().max())
        ours = copy.deepcopy(model)
        report = pathlift_torch.path_cond(ours, input_shape=input_shape)
        row = dict(init=init, criterion_before=report.criterion_before,
                   pathlift_after=report.criterion_after, pathlift_sweeps=report.sweeps,
                   pathlift_converged=bool(report.converged))
        with torch.no_grad():
            row["pathlift_function_change"] = moved(ours)
        if pathcond.available:
            previous = torch.get_default_dtype()
            torch.set_default_dtype(torch.float64)  # pathcond builds its probe input in it
            try:
                for key, sweeps, tol in (("pathcond_converged", args.pathcond_sweeps, 1e-12),
                                         ("pathcond_default", 10, 1e-2)):
                    theirs = copy.deepcopy(model)
                    bz, _ = pathcond.optimize(theirs, n_iter=sweeps, tol=tol)
                    pathcond.reweight(theirs, bz)
                    row[key] = criterion_of(pathcond.diag_g(theirs))
                    row[key + "_by_pathlift_G"] = criterion(theirs, input_shape)
                    if key == "pathcond_converged":
                        with torch.no_grad():
                            row["pathcond_function_change"] = moved(theirs)
                        ours_theta = torch.cat([p.detach().flatten() for p in ours.parameters()])
                        their_theta = torch.cat([p.detach().flatten()
                                                 for p in theirs.parameters()])
                        row["theta_max_rel_diff"] = float(
                            ((ours_theta - their_theta).abs() /
                             their_theta.abs().clamp_min(1e-300)).max())
            finally:
                torch.set_default_dtype(previous)
            row["rel_diff"] = abs(row["pathlift_after"] - row["pathcond_converged"]) / \
                abs(row["pathcond_converged"])
            row["agree"] = row["rel_diff"] <= AGREE_RTOL
        rows.append(row)
    return rows


def print_criterion(rows):
    print("\nPathCond criterion on the digits MLP 64-128-128-10 (float64, seed 0):")
    have = "pathcond_converged" in rows[0]
    head = f"  {'init':14s} {'before':>18s} {'pathlift after':>18s}"
    if have:
        head += f" {'pathcond after':>18s} {'rel. diff':>9s} {'pathcond 10 sweeps':>18s}"
    print(head)
    for r in rows:
        line = f"  {r['init']:14s} {r['criterion_before']:18.8f} {r['pathlift_after']:18.8f}"
        if have:
            line += (f" {r['pathcond_converged']:18.8f} {r['rel_diff']:9.1e}"
                     f" {r['pathcond_default']:18.8f}")
        print(line)
    if have:
        worst = max(r["rel_diff"] for r in rows)
        print(f"  largest relative difference pathlift vs pathcond (converged): {worst:.1e} "
              f"({'agree' if worst <= AGREE_RTOL else 'DISAGREE'} to {AGREE_RTOL:g})")
        print("  largest change of the network's output, relative to its largest output: "
              f"pathlift {max(r['pathlift_function_change'] for r in rows):.1e}, pathcond "
              f"{max(r['pathcond_function_change'] for r in rows):.1e} (its log-scales are "
              "float32)")


# --------------------------------------------------------------------------------------------
# Summaries and figures


def groups(runs):
    out = {}
    for r in runs:
        out.setdefault((r["dataset"], r["init"], r["lr"], r["method"]), []).append(r)
    return out


def stats(rows, key):
    """(mean, std, finite count, diverged count) over the runs that did not diverge."""
    vals = [r[key] for r in rows if not r["diverged"] and math.isfinite(r[key])]
    div = sum(r["diverged"] for r in rows)
    if not vals:
        return float("nan"), float("nan"), 0, div
    return float(np.mean(vals)), float(np.std(vals)), len(vals), div


def fmt(rows, key):
    mean, std, n, div = stats(rows, key)
    if n == 0:
        return "diverged" if div else "-"
    if key == "test_acc":
        text = f"{100 * mean:.1f} ± {100 * std:.1f}"
    else:
        text = f"{mean:#.3g} ± {std:.2g}"
    return text + (f" ({div} div.)" if div else "")


def best_lr(rows_by_lr):
    """(lr, mean final loss) of the lr with the least mean final loss among those where no
    seed diverged, or None."""
    best = None
    for lr, rows in rows_by_lr:
        mean, _, n, div = stats(rows, "final_train_loss")
        if n and not div and (best is None or mean < best[1]):
            best = (lr, mean)
    return best


def summary_markdown(runs, args, methods):
    g = groups(runs)
    lines = []
    for dataset in args.datasets:
        lines.append(f"### {dataset}: final training loss and test accuracy (%), mean ± std "
                     f"over {args.seeds} seed(s)\n")
        head = ["init", "lr"] + [f"loss {m}" for m in methods] + [f"test acc {m}"
                                                                  for m in methods]
        lines += table_head(head)
        for init in args.inits:
            for lr in args.lrs:
                cells = [init, f"{lr:.3g}"]
                cells += [fmt(g.get((dataset, init, lr, m), []), "final_train_loss")
                          for m in methods]
                cells += [fmt(g.get((dataset, init, lr, m), []), "test_acc") for m in methods]
                lines.append("| " + " | ".join(cells) + " |")
        lines.append(f"\n### {dataset}: the least mean final loss over the learning rates "
                     "(lrs where a seed diverged left out), and its lr\n")
        lines += table_head(["init"] + list(methods))
        for init in args.inits:
            cells = [init]
            for m in methods:
                best = best_lr([(lr, g.get((dataset, init, lr, m), [])) for lr in args.lrs])
                cells.append(f"{best[1]:#.3g} (lr {best[0]:.3g})" if best else "-")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append(f"\n### {dataset}: the starting point's PathCond criterion, the ratio of the "
                     "arithmetic to the geometric mean of its G_kk, and their sum (mean over "
                     "seeds)\n")
        lines += table_head(["init"] + [f"criterion {m}" for m in methods] +
                            [f"AM/GM {m}" for m in methods] + [f"sum G {m}" for m in methods])
        for init in args.inits:
            rows = {m: g.get((dataset, init, args.lrs[0], m), []) for m in methods}
            mean = lambda key, m: float(np.mean([r[key] for r in rows[m]])) if rows[m] else \
                float("nan")
            cells = [init] + [f"{mean('criterion_start', m):.1f}" for m in methods] + \
                [f"{mean('am_over_gm_start', m):.3g}" for m in methods] + \
                [f"{mean('sum_g_start', m):.3g}" for m in methods]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def table_head(head):
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def log_y(ax, top=None):
    """A log y axis labelled with plain numbers; 2 and 5 between the decades when the axis
    spans less than a decade and a half. ``top`` clips the axis (a diverging curve)."""
    from matplotlib import ticker
    lo, hi = ax.get_ylim()
    if top is not None and hi > top:
        hi = top
        ax.set_ylim(lo, hi)
    plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_locator(ticker.LogLocator(subs=(2.0, 5.0)))
    ax.yaxis.set_minor_formatter(plain if hi / lo < 30 else ticker.NullFormatter())


def legend_below(fig, ax, methods, extra=()):
    handles, labels = ax.get_legend_handles_labels()
    handles, labels = handles + [h for h, _ in extra], labels + [t for _, t in extra]
    fig.legend(handles, labels, loc="lower center", ncol=len(handles), fontsize=9,
               frameon=False)


def plot_final(runs, args, methods, dataset, path):
    """Final training loss (top) and test accuracy (bottom) against the learning rate, one
    column per init: mean and std over the seeds that did not diverge; an x at the top of a
    panel where a seed diverged."""
    plt = pyplot()
    from matplotlib.lines import Line2D
    g = groups(runs)
    fig, axes = plt.subplots(2, len(args.inits), figsize=(3.0 * len(args.inits), 4.4),
                             squeeze=False, sharex=True)
    for col, init in enumerate(args.inits):
        top, bottom = axes[0][col], axes[1][col]
        for k, m in enumerate(methods):
            shift = 10 ** (0.04 * (k - 1))  # keep the error bars apart
            for ax, key, scale in ((top, "final_train_loss", 1.0), (bottom, "test_acc", 100)):
                xs, ys, es, div_x = [], [], [], []
                for lr in args.lrs:
                    mean, std, n, div = stats(g.get((dataset, init, lr, m), []), key)
                    if n:
                        xs.append(lr * shift)
                        ys.append(mean * scale)
                        es.append(std * scale)
                    if div:
                        div_x.append(lr * shift)
                ax.errorbar(xs, ys, yerr=es, color=COLORS[m], marker="os^"[k], ms=4,
                            capsize=2, lw=1, label=LABELS[m])
                if div_x:
                    ax.plot(div_x, [0.96] * len(div_x), "x", color=COLORS[m], ms=6,
                            transform=ax.get_xaxis_transform(), clip_on=False)
        top.set_xscale("log")
        top.set_yscale("log")
        log_y(top)
        top.set_title(f"{dataset}, {init} init", fontsize=10)
        bottom.set_xlabel("learning rate")
        for ax in (top, bottom):
            ax.grid(True, ls="--", alpha=0.4)
            ax.tick_params(labelsize=8)
    axes[0][0].set_ylabel("final training loss")
    axes[1][0].set_ylabel("test accuracy (%)")
    diverged = Line2D([], [], ls="none", marker="x", color="0.3")
    legend_below(fig, axes[0][0], methods,
                 [(diverged, f"a seed diverged (of {args.seeds})")])
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_curves(runs, args, methods, dataset, path):
    """Training-loss curves at the grid lr nearest --curve-lr, one line per seed and method,
    one panel per init (losses above 1e3, a diverging run's, off the top)."""
    plt = pyplot()
    lr = min(args.lrs, key=lambda v: abs(math.log(v / args.curve_lr)))
    g = groups(runs)
    fig, axes = plt.subplots(1, len(args.inits), figsize=(3.0 * len(args.inits), 2.5),
                             squeeze=False)
    for col, init in enumerate(args.inits):
        ax = axes[0][col]
        for m in methods:
            curves = [r["curve"] for r in g.get((dataset, init, lr, m), []) if r["curve"]]
            for i, c in enumerate(curves):
                ax.plot(range(1, len(c) + 1), c, color=COLORS[m], lw=1, alpha=0.8,
                        label=LABELS[m] if i == 0 else None)
        ax.set_yscale("log")
        log_y(ax, top=1e3)
        ax.set_title(f"{dataset}, {init} init, lr {lr:.3g}", fontsize=9)
        ax.set_xlabel("epoch")
        ax.grid(True, ls="--", alpha=0.4)
        ax.tick_params(labelsize=8)
    axes[0][0].set_ylabel("training loss")
    legend_below(fig, axes[0][0], methods)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=80)
    plt.close(fig)


def write_outputs(args, runs, crit_rows, methods, pathcond, seconds):
    out = args.out
    with open(out / "runs.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for r in runs:
            writer.writerow(r)
    config = {k: (str(v) if isinstance(v, pathlib.Path) else v) for k, v in vars(args).items()}
    with open(out / "results.json", "w") as f:
        json.dump({"config": config, "methods": methods, "pathcond_note": pathcond.note,
                   "seconds": seconds, "criterion": crit_rows, "runs": runs}, f,
                  allow_nan=True)
    write_report(args, runs, methods)


def write_report(args, runs, methods):
    """summary.md and the figures, from the runs."""
    out = args.out
    (out / "summary.md").write_text(summary_markdown(runs, args, methods))
    for dataset in args.datasets:
        plot_final(runs, args, methods, dataset, out / f"pathcond_{dataset}.png")
        plot_curves(runs, args, methods, dataset, out / f"pathcond_{dataset}_curves.png")


def replot(args):
    """Redraws summary.md and the figures of OUT/results.json, with its grid."""
    saved = json.loads((args.out / "results.json").read_text())
    for key in ("datasets", "inits", "lrs", "seeds"):
        setattr(args, key, saved["config"][key])
    write_report(args, saved["runs"], saved["methods"])
    print(f"redrew summary.md and the figures in {args.out}")
    return 0


def main(argv=None):
    args = parse_args(argv)
    if args.replot:
        return replot(args)
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    pathcond = PathCond(args.pathcond_src)
    if pathcond.note:
        print(f"note: {pathcond.note}")
    methods = [m for m in METHODS if m != "pathcond" or pathcond.available]
    start = time.perf_counter()
    crit_rows = compare_criterion(args, pathcond)
    print_criterion(crit_rows)
    print(f"\nTraining: {len(args.datasets)} dataset(s) x {len(args.inits)} init(s) x "
          f"{len(args.lrs)} lr(s) x {args.seeds} seed(s) x {len(methods)} method(s)")
    runs = run_grid(args, pathcond)
    seconds = time.perf_counter() - start
    write_outputs(args, runs, crit_rows, methods, pathcond, seconds)
    print(f"\n{len(runs)} runs in {seconds:.0f} s; results in {args.out}")
    print(summary_markdown(runs, args, methods))
    if any(not r.get("agree", True) for r in crit_rows):
        print(f"error: pathlift's criterion differs from pathcond's by more than {AGREE_RTOL:g}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
