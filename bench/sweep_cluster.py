#!/usr/bin/python3
"""pathlift.sweep over 40 checkpoints of a small CNN: the serial loop a user would write (each
checkpoint loaded, each function called, in this process) beside ``pathlift.sweep`` on a local
process pool and on a Dask ``LocalCluster`` of 2 worker processes, the wall time of each and
its ratio to the serial loop, and whether each table equals the loop's bit for bit (every
column but ``seconds``).

The checkpoints: a CNN on 1x28x28 inputs (Conv 1->32, ReLU, MaxPool, Conv 32->64, ReLU,
MaxPool, Linear 64*7*7->10, float64, d = 50,186) saved at 40 steps of SGD on random data. The quantities:
``norm:1,norm:2,kernel_trace,top_eig:3,rank``. The cluster's start (about 2 s) is timed apart:
a sweep runs on a cluster that is already up. Usage::

    PYTHONPATH=build/python /usr/bin/python3 bench/sweep_cluster.py [--items 40] [--workers 2]
"""

import argparse
import copy
import functools
import os
import tempfile
import time

import torch
from torch import nn

import pathlift as pl

QUANTITIES = ["norm:1", "norm:2", "kernel_trace", "top_eig:3", "rank"]


SHAPE = (1, 28, 28)


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


def checkpoints(folder, n):
    torch.manual_seed(0)
    model = cnn()
    template = copy.deepcopy(model)
    X, y = torch.randn(512, *SHAPE), torch.randint(0, 10, (512,))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    paths = []
    for step in range(n):
        idx = torch.randint(0, 512, (64,))
        opt.zero_grad()
        nn.functional.cross_entropy(model(X[idx]), y[idx]).backward()
        opt.step()
        paths.append(os.path.join(folder, f"step{step:02d}.pt"))
        torch.save(model.state_dict(), paths[-1])
    return paths, functools.partial(copy.deepcopy, template)


def serial_loop(paths, make):
    """What a user writes without pathlift.sweep."""
    rows = []
    for p in paths:
        m = make()
        m.load_state_dict(torch.load(p))
        m = m.double().eval()
        net = pl.from_torch(m, input_shape=SHAPE)
        theta = pl.theta_from_torch(m)
        row = {"item": p, "d": theta.size}
        for s in (1.0, 2.0):
            r = pl.path_norm(net, theta, s)
            row[f"norm:{s:g}"], row[f"norm:{s:g}:log10"] = r.norm, r.log10
        t = pl.kernel_trace(net, theta, scaled=True)
        row["kernel_trace"], row["kernel_trace:log10"] = t.value, t.log10
        e = pl.kernel_top_eigenvalues(net, theta, 3)
        for i, v in enumerate(e.values):
            row[f"top_eig:3[{i}]"] = v
        row["top_eig:3:status"] = e.status
        r = pl.rank(net, theta)
        row["rank"], row["rank:expected"], row["rank:status"] = (r["rank_B"], r["expected"],
                                                                 r["status"])
        rows.append(row)
    return rows


def same(table, rows):
    got = table.drop(columns=["seconds", "error"]).to_dict("records")
    return len(got) == len(rows) and all(
        list(a.keys()) == list(b.keys()) and all(a[k] == b[k] for k in a)
        for a, b in zip(got, rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from distributed import Client, LocalCluster
    with tempfile.TemporaryDirectory() as folder:
        paths, make = checkpoints(folder, args.items)
        items = [pl.TorchCheckpoint(p, make, SHAPE) for p in paths]
        pl.path_norm(pl.from_torch(make().double().eval(), input_shape=SHAPE))  # warm
        t = time.perf_counter()
        rows = serial_loop(paths, make)
        serial = time.perf_counter() - t
        t = time.perf_counter()
        pool = pl.sweep(items, QUANTITIES, processes=args.workers, progress=False)
        pooled = time.perf_counter() - t
        t = time.perf_counter()
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            started = time.perf_counter() - t
            t = time.perf_counter()
            dask = pl.sweep(items, QUANTITIES, client=client, progress=False)
            clustered = time.perf_counter() - t
    cores = os.cpu_count()
    print(f"# {args.items} checkpoints, quantities {','.join(QUANTITIES)}, {cores} cores, "
          f"d = {rows[0]['d']}\n")
    print("| run | wall s | ratio to the serial loop | table equals the loop's |")
    print("|---|---:|---:|---|")
    print(f"| serial loop, one process, {cores} threads | {serial:.2f} | 1 | - |")
    print(f"| pathlift.sweep, local pool of {args.workers} processes | {pooled:.2f} | "
          f"{pooled / serial:.2f} | {same(pool, rows)} |")
    print(f"| pathlift.sweep, LocalCluster of {args.workers} workers (start {started:.1f} s "
          f"apart) | {clustered:.2f} | {clustered / serial:.2f} | {same(dask, rows)} |")


if __name__ == "__main__":
    main()
