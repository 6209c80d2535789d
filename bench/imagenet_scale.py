#!/usr/bin/python3
"""Path-free quantities of ImageNet-size CNNs, pathlift beside PyTorch (issue 17).

For torchvision's resnet18, resnet50 and vgg11 (random init under torch.manual_seed(0),
random BatchNorm statistics, eval mode, float64) at 3x224x224, pathlift's layer-graph
functions (``pathlift.from_torch`` returns a ``LayerNetwork``: nothing is unrolled; resnet50
would have about 10^10 edges) beside the PyTorch recipes of bench/torch_recipes.py:

  L1, L2 norm     pathlift.path_norm(net, theta, s)  |  pathnorm-pytorch's recipe: the model
                  with |w|^s, BatchNorm |a|^s x + |b|^s, no ReLU, sum-pools, average pools'
                  1/n as (1/n)^s, one forward pass on an all-ones input, summed
  kernel diag     pathlift.kernel_diagonal(net, theta)  |  pathcond's recipe: the gradient of
                  the s = 2 model's output sum with respect to its parameters u at u = theta^2
                  (one forward and one backward pass)
  K v             pathlift.kernel_matvec(net, theta, v), v standard normal  |  a double
                  backward: grad_a (v . grad_b G(a, b)), G the sum of the outputs of the
                  ReLU-free model with parameters a * b, at a = b = theta
  trace, top-3    pathlift.kernel_trace, pathlift.kernel_top_eigenvalues(count=3) (block
                  Lanczos on K v products; --eigen-models, default resnet18 only: 66 products
                  at tolerance 1e-6, 40 s on 2 cores); pathlift only (PyTorch has no recipe
                  short of forming K)

The BLAS under numpy and torch is printed (threadpoolctl, else /proc/self/maps), and a run on
Debian's reference BLAS is marked NOT A FAIR RACE: scripts/install-deps.sh installs
libopenblas0-pthread, which numpy, scipy and torch then use, as a pip user's MKL or OpenBLAS.

One process, float64, the same thread count on both sides (--threads: torch.set_num_threads
and pathlift's threads argument; OMP_NUM_THREADS is set before either is imported). Every
pair of results is checked first (norms and each diagonal entry to 1e-10 relative, K v to
1e-9 relative in norm); the checked run is the first timed run, the time is the best of
--repeat runs (--repeat-kv for K v). The recipes' model (an fx trace) is built outside the
timing, as is pathlift's LayerNetwork; theta is computed once.

Peak memory of one side alone (run under /usr/bin/time -v, one process per measurement):

  /usr/bin/time -v /usr/bin/python3 bench/imagenet_scale.py --peak-memory --only pathlift \\
      --model resnet18 --quantity l1

Usage: PYTHONPATH=<build>/python /usr/bin/python3 bench/imagenet_scale.py [--threads N]
       [--repeat R] [--models resnet18,resnet50,vgg11] [--eigen-models resnet18]
"""

import argparse
import gc
import os
import pathlib
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for both sides (default 2)")
    ap.add_argument("--repeat", type=int, default=2,
                    help="timed runs per quantity and side for the norms and the diagonal, the "
                         "best reported (default 2; the first is the checked run)")
    ap.add_argument("--repeat-kv", type=int, default=2,
                    help="the same for K v (default 2; 1 saves minutes: vgg11's K v recipe "
                         "takes about two)")
    ap.add_argument("--models", default="resnet18,resnet50,vgg11")
    ap.add_argument("--shape", default="3,224,224", help="one sample's shape")
    ap.add_argument("--eigen-models", default="resnet18",
                    help="models whose top-3 eigenvalues are computed (default resnet18; "
                         "block Lanczos takes 66 K v products on it; '' for none)")
    ap.add_argument("--eigen-tolerance", type=float, default=1e-6,
                    help="the tolerance of kernel_top_eigenvalues (default 1e-6; "
                         "pathlift's own default is 1e-10)")
    ap.add_argument("--peak-memory", action="store_true",
                    help="run one side only (--only, --model, --quantity), for /usr/bin/time -v")
    ap.add_argument("--only", choices=("pathlift", "torch"))
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--quantity", choices=("l1", "l2", "diag", "kv", "none"), default="l1",
                    help="with --peak-memory; none: build the side's inputs only (the baseline)")
    args = ap.parse_args()
    if args.peak_memory and args.only is None:
        ap.error("--peak-memory needs --only pathlift|torch")
    return args


ARGS = parse_args()
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import torch_recipes as R  # noqa: E402

import pathlift  # noqa: E402

torch.set_num_threads(ARGS.threads)
SHAPE = tuple(int(s) for s in ARGS.shape.split(","))
QUANTITIES = {"l1": "L1 norm", "l2": "L2 norm", "diag": "kernel diagonal", "kv": "K v"}


def blas_in_use():
    """(description, fair): the BLAS numpy and torch call at run time, from threadpoolctl (what
    is loaded in this process) or, without it, /proc/self/maps. Debian's reference BLAS
    (libblas.so.3 of libblas3, about 6 GFLOP/s in float64) makes the PyTorch recipes several
    times slower than a pip user's MKL or OpenBLAS: a race against it is not fair."""
    np.ones((64, 64)) @ np.ones((64, 64))          # load the BLAS of numpy and of torch
    torch.ones(64, 64, dtype=torch.float64) @ torch.ones(64, 64, dtype=torch.float64)
    libraries = []
    try:
        from threadpoolctl import threadpool_info
        libraries = [f"{i.get('internal_api')} {i.get('version') or ''} ({i.get('filepath')})"
                     for i in threadpool_info() if i.get("user_api") == "blas"]
    except ImportError:
        with open("/proc/self/maps") as f:
            libraries = sorted({line.split()[-1] for line in f
                                if "blas" in line.split()[-1] or "mkl" in line.split()[-1]})
    text = "; ".join(libraries) or "unknown"
    optimized = any(k in text.lower() for k in ("openblas", "mkl", "blis"))
    return text, optimized


def best(fn, repeat):
    """(best seconds, first result) over repeat calls."""
    times, first = [], None
    for i in range(max(1, repeat)):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
        if i == 0:
            first = result
        del result
    return min(times), first


def pathlift_call(quantity, net, theta, v):
    t = ARGS.threads
    if quantity == "none":
        return lambda: 0.0
    if quantity == "l1":
        return lambda: pathlift.path_norm(net, theta, 1.0, threads=t)
    if quantity == "l2":
        return lambda: pathlift.path_norm(net, theta, 2.0, threads=t)
    if quantity == "diag":
        return lambda: np.asarray(pathlift.kernel_diagonal(net, theta, threads=t))
    if quantity == "kv":
        return lambda: np.asarray(pathlift.kernel_matvec(net, theta, v, threads=t))
    raise KeyError(quantity)


def torch_call(quantity, lm, v):
    if quantity == "none":
        return lambda: 0.0
    if quantity == "l1":
        return lambda: R.path_norm_recipe(lm, s=1.0)
    if quantity == "l2":
        return lambda: R.path_norm_recipe(lm, s=2.0)
    if quantity == "diag":
        return lambda: R.kernel_diagonal_recipe(lm)
    if quantity == "kv":
        return lambda: R.kernel_matvec_recipe(lm, v=v)
    raise KeyError(quantity)


def compare(quantity, got, expected):
    """(ok, error text): the tests' tolerances (tests/python/test_imagenet_scale.py)."""
    if quantity in ("l1", "l2"):
        value = float(got.norm)
        err = abs(value - expected) / abs(expected)
        return err <= 1e-10, f"rel {err:.1e}"
    if quantity == "diag":
        zero = expected == 0
        scale = float(np.max(np.abs(expected)))
        if np.any(np.abs(got[zero]) > 1e-10 * scale):
            return False, "nonzero where the recipe has 0"
        rel = np.abs(got[~zero] - expected[~zero]) / np.abs(expected[~zero])
        err = float(np.max(rel)) if rel.size else 0.0
        return err <= 1e-10, f"max entry rel {err:.1e}" + (f", {int(zero.sum())} zeros"
                                                            if zero.any() else "")
    err = float(np.linalg.norm(got - expected) / np.linalg.norm(expected))
    return err <= 1e-9, f"rel {err:.1e} in norm"


def fmt_s(t):
    if t is None:
        return "-"
    return f"{t:.3g}" if t < 100 else f"{t:.0f}"


def peak_memory_mode():
    """One side, one model, one quantity: what /usr/bin/time -v measures."""
    model = R.torchvision_model(ARGS.model, seed=0)
    v = None
    start = time.perf_counter()
    if ARGS.only == "pathlift":
        net = pathlift.from_torch(model, SHAPE)
        theta = pathlift.theta_from_torch(model)
        del model
        gc.collect()
        if ARGS.quantity == "kv":
            v = np.random.default_rng(17).standard_normal(theta.size)
        build = time.perf_counter() - start
        t, result = best(pathlift_call(ARGS.quantity, net, theta, v), 1)
        unrolled = f", is_unrolled {net.is_unrolled}"
    else:
        lm = R.LinearModel(model, SHAPE)
        if ARGS.quantity == "kv":
            v = np.random.default_rng(17).standard_normal(lm.d)
        build = time.perf_counter() - start
        t, result = best(torch_call(ARGS.quantity, lm, v), 1)
        unrolled = ""
    summary = (f"{float(result.norm):.17g}" if hasattr(result, "norm") else
               f"{result:.17g}" if np.isscalar(result) else
               f"{result.size} entries, sum {float(np.sum(result)):.17g}")
    vm_hwm = ""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                vm_hwm = " ".join(line.split()[1:])
    print(f"{ARGS.only} {ARGS.model} {'x'.join(map(str, SHAPE))} {ARGS.quantity}: {summary}; "
          f"build {build:.2f} s, compute {t:.2f} s{unrolled}; VmHWM {vm_hwm}; "
          f"threads {ARGS.threads}")
    return 0


def main():
    if ARGS.peak_memory:
        return peak_memory_mode()
    blas, fair = blas_in_use()
    print(f"BLAS under numpy and torch: {blas}", file=sys.stderr, flush=True)
    if not fair:
        print("NOT A FAIR RACE: the PyTorch recipes run on a reference BLAS; install "
              "libopenblas0-pthread (scripts/install-deps.sh does) and run again",
              file=sys.stderr, flush=True)
    rows, failures = [], 0
    notes = []
    for name in ARGS.models.split(","):
        model = R.torchvision_model(name, seed=0)
        start = time.perf_counter()
        net = pathlift.from_torch(model, SHAPE)
        t_net = time.perf_counter() - start
        theta = pathlift.theta_from_torch(model)
        start = time.perf_counter()
        lm = R.LinearModel(model, SHAPE)
        t_lm = time.perf_counter() - start
        if not np.array_equal(theta, lm.theta.numpy()):
            print(f"{name}: pathlift's theta differs from the recipe's", file=sys.stderr)
            failures += 1
        v = np.random.default_rng(17).standard_normal(lm.d)
        notes.append(f"{name}: d = {lm.d:,}, from_torch {t_net:.2f} s (LayerNetwork, "
                     f"is_unrolled {net.is_unrolled}), recipe trace {t_lm:.2f} s")
        for q in ("l1", "l2", "diag", "kv"):
            repeat = ARGS.repeat_kv if q == "kv" else ARGS.repeat
            t_pl, got = best(pathlift_call(q, net, theta, v), repeat)
            t_torch, expected = best(torch_call(q, lm, v), repeat)
            ok, err = compare(q, got, expected)
            failures += not ok
            value = (f"{float(got.norm):.6g}" if q in ("l1", "l2") else "")
            rows.append((name, QUANTITIES[q], t_pl, t_torch,
                         f"{err}{'' if ok else ' MISMATCH'}" + (f", {value}" if value else "")))
            print(f"  {name} {QUANTITIES[q]}: pathlift {t_pl:.2f} s, PyTorch {t_torch:.2f} s, "
                  f"{err}{'' if ok else ' MISMATCH'}", file=sys.stderr, flush=True)
            del got, expected
            gc.collect()
        t_tr, tr = best(lambda: pathlift.kernel_trace(net, theta, threads=ARGS.threads),
                        ARGS.repeat)
        rows.append((name, "kernel trace", t_tr, None, f"{float(tr):.6g}"))
        if name in ARGS.eigen_models.split(","):
            t_eig, eig = best(lambda: pathlift.kernel_top_eigenvalues(
                net, theta, 3, tolerance=ARGS.eigen_tolerance, vectors=True,
                threads=ARGS.threads), 1)
            residual = (f", residuals <= {max(eig.residuals):.1e}"
                        if eig.residuals is not None and len(eig.residuals) else "")
            rows.append((name, "top-3 eigenpairs", t_eig, None,
                         f"{', '.join(f'{x:.6g}' for x in eig.values)} ({eig.status}, "
                         f"{eig.method}, {eig.products} products{residual})"))
            print(f"  {name} top-3: {t_eig:.1f} s, {eig.status}, {eig.products} products",
                  file=sys.stderr, flush=True)
        model = net = lm = theta = v = None     # one model alive at a time
        gc.collect()

    print(f"{'x'.join(map(str, SHAPE))}, float64, {ARGS.threads} threads (pathlift and torch), "
          f"best of {ARGS.repeat} (K v: {ARGS.repeat_kv}), torch {torch.__version__}, "
          f"pathlift {pathlift.__version__}")
    print(f"BLAS: {blas} -- " + ("a fair race (an optimized BLAS, as a pip user's)" if fair else
                                 "NOT A FAIR RACE (a reference BLAS under the recipes)"))
    print()
    print("| model | quantity | pathlift s | PyTorch s | speed-up | check / value |")
    print("|---|---|---:|---:|---:|---|")
    for name, q, t_pl, t_torch, note in rows:
        speed = f"{t_torch / t_pl:.1f}x" if t_torch is not None else "-"
        print(f"| {name} | {q} | {fmt_s(t_pl)} | {fmt_s(t_torch)} | {speed} | {note} |")
    print()
    for n in notes:
        print(f"- {n}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
