#!/usr/bin/python3
"""The paper's experiment, reproduced side by side with pathlift, and carried to scale (issue 7).

The paper (section "Experiment", appendix "Experiment and python module") times the Jacobian of
the path-lifting of feed-forward ReLU networks -- r = 5 inputs, q = 2 outputs, L = 1..3 hidden
layers of width w = 1..8, biases, float32, 5 repetitions -- computed with the skeleton
(``torch.einsum('qp,qpd,d->qpd', phi, B, 1/theta)`` on a dense ``(q, P1, d)`` tensor built with
itertools Cartesian products) against a per-path ``torch.autograd.grad`` loop, and the time to
build the skeleton. This script times, for each grid point, in one process and one run:

  pathlift_build            pathlift.enumerate_paths + pathlift.skeleton (path set + sparse B)
  pathlift_phi              pathlift.path_lifting(paths, theta)
  pathlift_sparse_jacobian  pathlift.jacobian(paths, theta): sparse dPhi given its path set
  pathlift_dense_jacobian   pathlift.jacobian(paths, theta, dense=True): the paper's output
  pathlift_end_to_end       build + Phi + sparse dPhi, timed as one sequence
  paper_skeleton_build      the paper's SkeletonMatrix: (q, P1, d) tensor, itertools
  paper_phi                 the paper's PathLifting: (q, P1) tensor, itertools
  paper_einsum              torch.einsum('qp,qpd,d->qpd', phi, B, 1/theta), given phi and B
  autograd_loop             J[i] = torch.autograd.grad(phi_i, theta, retain_graph=True)
  torch_index_build         a padded (P, max length) path-index matrix, vectorized torch
  functorch_jacfwd          jacfwd of phi(theta) = cat(theta, 1)[index].prod(1)
  functorch_jacrev          jacrev of the same function

Before timing, every method's Jacobian is compared with pathlift's float64 Jacobian in the
paper's (q, P1, d) layout (pathlift.group_by_output); a mismatch aborts the run. A method whose
one repetition is estimated to take more than --max-seconds is skipped (status "skipped: est.
..."), one whose memory would exceed --max-memory (default: half of physical RAM) is reported as
"needs N GB" and not run. Threads: --threads (default: all cores), the same count for pathlift
and torch.set_num_threads.

Usage (PYTHONPATH=<build>/python, Debian's /usr/bin/python3 which has torch and matplotlib):

  bench/paper_experiment.py                      # the paper's grid -> docs/figures/paper_experiment.{csv,png}
  bench/paper_experiment.py --scale              # L = 3, w = 8..64; L = 4, w = 32 -> ..._scale.{csv,png}
  bench/paper_experiment.py --grid 5,8,8,8,2 --reps 3 --csv out.csv --png out.png
  bench/paper_experiment.py --plot docs/figures/paper_experiment.csv --png fig.png   # redraw only
"""

import argparse
import csv
import gc
import itertools
import math
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"

METHODS = [
    "pathlift_build",
    "pathlift_phi",
    "pathlift_sparse_jacobian",
    "pathlift_dense_jacobian",
    "pathlift_end_to_end",
    "paper_skeleton_build",
    "paper_phi",
    "paper_einsum",
    "autograd_loop",
    "torch_index_build",
    "functorch_jacfwd",
    "functorch_jacrev",
]

CSV_FIELDS = ["method", "shape", "L", "w", "P", "d", "nnz", "P*d", "median", "min", "max",
              "status", "dtype", "threads", "reps", "calls"]

# A warm-up call is made and discarded (first-touch page faults, thread start, allocator) when
# the first call is faster than this; slower methods are timed from their first call.
WARMUP_BELOW_S = 2.0

# A repetition of a method faster than this is the mean of n back-to-back calls, n chosen so the
# repetition lasts about this long (as timeit does): the clock's resolution and the scheduler's
# noise then stay far below the figure. Every method is timed this way.
MIN_REPETITION_S = 0.02


def steady_allocator():
    """glibc malloc, as configured here, returns large blocks to the system on free and maps
    them afresh on the next allocation: on this kind of virtual machine every first touch of a
    4 KiB page then costs a page fault of several microseconds, so a 5 MB tensor costs 15-30 ms
    to fill whatever computes it, and a method's time depends on what ran before it in the
    process. Keeping freed memory (mmap threshold 32 MiB, no trimming) times every method --
    PyTorch's and pathlift's alike -- on memory already mapped: the steady state of a loop.
    Returns a description for the report, or None when mallopt is unavailable."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
        ok = (libc.mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1
              and libc.mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1
              and libc.mallopt(M_TOP_PAD, 64 << 20) == 1)
    except (OSError, AttributeError):
        return None
    return "malloc: freed memory kept (mmap threshold 32 MiB, no trim)" if ok else None


# --- the grids ---------------------------------------------------------------------------------


def paper_grid():
    """The paper's grid: r = 5, q = 2, L = 1..3 hidden layers of width w = 1..8, biases on."""
    return [[5] + [w] * layers + [2] for layers in (1, 2, 3) for w in range(1, 9)]


def scale_grid():
    """Beyond the paper: L = 3, w = 8, 16, 32, 64, and L = 4, w = 32 (as `pathlift bench --scale`)."""
    return [[5, 8, 8, 8, 2], [5, 16, 16, 16, 2], [5, 32, 32, 32, 2], [5, 64, 64, 64, 2],
            [5, 32, 32, 32, 32, 2]]


def shape_str(sizes):
    return ",".join(str(s) for s in sizes)


# --- the paper's module, written from its pseudo-code -------------------------------------------


class PaperModule:
    """The paper's PythonFiles/PathLiftingAndSkeleton.py, from the pseudo-code of its appendix:
    ListOfPathsAsNodesAtLayer (itertools.product over the layers), PathLifting (a (q, P1) tensor)
    and SkeletonMatrix (a (q, P1, d) tensor), filled entry by entry.

    Layers are the L + 1 Linear layers of nn.Sequential(Linear, ReLU, ..., Linear); parameters
    are in their .parameters() order (per layer W row-major, then b), pathlift's feed_forward
    order. The paths from the bias of every layer l = 1..L+1 are included (the pseudo-code's loop
    bounds read so that P matches the paper's count), after the paths from the data inputs:
    within an output, data paths in lexicographic (x, h1, ..., hL) order, then b1, b2, ... --
    pathlift's canonical order within an output group.
    """

    def __init__(self, sizes):
        self.sizes = list(sizes)
        self.depth = len(sizes) - 2  # L hidden layers, L + 1 Linear layers
        self.offsets = [0]
        for l in range(1, len(sizes)):
            self.offsets.append(self.offsets[-1] + (sizes[l - 1] + 1) * sizes[l])
        self.d = self.offsets[-1]
        self.q = sizes[-1]
        count = sizes[0]
        for s in sizes[1:-1]:
            count *= s
        for l in range(1, self.depth + 2):
            tail = 1
            for s in sizes[l:-1]:
                tail *= s
            count += tail
        self.P1 = count

    def parameter_index(self, layer, i_in, j_out):
        """Index in theta of W_layer[j_out, i_in] (Linear `layer`, 1-based)."""
        return self.offsets[layer - 1] + j_out * self.sizes[layer - 1] + i_in

    def bias_index(self, layer, j_out):
        return self.offsets[layer - 1] + self.sizes[layer] * self.sizes[layer - 1] + j_out

    def list_of_paths_as_nodes_at_layer(self, l0, is_bias):
        selected = []
        if l0 == 1 and not is_bias:
            selected.append(range(self.sizes[0]))  # in_features of the first layer
        for k in range(l0, self.depth + 2):
            selected.append(range(self.sizes[k]))  # out_features of layer k
        return itertools.product(*selected)

    def _walk(self, visit_path, deadline=None):
        """Calls visit_path(q_p, i_p, bias_index_or_None, [edge indices]) for every path, in the
        paper's order; raises _Deadline(fraction done) past `deadline` (time.perf_counter())."""
        stored = {qn: 0 for qn in range(self.q)}
        done = 0
        blocks = [(1, False)] + [(l, True) for l in range(1, self.depth + 2)]
        for l0, is_bias in blocks:
            first_layer = 1 if not is_bias else l0 + 1
            for nodes in self.list_of_paths_as_nodes_at_layer(l0, is_bias):
                q_p = nodes[-1]
                i_p = stored[q_p]
                b = self.bias_index(l0, nodes[0]) if is_bias else None
                ks = [self.parameter_index(first_layer + j, nodes[j], nodes[j + 1])
                      for j in range(len(nodes) - 1)]
                visit_path(q_p, i_p, b, ks)
                stored[q_p] = i_p + 1
                done += 1
                if deadline is not None and (done & 255) == 0 and time.perf_counter() > deadline:
                    raise _Deadline(done / (self.q * self.P1))

    def path_lifting(self, torch, theta, deadline=None):
        """The paper's PathLifting: Phi as a (q, P1) tensor, entry by entry (differentiable when
        theta requires grad: the autograd baseline's phi). The running product of a path is
        kept in a 0-d tensor and stored once: the pseudo-code's Phi[q, i] <- Phi[q, i] theta[k]
        done in place on Phi's entry fails under autograd (mul saved the entry it overwrites)."""
        phi = torch.ones(self.q, self.P1, dtype=theta.dtype)

        def visit(q_p, i_p, b, ks):
            value = theta[b] if b is not None else theta[ks[0]]
            for k in ks[b is None:]:
                value = value * theta[k]
            phi[q_p, i_p] = value

        self._walk(visit, deadline)
        return phi

    def skeleton_matrix(self, torch, dtype, deadline=None):
        """The paper's SkeletonMatrix: B as a dense (q, P1, d) 0/1 tensor, entry by entry."""
        skel = torch.zeros(self.q, self.P1, self.d, dtype=dtype)

        def visit(q_p, i_p, b, ks):
            if b is not None:
                skel[q_p, i_p, b] = 1
            for k in ks:
                skel[q_p, i_p, k] = 1

        self._walk(visit, deadline)
        return skel


class _Deadline(Exception):
    def __init__(self, fraction):
        super().__init__(fraction)
        self.fraction = max(fraction, 1e-9)


def functorch_bytes(name, P, d, maxlen, itemsize):
    """Memory of functorch.jacfwd / jacrev of the gather + prod phi. jacfwd pushes d tangents
    through the gather and the product: (d, P, maxlen) tensors; jacrev pulls P cotangents back
    through the product: (P, P, maxlen) tensors, scattered into (P, d + 1). Both return a dense
    P x d. Peaks measured with torch 1.13 (ru_maxrss): jacfwd 1.21 GB at L = 3, w = 16 (this
    formula: 1.74 GB), jacrev 0.80 GB at L = 3, w = 8 (formula: 1.27 GB)."""
    out = P * d * itemsize
    if name == "functorch_jacfwd":
        return out + 3 * d * P * maxlen * itemsize
    return out + 2 * P * P * maxlen * itemsize + P * (d + 1) * itemsize


def paper_jacobian(torch, phi, skel, theta):
    """The paper's Algorithm "Jacobian of Phi with B as tensor"."""
    u = 1.0 / theta
    return torch.einsum("qp,qpd,d->qpd", phi, skel, u)


# --- the plain-PyTorch alternative: a vectorized path-lifting -----------------------------------


def torch_path_index(torch, sizes):
    """A padded (P, max length) matrix of edge indices, rows in the paper's (q, P1) order, built
    with vectorized torch (cartesian_prod). Padding points at entry d of cat(theta, [1])."""
    module = PaperModule(sizes)
    depth, q, d = module.depth, module.q, module.d
    width = depth + 1  # the longest path: r -> h1 -> ... -> hL -> y
    blocks = []
    for l0, is_bias in [(1, False)] + [(l, True) for l in range(1, depth + 2)]:
        layer_sizes = ([sizes[0]] if not is_bias else []) + sizes[l0:]
        grids = [torch.arange(s) for s in layer_sizes]
        nodes = torch.cartesian_prod(*grids) if len(grids) > 1 else grids[0].unsqueeze(1)
        n = nodes.shape[0]
        cols = []
        if is_bias:
            cols.append(module.offsets[l0 - 1] + sizes[l0] * sizes[l0 - 1] + nodes[:, 0])
            first = l0 + 1
        else:
            first = 1
        for j in range(nodes.shape[1] - 1):
            layer = first + j
            cols.append(module.offsets[layer - 1] + nodes[:, j + 1] * sizes[layer - 1] + nodes[:, j])
        index = torch.full((n, width), d, dtype=torch.int64)
        index[:, :len(cols)] = torch.stack(cols, dim=1)
        # the output is the fastest coordinate of the product: (n / q, q, width)
        blocks.append(index.view(n // q, q, width))
    return torch.cat(blocks, dim=0).transpose(0, 1).reshape(-1, width).contiguous()


def vectorized_phi(torch, index):
    """phi(theta) = cat(theta, [1])[index].prod(1): gather + prod, differentiable by functorch."""
    flat = index.reshape(-1)
    shape = index.shape

    def phi(theta):
        ext = torch.cat([theta, theta.new_ones(1)])
        return torch.index_select(ext, 0, flat).reshape(shape).prod(dim=1)

    return phi


# --- timing ------------------------------------------------------------------------------------


class Result:
    def __init__(self, times=None, status="ok", estimate=None):
        self.times = [] if times is None else times
        self.status = status
        self.estimate = estimate  # seconds, for a method skipped on time
        self.last = None  # the last call's output, when measure(keep=True)
        self.calls = 1  # calls per repetition (their mean is the repetition's time)

    @property
    def ran(self):
        return bool(self.times)

    def stats(self):
        if not self.times:
            return (float("nan"),) * 3
        return statistics.median(self.times), min(self.times), max(self.times)


def measure(fn, reps, max_seconds, after_first=None, keep=False):
    """Median/min/max of `reps` repetitions of fn(). A first call faster than WARMUP_BELOW_S is
    a discarded warm-up; a first call over max_seconds is the only one (status says so). A
    repetition is the mean of n calls, n = MIN_REPETITION_S / (a second, calibration call), at
    least 1. Garbage collection is off while timing. One output is alive at a time; keep=True
    returns the last one in Result.last."""
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    if after_first is not None:
        after_first(out)
    times = []
    result = Result(times)
    number = 1
    if first >= WARMUP_BELOW_S:
        times.append(first)
        if first > max_seconds:
            result.status = f"ok (1 rep: {first:.3g} s > --max-seconds {max_seconds:g})"
    else:
        out = None
        t0 = time.perf_counter()
        out = fn()
        calibration = time.perf_counter() - t0  # the first call may include one-time costs
        if calibration < MIN_REPETITION_S:
            number = max(1, int(MIN_REPETITION_S / max(calibration, 1e-9)))
    # As timeit does: no garbage collection while timing (a collection walks every object the
    # process holds, which depends on what ran before, not on the method timed).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while len(times) < reps and result.status == "ok":
            out = None
            t0 = time.perf_counter()
            for _ in range(number):
                out = None
                out = fn()
            times.append((time.perf_counter() - t0) / number)
    finally:
        if gc_was_enabled:
            gc.enable()
    result.calls = number
    if keep:
        result.last = out
    return result


def fmt_bytes(n):
    return f"{n / 1e9:.3g} GB" if n >= 1e8 else f"{n / 1e6:.3g} MB"


def needs(nbytes, limit):
    return Result(status=f"needs {fmt_bytes(nbytes)} (limit {fmt_bytes(limit)})")


# --- the check ---------------------------------------------------------------------------------


class Mismatch(AssertionError):
    pass


def check_close(name, got, ref, rtol):
    """got, ref: arrays of the same shape (ref in float64). Relative to each entry, with a floor
    at 1e-6 of the largest entry (entries that are products of up to L + 1 float32 numbers)."""
    got = np.asarray(got, dtype=np.float64)
    if got.shape != ref.shape:
        raise Mismatch(f"{name}: shape {got.shape}, expected {ref.shape}")
    scale = np.abs(ref) + 1e-6 * max(float(np.abs(ref).max(initial=0.0)), 1e-30)
    err = float((np.abs(got - ref) / scale).max(initial=0.0))
    if not err <= rtol:
        raise Mismatch(f"{name}: Jacobian differs from pathlift's float64 one by {err:.3g} "
                       f"(relative; tolerance {rtol:g})")
    return err


# --- one grid point ----------------------------------------------------------------------------


class Experiment:
    def __init__(self, args, torch, functorch, pathlift):
        self.args = args
        self.torch = torch
        self.functorch = functorch
        self.pl = pathlift
        self.np_dtype = np.float64 if args.float64 else np.float32
        self.torch_dtype = torch.float64 if args.float64 else torch.float32
        self.itemsize = np.dtype(self.np_dtype).itemsize
        self.rtol = 1e-9 if args.float64 else 1e-4
        self.limit = args.max_memory or pathlift.default_max_memory()
        self.threads = args.threads
        # seconds per (grad x graph node) of the autograd loop, from the points where it ran
        self.grad_cost = []

    def log(self, *a):
        if not self.args.quiet:
            print(*a, file=sys.stderr, flush=True)

    def run_point(self, sizes):
        torch, functorch, pl = self.torch, self.functorch, self.pl
        args, T, s = self.args, self.threads, self.itemsize
        r, widths, q = sizes[0], sizes[1:-1], sizes[-1]
        net = pl.feed_forward(r, widths, q, True)
        counts = pl.count_paths(net)
        P, nnz, d = int(counts.paths), int(counts.nnz), net.d
        maxlen = counts.max_path_length
        module = PaperModule(sizes)
        P1 = module.P1
        assert P1 * q == P and module.d == d, (P1, P, module.d, d)
        self.log(f"[{shape_str(sizes)}] P = {P:,}, d = {d:,}, nnz = {nnz:,}, P*d = {P * d:,}")
        theta64 = pl.normal_weights(d, args.seed)
        theta_np = theta64.astype(self.np_dtype)
        theta_t = torch.from_numpy(theta_np.copy())
        dt = self.np_dtype
        res = {}
        reps, maxs, limit = args.reps, args.max_seconds, self.limit

        # -- pathlift's sizes come from the DP count, before anything is built
        build_bytes = (pl.estimate_bytes(net, "path_set")
                       + pl.estimate_bytes(net, "skeleton", dt))
        sparse_bytes = pl.estimate_bytes(net, "jacobian", dt)
        dense_bytes = pl.dense_bytes(P, d, dt)
        if build_bytes + sparse_bytes > limit:
            for m in ("pathlift_build", "pathlift_phi", "pathlift_sparse_jacobian",
                      "pathlift_end_to_end"):
                res[m] = needs(build_bytes + sparse_bytes, limit)
            res["pathlift_dense_jacobian"] = needs(dense_bytes, limit)
            raise SystemExit(f"{shape_str(sizes)}: pathlift's sparse objects need "
                             f"{fmt_bytes(build_bytes + sparse_bytes)}: nothing to compare with")
        paths = pl.enumerate_paths(net, threads=T)

        # -- the reference: pathlift's float64 Jacobian at theta rounded to the timed dtype, in
        # the paper's (q, P1, d) layout; all rows when small, else a sample of rows (positions
        # of the flattened (q, P1) layout).
        order = pl.group_by_output(net, paths).order  # canonical index of each (q, P1) position
        if P * d * 8 <= min(limit / 8, 2e9):
            rows_checked = np.arange(P)
        else:
            rng = np.random.default_rng(args.seed)
            sample = min(P, 20000, max(1000, int(2e8 // (d * 8))))  # a reference of <= ~200 MB
            rows_checked = np.unique(np.concatenate(
                [[0, P - 1], rng.choice(P, size=sample, replace=False)]))
        J64 = pl.jacobian(paths, theta_np.astype(np.float64), threads=T)
        ref = J64[order[rows_checked]].toarray()
        errors = {}

        def check(name, J):
            """J: the paper's (q, P1, d) layout (numpy or torch), or a (P, d) array in it."""
            J = J.reshape(P, d)
            if len(rows_checked) < P:
                J = J[torch.from_numpy(rows_checked) if torch.is_tensor(J) else rows_checked]
            J = J.numpy() if torch.is_tensor(J) else np.asarray(J)
            errors[name] = check_close(name, J, ref, self.rtol)

        # -- pathlift
        Jp = pl.jacobian(paths, theta_np, dtype=dt, threads=T)
        assert np.array_equal(Jp.indices, J64.indices) and np.array_equal(Jp.indptr, J64.indptr)
        errors["pathlift_sparse_jacobian"] = check_close(
            "pathlift_sparse_jacobian", Jp.data, J64.data, self.rtol)
        del Jp, J64
        check_close("pathlift_phi", pl.path_lifting(paths, theta_np, dtype=dt, threads=T),
                    pl.path_lifting(paths, theta_np.astype(np.float64), threads=T), self.rtol)

        def build():
            p = pl.enumerate_paths(net, threads=T)
            b = pl.skeleton(p, dtype=dt, threads=T)
            return p, b

        def end_to_end():
            p = pl.enumerate_paths(net, threads=T)
            b = pl.skeleton(p, dtype=dt, threads=T)
            f = pl.path_lifting(p, theta_np, dtype=dt, threads=T)
            j = pl.jacobian(p, theta_np, dtype=dt, threads=T)
            return b, f, j

        res["pathlift_build"] = measure(build, reps, maxs)
        res["pathlift_phi"] = measure(
            lambda: pl.path_lifting(paths, theta_np, dtype=dt, threads=T), reps, maxs)
        res["pathlift_sparse_jacobian"] = measure(
            lambda: pl.jacobian(paths, theta_np, dtype=dt, threads=T), reps, maxs)
        res["pathlift_end_to_end"] = measure(end_to_end, reps, maxs)
        if dense_bytes + sparse_bytes <= limit:
            check("pathlift_dense_jacobian",
                  pl.jacobian(paths, theta_np, dtype=dt, dense=True, threads=T)[order])
            res["pathlift_dense_jacobian"] = measure(
                lambda: pl.jacobian(paths, theta_np, dtype=dt, dense=True, threads=T), reps, maxs)
        else:
            res["pathlift_dense_jacobian"] = needs(dense_bytes + sparse_bytes, limit)
        gc.collect()

        # -- the paper's method: SkeletonMatrix, PathLifting, einsum
        skel_bytes = P * d * s  # the (q, P1, d) tensor; the einsum's output is as large
        if 2 * skel_bytes > limit:
            res["paper_skeleton_build"] = needs(skel_bytes, limit)
            res["paper_einsum"] = needs(2 * skel_bytes, limit)
        else:
            skel, phi_paper, note = None, None, ""
            try:
                t0 = time.perf_counter()
                skel = module.skeleton_matrix(torch, self.torch_dtype, deadline=t0 + maxs)
            except _Deadline as e:
                est = (time.perf_counter() - t0) / e.fraction
                res["paper_skeleton_build"] = Result(
                    status=f"skipped: est. {est:.3g} s > --max-seconds {maxs:g}", estimate=est)
            else:
                B = pl.skeleton(paths, dtype=np.float64, threads=T)[order[rows_checked]]
                if not np.array_equal(skel.reshape(P, d)[rows_checked].numpy(), B.toarray()):
                    raise Mismatch("paper_skeleton_build: B differs from pathlift's skeleton")
                del skel, B
                gc.collect()
                r_b = measure(lambda: module.skeleton_matrix(torch, self.torch_dtype), reps,
                              maxs, keep=True)
                skel, r_b.last = r_b.last, None
                res["paper_skeleton_build"] = r_b
            with torch.no_grad():
                try:
                    t0 = time.perf_counter()
                    module.path_lifting(torch, theta_t, deadline=t0 + maxs)
                except _Deadline as e:
                    est = (time.perf_counter() - t0) / e.fraction
                    res["paper_phi"] = Result(
                        status=f"skipped: est. {est:.3g} s > --max-seconds {maxs:g}",
                        estimate=est)
                else:
                    r_f = measure(lambda: module.path_lifting(torch, theta_t), reps, maxs,
                                  keep=True)
                    phi_paper, r_f.last = r_f.last, None
                    res["paper_phi"] = r_f
            if skel is None:
                # the einsum's input is the same tensor however it is built
                skel = torch.from_numpy(pl.skeleton(paths, dtype=dt, dense=True, threads=T)[order]
                                        ).reshape(q, P1, d)
                note = " (B built by pathlift: the paper's build was skipped)"
            if phi_paper is None:
                phi_paper = torch.from_numpy(
                    pl.path_lifting(paths, theta_np, dtype=dt, threads=T)[order]).reshape(q, P1)
                note = " (B or phi built by pathlift: the paper's build was skipped)"
            check("paper_einsum", paper_jacobian(torch, phi_paper, skel, theta_t))
            r_e = measure(lambda: paper_jacobian(torch, phi_paper, skel, theta_t), reps, maxs)
            r_e.status += note
            res["paper_einsum"] = r_e
            del skel, phi_paper
        gc.collect()

        # -- the paper's baseline: per-path autograd on the paper's phi
        res["autograd_loop"] = self.autograd_loop(module, theta_t, P, nnz, d, rows_checked, ref,
                                                  check)
        gc.collect()

        # -- the plain-PyTorch alternative: vectorized phi, functorch.jacfwd / jacrev
        index_bytes = 3 * P * (maxlen + 1) * 8
        if index_bytes > limit:
            for m in ("torch_index_build", "functorch_jacfwd", "functorch_jacrev"):
                res[m] = needs(index_bytes, limit)
        else:
            r_i = measure(lambda: torch_path_index(torch, sizes), reps, maxs, keep=True)
            index, r_i.last = r_i.last, None
            res["torch_index_build"] = r_i
            fphi = vectorized_phi(torch, index)
            for name, jac in (("functorch_jacfwd", functorch.jacfwd),
                              ("functorch_jacrev", functorch.jacrev)):
                nbytes = functorch_bytes(name, P, d, maxlen, s)
                if nbytes > limit:
                    res[name] = needs(nbytes, limit)
                    continue
                check(name, jac(fphi)(theta_t))
                res[name] = measure(lambda: jac(fphi)(theta_t), reps, maxs)
            del index, fphi
        gc.collect()

        rows = []
        for m in METHODS:
            rr = res.get(m, Result(status="not run"))
            med, lo, hi = rr.stats()
            if not rr.ran and rr.estimate is not None:
                med = lo = hi = rr.estimate
            rows.append({
                "method": m, "shape": shape_str(sizes), "L": len(widths),
                "w": widths[0] if widths else 0, "P": P, "d": d, "nnz": nnz, "P*d": P * d,
                "median": med, "min": lo, "max": hi, "status": rr.status,
                "dtype": np.dtype(self.np_dtype).name, "threads": T, "reps": len(rr.times),
                "calls": rr.calls,
            })
        worst = max(errors.values())
        self.log(f"  check: {', '.join(errors)} agree with pathlift's float64 Jacobian "
                 f"({'all' if len(rows_checked) == P else len(rows_checked)} rows; largest "
                 f"relative difference {worst:.2g})")
        return rows

    def autograd_loop(self, module, theta_t, P, nnz, d, rows_checked, ref, check):
        torch, args = self.torch, self.args
        maxs, s = args.max_seconds, self.itemsize
        # J (P x d) and phi's graph: a MulBackward and a CopySlices per edge of each path
        nbytes = P * d * s + nnz * 1024
        if nbytes > self.limit:
            return needs(nbytes, self.limit)
        if self.grad_cost:
            # one grad walks the whole graph of the in-place updates (~ nnz nodes): the loop is
            # ~ P x nnz; skip without building the graph when far over the limit
            est = P * nnz * statistics.median(self.grad_cost)
            if est > 3 * maxs:
                return Result(status=f"skipped: est. {est:.3g} s > --max-seconds {maxs:g} "
                                     "(fit of P x nnz)", estimate=est)
        theta = theta_t.clone().requires_grad_(True)
        try:
            t0 = time.perf_counter()
            phi = module.path_lifting(torch, theta, deadline=t0 + maxs).reshape(-1)
        except _Deadline as e:
            est = (time.perf_counter() - t0) / e.fraction
            return Result(status=f"skipped: phi's graph alone est. {est:.3g} s > --max-seconds "
                                 f"{maxs:g}")
        k = len(rows_checked)
        probe = sorted({0, k // 2, k - 1})  # positions in rows_checked
        torch.autograd.grad(phi[int(rows_checked[probe[0]])], theta, retain_graph=True)  # warm-up
        t0 = time.perf_counter()
        grads = [torch.autograd.grad(phi[int(rows_checked[i])], theta, retain_graph=True)[0]
                 for i in probe]
        per_grad = (time.perf_counter() - t0) / len(probe)
        self.grad_cost.append(per_grad / nnz)
        for i, g in zip(probe, grads):
            check_close(f"autograd_loop (row {rows_checked[i]})", g.numpy(), ref[i], self.rtol)
        est = P * per_grad
        if est > maxs:
            return Result(status=f"skipped: est. {est:.3g} s > --max-seconds {maxs:g}",
                          estimate=est)

        def loop():
            J = torch.zeros(P, d, dtype=theta.dtype)
            for i in range(P):
                J[i, :] = torch.autograd.grad(phi[i], theta, retain_graph=True)[0]
            return J

        def first(J):
            check("autograd_loop", J)

        return measure(loop, args.reps, maxs, after_first=first)


# --- output ------------------------------------------------------------------------------------


def fmt_time(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if v < 1e-3:
        return f"{v * 1e6:.0f} us"
    if v < 1:
        return f"{v * 1e3:.3g} ms"
    return f"{v:.3g} s"


def cell(row):
    st = row["status"]
    if st.startswith("ok"):
        return fmt_time(row["median"])
    if st.startswith("needs"):
        return st.split(" (")[0]
    if st.startswith("skipped") and not math.isnan(float(row["median"])):
        return f"(est. {fmt_time(float(row['median']))})"
    return "skipped"


def print_table(rows, out=sys.stdout):
    by_shape = {}
    for r in rows:
        by_shape.setdefault(r["shape"], {})[r["method"]] = r
    short = {
        "pathlift_build": "pl build", "pathlift_phi": "pl Phi", "pathlift_sparse_jacobian": "pl dPhi",
        "pathlift_dense_jacobian": "pl dense", "pathlift_end_to_end": "pl e2e",
        "paper_skeleton_build": "paper B", "paper_phi": "paper Phi", "paper_einsum": "einsum",
        "autograd_loop": "autograd", "torch_index_build": "index", "functorch_jacfwd": "jacfwd",
        "functorch_jacrev": "jacrev",
    }
    head = f"{'shape':<16} {'P':>10} {'d':>6} " + " ".join(f"{short[m]:>12}" for m in METHODS)
    print(head, file=out)
    for shape, ms in by_shape.items():
        any_row = next(iter(ms.values()))
        line = f"{shape:<16} {any_row['P']:>10} {any_row['d']:>6} "
        line += " ".join(f"{cell(ms[m]) if m in ms else '-':>12}" for m in METHODS)
        print(line, file=out)


RATIOS = [
    ("paper skeleton build / pathlift build (path set + B)", "paper_skeleton_build", "pathlift_build", 1000),
    ("paper einsum / pathlift sparse dPhi (given path set)", "paper_einsum", "pathlift_sparse_jacobian", 20),
    ("paper einsum / pathlift dense dPhi", "paper_einsum", "pathlift_dense_jacobian", 1),
    ("functorch.jacfwd / pathlift end to end", "functorch_jacfwd", "pathlift_end_to_end", 100),
    ("functorch.jacrev / pathlift end to end", "functorch_jacrev", "pathlift_end_to_end", None),
    ("autograd loop / pathlift end to end", "autograd_loop", "pathlift_end_to_end", 1000),
]


def ratio_table(rows, shape, out=sys.stdout):
    ms = {r["method"]: r for r in rows if r["shape"] == shape}
    if not ms:
        return
    any_row = next(iter(ms.values()))
    print(f"\nratios at {shape} (P = {any_row['P']:,}, d = {any_row['d']:,}; "
          f"medians, {any_row['dtype']}, {any_row['threads']} threads):", file=out)
    for label, slow, fast, target in RATIOS:
        a, b = ms.get(slow), ms.get(fast)
        if not a or not b:
            continue
        if a["status"].startswith("ok") and b["status"].startswith("ok"):
            ratio = float(a["median"]) / float(b["median"])
            verdict = "" if target is None else ("  [>= %gx: %s]" % (target, "yes" if ratio >= target else "NO"))
            print(f"  {label:<54} {fmt_time(float(a['median'])):>10} / {fmt_time(float(b['median'])):>8}"
                  f" = {ratio:>10,.1f}x{verdict}", file=out)
        else:
            print(f"  {label:<54} {cell(a):>10} / {cell(b):>8}", file=out)


def write_csv(rows, path):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            r = dict(r)
            for k in ("median", "min", "max"):
                r[k] = "" if math.isnan(float(r[k])) else f"{float(r[k]):.6g}"
            w.writerow(r)


def read_csv(paths):
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                r.setdefault("calls", "1")
                for k in ("L", "w", "P", "d", "nnz", "P*d", "threads", "reps", "calls"):
                    r[k] = int(r[k])
                for k in ("median", "min", "max"):
                    r[k] = float(r[k]) if r[k] else float("nan")
                rows.append(r)
    return rows


STYLE = {
    # method: (label, color, marker, panel)
    "pathlift_sparse_jacobian": ("pathlift sparse dPhi (given path set)", "tab:green", "o", 0),
    "pathlift_dense_jacobian": ("pathlift dense dPhi (given path set)", "tab:olive", "s", 0),
    "pathlift_end_to_end": ("pathlift end to end (build + Phi + dPhi)", "tab:cyan", "D", 0),
    "paper_einsum": ("paper: einsum('qp,qpd,d->qpd') given B", "tab:blue", "^", 0),
    "autograd_loop": ("paper: per-path autograd.grad loop", "tab:red", "v", 0),
    "functorch_jacfwd": ("functorch.jacfwd (gather + prod)", "tab:purple", "<", 0),
    "functorch_jacrev": ("functorch.jacrev (gather + prod)", "tab:brown", ">", 0),
    "pathlift_build": ("pathlift: path set + skeleton", "tab:green", "o", 1),
    "paper_skeleton_build": ("paper: SkeletonMatrix (itertools)", "tab:blue", "^", 1),
    "torch_index_build": ("torch: padded path-index matrix", "tab:purple", "<", 1),
}


def plot(rows, png, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5.2))
    for method, (label, color, marker, panel) in STYLE.items():
        ax = axes[panel]
        pts = sorted((r for r in rows if r["method"] == method and r["status"].startswith("ok")),
                     key=lambda r: r["P*d"])
        if pts:
            x = np.array([r["P*d"] for r in pts], dtype=float)
            ax.plot(x, [r["median"] for r in pts], marker=marker, color=color, label=label,
                    markersize=4, linewidth=1.3)
            ax.fill_between(x, [r["min"] for r in pts], [r["max"] for r in pts], color=color,
                            alpha=0.2, linewidth=0)
        est = sorted((r for r in rows if r["method"] == method and r["status"].startswith("skipped")
                      and not math.isnan(r["median"])), key=lambda r: r["P*d"])
        if est:
            if pts:  # join the measured line to the estimates
                est = [pts[-1]] + est
            ax.plot([r["P*d"] for r in est], [r["median"] for r in est], linestyle=":",
                    marker=marker, markerfacecolor="none", color=color, markersize=4,
                    label=f"{label.split(':')[0]}: estimated (not run)" if not pts else None)
    # the points where no PyTorch method could compute the Jacobian (all need too much memory)
    torch_methods = ("paper_einsum", "autograd_loop", "functorch_jacfwd", "functorch_jacrev")
    shapes = {}
    for r in rows:
        if r["method"] in torch_methods:
            shapes.setdefault((r["P*d"], r["shape"]), []).append(r["status"].startswith("needs"))
    for (x, shape), fits in sorted(shapes.items()):
        if all(fits):
            axes[0].axvline(x, color="0.6", linestyle="--", linewidth=0.7)
            axes[0].annotate(f"{shape}: no PyTorch\nmethod fits", (x, 0.02),
                             xycoords=("data", "axes fraction"), fontsize=6, color="0.35",
                             rotation=90, ha="right", va="bottom")
    axes[0].set_title("Jacobian of the path-lifting")
    axes[1].set_title("Build (once per network, independent of theta)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("P * d")
        ax.set_ylabel("seconds (median; band: min-max)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    png = pathlib.Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=130)
    plt.close(fig)


def machine_line(threads, dtype, reps):
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{model}, {os.cpu_count()} cores, {threads} threads, {dtype}, median of {reps}; "
            f"load at start {load:.2f}")


def parse_size(text):
    text = text.strip().upper()
    for suffix, mult in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3), ("T", 1e12),
                         ("G", 1e9), ("M", 1e6), ("K", 1e3), ("B", 1)):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * mult)
    return int(float(text))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grid", action="append", metavar="SHAPE",
                    help="a feed-forward shape r,w1,...,wL,q (repeatable) instead of the paper's grid")
    ap.add_argument("--scale", action="store_true",
                    help="the sweep beyond the paper: L = 3, w = 8, 16, 32, 64, and L = 4, w = 32")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per measurement (default 5)")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for pathlift and torch.set_num_threads (default: all cores)")
    ap.add_argument("--float64", action="store_true", help="float64 (default float32, as the paper)")
    ap.add_argument("--max-seconds", type=float, default=60.0,
                    help="skip a method whose one repetition is estimated over this (default 60)")
    ap.add_argument("--max-memory", type=parse_size, default=0,
                    help="report methods needing more than this as 'needs N GB' (default: half of RAM)")
    ap.add_argument("--seed", type=int, default=0, help="theta = pathlift.normal_weights(d, seed)")
    ap.add_argument("--csv", help="CSV output (default docs/figures/paper_experiment[_scale].csv)")
    ap.add_argument("--png", help="figure (default docs/figures/paper_experiment[_scale].png)")
    ap.add_argument("--plot", nargs="+", metavar="CSV", help="only redraw the figure from CSV files")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ap.add_argument("--malloc-default", action="store_true",
                    help="leave glibc malloc as it is (default: keep freed memory mapped, so that "
                         "no method is timed on page faults; see steady_allocator)")
    args = ap.parse_args(argv)
    stem = "paper_experiment_scale" if args.scale else "paper_experiment"
    png = args.png or FIGURES / f"{stem}.png"

    if args.plot:
        rows = read_csv(args.plot)
        r0 = rows[0]
        plot(rows, png, f"pathlift vs the paper's methods ({r0['dtype']}, {r0['threads']} threads)")
        print(f"wrote {png}", file=sys.stderr)
        return 0

    allocator = None if args.malloc_default else steady_allocator()
    import torch
    import functorch
    import pathlift

    threads = args.threads or os.cpu_count() or 1
    args.threads = threads
    torch.set_num_threads(threads)
    if args.grid:
        grid = [pathlift.parse_layer_sizes(g) for g in args.grid]
    else:
        grid = scale_grid() if args.scale else paper_grid()
    exp = Experiment(args, torch, functorch, pathlift)
    dtype = "float64" if args.float64 else "float32"
    machine = machine_line(threads, dtype, args.reps)
    machine += f"; {allocator or 'malloc: glibc defaults'}"
    print(f"paper_experiment: {machine}; torch {torch.__version__} "
          f"(torch.get_num_threads() = {torch.get_num_threads()}), pathlift {pathlift.__version__}; "
          f"max-seconds {args.max_seconds:g}, max-memory {fmt_bytes(exp.limit)}", flush=True)
    rows = []
    for sizes in grid:
        rows.extend(exp.run_point(sizes))
    csv_path = args.csv or FIGURES / f"{stem}.csv"
    write_csv(rows, csv_path)
    print_table(rows)
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    largest = max(shapes, key=lambda sh: next(r["P*d"] for r in rows if r["shape"] == sh))
    ratio_table(rows, largest)
    ran = [r for r in rows if r["method"] == "autograd_loop" and r["status"].startswith("ok")]
    if ran:
        loop_shape = max(ran, key=lambda r: r["P*d"])["shape"]
        if loop_shape != largest:
            print(f"\nlargest point where the autograd loop ran: {loop_shape}")
            ratio_table([r for r in rows if r["method"] in ("autograd_loop", "pathlift_end_to_end")],
                        loop_shape)
    load = os.getloadavg()[0]
    print(f"\nload average at the end: {load:.2f}")
    plot(rows, png, f"pathlift vs the paper's methods: {machine}")
    print(f"wrote {csv_path} and {png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
