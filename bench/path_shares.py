"""Layer and channel shares of the L1 path-norm on torchvision's resnet18 and vgg11 at
3x224x224 (random init, eval mode), by pathlift.path_norm_shares (the layer graph's dynamic
programme, never unrolled), beside what a user would otherwise run in the same process: the
pathnorm-pytorch recipe for the L1 path-norm (weights |w|, max pools as sums, an all-ones
input) differentiated by torch's autograd (bench/torch_recipes.py), theta times that gradient
over the norm summed per layer. The largest difference between the two is printed. theta is
read from the module once (its own column) and given to both.

    PYTHONPATH=build/python /usr/bin/python3 bench/path_shares.py [--threads 2]
"""

import pathlib
import sys
import time

import numpy as np
import torchvision

import pathlift

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench_cli  # noqa: E402
import torch_recipes  # noqa: E402


def main() -> None:
    args = bench_cli.parse_args(__doc__)
    print("| model | d | layers | channels | theta from the module (s) | pathlift by layer (s) | "
          "pathlift by channel (s) | torch recipe + autograd (s) | largest difference |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in ("resnet18", "vgg11"):
        model = getattr(torchvision.models, name)().double().eval()
        net = pathlift.from_torch(model, (3, 224, 224))
        tr = time.perf_counter()
        theta = np.asarray(net.weights)  # the module's parameters, read once for both
        t0 = time.perf_counter()
        layers = pathlift.path_norm_shares(net, theta, s=1.0, by="layer", threads=args.threads)
        t1 = time.perf_counter()
        channels = pathlift.path_norm_shares(net, theta, s=1.0, by="channel",
                                             threads=args.threads)
        t2 = time.perf_counter()
        gradient = torch_recipes.l1_gradient_recipe(model, (3, 224, 224), theta_=theta)
        norm = torch_recipes.path_norm_recipe(model, (3, 224, 224), 1.0, theta_=theta)
        t3 = time.perf_counter()
        per_param = theta * gradient / norm
        # Each layer's blocks (weights, then bias) are contiguous in theta (model.parameters()
        # order): a layer's share is the sum up to the next layer's first parameter.
        graph_layers = [ly for ly in net.layer_graph.layers if ly.weight_offset >= 0]
        want = []
        for ly in graph_layers:
            end = min([o.weight_offset for o in graph_layers if o.weight_offset > ly.weight_offset]
                      + [len(theta)])
            want.append(per_param[ly.weight_offset:end].sum())
        diff = float(np.max(np.abs(np.asarray(want) - layers.shares)))
        print(f"| {name} | {net.num_params:,} | {len(layers.names)} | {len(channels.names):,} | "
              f"{t0 - tr:.2f} | {t1 - t0:.2f} | {t2 - t1:.2f} | {t3 - t2:.2f} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
