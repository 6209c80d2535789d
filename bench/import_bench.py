#!/usr/bin/python3
"""Importing PyTorch models into pathlift, timed (issue 16), and a path-free quantity beside
PyTorch.

Rows of the table, each the best of --reps runs:

  from_torch resnet18            pathlift.from_torch(torchvision resnet18(num_classes=10),
                                 (3, 32, 32)): fx trace, layer graph, theta, C++ unroll
    layer graph                    pathlift.layer_graph_from_torch alone (the Python part)
    unroll                         pathlift.unroll of that graph alone (the C++ part)
  from_torch mlp                 pathlift.from_torch of Sequential(784-2048-2048-2048-10)
    layer graph, unroll            as above
  path_norm s=1, s=2 resnet18    pathlift.path_norm(net, theta, s) by dynamic programming, beside
                                 the PyTorch recipe: a copy of the model with every weight |w|^s,
                                 BatchNorm |a|^s x + |b|^s, ReLU removed, max-pool a sum-pool, the
                                 adaptive pool's 1/k raised to s, run on an all-ones input and
                                 summed (the copy is made outside the timing; its forward pass is
                                 timed). The two values are printed and must agree to 1e-9.

Models are float64 in eval mode. Threads: --threads (default: all cores), the same count for
pathlift (OMP_NUM_THREADS, set before pathlift is imported) and torch.set_num_threads.

Usage: PYTHONPATH=<build>/python /usr/bin/python3 bench/import_bench.py [--threads N] [--reps R]
"""

import argparse
import copy
import os
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--reps", type=int, default=3)
    return ap.parse_args()


ARGS = parse_args()
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)

import torch  # noqa: E402
import torchvision  # noqa: E402
from torch import nn  # noqa: E402

import pathlift  # noqa: E402

torch.set_num_threads(ARGS.threads)


def best(fn, reps):
    """(best seconds, last result) over reps calls."""
    times, result = [], None
    for _ in range(reps):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


class Affine(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.a = a
        self.b = b

    def forward(self, x):
        return x * self.a.view(1, -1, 1, 1) + self.b.view(1, -1, 1, 1)


class SumPool(nn.Module):
    """Max-pool replaced by the sum over each window (padding contributes nothing)."""

    def __init__(self, pool):
        super().__init__()
        self.pool = pool

    def forward(self, x):
        p = self.pool
        n, c, h, w = x.shape
        cols = nn.functional.unfold(x, p.kernel_size, dilation=p.dilation, padding=p.padding,
                                    stride=p.stride)
        k = p.kernel_size if isinstance(p.kernel_size, int) else p.kernel_size[0]
        s = p.stride if isinstance(p.stride, int) else p.stride[0]
        pad = p.padding if isinstance(p.padding, int) else p.padding[0]
        ho = (h + 2 * pad - k) // s + 1
        wo = (w + 2 * pad - k) // s + 1
        return cols.view(n, c, -1, ho * wo).sum(2).view(n, c, ho, wo)


class GlobalPool(nn.Module):
    """AdaptiveAvgPool2d((1, 1)) with its weights 1/(h w) raised to s."""

    def __init__(self, s):
        super().__init__()
        self.s = s

    def forward(self, x):
        return x.sum((2, 3), keepdim=True) * float(x.shape[2] * x.shape[3]) ** -self.s


def recipe_model(model, s):
    """The path-norm recipe's copy of a resnet: |w|^s, BN |a|^s x + |b|^s, no ReLU."""
    m = copy.deepcopy(model)
    with torch.no_grad():
        for name, mod in list(m.named_modules()):
            parent = m.get_submodule(name.rpartition(".")[0]) if "." in name else m
            child = name.rpartition(".")[2]
            if isinstance(mod, nn.BatchNorm2d):
                a = mod.weight / torch.sqrt(mod.running_var + mod.eps)
                b = mod.bias - a * mod.running_mean
                setattr(parent, child, Affine(a.abs() ** s, b.abs() ** s))
            elif isinstance(mod, nn.ReLU):
                setattr(parent, child, nn.Identity())
            elif isinstance(mod, nn.MaxPool2d):
                setattr(parent, child, SumPool(mod))
            elif isinstance(mod, nn.AdaptiveAvgPool2d):
                assert mod.output_size in (1, (1, 1))
                setattr(parent, child, GlobalPool(s))
            elif isinstance(mod, (nn.Conv2d, nn.Linear)):
                for p in mod.parameters(recurse=False):
                    p.copy_(p.abs() ** s)
    return m


def random_batch_norm_statistics(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(0.3 * torch.randn(m.num_features, generator=g,
                                                       dtype=m.running_mean.dtype))
                m.running_var.copy_(0.5 + torch.rand(m.num_features, generator=g,
                                                     dtype=m.running_var.dtype))


def main():
    rows = []
    torch.manual_seed(0)
    resnet = torchvision.models.resnet18(num_classes=10).double().eval()
    random_batch_norm_statistics(resnet)
    mlp = nn.Sequential(nn.Linear(784, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                        nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10)).double().eval()
    nets = {}
    for label, model, shape in (("resnet18 3x32x32", resnet, (3, 32, 32)),
                                ("mlp 784-2048-2048-2048-10", mlp, None)):
        t, net = best(lambda: pathlift.from_torch(model, shape), ARGS.reps)
        nets[label] = net
        rows.append((f"from_torch {label}", t, None, f"{net.num_nodes} nodes, "
                     f"{net.num_edges} edges, d = {net.d}"))
        t_graph, graph = best(lambda: pathlift.layer_graph_from_torch(model, shape), ARGS.reps)
        rows.append(("  layer graph (Python)", t_graph, None, f"{len(graph.layers)} layers"))
        t_unroll, _ = best(lambda: pathlift.unroll(graph), ARGS.reps)
        rows.append(("  unroll (C++)", t_unroll, None, ""))
    net = nets["resnet18 3x32x32"]
    theta = pathlift.theta_from_torch(resnet)
    ones = torch.ones((1, 3, 32, 32), dtype=torch.float64)
    for s in (1.0, 2.0):
        t_pl, norm = best(lambda: pathlift.path_norm(net, theta, s).norm, ARGS.reps)
        copy_ = recipe_model(resnet, s)
        with torch.no_grad():
            t_torch, total = best(lambda: copy_(ones).sum().item(), ARGS.reps)
        expected = total ** (1 / s)
        agree = abs(float(norm) - expected) <= 1e-9 * abs(expected)
        rows.append((f"path_norm s={s:g} resnet18", t_pl, t_torch,
                     f"{float(norm):.10g} vs {expected:.10g}{'' if agree else '  MISMATCH'}"))
        if not agree:
            print(f"path_norm s={s}: pathlift {float(norm)!r} != recipe {expected!r}",
                  file=sys.stderr)

    print(f"threads: {ARGS.threads} (pathlift and torch), best of {ARGS.reps}, "
          f"torch {torch.__version__}, pathlift {pathlift.__version__}")
    print(f"{'what':36} {'pathlift s':>11} {'pytorch s':>10}  notes")
    for what, t, t_torch, note in rows:
        torch_col = f"{t_torch:10.4f}" if t_torch is not None else f"{'':10}"
        print(f"{what:36} {t:11.4f} {torch_col}  {note}")
    return 0 if all("MISMATCH" not in r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
