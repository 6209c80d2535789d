"""The certified functional dimension (rank of the batch Jacobian J_X) of two networks trained on
sklearn's digits (8x8 images, 10 classes), on 1,000 samples (N q = 10,000 rows), by
pathlift.functional_dimension (certified bounds, and the Monte Carlo rank of its random prime
with its error bound), beside what a user would otherwise run in the same process: the
batch Jacobian by torch.func (functorch's vmap of jacrev) and numpy's matrix_rank of it (a
floating-point SVD, no certificate).

- an MLP 64-32-32-10 (d = 3,466, d - h = 3,402);
- a CNN with BatchNorm: Conv(1->8, 3x3, pad 1)-BN-ReLU, Conv(8->16, 3x3)-BN-ReLU, AvgPool 2,
  Linear(144->32)-ReLU, Linear(32->10) (d = 6,266, shared parameters).

Both are trained full-batch with Adam from torch.manual_seed(0) (MLP 200 steps, CNN 100), then
put in eval mode.

    PYTHONPATH=build/python /usr/bin/python3 bench/functional_dimension.py [--threads 2]
"""

import time

import numpy as np
import torch
from functorch import jacrev, make_functional_with_buffers, vmap
from sklearn.datasets import load_digits

import pathlift

import bench_cli  # bench/, the script's folder


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                               torch.nn.ReLU(), torch.nn.Linear(32, 10))


def cnn() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 3), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.AvgPool2d(2), torch.nn.Flatten(), torch.nn.Linear(144, 32), torch.nn.ReLU(),
        torch.nn.Linear(32, 10))


def train(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, steps: int) -> None:
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(X), y).backward()
        opt.step()
    model.eval()


def torch_rank(model: torch.nn.Module, X: torch.Tensor) -> tuple[int, float]:
    """The numerical rank of J_X as a user would compute it: torch.func, then numpy."""
    t0 = time.perf_counter()
    fmodel, params, buffers = make_functional_with_buffers(model)

    def one(p, x):  # type: ignore[no-untyped-def]
        return fmodel(p, buffers, x[None])[0]

    blocks = vmap(jacrev(one), in_dims=(None, 0))(params, X)
    n = X.shape[0]
    J = torch.cat([b.reshape(n, 10, -1) for b in blocks], 2).reshape(n * 10, -1)
    rank = int(np.linalg.matrix_rank(J.detach().numpy()))
    return rank, time.perf_counter() - t0


def main() -> None:
    args = bench_cli.parse_args(__doc__, samples=1000)
    digits = load_digits()
    X = torch.tensor(digits.data / 16.0, dtype=torch.float64)
    y = torch.tensor(digits.target)
    print("| network | d | N q | lower | upper | status | Monte Carlo rank (error <=) | "
          "rows to the rank | numerical rank | sigma_r / sigma_r+1 | pathlift exact (s) | "
          "pathlift + SVD (s) | torch.func + matrix_rank (s) |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, make, steps, shape in (("MLP 64-32-32-10", mlp, 200, (64,)),
                                     ("CNN + BatchNorm", cnn, 100, (1, 8, 8))):
        torch.manual_seed(0)
        model = make().double()
        inputs = X.reshape(-1, *shape)
        train(model, inputs, y, steps)
        net = pathlift.from_torch(model, input_shape=shape)
        Xb = X[: args.samples].numpy()  # flattened: a layer graph's input, C order
        t0 = time.perf_counter()
        exact = pathlift.functional_dimension(net, None, Xb, numerical=False,
                                              threads=args.threads)
        t1 = time.perf_counter()
        fd = pathlift.functional_dimension(net, None, Xb, numerical=True, threads=args.threads)
        t2 = time.perf_counter()
        assert (exact.lower, exact.upper) == (fd.lower, fd.upper)
        rank, t_torch = torch_rank(model, inputs[: args.samples])
        nr = fd.numerical
        s = list(nr.singular_values) if nr is not None else []
        gap = s[fd.lower - 1] / s[fd.lower] if 0 < fd.lower < len(s) else float("nan")
        mc = (f"{exact.monte_carlo_rank:,} ({exact.monte_carlo_error:.1g})"
              if exact.monte_carlo_rank is not None else "-")
        print(f"| {name} | {fd.d:,} | {fd.rows:,} | {fd.lower:,} | {fd.upper:,} | {fd.status} | "
              f"{mc} | {fd.rows_to_rank:,} | {nr.rank if nr else '-'} | {gap:.2g} | "
              f"{t1 - t0:.1f} | {t2 - t1:.1f} | {t_torch:.1f} (rank {rank}) |", flush=True)
        print(f"<!-- {name}: upper_rows {fd.upper_rows}, upper_dphi {fd.upper_dphi}, "
              f"upper_kernel {fd.upper_kernel} -->", flush=True)


if __name__ == "__main__":
    main()
