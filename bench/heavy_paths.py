"""The 100 heaviest paths and 10,000 paths sampled by |Phi_p| of torchvision's resnet18 and vgg11
at 3x224x224 (random init, eval mode, BatchNorm with random running statistics), on the layer
graph (pathlift.top_paths / sample_paths, never unrolled), and each path's value against the
product of its weights read back from the model by name (param_names: the module's parameter,
a BatchNorm's a = gamma / sqrt(var + eps) and b = beta - a mean), times its fixed weights. What a
user would otherwise run: nothing at this size (the unrolled network has 1.7e9 edges for
resnet18, about 120 GB; enumeration 10^2000 paths); on a small CNN whose unrolled network fits,
the same calls on the unrolled DAG are timed beside (the same paths).

    PYTHONPATH=build/python /usr/bin/python3 bench/heavy_paths.py [--threads 2]
"""

import math
import time

import numpy as np
import torch
import torchvision

import pathlift

import bench_cli  # bench/, the script's folder


def read_back(model: torch.nn.Module, name: str) -> float:
    """The value of "module.param[i, j]" in the model (a BatchNorm's weight / bias slot: its a
    or b)."""
    module_name, rest = name.rsplit(".", 1)
    param, index = rest.split("[", 1)
    idx = tuple(int(x) for x in index.rstrip("]").split(","))
    module = model.get_submodule(module_name)
    if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
        a = module.weight / torch.sqrt(module.running_var + module.eps)
        tensor = a if param == "weight" else module.bias - a * module.running_mean
    else:
        tensor = getattr(module, param)
    return float(tensor[idx])


def worst_read_back(model: torch.nn.Module, paths: list) -> float:
    """The largest relative difference between a path's value and the product of its weights
    read back from the model (fixed weights as reported)."""
    worst = 0.0
    for p in paths:
        product = 1.0
        for name, w in zip(p["param_names"], p["weights"]):
            product *= w if name is None else read_back(model, name)
        worst = max(worst, abs(product - p["value"]) / abs(p["value"]))
    return worst


def timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def main() -> None:
    args = bench_cli.parse_args(__doc__)
    print("| model | d | unrolled edges | top 100 (s) | 10,000 samples (s) | largest difference "
          "read back | heaviest path |")
    print("|---|---:|---:|---:|---:|---:|---|")
    with torch.no_grad():
        for name in ("resnet18", "vgg11"):
            model = getattr(torchvision.models, name)().double()
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.5, 0.5)
                    m.running_var.uniform_(0.5, 2.0)
            model.eval()
            net = pathlift.from_torch(model, (3, 224, 224))
            theta = np.asarray(net.weights)
            edges = pathlift.unrolled_size(net.layer_graph).edges
            top, t_top = timed(lambda: pathlift.top_paths(net, theta, k=100,
                                                           threads=args.threads))
            samples, t_sample = timed(lambda: pathlift.sample_paths(
                net, theta, n=10000, seed=1, threads=args.threads))
            diff = max(worst_read_back(model, top), worst_read_back(model, samples[:1000]))
            head = top[0]
            print(f"| {name} | {net.num_params:,} | {edges:.2e} | {t_top:.2f} | {t_sample:.2f} | "
                  f"{diff:.1e} | {head['value']:.4g}: {len(head['nodes'])} nodes, "
                  f"{head['nodes'][0]} -> ... -> {head['nodes'][-1]} |", flush=True)
    # A CNN small enough to unroll: the same calls on the layer graph and on the unrolled DAG.
    small = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 32, 3, padding=1),
                                torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(32, 10)).double().eval()
    net = pathlift.from_torch(small, (3, 32, 32))
    theta = np.asarray(net.weights)
    dag, t_unroll = timed(lambda: pathlift.unroll(net.layer_graph))
    on_graph, t_graph = timed(lambda: pathlift.top_paths(net, theta, k=100, threads=args.threads))
    on_dag, t_dag = timed(lambda: pathlift.top_paths(dag, theta, k=100, threads=args.threads))
    same = all(math.isclose(a["value"], b["value"], rel_tol=1e-12)
               for a, b in zip(on_graph, on_dag))
    print()
    print("| small CNN 3x32x32 (d, unrolled edges) | layer graph top 100 (s) | unroll (s) | "
          "DAG top 100 (s) | same values |")
    print("|---|---:|---:|---:|---|")
    print(f"| {net.num_params:,}, {dag.num_edges:,} | {t_graph:.3f} | {t_unroll:.3f} | "
          f"{t_dag:.3f} | {same} |")


if __name__ == "__main__":
    main()
