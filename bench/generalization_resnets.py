"""The path-norm toolkit's generalization bound (Theorem 3.1) on torchvision's ResNets at
3x224x224, random init, beside the toolkit's own constants (its script hard-codes D = the
nominal depth, P = 1, K = 9, d_in = 150,528, d_out = 1,000): the table of docs/generalization.md.

    PYTHONPATH=build/python /usr/bin/python3 bench/generalization_resnets.py [--threads 2]
"""

import math
import time

import torchvision

import pathlift
import pathlift.torch

import bench_cli  # bench/, the script's folder

N = 1268355  # the toolkit's n: 99% of ImageNet's 1,281,167 training images
B = 2.640000104904175  # the toolkit's B: max ||x||_inf of the normalized training images


def toolkit_coefficient(depth: int) -> float:
    """The toolkit's first factor 4 C B / sqrt(n) with its hard-coded constants."""
    P, K, din, dout = 1, 9, 224 * 224 * 3, 1000
    C = math.sqrt(depth * math.log((3 + 2 * P) * K) + math.log((3 + 2 * P) / (1 + P) * (din + 1)
                                                               * dout))
    return 4 * C * B / math.sqrt(N)


def main() -> None:
    args = bench_cli.parse_args(__doc__, torch_threads=False)  # the threads are pathlift's
    print("| model | D | exact | P | K | M | C | coefficient | log10 L1 path-norm | log10 bound "
          "| s | folded D | folded coefficient | toolkit D | toolkit coefficient |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for depth in (18, 34, 50, 101, 152):
        model = getattr(torchvision.models, f"resnet{depth}")().eval()
        start = time.perf_counter()
        net = pathlift.from_torch(model, (3, 224, 224))
        r = pathlift.generalization_bound(net, n=N, input_bound=B, threads=args.threads,
                                          progress=False)
        seconds = time.perf_counter() - start
        # The toolkit's network: each BatchNorm folded into the convolution before it.
        folded = pathlift.from_torch(pathlift.torch.fold_batchnorm(model), (3, 224, 224))
        f = pathlift.generalization_bound(folded, n=N, input_bound=B, threads=args.threads,
                                          progress=False)
        print(f"| resnet{depth} | {r.D} | {'yes' if r.D_exact else 'layers'} | {r.P} | {r.K} | "
              f"{r.M} | {r.C:.4f} | {r.coefficient:.4f} | {r.log10_l1_path_norm:.2f} | "
              f"{r.log10_bound:.2f} | {seconds:.1f} | {f.D} | {f.coefficient:.4f} | {depth} | "
              f"{toolkit_coefficient(depth):.4f} |", flush=True)


if __name__ == "__main__":
    main()
